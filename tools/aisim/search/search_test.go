package search

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/input"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/perf"
)

// smallDoc keeps the space small enough to search exhaustively in tests. Its engine.mode is the
// default domain (aggregated and disaggregated), with the worker roles AISimulate requires for it.
func smallDoc(model, hw, target string, budget int, extra string) string {
	return fmt.Sprintf(`
engine: {model: %s, hardware: %s, backend: {choices: [vllm, sglang]}, workers: {aggregated: {}, prefill: {}, decode: {}}}
optimization: {target: %s, constraints: {max_candidate_gpus: %d}}
optimizer: {max_trials: 100000}
traffic:
  source: {type: synthetic, input_tokens: 1024, output_tokens: 64}
  load: {type: concurrency, concurrency: {choices: [8, 48]}}
  stop: {requests: 96}
%s`, model, hw, target, budget, extra)
}

func recommend(t *testing.T, doc string, sets ...string) (*Env, *Result) {
	t.Helper()
	env := mustEnv(t, doc, sets...)
	run, err := env.Recommend(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return env, run
}

func best(run *Result) float64 {
	if len(run.Selected) == 0 {
		return math.Inf(-1)
	}
	return *run.Candidates[run.Selected[0]].Score
}

// Property: a larger GPU budget searches a superset, so the best feasible
// score can only improve (exhaustive search; sampling could miss it).
func TestMoreGPUsNeverWorse(t *testing.T) {
	for _, target := range []string{"throughput", "throughput_per_gpu", "e2e_latency", "ttft"} {
		prev := math.Inf(-1)
		for _, budget := range []int{1, 2, 4, 8} {
			_, run := recommend(t, smallDoc("meta-llama/Llama-3.1-8B-Instruct", "h200_sxm", target, budget, ""))
			if !run.Exhaustive {
				t.Fatalf("%s/%d: search was sampled; the property needs exhaustive search", target, budget)
			}
			b := best(run)
			if b < prev {
				t.Errorf("%s: best score fell from %.4g to %.4g when the budget grew to %d", target, prev, b, budget)
			}
			prev = b
		}
	}
}

// Property: a GPU that dominates another in memory, bandwidth and compute
// never yields a worse best score.
func TestFasterGPUNeverWorse(t *testing.T) {
	for _, target := range []string{"throughput", "throughput_per_gpu", "e2e_latency"} {
		prev := math.Inf(-1)
		for _, hw := range []string{"a100_sxm", "h100_sxm", "h200_sxm", "b200_sxm"} {
			_, run := recommend(t, smallDoc("Qwen/Qwen3-8B", hw, target, 2, ""))
			b := best(run)
			if b < prev {
				t.Errorf("%s: best score fell from %.4g to %.4g on %s", target, prev, b, hw)
			}
			prev = b
		}
	}
}

// Property: tightening the SLA never adds feasible candidates.
func TestTighterSLANeverAddsFeasible(t *testing.T) {
	feasible := func(ttft, itl float64) map[string]bool {
		_, run := recommend(t, smallDoc("meta-llama/Llama-3.1-8B-Instruct", "h200_sxm", "throughput", 4,
			fmt.Sprintf("evaluation: {sla: {ttft_ms: %g, itl_ms: %g}}", ttft, itl)), "optimization.strict_sla=true")
		out := map[string]bool{}
		for _, c := range run.Candidates {
			if c.Status == output.StatusFeasible {
				out[string(mustJSON(c.Config))] = true
			}
		}
		return out
	}
	loose := feasible(5000, 100)
	mid := feasible(300, 15)
	tight := feasible(100, 8)
	if len(loose) == 0 || len(mid) >= len(loose) {
		t.Fatalf("SLAs do not discriminate: loose=%d mid=%d tight=%d", len(loose), len(mid), len(tight))
	}
	for name, pair := range map[string][2]map[string]bool{"mid⊆loose": {mid, loose}, "tight⊆mid": {tight, mid}} {
		for k := range pair[0] {
			if !pair[1][k] {
				t.Errorf("%s: %s feasible under the tighter SLA only", name, k)
			}
		}
	}
}

func TestSearchIsDeterministicAndSampledBySeed(t *testing.T) {
	doc := benchDoc(8)
	_, a := recommend(t, doc, "optimizer.max_trials=40")
	_, b := recommend(t, doc, "optimizer.max_trials=40")
	if diff := cmp.Diff(a.Candidates, b.Candidates); diff != "" {
		t.Fatalf("two runs differ (-a +b):\n%s", diff)
	}
	if a.Exhaustive || len(a.Candidates) != 40 {
		t.Fatalf("want a 40-trial sample, got %d (exhaustive=%v)", len(a.Candidates), a.Exhaustive)
	}
	_, c := recommend(t, doc, "optimizer.max_trials=40", "optimizer.seed=7")
	if cmp.Equal(a.Candidates, c.Candidates) {
		t.Errorf("a different seed picked the same sample")
	}
	// The budget is split evenly across the two mode branches.
	modes := map[any]int{}
	for _, cand := range a.Candidates {
		modes[cand.Config["mode"]]++
	}
	if diff := cmp.Diff(map[any]int{"agg": 20, "disagg": 20}, modes); diff != "" {
		t.Errorf("branch split (-want +got):\n%s", diff)
	}
}

func TestKVCapacityFractionResolution(t *testing.T) {
	_, run := recommend(t, benchDoc(2), "optimizer.max_trials=1000", "optimization.strict_sla=false")
	checked := 0
	for _, c := range run.Candidates {
		if c.Metrics == nil {
			continue
		}
		f := c.Config["kv_load_ratio"].(float64)
		capConc := math.Floor(c.Metrics["kv_load_capacity_tokens"] / float64(1024+64))
		want := math.Max(1, math.Floor(f*capConc))
		if c.Metrics["concurrency"] != want || c.Metrics["kv_load_concurrency_capacity"] != capConc {
			t.Errorf("%s: concurrency %v, want max(1, floor(%v × %v)) = %v", c.CandidateID, c.Metrics["concurrency"], f, capConc, want)
		}
		// The saved config materializes the load as concurrency.
		load := c.PredictionConfig.Traffic.Load
		if diff := cmp.Diff(output.Load{Type: "concurrency", Concurrency: int(want)}, load); diff != "" {
			t.Errorf("%s: saved load (-want +got):\n%s", c.CandidateID, diff)
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no candidate was simulated")
	}
}

func TestBudgetAndScoring(t *testing.T) {
	env, run := recommend(t, smallDoc("meta-llama/Llama-3.1-8B-Instruct", "h200_sxm", "throughput_per_gpu", 8,
		"evaluation: {sla: {ttft_ms: 2000}}"), "optimization.constraints.min_candidate_gpus=2")
	for _, c := range run.Candidates {
		if c.UsedGPUs < 2 || c.UsedGPUs > 8 {
			t.Errorf("%s uses %d GPUs, outside [2, 8]", c.CandidateID, c.UsedGPUs)
		}
		if c.Score != nil {
			want := c.Metrics["output_throughput_tok_s"] / float64(c.UsedGPUs)
			if math.Abs(*c.Score-want) > 1e-9*want {
				t.Errorf("%s: score %v, want throughput/GPU %v", c.CandidateID, *c.Score, want)
			}
		}
	}
	// top_n is sorted best first with ties broken by fewer GPUs.
	for i := 1; i < len(run.Selected); i++ {
		a, b := run.Candidates[run.Selected[i-1]], run.Candidates[run.Selected[i]]
		if env.compare(a, b) >= 0 {
			t.Errorf("view order broken at %d: %v then %v", i, *a.Score, *b.Score)
		}
	}
	// Latency targets are negated so higher is better.
	_, lat := recommend(t, smallDoc("meta-llama/Llama-3.1-8B-Instruct", "h200_sxm", "e2e_latency", 2, ""))
	top := lat.Candidates[lat.Selected[0]]
	if *top.Score != -top.Metrics["mean_e2e_latency_ms"] {
		t.Errorf("e2e_latency score %v, want %v", *top.Score, -top.Metrics["mean_e2e_latency_ms"])
	}
}

func TestParetoFront(t *testing.T) {
	_, run := recommend(t, smallDoc("meta-llama/Llama-3.1-8B-Instruct", "h200_sxm", "pareto", 4, ""))
	front := map[int]bool{}
	for _, i := range run.Selected {
		front[i] = true
	}
	if len(front) < 2 {
		t.Fatalf("front has %d points", len(front))
	}
	prevUser := -1.0
	for _, i := range run.Selected {
		o := run.Candidates[i].Objectives
		if o["throughput_per_user"] < prevUser {
			t.Errorf("front not sorted by throughput_per_user")
		}
		prevUser = o["throughput_per_user"]
	}
	for i, c := range run.Candidates {
		if c.Status != output.StatusFeasible {
			continue
		}
		dominated := false
		for j := range front {
			if j != i && dominates(run.Candidates[j].Objectives, c.Objectives) {
				dominated = true
			}
		}
		if front[i] && dominated {
			t.Errorf("%s is on the front but dominated", c.CandidateID)
		}
		if !front[i] && !dominated && !run.Trials[i].CacheHit {
			t.Errorf("%s is neither on the front nor dominated by it", c.CandidateID)
		}
	}
}

func TestPinnedShapes(t *testing.T) {
	doc := `
engine:
  model: meta-llama/Llama-3.1-8B-Instruct
  hardware: h200_sxm
  mode: aggregated
  backend: vllm
  workers:
    aggregated:
      parallelism:
        preset:
          - {replicas: 1, tensor: 2, pipeline: 1, attention_data: 1, moe_tensor: 1, moe_expert: 1}
          - {replicas: 1, tensor: 3, pipeline: 1, attention_data: 1, moe_tensor: 1, moe_expert: 1}
          - {replicas: 4, tensor: 4, pipeline: 1, attention_data: 1, moe_tensor: 1, moe_expert: 1}
optimization: {constraints: {max_candidate_gpus: 8}}
traffic: {source: {type: synthetic}, load: {concurrency: 8}, stop: {requests: 20}}`
	_, run := recommend(t, doc)
	var got [][3]string
	for _, c := range run.Candidates {
		got = append(got, [3]string{fmt.Sprint(c.UsedGPUs), c.Status, c.ReasonCategory})
	}
	want := [][3]string{{"2", "feasible", ""}, {"3", "unsupported", "backend_topology"}, {"16", "infeasible", "gpu_budget"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(output.Counts{Evaluated: 2, Feasible: 1, Infeasible: 1, Unsupported: 1}, run.Counts); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
}

func TestMoEShapes(t *testing.T) {
	env := mustEnv(t, smallDoc("Qwen/Qwen3-30B-A3B", "h200_sxm", "throughput", 4, ""))
	got := env.defaultWorkerShapes()
	// shape(tensor, attention_data, moe_tensor, moe_expert)
	shape := func(tp, dp, mt, me int) input.Shape {
		return input.Shape{Replicas: 1, Tensor: tp, Pipeline: 1, AttentionData: dp, MoETensor: mt, MoEExpert: me}
	}
	want := []input.Shape{
		shape(1, 1, 1, 1),
		shape(2, 1, 2, 1), shape(2, 1, 1, 2), shape(1, 2, 1, 2),
		shape(4, 1, 4, 1), shape(4, 1, 1, 4), shape(1, 4, 1, 4),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	_, run := recommend(t, smallDoc("Qwen/Qwen3-30B-A3B", "h200_sxm", "throughput", 4, ""), "engine.mode=aggregated", "engine.workers={aggregated: {}}")
	if run.Counts.Feasible == 0 {
		t.Errorf("no feasible MoE candidate: %+v", run.Counts)
	}
}

// Every saved recommendation is a valid predict document and replaying it
// reproduces the candidate's metrics exactly.
func TestPredictionConfigsReplay(t *testing.T) {
	_, run := recommend(t, benchDoc(4), "optimizer.max_trials=24", "optimization.strict_sla=false")
	if len(run.Selected) == 0 {
		t.Fatal("nothing selected")
	}
	for _, i := range run.Selected[:min(4, len(run.Selected))] {
		c := run.Candidates[i]
		data, err := yaml.Marshal(c.PredictionConfig)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := input.Decode(input.Predict, data, nil)
		if err != nil {
			t.Fatalf("%s: saved config is not a valid predict input: %v\n%s", c.CandidateID, err, data)
		}
		env := envFor(t, doc)
		space, err := env.Enumerate()
		if err != nil {
			t.Fatal(err)
		}
		pts, _ := env.Select(space)
		if len(pts) != 1 {
			t.Fatalf("%s: replay has %d points", c.CandidateID, len(pts))
		}
		pr := env.Prepare(pts[0])
		rep, err := env.Simulate(context.Background(), pr, noDeadline)
		if err != nil {
			t.Fatal(err)
		}
		got := Metrics(&Trial{Prepared: pr, Report: rep})
		for _, k := range []string{"output_throughput_tok_s", "mean_ttft_ms", "mean_tpot_ms", "concurrency", "num_requests"} {
			if got[k] != c.Metrics[k] {
				t.Errorf("%s: replayed %s = %v, recommend had %v", c.CandidateID, k, got[k], c.Metrics[k])
			}
		}
	}
}

var noDeadline time.Time

// dominates is the definition the front is checked against: at least as much of both
// objectives, more of one.
func dominates(a, b map[string]float64) bool {
	ge := a["throughput_per_gpu"] >= b["throughput_per_gpu"] && a["throughput_per_user"] >= b["throughput_per_user"]
	gt := a["throughput_per_gpu"] > b["throughput_per_gpu"] || a["throughput_per_user"] > b["throughput_per_user"]
	return ge && gt
}

// TestLatencyTargetNeedsSamples: aisim scores a trial as AISimulate does (output.Score), so a
// latency target reads a latency only when a request qualified it. A replay that completed no
// request has no objective for ttft or e2e_latency: the trial fails with invalid_metrics rather
// than ranking first with a mean latency of 0. A throughput target still scores it 0.
func TestLatencyTargetNeedsSamples(t *testing.T) {
	for _, tc := range []struct {
		target     string
		report     perf.Report
		wantStatus string
		wantScore  float64
	}{
		{target: "ttft", report: perf.Report{Requests: 8, DurationMs: 1000}, wantStatus: output.StatusFailed},
		{target: "e2e_latency", report: perf.Report{Requests: 8, DurationMs: 1000, TTFTSamples: 8, TTFT: perf.Stats{Mean: 40}}, wantStatus: output.StatusFailed},
		{target: "ttft", report: perf.Report{Requests: 8, DurationMs: 1000, TTFTSamples: 8, TTFT: perf.Stats{Mean: 40}}, wantStatus: output.StatusFeasible, wantScore: -40},
		{target: "e2e_latency", report: perf.Report{Requests: 8, Completed: 8, DurationMs: 1000, E2E: perf.Stats{Mean: 900}}, wantStatus: output.StatusFeasible, wantScore: -900},
		{target: "throughput", report: perf.Report{Requests: 8, DurationMs: 1000}, wantStatus: output.StatusFeasible, wantScore: 0},
	} {
		t.Run(tc.target, func(t *testing.T) {
			env := mustEnv(t, smallDoc("meta-llama/Llama-3.1-8B-Instruct", "h200_sxm", tc.target, 2, ""))
			space, err := env.Enumerate()
			if err != nil {
				t.Fatal(err)
			}
			pts, _ := env.Select(space)
			pr := env.Prepare(pts[0])
			rep := tc.report
			o := env.Finish(pr, &rep, nil)
			if pr.Status != tc.wantStatus {
				t.Fatalf("status %s (%s: %s), want %s", pr.Status, pr.ReasonCategory, pr.Reason, tc.wantStatus)
			}
			if tc.wantStatus != output.StatusFeasible {
				if pr.ReasonCategory != output.ReasonInvalidMetrics || !strings.Contains(pr.Reason, "no qualifying samples") || o.Score != nil {
					t.Errorf("reason %s: %s, score %v", pr.ReasonCategory, pr.Reason, o.Score)
				}
				return
			}
			if o.Score == nil || *o.Score != tc.wantScore {
				t.Errorf("score %v, want %v", o.Score, tc.wantScore)
			}
		})
	}
}
