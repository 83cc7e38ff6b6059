package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/app"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/trace"
)

// p8Trace is the replayed trace: 20,000 requests at 20 req/s (about 17 minutes of traffic),
// prompts of ~3k tokens in 16 groups sharing a 2k-token prefix, ~256-token responses.
var p8Trace = trace.GenerateOptions{Seed: 8, Requests: 20000, Rate: 20, PrefixGroups: 16, PrefixTokens: 2048,
	InputTokens: 3072, OutputTokens: 256, BlockSize: trace.DefaultBlockSize}

// p8Doc is the operator's lowering of examples/trace-configmap.yaml (timestamps at speedup 2,
// strict SLA) with an 8-GPU budget; the trace path is filled in.
const p8Doc = `engine: {model: meta-llama/Llama-3.1-8B-Instruct, hardware: h200_sxm}
optimization: {strict_sla: true, constraints: {max_candidate_gpus: 8}}
evaluation: {sla: {ttft_ms: 500, itl_ms: 25}}
traffic:
  source: {type: trace, paths: [%s], format: mooncake}
  load: {type: trace_timestamps, speedup: 2}
`

// benchTraceReplay (P8): the whole `aisim recommend` (read and parse the trace, enumerate,
// replay it on every candidate, write the output) on a 20,000-request mooncake trace with an
// 8-GPU budget, timed once after generating the trace; also reported: simulated requests per
// second of wall time over all candidates.
func benchTraceReplay() (figure, error) {
	dir, err := os.MkdirTemp("", "bench-p8-")
	if err != nil {
		return figure{}, err
	}
	defer os.RemoveAll(dir)
	tracePath := filepath.Join(dir, "trace.jsonl")
	f, err := os.Create(tracePath)
	if err != nil {
		return figure{}, err
	}
	if err := trace.Generate(f, p8Trace); err != nil {
		return figure{}, err
	}
	if err := f.Close(); err != nil {
		return figure{}, err
	}
	cfg := filepath.Join(dir, "input.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(p8Doc, tracePath)), 0o644); err != nil {
		return figure{}, err
	}
	var stderr strings.Builder
	out := filepath.Join(dir, "out")
	cpu0 := cpuSeconds()
	start := time.Now()
	code := app.Recommend(context.Background(), app.Options{ConfigPath: cfg, OutputDir: out, Format: "json",
		Stdout: io.Discard, Stderr: &stderr})
	wall := time.Since(start).Seconds()
	cpu := cpuSeconds() - cpu0
	if code != 0 {
		return figure{}, fmt.Errorf("aisim recommend exited %d: %s", code, stderr.String())
	}
	sweep, err := output.ReadSweepResult(out)
	if err != nil {
		return figure{}, err
	}
	simulated := 0.0
	for _, c := range sweep.Candidates {
		if c.Provenance["cache_hit"] != true {
			simulated += c.Metrics[output.KeyRequests]
		}
	}
	const goal = 10
	return figure{
		id: "P8", name: "aisim_trace_replay_20k_s", value: wall, goal: goal, ok: wall <= goal,
		extra: fmt.Sprintf("cpu_s=%.2f candidates=%d simulated_req_per_s=%.0f", cpu, len(sweep.Candidates), simulated/wall),
		note: fmt.Sprintf("one full aisim recommend replaying a %d-request mooncake trace (Llama-3.1-8B-Instruct, h200_sxm, max_candidate_gpus 8, trace_timestamps speedup 2), in process",
			p8Trace.Requests),
	}, nil
}

// cpuSeconds is the process's user + system CPU time: on a machine shared with other work the
// wall time moves with their load, the CPU time much less (the search uses both cores).
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
