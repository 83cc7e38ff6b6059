package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
)

// traceDoc is the operator's lowering of examples/trace-configmap.yaml with the trace at
// trace.jsonl and an 8-GPU budget (the underlay gives the default modes their worker roles).
const traceDoc = `{engine: {model: meta-llama/Llama-3.1-8B-Instruct, hardware: h200_sxm, ` + allRoles + `},
optimization: {strict_sla: true, constraints: {max_candidate_gpus: 8}}, optimizer: {max_trials: 48},
evaluation: {sla: {ttft_ms: 500, itl_ms: 25}},
traffic: {source: {type: trace, paths: [trace.jsonl], format: mooncake}, load: {type: trace_timestamps, speedup: 2},
stop: {max_virtual_time_seconds: 600}}}`

func sampleTrace(t *testing.T) string {
	t.Helper()
	return readFile(t, "../../../../examples/traces/mooncake-sample.jsonl")
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// recommend replays a trace; its saved recommendations replay the same trace through predict.
func TestRecommendAndPredictReplayATrace(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "trace.jsonl", sampleTrace(t))
	writeFile(t, dir, "in.yaml", traceDoc)
	r := aisim(t, dir, "recommend", "-c", "in.yaml", "--output-dir", "out", "--format", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var rows []output.Row
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || len(rows) == 0 {
		t.Fatalf("rows %v: %s", err, r.stdout)
	}
	sweep, err := output.ReadSweepResult(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	best := sweep.Candidates[0]
	for _, c := range sweep.Candidates {
		if c.CandidateID == sweep.Views.TopN[0] {
			best = c
		}
	}
	m := best.Metrics
	if m["num_requests"] != 400 || m["completed_requests"] != 400 || m["prefix_cache_hit_ratio"] <= 0.3 || m["request_rate"] < 6 {
		t.Errorf("metrics of the best candidate: requests %v/%v, hit ratio %v, rate %v", m["completed_requests"], m["num_requests"],
			m["prefix_cache_hit_ratio"], m["request_rate"])
	}
	traffic, _ := output.MarshalLine(best.PredictionConfig.Traffic)
	if want := `{"load":{"speedup":2,"type":"trace_timestamps"},"source":{"format":"mooncake","paths":["trace.jsonl"],"type":"trace"},"stop":{"max_virtual_time_seconds":600}}` + "\n"; string(traffic) != want {
		t.Errorf("prediction_config.traffic = %s, want %s", traffic, want)
	}
	p := aisim(t, dir, "predict", "-c", rows[0].ConfigPath, "--output-dir", "pred", "--format", "json")
	if p.code != 0 {
		t.Fatalf("predict of %s: exit %d: %s", rows[0].ConfigPath, p.code, p.stderr)
	}
	s, err := output.ParsePrediction([]byte(p.stdout))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Report(); got["completed_requests"] != 400 || got["mean_ttft_ms"] != m["mean_ttft_ms"] ||
		got["prefix_cache_reused_ratio"] != m["prefix_cache_hit_ratio"] {
		t.Errorf("predict of the saved recommendation: %v requests, TTFT %v, prefix reuse %v (recommend: %v, %v)", got["completed_requests"],
			got["mean_ttft_ms"], got["prefix_cache_reused_ratio"], m["mean_ttft_ms"], m["prefix_cache_hit_ratio"])
	}
}

// Issue #14: a malformed trace line exits 2 naming the line and the field, in recommend,
// predict and trace summary alike.
func TestMalformedTraceLineExits2(t *testing.T) {
	dir := t.TempDir()
	lines := strings.SplitAfter(sampleTrace(t), "\n")
	bad := strings.Join(lines[:6], "") + `{"timestamp": 9000, "input_length": 1024, "output_length": "many", "hash_ids": [1, 2]}` + "\n" + strings.Join(lines[6:], "")
	writeFile(t, dir, "trace.jsonl", bad)
	writeFile(t, dir, "in.yaml", traceDoc)
	writeFile(t, dir, "predict.yaml", `{engine: {model: meta-llama/Llama-3.1-8B-Instruct, hardware: h200_sxm},
traffic: {source: {type: trace, paths: [trace.jsonl]}, load: {type: concurrency, concurrency: 8}}}`)
	const want = "line 7: output_length: expected an integer"
	for _, args := range [][]string{
		{"recommend", "-c", "in.yaml", "--output-dir", "out"},
		{"predict", "-c", "predict.yaml", "--output-dir", "pred"},
		{"trace", "summary", "trace.jsonl"},
	} {
		r := aisim(t, dir, args...)
		if r.code != 2 || !strings.Contains(r.stderr, want) {
			t.Errorf("aisim %s: exit %d, stderr %q; want exit 2 and %q", args[0], r.code, r.stderr, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
		t.Error("recommend created its output directory for an unreadable trace")
	}
	// A missing file is exit 2 as well.
	writeFile(t, dir, "missing.yaml", strings.Replace(traceDoc, "trace.jsonl", "nope.jsonl", 1))
	if r := aisim(t, dir, "recommend", "-c", "missing.yaml", "--output-dir", "out2"); r.code != 2 || !strings.Contains(r.stderr, "traffic.source.paths[0]: nope.jsonl") {
		t.Errorf("missing trace: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestTraceSummaryAndGenerate(t *testing.T) {
	dir := t.TempDir()
	args := []string{"trace", "generate", "--seed", "1", "--requests", "400", "--rate", "4", "--prefix-groups", "8",
		"--prefix-tokens", "2048", "--input-tokens", "3072", "--output-tokens", "256"}
	g := aisim(t, dir, append(args, "-o", "gen.jsonl")...)
	if g.code != 0 {
		t.Fatalf("generate: exit %d: %s", g.code, g.stderr)
	}
	gen, _ := os.ReadFile(filepath.Join(dir, "gen.jsonl"))
	if string(gen) != sampleTrace(t) {
		t.Error("aisim trace generate with the sample's options does not reproduce examples/traces/mooncake-sample.jsonl")
	}
	r := aisim(t, dir, "trace", "summary", "gen.jsonl")
	if r.code != 0 {
		t.Fatalf("summary: exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"requests: 400", "offered rate:", "input (ISL)", "output (OSL)", "prefix reuse:"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, r.stdout)
		}
	}
	j := aisim(t, dir, "trace", "summary", "gen.jsonl", "--format", "json")
	var s struct {
		Requests         int     `json:"requests"`
		PrefixReuseRatio float64 `json:"prefix_reuse_ratio"`
	}
	if err := json.Unmarshal([]byte(j.stdout), &s); err != nil || s.Requests != 400 || s.PrefixReuseRatio <= 0 {
		t.Errorf("json summary %+v %v: %s", s, err, j.stdout)
	}
	if r := aisim(t, dir, "trace", "generate", "--requests", "0"); r.code != 2 {
		t.Errorf("generate --requests 0: exit %d", r.code)
	}
}

// dynamoTraceDoc is traceDoc on the frontend's capture (tools/aisim/trace/testdata/dynamo).
var dynamoTraceDoc = strings.Replace(traceDoc, "format: mooncake", "format: dynamo", 1)

func dynamoCapture(t *testing.T) string {
	t.Helper()
	return readFile(t, "../../trace/testdata/dynamo/frontend-capture.jsonl")
}

// recommend replays the real frontend's request trace with the prefix cache of mooncake replay.
func TestRecommendReplaysADynamoTrace(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "trace.jsonl", dynamoCapture(t))
	writeFile(t, dir, "in.yaml", dynamoTraceDoc)
	r := aisim(t, dir, "recommend", "-c", "in.yaml", "--output-dir", "out", "--format", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	sweep, err := output.ReadSweepResult(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	best := sweep.Candidates[0]
	for _, c := range sweep.Candidates {
		if c.CandidateID == sweep.Views.TopN[0] {
			best = c
		}
	}
	if m := best.Metrics; m["completed_requests"] != 36 || m["prefix_cache_hit_ratio"] <= 0 {
		t.Errorf("best candidate: %v completed requests, hit ratio %v; want 36 and a hit", m["completed_requests"], m["prefix_cache_hit_ratio"])
	}
	traffic, _ := output.MarshalLine(best.PredictionConfig.Traffic)
	if want := `{"load":{"speedup":2,"type":"trace_timestamps"},"source":{"format":"dynamo","paths":["trace.jsonl"],"type":"trace"},"stop":{"max_virtual_time_seconds":600}}` + "\n"; string(traffic) != want {
		t.Errorf("prediction_config.traffic = %s, want %s", traffic, want)
	}
}

// A malformed Dynamo record exits 2 naming its line and the field's path on the line.
func TestMalformedDynamoTraceLineExits2(t *testing.T) {
	dir := t.TempDir()
	lines := strings.SplitAfter(dynamoCapture(t), "\n")
	lines[4] = strings.Replace(lines[4], `"input_length":61`, `"input_length":"long"`, 1)
	writeFile(t, dir, "trace.jsonl", strings.Join(lines, ""))
	writeFile(t, dir, "in.yaml", dynamoTraceDoc)
	const want = "line 5: event.request.replay.input_length: expected an integer"
	for _, args := range [][]string{
		{"recommend", "-c", "in.yaml", "--output-dir", "out"},
		{"trace", "summary", "--trace-format", "dynamo", "trace.jsonl"},
	} {
		r := aisim(t, dir, args...)
		if r.code != 2 || !strings.Contains(r.stderr, want) {
			t.Errorf("aisim %s: exit %d, stderr %q; want exit 2 and %q", args[0], r.code, r.stderr, want)
		}
	}
}
