package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/dgdr-operator/dgdr-operator/tools/aisim/app"
)

// p6Doc is the operator's typical lowering for Llama-3.1-8B-Instruct on H200 at a 64-GPU
// budget: the document of docs/design/aisim.md's budget-64 benchmark (both backends and modes, a
// kv_capacity_fraction range, strict SLA, 320 trials).
const p6Doc = `engine: {model: meta-llama/Llama-3.1-8B-Instruct, hardware: h200_sxm, backend: {choices: [vllm, sglang]}}
optimization: {target: throughput_per_gpu, strict_sla: true, constraints: {max_candidate_gpus: 64}}
optimizer: {max_trials: 320}
evaluation: {sla: {ttft_ms: 500, itl_ms: 30}}
traffic:
  source: {type: synthetic, input_tokens: 1024, output_tokens: 128}
  load: {type: kv_capacity_fraction, fraction: {range: {min: 0.1, max: 1.0}}}
  stop: {requests: 1000}
`

// benchAISim times full `aisim recommend` runs of p6Doc in process (load, enumerate, search,
// write recommendation.json, the events file and the recommendations): one warm-up, then the
// median of runs.
func benchAISim(runs int) (figure, error) {
	dir, err := os.MkdirTemp("", "bench-p6-")
	if err != nil {
		return figure{}, err
	}
	defer os.RemoveAll(dir)
	cfg := filepath.Join(dir, "input.yaml")
	if err := os.WriteFile(cfg, []byte(p6Doc), 0o644); err != nil {
		return figure{}, err
	}
	once := func(i int) (float64, error) {
		var stderr strings.Builder
		start := time.Now()
		code := app.Recommend(context.Background(), app.Options{
			ConfigPath: cfg, OutputDir: filepath.Join(dir, fmt.Sprintf("out-%d", i)), Format: "json",
			Stdout: io.Discard, Stderr: &stderr,
		})
		if code != 0 {
			return 0, fmt.Errorf("aisim recommend exited %d: %s", code, stderr.String())
		}
		return time.Since(start).Seconds(), nil
	}
	if _, err := once(0); err != nil {
		return figure{}, err
	}
	times := make([]float64, runs)
	for i := range times {
		if times[i], err = once(i + 1); err != nil {
			return figure{}, err
		}
	}
	slices.Sort(times)
	med := times[len(times)/2]
	return figure{
		id: "P6", name: "aisim_recommend_budget64_s", value: med, goal: 1, ok: med <= 1,
		extra: fmt.Sprintf("min_s=%.2f max_s=%.2f", times[0], times[len(times)-1]),
		note:  fmt.Sprintf("median of %d full aisim recommend runs (Llama-3.1-8B-Instruct, h200_sxm, max_candidate_gpus 64, 320 trials), in process after one warm-up", runs),
	}, nil
}
