package output_test

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
)

// TestObjective: every target's objective and score as AISimulate computes them (sweeper/score.py;
// internal/gate's TestRealAISimulateJudgesTheObjective has the real AISimulate judge them).
func TestObjective(t *testing.T) {
	// A static deployment of 4 GPUs that ran for 1 h.
	r := output.Report{"completed_requests": 100, "num_ttft_samples": 100, "num_e2e_latency_samples": 100, "duration_ms": 3.6e6, "gpu_hours": 4,
		"output_throughput_tok_s": 8000, "goodput_output_throughput_tok_s": 6000, "mean_output_token_throughput_per_user": 50,
		"mean_ttft_ms": 120, "mean_e2e_latency_ms": 900}
	for _, tc := range []struct {
		name      string
		target    string
		report    output.Report
		gpus      output.GPUs
		want      float64
		wantScore float64
		wantErr   string
	}{
		{target: output.TargetThroughput, report: r, want: 8000, wantScore: 8000},
		// gpu_hours / duration_h = 4 / 1 h = 4 GPUs.
		{target: output.TargetThroughputPerGPU, report: r, want: 8000.0 / 4, wantScore: 2000},
		{target: output.TargetGoodputPerGPU, report: r, want: 6000.0 / 4, wantScore: 1500},
		{target: output.TargetGoodput, report: r, want: 6000, wantScore: 6000},
		{target: output.TargetThroughputPerUser, report: r, want: 50, wantScore: 50},
		{target: output.TargetTTFT, report: r, want: 120, wantScore: -120},
		{target: output.TargetE2ELatency, report: r, want: 900, wantScore: -900},
		{target: output.TargetMinGPUs, report: r, gpus: output.GPUs{Provisioned: 4}, want: 4, wantScore: -4},
		{name: "half an hour on 2 GPUs: 1 GPU-hour over 0.5 h", target: output.TargetThroughputPerGPU,
			report: output.Report{"output_throughput_tok_s": 900, "gpu_hours": 1, "duration_ms": 1.8e6}, want: 450, wantScore: 450},
		{name: "no gpu_hours", target: output.TargetThroughputPerGPU, report: output.Report{"output_throughput_tok_s": 900}, want: 0, wantScore: 0},
		{name: "no duration", target: output.TargetThroughputPerGPU,
			report: output.Report{"output_throughput_tok_s": 900, "gpu_hours": 1, "duration_ms": 0}, want: 0, wantScore: 0},
		{name: "provisioned basis", target: output.TargetThroughputPerGPU, report: output.Report{"output_throughput_tok_s": 900},
			gpus: output.GPUs{Provisioned: 3, Basis: output.ProvisionedGPUs}, want: 300, wantScore: 300},
		{name: "provisioned basis without GPUs", target: output.TargetGoodputPerGPU, report: r,
			gpus: output.GPUs{Basis: output.ProvisionedGPUs}, want: 0, wantScore: 0},
		{name: "empty report", target: output.TargetThroughput, report: output.Report{}, want: 0, wantScore: 0},
		{name: "no ttft samples", target: output.TargetTTFT, report: output.Report{"mean_ttft_ms": 120, "num_ttft_samples": 0},
			want: math.Inf(1), wantScore: math.Inf(-1)},
		{name: "no e2e sample count", target: output.TargetE2ELatency, report: output.Report{"mean_e2e_latency_ms": 5}, want: math.Inf(1), wantScore: math.Inf(-1)},
		{name: "min_gpus without GPUs", target: output.TargetMinGPUs, report: r, wantErr: "min_gpus needs a positive provisioned GPU count, got 0"},
		{target: output.TargetPareto, report: r, wantErr: "pareto is multi-objective"},
		{target: "speed", report: r, wantErr: `unknown optimization target "speed"`},
	} {
		name := tc.name
		if name == "" {
			name = tc.target
		}
		t.Run(name, func(t *testing.T) {
			got, err := output.Objective(tc.target, tc.report, tc.gpus)
			score, scoreErr := output.Score(tc.target, tc.report, tc.gpus)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || scoreErr == nil {
					t.Fatalf("error %v / %v, want %q", err, scoreErr, tc.wantErr)
				}
				return
			}
			if err != nil || scoreErr != nil {
				t.Fatal(err, scoreErr)
			}
			if diff := cmp.Diff([]float64{tc.want, tc.wantScore}, []float64{got, score}); diff != "" {
				t.Errorf("objective, score (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGPUBasis says why the two recommenders divide the per-GPU targets differently, and that it
// is the only difference. AISimulate divides by the time-averaged GPU count, gpu_hours over the
// duration, because its Planner may scale a deployment during the replay: a deployment
// provisioned with 4 GPUs that held 3 on average scores its throughput over 3. The local
// recommender's pools never scale and it writes gpu_hours as GPUs × duration: dividing by its
// GPU count is exact, where gpu_hours over the duration rounds in the last bits and would move
// scores and ties. On a static deployment the two agree to rounding; every other target reads
// the report alike.
func TestGPUBasis(t *testing.T) {
	scaled := output.Report{"output_throughput_tok_s": 9000, "goodput_output_throughput_tok_s": 6000, "duration_ms": 3.6e6,
		"gpu_hours": 3} // provisioned 4, 3 on average
	aisimulate := output.GPUs{Provisioned: 4, Basis: output.TimeAveragedGPUs}
	local := output.GPUs{Provisioned: 4, Basis: output.ProvisionedGPUs}
	for target, want := range map[string][2]float64{
		output.TargetThroughputPerGPU: {9000.0 / 3, 9000.0 / 4},
		output.TargetGoodputPerGPU:    {6000.0 / 3, 6000.0 / 4},
	} {
		a, _ := output.Objective(target, scaled, aisimulate)
		l, _ := output.Objective(target, scaled, local)
		if diff := cmp.Diff(want, [2]float64{a, l}); diff != "" {
			t.Errorf("%s on a scaled deployment, AISimulate's and the local recommender's (-want +got):\n%s", target, diff)
		}
	}

	// A static deployment of 3 GPUs over 2,364.742445 ms: gpu_hours as the local recommender writes
	// it. Dividing the throughput by gpu_hours over the duration is off in the last bits.
	durationMs, gpus := 2364.742445, 3
	static := output.Report{"output_throughput_tok_s": 1000.1, "goodput_output_throughput_tok_s": 1000.1, "duration_ms": durationMs,
		"gpu_hours": output.GPUHours(float64(gpus), durationMs), "mean_output_token_throughput_per_user": 40,
		"mean_ttft_ms": 90, "num_ttft_samples": 10, "mean_e2e_latency_ms": 900, "num_e2e_latency_samples": 10}
	if avg := static.AvgGPUs(); avg == float64(gpus) {
		t.Fatalf("gpu_hours over the duration is exactly %d here; the case shows no rounding", gpus)
	}
	for _, target := range output.TargetNames() {
		if target == output.TargetPareto {
			continue
		}
		a, err := output.Objective(target, static, output.GPUs{Provisioned: gpus, Basis: output.TimeAveragedGPUs})
		if err != nil {
			t.Fatal(err)
		}
		l, _ := output.Objective(target, static, output.GPUs{Provisioned: gpus, Basis: output.ProvisionedGPUs})
		switch target {
		case output.TargetThroughputPerGPU, output.TargetGoodputPerGPU:
			if l != 1000.1/3 || math.Abs(a-l) > 1e-12*l {
				t.Errorf("%s: local %v (want the exact 1000.1/3), AISimulate %v (want it to rounding)", target, l, a)
			}
		default:
			if a != l {
				t.Errorf("%s: AISimulate %v, local %v; only the per-GPU targets may differ", target, a, l)
			}
		}
	}
}

func TestTargets(t *testing.T) {
	want := []string{"throughput", "throughput_per_gpu", "throughput_per_user", "goodput", "goodput_per_gpu", "ttft", "e2e_latency", "min_gpus", "pareto"}
	if diff := cmp.Diff(want, output.TargetNames()); diff != "" {
		t.Errorf("targets in AISimulate's schema order (-want +got):\n%s", diff)
	}
	for _, tt := range output.Targets {
		if (tt.Objective == nil) != (tt.Name == output.TargetPareto) || (tt.Unit == "") != (tt.Name == output.TargetPareto) {
			t.Errorf("%s: every scalar target has an objective and a unit, pareto neither", tt.Name)
		}
		minimized := tt.Name == output.TargetTTFT || tt.Name == output.TargetE2ELatency || tt.Name == output.TargetMinGPUs
		if tt.Maximized == minimized {
			t.Errorf("%s: maximized %v", tt.Name, tt.Maximized)
		}
	}
	if _, ok := output.LookupTarget("speed"); ok {
		t.Error("an unknown target was found")
	}
}
