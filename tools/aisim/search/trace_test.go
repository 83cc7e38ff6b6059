package search

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/trace"
)

// A recommend over a speedup domain: every topology is replayed at both speedups; the offered
// rate (request_rate) doubles and every request of the trace is replayed each time.
func TestTraceSpeedupDomain(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "trace.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := trace.Generate(f, trace.GenerateOptions{Seed: 4, Requests: 120, Rate: 3, PrefixGroups: 4, PrefixTokens: 1024,
		InputTokens: 2048, OutputTokens: 64, BlockSize: 512}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	env := mustEnv(t, fmt.Sprintf(`
engine: {model: meta-llama/Llama-3.1-8B-Instruct, hardware: h200_sxm, backend: vllm, mode: aggregated, workers: {aggregated: {}}}
optimization: {constraints: {max_candidate_gpus: 2}}
optimizer: {max_trials: 1000}
traffic:
  source: {type: trace, paths: [%s]}
  load: {type: trace_timestamps, speedup: {choices: [1, 2]}}
`, path))
	if err := env.LoadTrace(); err != nil {
		t.Fatal(err)
	}
	run, err := env.Recommend(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	rate := map[float64]float64{}
	for i, c := range run.Candidates {
		if c.Status != output.StatusFeasible {
			continue
		}
		o := run.Trials[i]
		if c.Metrics["num_requests"] != 120 || c.Metrics["completed_requests"] != 120 {
			t.Errorf("%s: %v of %v requests", c.CandidateID, c.Metrics["completed_requests"], c.Metrics["num_requests"])
		}
		rate[o.Point.Load] = c.Metrics["request_rate"]
		if got := c.PredictionConfig.Traffic.Load.Speedup; got == nil || *got != o.Point.Load {
			t.Errorf("%s: prediction_config speedup %v, point %v", c.CandidateID, got, o.Point.Load)
		}
	}
	if len(rate) != 2 || rate[2] != 2*rate[1] || rate[1] != env.Trace.Rate() {
		t.Errorf("request_rate by speedup %v; the trace's rate is %.4f", rate, env.Trace.Rate())
	}
}
