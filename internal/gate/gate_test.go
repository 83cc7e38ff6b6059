package gate

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

// report is a replay report of a static deployment of gpus GPUs that ran for 1 h.
func report(gpus float64, kv ...any) map[string]float64 {
	m := map[string]float64{
		"completed_requests": 100, "num_ttft_samples": 100, "num_tpot_samples": 100, "num_e2e_latency_samples": 100,
		"duration_ms": 3.6e6, "gpu_hours": gpus,
	}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1].(float64)
	}
	return m
}

func TestObjective(t *testing.T) {
	r := report(4, "output_throughput_tok_s", 8000.0, "goodput_output_throughput_tok_s", 6000.0,
		"mean_output_token_throughput_per_user", 50.0, "mean_ttft_ms", 120.0, "mean_e2e_latency_ms", 900.0)
	for _, tc := range []struct {
		target    string
		report    map[string]float64
		gpus      int
		want      float64
		wantScore float64
		wantErr   string
	}{
		{target: Throughput, report: r, want: 8000, wantScore: 8000},
		// gpu_hours / duration_h = 4 / 1 h = 4 GPUs.
		{target: ThroughputPerGPU, report: r, want: 8000.0 / 4, wantScore: 2000},
		{target: GoodputPerGPU, report: r, want: 6000.0 / 4, wantScore: 1500},
		{target: Goodput, report: r, want: 6000, wantScore: 6000},
		{target: ThroughputPerUser, report: r, want: 50, wantScore: 50},
		{target: TTFT, report: r, want: 120, wantScore: -120},
		{target: E2ELatency, report: r, want: 900, wantScore: -900},
		{target: MinGPUs, report: r, gpus: 4, want: 4, wantScore: -4},
		// Half an hour on 2 GPUs: 1 GPU-hour over 0.5 h.
		{target: ThroughputPerGPU, report: map[string]float64{"output_throughput_tok_s": 900, "gpu_hours": 1, "duration_ms": 1.8e6}, want: 450, wantScore: 450},
		{target: ThroughputPerGPU, report: map[string]float64{"output_throughput_tok_s": 900}, want: 0, wantScore: 0},
		{target: ThroughputPerGPU, report: map[string]float64{"output_throughput_tok_s": 900, "gpu_hours": 1, "duration_ms": 0}, want: 0, wantScore: 0},
		{target: Throughput, report: map[string]float64{}, want: 0, wantScore: 0},
		{target: TTFT, report: report(1, "mean_ttft_ms", 120.0, "num_ttft_samples", 0.0), want: math.Inf(1), wantScore: math.Inf(-1)},
		{target: E2ELatency, report: map[string]float64{"mean_e2e_latency_ms": 5}, want: math.Inf(1), wantScore: math.Inf(-1)},
		{target: MinGPUs, report: r, wantErr: "min_gpus needs a positive provisioned GPU count, got 0"},
		{target: Pareto, report: r, wantErr: "pareto is multi-objective"},
		{target: "speed", report: r, wantErr: `unknown optimization target "speed"`},
	} {
		t.Run(tc.target, func(t *testing.T) {
			got, err := Objective(tc.report, tc.target, tc.gpus)
			score, scoreErr := Score(tc.report, tc.target, tc.gpus)
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

func TestSLAViolations(t *testing.T) {
	sla := SLA{TTFTMs: ptr.To(300.0), ITLMs: ptr.To(25.0)}
	for _, tc := range []struct {
		name   string
		report map[string]float64
		sla    SLA
		want   []string
	}{
		{name: "meets", report: report(1, "mean_ttft_ms", 200.0, "mean_tpot_ms", 20.0), sla: sla},
		{name: "bounds are inclusive", report: report(1, "mean_ttft_ms", 300.0, "mean_tpot_ms", 25.0), sla: sla},
		// The ITL bound reads mean_tpot_ms, never mean_itl_ms.
		{name: "itl bound on tpot", report: report(1, "mean_ttft_ms", 200.0, "mean_tpot_ms", 30.0, "mean_itl_ms", 10.0), sla: sla, want: []string{"tpot 30ms > 25ms"}},
		{name: "itl bound ignores itl", report: report(1, "mean_ttft_ms", 200.0, "mean_tpot_ms", 20.0, "mean_itl_ms", 90.0), sla: sla},
		{name: "no samples", report: report(1, "mean_ttft_ms", 200.0, "mean_tpot_ms", 20.0, "num_tpot_samples", 0.0), sla: sla,
			want: []string{"tpot has no qualifying samples (num_tpot_samples=0)"}},
		{name: "an invalid prediction", report: map[string]float64{"completed_requests": 0, "num_ttft_samples": 0}, sla: SLA{TTFTMs: ptr.To(300.0)},
			want: []string{"completed_requests is zero", "ttft has no qualifying samples (num_ttft_samples=0)", "ttft metric mean_ttft_ms is missing"}},
		{name: "missing counts", report: map[string]float64{"mean_e2e_latency_ms": 1}, sla: SLA{E2EMs: ptr.To(2000.0)},
			want: []string{"completed_requests is missing", "e2e sample count num_e2e_latency_samples is missing"}},
		{name: "non-finite", report: report(1, "mean_ttft_ms", math.Inf(1)), sla: SLA{TTFTMs: ptr.To(300.0)}, want: []string{"ttft metric mean_ttft_ms is non-finite"}},
		{name: "over two bounds", report: report(1, "mean_ttft_ms", 1234.5678, "mean_tpot_ms", 26.0), sla: sla, want: []string{"ttft 1234.57ms > 300ms", "tpot 26ms > 25ms"}},
		{name: "no bound checks only completion", report: map[string]float64{"completed_requests": 0}, want: []string{"completed_requests is zero"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, SLAViolations(tc.report, tc.sla)); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	tpg := func(tokS, gpus float64) map[string]float64 {
		return report(gpus, "output_throughput_tok_s", tokS, "mean_ttft_ms", 100.0, "mean_tpot_ms", 20.0, "mean_output_token_throughput_per_user", 50.0)
	}
	sla := &v1beta2.SLASpec{TTFTMs: ptr.To(300.0), ITLMs: ptr.To(25.0)}
	point := func(name string, m map[string]float64) Point { return Point{Name: name, Metrics: m} }
	with := func(m map[string]float64, k string, v float64) map[string]float64 { m[k] = v; return m }
	for _, tc := range []struct {
		name    string
		in      Input
		want    Decision
		wantErr string
	}{
		{
			name: "better by more than the margin",
			// 3,680 tok/s on 2 GPUs = 1,840 per GPU; 1,510 on 1 GPU.
			in: Input{Target: v1beta2.TargetThroughputPerGPU, SLA: sla, Baseline: point("d0", tpg(1510, 1)), Candidate: point("c1", tpg(3680, 2)), Margin: 0.1},
			want: Decision{Improvement: metav1.ConditionTrue, Reason: BetterCandidate, BaselineObjective: ptr.To(1510.0), CandidateObjective: ptr.To(1840.0),
				Message: "candidate c1 1,840 tok/s/GPU vs deployed d0 1,510 (+21.9%, margin 10%)"},
		},
		{
			name: "the default target is AISimulate's, throughput",
			in:   Input{Baseline: point("d0", tpg(1510, 1)), Candidate: point("c1", tpg(3680, 2)), Margin: 0.1},
			want: Decision{Improvement: metav1.ConditionTrue, Reason: BetterCandidate, BaselineObjective: ptr.To(1510.0), CandidateObjective: ptr.To(3680.0),
				Message: "candidate c1 3,680 tok/s vs deployed d0 1,510 (+143.7%, margin 10%)"},
		},
		{
			name: "better within the margin",
			in:   Input{Target: v1beta2.TargetThroughputPerGPU, SLA: sla, Baseline: point("d0", tpg(1510, 1)), Candidate: point("c1", tpg(1600, 1)), Margin: 0.1},
			want: Decision{Improvement: metav1.ConditionFalse, Reason: BaselineStillBest, BaselineObjective: ptr.To(1510.0), CandidateObjective: ptr.To(1600.0),
				Message: "candidate c1 1,600 tok/s/GPU vs deployed d0 1,510 (+6.0%, margin 10%)"},
		},
		{
			name: "exactly the margin",
			in:   Input{Target: v1beta2.TargetThroughput, Baseline: point("d0", tpg(1000, 1)), Candidate: point("c1", tpg(1100, 1)), Margin: 0.1},
			want: Decision{Improvement: metav1.ConditionTrue, Reason: BetterCandidate, BaselineObjective: ptr.To(1000.0), CandidateObjective: ptr.To(1100.0),
				Message: "candidate c1 1,100 tok/s vs deployed d0 1,000 (+10.0%, margin 10%)"},
		},
		{
			name: "equal at margin 0 keeps the baseline",
			in:   Input{Target: v1beta2.TargetThroughput, Baseline: point("d0", tpg(1000, 1)), Candidate: point("c1", tpg(1000, 1))},
			want: Decision{Improvement: metav1.ConditionFalse, Reason: BaselineStillBest, BaselineObjective: ptr.To(1000.0), CandidateObjective: ptr.To(1000.0),
				Message: "candidate c1 1,000 tok/s vs deployed d0 1,000 (+0.0%, margin 0%)"},
		},
		{
			name: "minimized: 80 ms against 100 ms",
			in: Input{Target: v1beta2.TargetTTFT, Baseline: point("d0", tpg(1000, 1)),
				Candidate: point("c1", with(tpg(1000, 1), "mean_ttft_ms", 80)), Margin: 0.1},
			want: Decision{Improvement: metav1.ConditionTrue, Reason: BetterCandidate, BaselineObjective: ptr.To(100.0), CandidateObjective: ptr.To(80.0),
				Message: "candidate c1 80 ms TTFT vs deployed d0 100 (-20.0%, margin 10%)"},
		},
		{
			name: "minimized: 95 ms is within the margin",
			in: Input{Target: v1beta2.TargetTTFT, Baseline: point("d0", tpg(1000, 1)),
				Candidate: point("c1", with(tpg(1000, 1), "mean_ttft_ms", 95)), Margin: 0.1},
			want: Decision{Improvement: metav1.ConditionFalse, Reason: BaselineStillBest, BaselineObjective: ptr.To(100.0), CandidateObjective: ptr.To(95.0),
				Message: "candidate c1 95 ms TTFT vs deployed d0 100 (-5.0%, margin 10%)"},
		},
		{
			name: "the candidate misses the SLA on tpot",
			in: Input{Target: v1beta2.TargetThroughputPerGPU, SLA: sla, Baseline: point("d0", tpg(1000, 1)),
				Candidate: point("c1", with(with(tpg(5000, 1), "mean_tpot_ms", 30), "mean_itl_ms", 10)), Margin: 0.1},
			want: Decision{Improvement: metav1.ConditionFalse, Reason: BaselineStillBest, BaselineObjective: ptr.To(1000.0), CandidateObjective: ptr.To(5000.0),
				Message: "candidate c1 misses the SLA (tpot 30ms > 25ms); deployed d0 stays"},
		},
		{
			name: "the baseline misses the SLA under the new traffic",
			in: Input{Target: v1beta2.TargetThroughputPerGPU, SLA: sla, Baseline: point("d0", with(tpg(2000, 1), "mean_ttft_ms", 450)),
				Candidate: point("c1", tpg(1500, 1)), Margin: 0.1},
			want: Decision{Improvement: metav1.ConditionTrue, Reason: BaselineMissesSLA, BaselineObjective: ptr.To(2000.0), CandidateObjective: ptr.To(1500.0),
				Message: "deployed d0 misses the SLA under this traffic (ttft 450ms > 300ms), candidate c1 meets it: candidate c1 1,500 tok/s/GPU vs deployed d0 2,000"},
		},
		{
			name: "an invalid baseline prediction misses the SLA",
			in: Input{Target: v1beta2.TargetThroughputPerGPU, SLA: &v1beta2.SLASpec{ITLMs: ptr.To(25.0)},
				Baseline: point("d0", map[string]float64{"completed_requests": 0, "num_tpot_samples": 0}), Candidate: point("c1", tpg(1500, 1)), Margin: 0.1},
			want: Decision{Improvement: metav1.ConditionTrue, Reason: BaselineMissesSLA, BaselineObjective: ptr.To(0.0), CandidateObjective: ptr.To(1500.0),
				Message: "deployed d0 misses the SLA under this traffic (completed_requests is zero; tpot has no qualifying samples (num_tpot_samples=0); " +
					"tpot metric mean_tpot_ms is missing), candidate c1 meets it: candidate c1 1,500 tok/s/GPU vs deployed d0 0"},
		},
		{
			name: "no baseline",
			in:   Input{Target: v1beta2.TargetThroughputPerGPU, Baseline: Point{Name: "d0"}, Candidate: point("c1", tpg(1500, 1)), Margin: 0.1},
			want: Decision{Improvement: metav1.ConditionUnknown, Reason: BaselineUnavailable, CandidateObjective: ptr.To(1500.0),
				Message: "no baseline prediction of deployed d0; candidate c1 1,500 tok/s/GPU"},
		},
		{
			name: "pareto: better per GPU, no worse per user",
			in: Input{Target: v1beta2.TargetPareto, Baseline: point("d0", tpg(1000, 1)),
				Candidate: point("c1", with(tpg(1200, 1), "mean_output_token_throughput_per_user", 50)), Margin: 0.1},
			want: Decision{Improvement: metav1.ConditionTrue, Reason: BetterCandidate, BaselineObjective: ptr.To(1000.0), CandidateObjective: ptr.To(1200.0),
				Message: "candidate c1 1,200 tok/s/GPU, 50 tok/s/user vs deployed d0 1,000 tok/s/GPU, 50 tok/s/user (+20.0%, margin 10%)"},
		},
		{
			name: "pareto: better per GPU, worse per user",
			in: Input{Target: v1beta2.TargetPareto, Baseline: point("d0", tpg(1000, 1)),
				Candidate: point("c1", with(tpg(1500, 1), "mean_output_token_throughput_per_user", 42.5)), Margin: 0.1},
			want: Decision{Improvement: metav1.ConditionFalse, Reason: BaselineStillBest, BaselineObjective: ptr.To(1000.0), CandidateObjective: ptr.To(1500.0),
				Message: "candidate c1 1,500 tok/s/GPU, 42.5 tok/s/user vs deployed d0 1,000 tok/s/GPU, 50 tok/s/user (+50.0%, margin 10%)"},
		},
		{name: "unknown target", in: Input{Target: "speed", Candidate: point("c1", tpg(1, 1))}, wantErr: `spec.objective.target: unsupported value "speed"`},
		{name: "margin of 1", in: Input{Candidate: point("c1", tpg(1, 1)), Margin: 1}, wantErr: "margin: must be in [0, 1), got 1"},
		{name: "negative margin", in: Input{Candidate: point("c1", tpg(1, 1)), Margin: -0.1}, wantErr: "margin: must be in [0, 1)"},
		{name: "NaN margin", in: Input{Candidate: point("c1", tpg(1, 1)), Margin: math.NaN()}, wantErr: "margin: must be in [0, 1)"},
		{name: "no candidate", in: Input{Baseline: point("d0", tpg(1, 1))}, wantErr: "candidate.metrics: required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decide(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("decision (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNumber(t *testing.T) {
	for v, want := range map[float64]string{
		1840.4: "1,840", 1234567: "1,234,567", 100: "100", 99.5: "99.5", 6.158: "6.16", 0: "0", -2500: "-2,500", math.Inf(1): "no samples",
	} {
		if got := number(v); got != want {
			t.Errorf("number(%v) = %q, want %q", v, got, want)
		}
	}
}
