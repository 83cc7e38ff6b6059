package gate

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
)

// report is a replay report of a static deployment of gpus GPUs that ran for 1 h.
func report(gpus float64, kv ...any) output.Report {
	m := output.Report{
		"completed_requests": 100, "num_ttft_samples": 100, "num_tpot_samples": 100, "num_e2e_latency_samples": 100,
		"duration_ms": 3.6e6, "gpu_hours": gpus,
	}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1].(float64)
	}
	return m
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
			checkDecision(t, got, err, tc.want, tc.wantErr)
		})
	}
}

// TestDecideMetricsAgreesWithDecide: deciding on two deployments' published metrics comes out
// as deciding on their replay reports, for every target the API has, with and without SLAs, when
// the metrics are what the reporter publishes of those reports (throughput per GPU over the
// deployment's GPUs, the score of the search's target, the TPOT beside them).
func TestDecideMetricsAgreesWithDecide(t *testing.T) {
	type deployment struct{ tput, gpus, perUser, ttft, tpot, itl, e2e, goodput float64 }
	deployments := map[string]deployment{
		"d0":      {tput: 1510, gpus: 1, perUser: 50, ttft: 100, tpot: 20, itl: 19, e2e: 800, goodput: 1400},
		"fast":    {tput: 3680, gpus: 2, perUser: 55, ttft: 80, tpot: 18, itl: 17, e2e: 700, goodput: 3500},
		"slow":    {tput: 1600, gpus: 1, perUser: 42.5, ttft: 450, tpot: 30, itl: 12, e2e: 1200, goodput: 900},
		"same":    {tput: 1510, gpus: 1, perUser: 50, ttft: 100, tpot: 20, itl: 19, e2e: 800, goodput: 1400},
		"doubled": {tput: 3020, gpus: 2, perUser: 50, ttft: 100, tpot: 20, itl: 19, e2e: 800, goodput: 2800},
	}
	reportOf := func(d deployment) output.Report {
		return report(d.gpus, "output_throughput_tok_s", d.tput, "mean_output_token_throughput_per_user", d.perUser, "mean_ttft_ms", d.ttft,
			"mean_tpot_ms", d.tpot, "mean_itl_ms", d.itl, "mean_e2e_latency_ms", d.e2e, "goodput_output_throughput_tok_s", d.goodput)
	}
	published := func(name string, d deployment, target v1beta2.ObjectiveTarget) Deployment {
		m := &v1beta2.CandidateMetrics{Throughput: ptr.To(d.tput), ThroughputPerGPU: ptr.To(d.tput / d.gpus), ThroughputPerUser: ptr.To(d.perUser),
			TTFTMs: ptr.To(d.ttft), ITLMs: ptr.To(d.itl), E2EMs: ptr.To(d.e2e), GPUs: int32(d.gpus)}
		if name, _ := aisimulateTarget(target); name != output.TargetPareto {
			score, err := output.Score(name, reportOf(d), output.GPUs{Provisioned: int(d.gpus)})
			if err != nil {
				t.Fatal(err)
			}
			m.Score = &score
		}
		return Deployment{Name: name, Metrics: m, MeanTPOTMs: ptr.To(d.tpot)}
	}
	targets := []v1beta2.ObjectiveTarget{"", v1beta2.TargetThroughput, v1beta2.TargetThroughputPerGPU, v1beta2.TargetThroughputPerUser,
		v1beta2.TargetGoodput, v1beta2.TargetGoodputPerGPU, v1beta2.TargetTTFT, v1beta2.TargetE2ELatency, v1beta2.TargetPareto}
	slas := []*v1beta2.SLASpec{nil, {TTFTMs: ptr.To(300.0), ITLMs: ptr.To(25.0)}, {E2EMs: ptr.To(900.0)}}
	compared := 0
	for _, target := range targets {
		for _, sla := range slas {
			for base, b := range deployments {
				for cand, c := range deployments {
					in := Input{Target: target, SLA: sla, Margin: 0.1,
						Baseline: Point{Name: base, Metrics: reportOf(b)}, Candidate: Point{Name: cand, Metrics: reportOf(c)}}
					want, err := Decide(in)
					if err != nil {
						t.Fatal(err)
					}
					got, err := DecideMetrics(MetricsInput{Target: target, SLA: sla, Margin: 0.1,
						Baseline: published(base, b, target), Candidate: published(cand, c, target)})
					if err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("target %q, SLA %v, %s against %s: report (-) and metrics (+):\n%s", target, sla, cand, base, diff)
					}
					compared++
				}
			}
		}
	}
	if compared != len(targets)*len(slas)*len(deployments)*len(deployments) {
		t.Fatalf("compared %d decisions", compared)
	}
}

func aisimulateTarget(t v1beta2.ObjectiveTarget) (string, bool) {
	if t == "" {
		t = v1beta2.TargetThroughput
	}
	return aisimulate.TargetName(t)
}

// TestDecideMetrics: what only published metrics bring: goodput read from the score, the ITL
// bound on the baseline's TPOT or else the published ITL, throughput per GPU computed when
// only the throughput was published, and missing metrics named by their API fields.
func TestDecideMetrics(t *testing.T) {
	sla := &v1beta2.SLASpec{TTFTMs: ptr.To(300.0), ITLMs: ptr.To(25.0)}
	metrics := func(tput float64, gpus int32) *v1beta2.CandidateMetrics {
		return &v1beta2.CandidateMetrics{Throughput: ptr.To(tput), ThroughputPerGPU: ptr.To(tput / float64(gpus)), ThroughputPerUser: ptr.To(50.0),
			TTFTMs: ptr.To(100.0), ITLMs: ptr.To(20.0), E2EMs: ptr.To(800.0), GPUs: gpus}
	}
	with := func(m *v1beta2.CandidateMetrics, set func(*v1beta2.CandidateMetrics)) *v1beta2.CandidateMetrics {
		set(m)
		return m
	}
	for _, tc := range []struct {
		name    string
		in      MetricsInput
		want    Decision
		wantErr string
	}{
		{
			name: "goodput is the score",
			in: MetricsInput{Target: v1beta2.TargetGoodputPerGPU, Margin: 0.1,
				Baseline:  Deployment{Name: "d0", Metrics: with(metrics(1000, 1), func(m *v1beta2.CandidateMetrics) { m.Score = ptr.To(900.0) })},
				Candidate: Deployment{Name: "c1", Metrics: with(metrics(4000, 2), func(m *v1beta2.CandidateMetrics) { m.Score = ptr.To(1200.0) })}},
			want: Decision{Improvement: metav1.ConditionTrue, Reason: BetterCandidate, BaselineObjective: ptr.To(900.0), CandidateObjective: ptr.To(1200.0),
				Message: "candidate c1 1,200 tok/s/GPU goodput vs deployed d0 900 (+33.3%, margin 10%)"},
		},
		{
			name: "the baseline's TPOT, not its ITL, meets the ITL bound",
			in: MetricsInput{Target: v1beta2.TargetThroughputPerGPU, SLA: sla, Margin: 0.1,
				Baseline:  Deployment{Name: "d0", Metrics: metrics(2000, 1), MeanTPOTMs: ptr.To(26.0)},
				Candidate: Deployment{Name: "c1", Metrics: metrics(1500, 1)}},
			want: Decision{Improvement: metav1.ConditionTrue, Reason: BaselineMissesSLA, BaselineObjective: ptr.To(2000.0), CandidateObjective: ptr.To(1500.0),
				Message: "deployed d0 misses the SLA under this traffic (tpot 26ms > 25ms), candidate c1 meets it: candidate c1 1,500 tok/s/GPU vs deployed d0 2,000"},
		},
		{
			name: "a candidate's published ITL meets the ITL bound",
			in: MetricsInput{Target: v1beta2.TargetThroughputPerGPU, SLA: sla, Margin: 0.1,
				Baseline:  Deployment{Name: "d0", Metrics: metrics(1000, 1), MeanTPOTMs: ptr.To(20.0)},
				Candidate: Deployment{Name: "c1", Metrics: with(metrics(5000, 1), func(m *v1beta2.CandidateMetrics) { m.ITLMs = ptr.To(30.0) })}},
			want: Decision{Improvement: metav1.ConditionFalse, Reason: BaselineStillBest, BaselineObjective: ptr.To(1000.0), CandidateObjective: ptr.To(5000.0),
				Message: "candidate c1 misses the SLA (tpot 30ms > 25ms); deployed d0 stays"},
		},
		{
			name: "missing metrics are named by their fields",
			in: MetricsInput{Target: v1beta2.TargetThroughputPerGPU, SLA: sla, Margin: 0.1,
				Baseline:  Deployment{Name: "d0", Metrics: with(metrics(2000, 1), func(m *v1beta2.CandidateMetrics) { m.TTFTMs = nil })},
				Candidate: Deployment{Name: "c1", Metrics: metrics(1500, 1)}},
			want: Decision{Improvement: metav1.ConditionTrue, Reason: BaselineMissesSLA, BaselineObjective: ptr.To(2000.0), CandidateObjective: ptr.To(1500.0),
				Message: "deployed d0 misses the SLA under this traffic (ttft metric ttftMs is missing), candidate c1 meets it: candidate c1 1,500 tok/s/GPU vs deployed d0 2,000"},
		},
		{
			name: "throughput per GPU from the throughput and the GPUs",
			in: MetricsInput{Target: v1beta2.TargetThroughputPerGPU, Margin: 0.1,
				Baseline:  Deployment{Name: "d0", Metrics: &v1beta2.CandidateMetrics{Throughput: ptr.To(3000.0), GPUs: 2}},
				Candidate: Deployment{Name: "c1", Metrics: metrics(1700, 1)}},
			want: Decision{Improvement: metav1.ConditionTrue, Reason: BetterCandidate, BaselineObjective: ptr.To(1500.0), CandidateObjective: ptr.To(1700.0),
				Message: "candidate c1 1,700 tok/s/GPU vs deployed d0 1,500 (+13.3%, margin 10%)"},
		},
		{
			name: "a latency target without the latency",
			in: MetricsInput{Target: v1beta2.TargetE2ELatency, Margin: 0.1,
				Baseline:  Deployment{Name: "d0", Metrics: &v1beta2.CandidateMetrics{}},
				Candidate: Deployment{Name: "c1", Metrics: metrics(1600, 1)}},
			want: Decision{Improvement: metav1.ConditionTrue, Reason: BetterCandidate, BaselineObjective: ptr.To(math.Inf(1)), CandidateObjective: ptr.To(800.0),
				Message: "candidate c1 800 ms E2E vs deployed d0 no samples (no relative change, margin 10%)"},
		},
		{
			name: "no baseline",
			in:   MetricsInput{Target: v1beta2.TargetThroughputPerGPU, Baseline: Deployment{Name: "d0"}, Candidate: Deployment{Name: "c1", Metrics: metrics(1500, 1)}},
			want: Decision{Improvement: metav1.ConditionUnknown, Reason: BaselineUnavailable, CandidateObjective: ptr.To(1500.0),
				Message: "no baseline prediction of deployed d0; candidate c1 1,500 tok/s/GPU"},
		},
		{name: "unknown target", in: MetricsInput{Target: "speed", Candidate: Deployment{Metrics: metrics(1, 1)}}, wantErr: `spec.objective.target: unsupported value "speed"`},
		{name: "margin of 1", in: MetricsInput{Candidate: Deployment{Metrics: metrics(1, 1)}, Margin: 1}, wantErr: "margin: must be in [0, 1), got 1"},
		{name: "no candidate", in: MetricsInput{Baseline: Deployment{Metrics: metrics(1, 1)}}, wantErr: "candidate.metrics: required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecideMetrics(tc.in)
			checkDecision(t, got, err, tc.want, tc.wantErr)
		})
	}
}

// checkDecision fails t unless the decision is want, or the error contains wantErr.
func checkDecision(t *testing.T, got Decision, err error, want Decision, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("error %v, want %q", err, wantErr)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decision (-want +got):\n%s", diff)
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
