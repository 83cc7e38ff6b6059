package aisimulate_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dgdr-operator/dgdr-operator/internal/requesttrace"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
	"github.com/dgdr-operator/dgdr-operator/internal/upstreamtest"
)

// TestRealAISimulateReadsTheDynamoTrace: the real AISimulate is the judge of how the project
// reads Dynamo's request trace. The effective input of a format: dynamo request, pointed at the
// trace the real Dynamo frontend wrote (tools/aisim/trace/testdata/dynamo, its jsonl and its gzip
// sink), is validated by AISimulate's recommend model, scanned by its resource admission and
// replayed by its predict path (hack/upstream/trace_judge.py); the requests, prompt and response
// tokens it replays are the ones aisim's reader finds, and with the worker's KV block equal to
// the trace's block size the shared prefixes are reused.
func TestRealAISimulateReadsTheDynamoTrace(t *testing.T) {
	doc := dynamoInput(t)
	for _, file := range []string{"frontend-capture.jsonl", "frontend-capture.000000.jsonl.gz"} {
		t.Run(file, func(t *testing.T) {
			judgeTrace(t, doc, filepath.Join(captureDir(), file))
		})
	}
}

// TestRealAISimulateReadsACutWindow: a window the input container cuts out of a capture
// (requesttrace.CutWindow) is a trace the real AISimulate reads as the project does. The capture
// holds both traces of the real Frontend as the segments of two pods; the windows cover all of
// it, and its later half.
func TestRealAISimulateReadsACutWindow(t *testing.T) {
	doc := dynamoInput(t)
	capture := t.TempDir()
	var arrivals []float64
	for pod, file := range map[string]string{"frontend-a": "frontend-capture.000000.jsonl.gz", "frontend-b": "frontend-capture.jsonl"} {
		src := filepath.Join(captureDir(), file)
		tr, err := requesttrace.Read(src, requesttrace.FormatDynamo, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range tr.Requests {
			arrivals = append(arrivals, r.TimestampMs)
		}
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(file, ".gz") {
			data = gzipped(t, data)
		}
		if err := os.Mkdir(filepath.Join(capture, pod), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(capture, pod, "request-trace.000000.jsonl.gz"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(arrivals)
	ms := func(v float64) time.Time { return time.UnixMilli(int64(v)) }
	end := ms(arrivals[len(arrivals)-1]).Add(time.Millisecond)
	for _, tc := range []struct {
		name         string
		window       requesttrace.Window
		wantRequests int
	}{
		{"all of it", requesttrace.Window{Start: ms(arrivals[0]), End: end}, len(arrivals)},
		{"its later half", requesttrace.Window{Start: ms(arrivals[len(arrivals)/2]), End: end}, len(arrivals) - len(arrivals)/2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			root, err := os.OpenRoot(capture)
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			sum, err := requesttrace.CutWindow(root, tc.window, requesttrace.Limits{}, &out)
			if err != nil {
				t.Fatal(err)
			}
			if sum.Requests != tc.wantRequests || sum.Pods != 2 {
				t.Fatalf("summary %+v, want %d requests of 2 pods", sum, tc.wantRequests)
			}
			path := filepath.Join(t.TempDir(), "window.jsonl.gz")
			if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			judgeTrace(t, doc, path)
		})
	}
}

func captureDir() string {
	return filepath.Join(testenv.Root(), "tools", "aisim", "trace", "testdata", "dynamo")
}

// dynamoInput is the effective input of a format: dynamo request on a capture claim.
func dynamoInput(t *testing.T) map[string]any {
	t.Helper()
	in := lower(t, admit(t, readRequest(t, "testdata/requests/trace-dynamo-pvc.yaml")))
	var doc map[string]any
	if err := json.Unmarshal(in.JSON, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// judgeTrace has the real AISimulate scan and replay the trace at path with the input doc
// (hack/upstream/trace_judge.py), and checks that it replays the requests and tokens the
// project's reader finds, reusing shared prefixes.
func judgeTrace(t *testing.T, doc map[string]any, path string) {
	t.Helper()
	type replayed struct {
		ScanRequests      int `json:"scan_requests"`
		NumRequests       int `json:"num_requests"`
		CompletedRequests int `json:"completed_requests"`
		TotalInputTokens  int `json:"total_input_tokens"`
		TotalOutputTokens int `json:"total_output_tokens"`
	}
	ours, err := requesttrace.Read(path, requesttrace.FormatDynamo, 0)
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
		t.Errorf("the project's reading (-) against the real AISimulate's (+):\n%s", diff)
	}
	var reuse struct {
		Ratio float64 `json:"prefix_cache_reused_ratio"`
	}
	if err := json.Unmarshal(out, &reuse); err != nil || reuse.Ratio <= 0 {
		t.Errorf("the real AISimulate reused no prefix of the trace (%v): %s", err, out)
	}
}

func gzipped(t *testing.T, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
