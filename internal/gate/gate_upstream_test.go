package gate_test

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/internal/gate"
	"github.com/dgdr-operator/dgdr-operator/internal/upstreamtest"
)

// A search small enough for seconds: 3 trials of Qwen3-8B (a model config AISimulate bundles, so
// it runs offline) on at most 2 GPUs.
const search = `engine: {backend: vllm, mode: aggregated, hardware: h200_sxm, model: Qwen/Qwen3-8B, workers: {aggregated: {}}}
evaluation: {sla: {itl_ms: 25, ttft_ms: 300}}
optimization: {constraints: {max_candidate_gpus: 2}, target: throughput_per_gpu}
optimizer: {max_trials: 3}
traffic: {load: {concurrency: 8, type: concurrency}, source: {input_tokens: 512, output_tokens: 64, type: synthetic}, stop: {requests: 40}}
`

// TestRealAISimulateJudgesTheObjective: the real AISimulate is the judge of the gate's numbers
// (the scoring rule of internal/aisimulate/output the gate reads reports with, AISimulate's GPU
// basis). A real recommend's every candidate has the score the gate computes from its metrics; predict
// of the best candidate's recommendations/0001.yaml has the same objective, so the gate keeps it
// against itself; and for every scalar target and three SLAs, AISimulate's score_report,
// objective_value and aggregate_sla_violations (hack/upstream/score_judge.py) agree with the gate
// on those reports, on the real prediction of the test data and on edge cases.
func TestRealAISimulateJudgesTheObjective(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "search.yaml"), []byte(search), 0o644); err != nil {
		t.Fatal(err)
	}
	upstreamtest.RunAISimulate(t, dir, "recommend", "-c", "search.yaml", "--output-dir", "rec", "--format", "json")
	res, err := output.ReadSweepResult(filepath.Join(dir, "rec"))
	if err != nil {
		t.Fatal(err)
	}
	type scored struct {
		metrics output.Report
		gpus    int
	}
	var reports []scored
	var best *output.Candidate
	selected := res.Views.Selected()
	for i, c := range res.Candidates {
		if c.Score == nil {
			continue
		}
		reports = append(reports, scored{c.Metrics, c.UsedGPUs})
		got, err := output.Score(output.TargetThroughputPerGPU, c.Metrics, output.GPUs{Provisioned: c.UsedGPUs})
		if err != nil {
			t.Fatal(err)
		}
		if !near(got, *c.Score) {
			t.Errorf("%s: the gate's score %v, AISimulate's %v", c.CandidateID, got, *c.Score)
		}
		if len(selected) > 0 && c.CandidateID == selected[0] {
			best = &res.Candidates[i]
		}
	}
	if best == nil {
		t.Fatalf("no selected candidate with a score among %d", len(res.Candidates))
	}

	upstreamtest.RunAISimulate(t, dir, "predict", "-c", filepath.Join("rec", output.RecommendationsDir, "0001.yaml"), "--output-dir", "pred", "--format", "json")
	pred, err := output.ReadPrediction(filepath.Join(dir, "pred"))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := output.Score(output.TargetThroughputPerGPU, pred.Report(), output.GPUs{}); !near(got, *best.Score) {
		t.Errorf("predict of 0001.yaml: objective %v, the candidate's score %v", got, *best.Score)
	}
	d, err := gate.Decide(gate.Input{Target: v1beta2.TargetThroughputPerGPU, SLA: &v1beta2.SLASpec{ITLMs: ptr.To(25.0), TTFTMs: ptr.To(300.0)},
		Baseline: gate.Point{Name: "deployed", Metrics: pred.Report()}, Candidate: gate.Point{Name: "best", Metrics: best.Metrics}, Margin: 0.1})
	if err != nil || d.Improvement != metav1.ConditionFalse || d.Reason != gate.BaselineStillBest {
		t.Errorf("the same deployment against its own prediction: %+v, %v", d, err)
	}

	reports = append(reports, scored{pred.Report(), best.UsedGPUs})
	fixture, err := output.ReadPrediction("../aisimulate/output/testdata/aisimulate-0.13-predict")
	if err != nil {
		t.Fatal(err)
	}
	reports = append(reports,
		scored{fixture.Report(), 1},
		scored{output.Report{"completed_requests": 0, "num_requests": 40, "num_ttft_samples": 0, "num_tpot_samples": 0}, 2},
		scored{output.Report{"completed_requests": 3, "num_ttft_samples": 3, "mean_ttft_ms": 300, "num_tpot_samples": 3, "mean_tpot_ms": 25,
			"output_throughput_tok_s": 10, "gpu_hours": 0, "duration_ms": 5}, 1},
	)
	for _, sla := range []gate.SLA{
		{TTFTMs: ptr.To(300.0), ITLMs: ptr.To(25.0)},
		{TTFTMs: ptr.To(50.0), ITLMs: ptr.To(6.0)},
		{E2EMs: ptr.To(400.0)},
	} {
		type judged struct {
			Scores     map[string]*float64 `json:"scores"`
			Objectives map[string]*float64 `json:"objectives"`
			Violations []string            `json:"violations"`
		}
		req := map[string]any{"sla": map[string]*float64{"ttft_ms": sla.TTFTMs, "itl_ms": sla.ITLMs, "e2e_ms": sla.E2EMs}}
		var list []map[string]any
		for _, r := range reports {
			list = append(list, map[string]any{"metrics": r.metrics, "used_gpus": r.gpus})
		}
		req["reports"] = list
		payload, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		var want []judged
		if out := upstreamtest.RunPython(t, "score_judge.py", payload); json.Unmarshal(out, &want) != nil || len(want) != len(reports) {
			t.Fatalf("score_judge.py: %s", out)
		}
		for i, r := range reports {
			got := judged{Scores: map[string]*float64{}, Objectives: map[string]*float64{}, Violations: gate.SLAViolations(r.metrics, sla)}
			for target := range want[i].Scores {
				gpus := output.GPUs{Provisioned: r.gpus, Basis: output.TimeAveragedGPUs}
				s, err := output.Score(target, r.metrics, gpus)
				if err != nil {
					t.Fatalf("report %d, %s: %v", i, target, err)
				}
				o, _ := output.Objective(target, r.metrics, gpus)
				got.Scores[target], got.Objectives[target] = finite(s), finite(o)
			}
			if diff := cmp.Diff(want[i], got, cmpopts.EquateEmpty(), cmpopts.EquateApprox(1e-12, 0)); diff != "" {
				t.Errorf("report %d (%v): AISimulate (-) and the gate (+):\n%s", i, r.metrics, diff)
			}
		}
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b)) }

func finite(v float64) *float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return nil
	}
	return &v
}
