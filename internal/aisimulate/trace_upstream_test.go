package aisimulate_test

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
	"github.com/dgdr-operator/dgdr-operator/internal/upstreamtest"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/trace"
)

// TestRealAISimulateReadsTheDynamoTrace: the real AISimulate is the judge of how the project
// reads Dynamo's request trace. The effective input of a format: dynamo request, pointed at the
// trace the real Dynamo frontend wrote (tools/aisim/trace/testdata/dynamo, its jsonl and its gzip
// sink), is validated by AISimulate's recommend model, scanned by its resource admission and
// replayed by its predict path (hack/upstream/trace_judge.py); the requests, prompt and response
// tokens it replays are the ones aisim's reader finds, and with the worker's KV block equal to
// the trace's block size the shared prefixes are reused.
func TestRealAISimulateReadsTheDynamoTrace(t *testing.T) {
	in := lower(t, admit(t, readRequest(t, "testdata/requests/trace-dynamo-pvc.yaml")))
	var doc map[string]any
	if err := json.Unmarshal(in.JSON, &doc); err != nil {
		t.Fatal(err)
	}
	type replayed struct {
		ScanRequests      int `json:"scan_requests"`
		NumRequests       int `json:"num_requests"`
		CompletedRequests int `json:"completed_requests"`
		TotalInputTokens  int `json:"total_input_tokens"`
		TotalOutputTokens int `json:"total_output_tokens"`
	}
	dir := filepath.Join(testenv.Root(), "tools", "aisim", "trace", "testdata", "dynamo")
	for _, file := range []string{"frontend-capture.jsonl", "frontend-capture.000000.jsonl.gz"} {
		t.Run(file, func(t *testing.T) {
			path := filepath.Join(dir, file)
			ours, err := trace.Read(path, trace.FormatDynamo, 0)
			if err != nil {
				t.Fatal(err)
			}
			want := replayed{ScanRequests: len(ours.Requests), NumRequests: len(ours.Requests), CompletedRequests: len(ours.Requests)}
			for _, r := range ours.Requests {
				want.TotalInputTokens += r.Input
				want.TotalOutputTokens += r.Output
			}
			payload, err := json.Marshal(map[string]any{"input": doc, "paths": []string{path}, "block_size": ours.BlockSize})
			if err != nil {
				t.Fatal(err)
			}
			out := upstreamtest.RunPython(t, "trace_judge.py", payload)
			var got replayed
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("aisim's reading (-) against the real AISimulate's (+):\n%s", diff)
			}
			var reuse struct {
				Ratio float64 `json:"prefix_cache_reused_ratio"`
			}
			if err := json.Unmarshal(out, &reuse); err != nil || reuse.Ratio <= 0 {
				t.Errorf("the real AISimulate reused no prefix of the trace (%v): %s", err, out)
			}
		})
	}
}
