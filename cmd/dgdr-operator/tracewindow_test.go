package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/internal/requesttrace"
	"github.com/dgdr-operator/dgdr-operator/internal/searchinput"
)

// The real Frontend's capture (tools/aisim/trace/testdata/dynamo): 36 requests arriving within
// [captureStart, captureEnd).
const (
	captureSegment = "../../tools/aisim/trace/testdata/dynamo/frontend-capture.000000.jsonl.gz"
	captureStart   = "2026-12-03T00:00:00Z"
	captureEnd     = "2026-12-04T00:00:00Z"
)

func TestTraceWindowFlags(t *testing.T) {
	start, end := time.Date(2026, 2, 9, 0, 0, 0, 0, time.UTC), time.Date(2026, 2, 9, 6, 0, 0, 0, time.FixedZone("", 3600))
	tests := []struct {
		name    string
		args    []string
		want    *searchinput.TraceWindow
		wantErr string
	}{
		{"no window", nil, nil, ""},
		{"a window", []string{"--trace-window-source", "/capture", "--trace-window-directory", "uid", "--trace-window-start", "2026-02-09T00:00:00Z",
			"--trace-window-end", "2026-02-09T06:00:00+01:00", "--trace-window-out", "/window/window.jsonl.gz", "--trace-window-min-requests", "50"},
			&searchinput.TraceWindow{Source: "/capture", Directory: "uid", Window: requesttrace.Window{Start: start, End: end}, Out: "/window/window.jsonl.gz", MinRequests: 50}, ""},
		{"at least one request by default", []string{"--trace-window-source", "/capture", "--trace-window-directory", "uid", "--trace-window-start", "2026-02-09T00:00:00Z",
			"--trace-window-end", "2026-02-09T06:00:00+01:00", "--trace-window-out", "/w"},
			&searchinput.TraceWindow{Source: "/capture", Directory: "uid", Window: requesttrace.Window{Start: start, End: end}, Out: "/w", MinRequests: 1}, ""},
		{"a window without its source", []string{"--trace-window-out", "/w"}, nil,
			"--trace-window-directory, --trace-window-start, --trace-window-end, --trace-window-out, --trace-prune-before and --trace-window-sha256 need --trace-window-source"},
		{"a source without the request's directory", []string{"--trace-window-source", "/capture", "--trace-window-start", "2026-02-09T00:00:00Z",
			"--trace-window-end", "2026-02-09T06:00:00Z", "--trace-window-out", "/w"}, nil, "--trace-window-directory is required with --trace-window-source"},
		{"a hash to check", []string{"--trace-window-source", "/capture", "--trace-window-directory", "uid", "--trace-window-start", "2026-02-09T00:00:00Z",
			"--trace-window-end", "2026-02-09T06:00:00+01:00", "--trace-window-out", "/w", "--trace-window-sha256", "sha256:ab"},
			&searchinput.TraceWindow{Source: "/capture", Directory: "uid", Window: requesttrace.Window{Start: start, End: end}, Out: "/w", MinRequests: 1, SHA256: "sha256:ab"}, ""},
		{"an age bound", []string{"--trace-window-source", "/capture", "--trace-window-directory", "uid", "--trace-window-start", "2026-02-09T00:00:00Z",
			"--trace-window-end", "2026-02-09T06:00:00+01:00", "--trace-window-out", "/w", "--trace-prune-before", "2026-02-08T00:00:00Z"},
			&searchinput.TraceWindow{Source: "/capture", Directory: "uid", Window: requesttrace.Window{Start: start, End: end, StaleBefore: start.Add(-24 * time.Hour)},
				Out: "/w", MinRequests: 1, Prune: true}, ""},
		{"an age bound inside the window", []string{"--trace-window-source", "/c", "--trace-window-directory", "uid", "--trace-window-start", "2026-02-09T00:00:00Z",
			"--trace-window-end", "2026-02-09T06:00:00Z", "--trace-window-out", "/w", "--trace-prune-before", "2026-02-09T01:00:00Z"}, nil,
			"--trace-prune-before 2026-02-09T01:00:00Z is after --trace-window-start 2026-02-09T00:00:00Z"},
		{"no start", []string{"--trace-window-source", "/c", "--trace-window-directory", "uid", "--trace-window-end", "2026-02-09T06:00:00Z", "--trace-window-out", "/w"}, nil,
			`--trace-window-start: parsing time "" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "2006"`},
		{"an end that is not RFC 3339", []string{"--trace-window-source", "/c", "--trace-window-directory", "uid", "--trace-window-start", "2026-02-09T00:00:00Z",
			"--trace-window-end", "6h", "--trace-window-out", "/w"}, nil, `--trace-window-end: parsing time "6h"`},
		{"an end before the start", []string{"--trace-window-source", "/c", "--trace-window-directory", "uid", "--trace-window-start", "2026-02-09T06:00:00Z",
			"--trace-window-end", "2026-02-09T06:00:00Z", "--trace-window-out", "/w"}, nil,
			"--trace-window-start 2026-02-09T06:00:00Z is not before --trace-window-end 2026-02-09T06:00:00Z"},
		{"no out", []string{"--trace-window-source", "/c", "--trace-window-directory", "uid", "--trace-window-start", "2026-02-09T00:00:00Z", "--trace-window-end", "2026-02-09T06:00:00Z"}, nil,
			"--trace-window-out is required with --trace-window-source"},
		{"a negative minimum", []string{"--trace-window-source", "/c", "--trace-window-directory", "uid", "--trace-window-start", "2026-02-09T00:00:00Z", "--trace-window-end", "2026-02-09T06:00:00Z",
			"--trace-window-out", "/w", "--trace-window-min-requests", "-1"}, nil, "--trace-window-min-requests must be >= 0, got -1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := &reportOptions{}
			if err := newReportCommand(o).ParseFlags(tc.args); err != nil {
				t.Fatal(err)
			}
			got, err := traceWindow(o)
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// captureRequest is the request whose directory of the claim the windows below are cut from.
const captureRequest = "0e5c1f3a-0000-4000-8000-00000000000a"

// newCaptureClaim is a capture claim's directory holding the real capture as the segment of pod
// fe-a of captureRequest's directory.
func newCaptureClaim(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(captureSegment)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, captureRequest, "fe-a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, captureRequest, "fe-a", "request-trace.000000.jsonl.gz"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// runWriteInputWithWindow runs `report --write-input` with a trace window of the real capture,
// against the real API server when the window holds enough requests. It returns the termination
// message and the window file's path.
func runWriteInputWithWindow(t *testing.T, ns, run, dir, expected string, minRequests int) (term, window string, err error) {
	t.Helper()
	o := &reportOptions{}
	if minRequests <= 36 {
		o.RESTConfig = reportEnv(t).Config
	}
	cmd := newReportCommand(o)
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	termFile, window := filepath.Join(t.TempDir(), "term"), filepath.Join(t.TempDir(), jobcontract.TraceWindowFile)
	cmd.SetArgs([]string{"--write-input", "--run-name", run, "--namespace", ns, "--input-dir", dir, "--input-hash", expected,
		"--poll-interval", "20ms", "--termination-log", termFile,
		"--trace-window-source", newCaptureClaim(t), "--trace-window-directory", captureRequest, "--trace-window-start", captureStart, "--trace-window-end", captureEnd,
		"--trace-window-out", window, "--trace-window-min-requests", strconv.Itoa(minRequests)})
	err = cmd.ExecuteContext(context.Background())
	msg, rerr := os.ReadFile(termFile)
	if rerr != nil {
		t.Fatalf("no termination message: %v (output: %s)", rerr, out.String())
	}
	return string(msg), window, err
}

// checkSummary decodes a termination message as the window's summary and checks it against the
// window file.
func checkSummary(t *testing.T, term, window string, wantRequests int) {
	t.Helper()
	var sum requesttrace.WindowSummary
	if err := json.Unmarshal([]byte(term), &sum); err != nil {
		t.Fatalf("the termination message %q is not the window's summary: %v", term, err)
	}
	tr, err := requesttrace.Read(window, requesttrace.FormatDynamo, 0)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Requests != wantRequests || len(tr.Requests) != wantRequests || sum.Pods != 1 || sum.Segments != 1 {
		t.Errorf("summary %+v, %d requests in the file; want %d of one segment of one pod", sum, len(tr.Requests), wantRequests)
	}
}

// TestWriteInputCutsTheTraceWindow: with a trace window, the input container writes the window
// and the input, and its termination message is the window's summary.
func TestWriteInputCutsTheTraceWindow(t *testing.T) {
	ns := newNamespace(t)
	run := newRun(t, ns, "llm-run-window")
	in := recordedInput(t)
	recordInput(t, run, in.JSON, in.Hash)
	dir := t.TempDir()
	term, window, err := runWriteInputWithWindow(t, ns, run.Name, dir, in.Hash, 36)
	if err != nil {
		t.Fatalf("%v (termination message %q)", err, term)
	}
	checkSummary(t, term, window, 36)
	if _, err := os.Stat(filepath.Join(dir, jobcontract.InputFile)); err != nil {
		t.Errorf("the input was not written: %v", err)
	}
}

// TestWriteInputWithTooFewRequests: a window with fewer requests than the minimum leaves the
// window's summary as the termination message, writes no input, and exits with the code the Run
// controller reads as insufficient traffic, without reading the Run.
func TestWriteInputWithTooFewRequests(t *testing.T) {
	dir := t.TempDir()
	term, window, err := runWriteInputWithWindow(t, "ns", "run", dir, "hash", 37)
	if got := exitCode(err); got != jobcontract.InputExitInsufficientTraffic {
		t.Fatalf("exit code %d (%v), want %d", got, err, jobcontract.InputExitInsufficientTraffic)
	}
	checkSummary(t, term, window, 36)
	if _, err := os.Stat(filepath.Join(dir, jobcontract.InputFile)); !os.IsNotExist(err) {
		t.Errorf("the input was written: %v", err)
	}
}

// TestBaselineRecutsTheSearchWindow: the baseline Job's input container cuts the window again
// and writes the baseline input only when the cut hashes to what the search's cut reported; a
// different window (here: a capture that gained a Frontend pod's segment since) writes no input
// and exits with the code the Run controller reads as a window mismatch, naming both hashes.
func TestBaselineRecutsTheSearchWindow(t *testing.T) {
	ns := newNamespace(t)
	run := newRun(t, ns, "llm-run-recut")
	in, base := recordedInput(t), baselineInput(t)
	recordBaseline(t, run, in, base.JSON, base.Hash)
	term, _, err := runWriteInputWithWindow(t, ns, run.Name, t.TempDir(), in.Hash, 36)
	if err != nil {
		t.Fatalf("the search's cut: %v (%s)", err, term)
	}
	var sum requesttrace.WindowSummary
	if err := json.Unmarshal([]byte(term), &sum); err != nil {
		t.Fatal(err)
	}
	searched := "sha256:" + sum.SHA256

	recut := func(t *testing.T, claim string) (string, string, error) {
		t.Helper()
		dir := t.TempDir()
		cmd := newReportCommand(&reportOptions{RESTConfig: reportEnv(t).Config})
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		termFile := filepath.Join(t.TempDir(), "term")
		cmd.SetArgs([]string{"--write-input", "--run-name", run.Name, "--namespace", ns, "--input-dir", dir, "--baseline-input-hash", base.Hash,
			"--poll-interval", "20ms", "--termination-log", termFile,
			"--trace-window-source", claim, "--trace-window-directory", captureRequest, "--trace-window-start", captureStart, "--trace-window-end", captureEnd,
			"--trace-window-out", filepath.Join(t.TempDir(), jobcontract.TraceWindowFile), "--trace-window-sha256", searched})
		err := cmd.ExecuteContext(context.Background())
		msg, _ := os.ReadFile(termFile)
		return dir, string(msg), err
	}

	dir, _, err := recut(t, newCaptureClaim(t))
	if err != nil {
		t.Fatalf("the same window: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, jobcontract.BaselineInputFile)); err != nil {
		t.Errorf("the baseline input was not written: %v", err)
	}

	grown := newCaptureClaim(t)
	if err := os.Mkdir(filepath.Join(grown, captureRequest, "fe-b"), 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(captureSegment)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(grown, captureRequest, "fe-b", "request-trace.000000.jsonl.gz"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	dir, msg, err := recut(t, grown)
	if got := exitCode(err); got != jobcontract.InputExitWindowMismatch {
		t.Fatalf("exit code %d (%v), want %d", got, err, jobcontract.InputExitWindowMismatch)
	}
	if !strings.Contains(msg, "not to "+searched) {
		t.Errorf("termination message %q does not name the search's hash", msg)
	}
	if _, err := os.Stat(filepath.Join(dir, jobcontract.BaselineInputFile)); !os.IsNotExist(err) {
		t.Errorf("the baseline input was written for another window: %v", err)
	}
}

// TestWriteInputRefusesAMalformedWindow: a request of the window whose record is malformed
// writes no window and no input; the input container exits with the code the Run controller
// reads as a malformed window, its termination message naming the segment, line and field,
// without reading the Run.
func TestWriteInputRefusesAMalformedWindow(t *testing.T) {
	claim := newCaptureClaim(t)
	var seg bytes.Buffer
	zw := gzip.NewWriter(&seg)
	_, _ = zw.Write([]byte(`{"schema": "dynamo.request.trace.v1", "event_type": "request_end", "request": {"request_received_ms": 1796256000000, "output_tokens": -1}}` + "\n"))
	_ = zw.Close()
	if err := os.WriteFile(filepath.Join(claim, captureRequest, "fe-a", "request-trace.000001.jsonl.gz"), seg.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := newReportCommand(&reportOptions{})
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	termFile, window := filepath.Join(t.TempDir(), "term"), filepath.Join(t.TempDir(), jobcontract.TraceWindowFile)
	cmd.SetArgs([]string{"--write-input", "--run-name", "run", "--namespace", "ns", "--input-dir", dir, "--input-hash", "hash",
		"--termination-log", termFile, "--trace-window-source", claim, "--trace-window-directory", captureRequest,
		"--trace-window-start", captureStart, "--trace-window-end", captureEnd, "--trace-window-out", window})
	err := cmd.ExecuteContext(context.Background())
	if got := exitCode(err); got != jobcontract.InputExitWindowMalformed {
		t.Fatalf("exit code %d (%v), want %d", got, err, jobcontract.InputExitWindowMalformed)
	}
	msg, _ := os.ReadFile(termFile)
	if want := "fe-a/request-trace.000001.jsonl.gz: a request of the window has a malformed record: line 1: request.output_tokens: must be >= 0"; !strings.Contains(string(msg), want) {
		t.Errorf("termination message %q, want it to name %q", msg, want)
	}
	for _, f := range []string{window, filepath.Join(dir, jobcontract.InputFile)} {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Errorf("%s was written: %v", f, err)
		}
	}
}
