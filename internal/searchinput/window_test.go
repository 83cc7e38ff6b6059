package searchinput

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/internal/requesttrace"
)

// captureSegment is a segment the real Dynamo Frontend wrote: 36 requests arriving between
// these two times (its README says how it was made).
const captureSegment = "../../tools/aisim/trace/testdata/dynamo/frontend-capture.000000.jsonl.gz"

// requestUID is the directory of the claim the windows below are cut from.
const requestUID = "5d0c6b2e-0000-4000-8000-000000000001"

// newCapture is a capture claim's directory with the real segment as the first segment of each
// pod of requestUID's directory, and the directory a window file goes to.
func newCapture(t *testing.T, pods ...string) (source, out string) {
	t.Helper()
	source = t.TempDir()
	addPods(t, source, requestUID, pods...)
	return source, t.TempDir()
}

// addPods writes the real segment as the first segment of each pod of the claim's directory dir.
func addPods(t *testing.T, source, dir string, pods ...string) {
	t.Helper()
	data, err := os.ReadFile(captureSegment)
	if err != nil {
		t.Fatal(err)
	}
	for _, pod := range pods {
		if err := os.MkdirAll(filepath.Join(source, dir, pod), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(source, dir, pod, "request-trace.000000.jsonl.gz"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// captureWindow covers every arrival of captureSegment.
func captureWindow(t *testing.T) requesttrace.Window {
	t.Helper()
	tr, err := requesttrace.Read(captureSegment, requesttrace.FormatDynamo, 0)
	if err != nil {
		t.Fatal(err)
	}
	first, last := tr.Requests[0].TimestampMs, tr.Requests[len(tr.Requests)-1].TimestampMs
	return requesttrace.Window{Start: time.UnixMilli(int64(first)), End: time.UnixMilli(int64(last) + 1)}
}

// TestTraceWindowCut: the window file is written, hashed as the summary says, also when it holds
// too few requests; then the error carries the input container's exit code.
func TestTraceWindowCut(t *testing.T) {
	tests := []struct {
		name         string
		pods         []string
		minRequests  int
		wantRequests int
		wantShort    bool
	}{
		{"two pods, enough requests", []string{"fe-a", "fe-b"}, 72, 72, false},
		{"too few requests", []string{"fe-a"}, 37, 36, true},
		{"no pod wrote anything yet", nil, 1, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			source, dir := newCapture(t, tc.pods...)
			tw := TraceWindow{Source: source, Directory: requestUID, Window: captureWindow(t), Out: filepath.Join(dir, jobcontract.TraceWindowFile), MinRequests: tc.minRequests}
			sum, err := tw.Cut()
			var short *InsufficientTrafficError
			if gotShort := errors.As(err, &short); gotShort != tc.wantShort || (err != nil && !gotShort) {
				t.Fatalf("got %v, want an *InsufficientTrafficError: %v", err, tc.wantShort)
			}
			if short != nil {
				if short.ExitCode() != jobcontract.InputExitInsufficientTraffic || short.Requests != tc.wantRequests || short.MinRequests != tc.minRequests {
					t.Errorf("got %+v (exit code %d)", short, short.ExitCode())
				}
			}
			data, err := os.ReadFile(tw.Out)
			if err != nil {
				t.Fatal(err)
			}
			digest := sha256.Sum256(data)
			if sum.Requests != tc.wantRequests || sum.Pods != len(tc.pods) || sum.SHA256 != hex.EncodeToString(digest[:]) {
				t.Errorf("summary %+v, want %d requests of %d pods, hash of the file %x", sum, tc.wantRequests, len(tc.pods), digest)
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 1 {
				t.Errorf("%d files left in the window's directory, want only the window", len(entries))
			}
		})
	}
}

func TestTraceWindowCutErrors(t *testing.T) {
	source, dir := newCapture(t, "fe-a")
	notDir := filepath.Join(source, requestUID, "fe-a", "request-trace.000000.jsonl.gz")
	linked := t.TempDir()
	if err := os.Symlink(filepath.Join(source, requestUID), filepath.Join(linked, "other")); err != nil {
		t.Fatal(err)
	}
	malformed := t.TempDir()
	addPods(t, malformed, requestUID, "fe-a")
	w := captureWindow(t)
	// A record arriving in the window without its output tokens.
	bad := `{"schema": "dynamo.request.trace.v1", "event_type": "request_end", "request": {"request_received_ms": ` +
		strconv.FormatInt(w.Start.UnixMilli(), 10) + `, "replay": {"trace_block_size": 16, "input_length": 4, "input_sequence_hashes": [1]}}}`
	var seg bytes.Buffer
	zw := gzip.NewWriter(&seg)
	_, _ = zw.Write([]byte(bad + "\n"))
	_ = zw.Close()
	if err := os.WriteFile(filepath.Join(malformed, requestUID, "fe-a", "request-trace.000001.jsonl.gz"), seg.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, source, directory string
		limits                  requesttrace.Limits
		want                    string
		wantExit                int
	}{
		{"no capture", filepath.Join(source, "missing"), requestUID, requesttrace.Limits{},
			"the capture: stat " + filepath.Join(source, "missing") + ": no such file or directory", 0},
		{"a file, not a directory", notDir, requestUID, requesttrace.Limits{}, "the capture " + notDir + " is not a directory", 0},
		{"the request's directory is a symbolic link", linked, "other", requesttrace.Limits{},
			"the capture " + filepath.Join(linked, "other") + ": other: not a directory (a symbolic link is not followed)", 0},
		{"a path, not the request's directory", source, requestUID + "/fe-a", requesttrace.Limits{},
			`the capture ` + filepath.Join(source, requestUID, "fe-a") + `: the capture directory "` + requestUID + `/fe-a" is not one path component`, 0},
		{"more requests than the window may hold", source, requestUID, requesttrace.Limits{MaxRequests: 35},
			"the trace window is rejected: the window holds more than 35 requests, the most a window may hold", jobcontract.InputExitWindowTooLarge},
		{"a malformed request in the window", malformed, requestUID, requesttrace.Limits{},
			"the trace window is rejected: fe-a/request-trace.000001.jsonl.gz: a request of the window has a malformed record: line 1: request.output_tokens: required",
			jobcontract.InputExitWindowMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tw := TraceWindow{Source: tc.source, Directory: tc.directory, Window: w, Limits: tc.limits,
				Out: filepath.Join(dir, jobcontract.TraceWindowFile), MinRequests: 1}
			_, err := tw.Cut()
			if err == nil || err.Error() != tc.want {
				t.Errorf("got %v, want %q", err, tc.want)
			}
			var rejected *WindowRejectedError
			if got := errors.As(err, &rejected); got != (tc.wantExit != 0) || (got && rejected.ExitCode() != tc.wantExit) {
				t.Errorf("got %#v, want exit code %d", err, tc.wantExit)
			}
			if _, err := os.Stat(tw.Out); !os.IsNotExist(err) {
				t.Errorf("a window file was left: %v", err)
			}
		})
	}
}

// TestTraceWindowReadsOnlyItsRequest: two requests name one claim. A cut reads only its request's
// directory, and its age bound deletes only that directory's segments; a request whose directory
// does not exist yet (its Frontend wrote nothing) gets an empty window, not the other's.
func TestTraceWindowReadsOnlyItsRequest(t *testing.T) {
	const other = "5d0c6b2e-0000-4000-8000-000000000002"
	source, dir := newCapture(t, "fe-a")
	addPods(t, source, other, "fe-b", "fe-c")
	w := captureWindow(t)
	late := requesttrace.Window{Start: w.Start, End: w.End.Add(2 * time.Hour), StaleBefore: w.End.Add(time.Hour)}
	mine := TraceWindow{Source: source, Directory: requestUID, Window: late, Out: filepath.Join(dir, "a.jsonl.gz"), Prune: true}
	sum, err := mine.Cut()
	if err != nil {
		t.Fatal(err)
	}
	if sum.Requests != 36 || sum.Pods != 1 || sum.PrunedSegments != 1 {
		t.Errorf("summary %+v, want the 36 requests of this request's one pod, and its one stale segment pruned", sum)
	}
	for _, pod := range []string{"fe-b", "fe-c"} {
		if _, err := os.Stat(filepath.Join(source, other, pod, "request-trace.000000.jsonl.gz")); err != nil {
			t.Errorf("the other request's segment of %s: %v", pod, err)
		}
	}
	none := TraceWindow{Source: source, Directory: "5d0c6b2e-0000-4000-8000-000000000003", Window: w, Out: filepath.Join(dir, "b.jsonl.gz"), MinRequests: 1}
	sum, err = none.Cut()
	var short *InsufficientTrafficError
	if !errors.As(err, &short) || sum.Requests != 0 || sum.Pods != 0 {
		t.Errorf("a request without a directory: %+v, %v; want an empty window", sum, err)
	}
}

// TestHostileCaptureEndsWithANamedReason is the unit-level equivalent of the attack on the
// re-search's input container (test/attack TestHostileCaptureEndsWithANamedReason): a claim whose
// request directory holds more window records than the window may hold, a FIFO named like a
// segment, a pod directory that is a symbolic link to another request's, and a malformed line
// outside the window. The cut does not block on the FIFO, does not follow the link, skips the bad
// line, and ends with the bound named and the input container's exit code for it.
func TestHostileCaptureEndsWithANamedReason(t *testing.T) {
	source, dir := newCapture(t, "fe-a", "fe-b")
	addPods(t, source, "other-request", "fe-z")
	pod := filepath.Join(source, requestUID, "fe-a")
	if err := syscall.Mkfifo(filepath.Join(pod, "request-trace.000001.jsonl.gz"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(source, "other-request", "fe-z"), filepath.Join(source, requestUID, "fe-linked")); err != nil {
		t.Fatal(err)
	}
	var seg bytes.Buffer
	zw := gzip.NewWriter(&seg)
	_, _ = zw.Write([]byte(`{"schema": "dynamo.request.trace.v1", "event_type": "request_end", "request": {"request_received_ms": 1, "output_tokens": "many"}}` + "\n"))
	_ = zw.Close()
	if err := os.WriteFile(filepath.Join(pod, "request-trace.000002.jsonl.gz"), seg.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	tw := TraceWindow{Source: source, Directory: requestUID, Window: captureWindow(t), Limits: requesttrace.Limits{MaxBytes: 16 << 10},
		Out: filepath.Join(dir, jobcontract.TraceWindowFile), MinRequests: 1}
	done := make(chan error, 1)
	go func() {
		_, err := tw.Cut()
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the cut blocks")
	}
	var rejected *WindowRejectedError
	if !errors.As(err, &rejected) || rejected.ExitCode() != jobcontract.InputExitWindowTooLarge ||
		!strings.Contains(err.Error(), "more than 16384 bytes uncompressed, the most a window file may hold") {
		t.Fatalf("got %v, want the window refused for its size, exit code %d", err, jobcontract.InputExitWindowTooLarge)
	}
	// Within the bound, the same claim cuts: the hostile entries are skipped and counted.
	tw.Limits = requesttrace.Limits{}
	sum, err := tw.Cut()
	if err != nil {
		t.Fatal(err)
	}
	want := requesttrace.WindowSummary{Requests: 72, Segments: 3, SkippedSegments: 1, SkippedDirectories: 1, Pods: 2}
	got := requesttrace.WindowSummary{Requests: sum.Requests, Segments: sum.Segments, SkippedSegments: sum.SkippedSegments,
		SkippedDirectories: sum.SkippedDirectories, SkippedLines: sum.SkippedLines, Pods: sum.Pods}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
}

// The summary is the termination message the operator reads: its JSON shape is the contract.
func TestSummaryMessage(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct {
		name string
		sum  requesttrace.WindowSummary
		want string
	}{
		{"a window", requesttrace.WindowSummary{Requests: 36, SHA256: strings.Repeat("ab", 32), Segments: 3, TruncatedSegments: 1, Pods: 2,
			FirstArrival: at("2026-01-02T03:04:05.123Z"), LastArrival: at("2026-01-02T03:04:13Z")},
			`{"requests":36,"sha256":"` + strings.Repeat("ab", 32) + `","segments":3,"truncatedSegments":1,"pods":2,` +
				`"firstArrival":"2026-01-02T03:04:05.123Z","lastArrival":"2026-01-02T03:04:13Z"}`},
		{"an empty window has no arrivals", requesttrace.WindowSummary{SHA256: "e3b0"},
			`{"requests":0,"sha256":"e3b0","segments":0,"truncatedSegments":0,"pods":0}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SummaryMessage(tc.sum)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestTraceWindowPrunes: with an age bound, the cut deletes the complete segments all of whose
// requests arrived before it, after cutting the window, and counts them; a segment with a
// later request and a segment still being written stay, and without Prune nothing is deleted.
func TestTraceWindowPrunes(t *testing.T) {
	claim, dir := newCapture(t, "fe-old", "fe-new")
	source := filepath.Join(claim, requestUID)
	w := captureWindow(t)
	data, err := os.ReadFile(captureSegment)
	if err != nil {
		t.Fatal(err)
	}
	// An open segment (no gzip trailer) of the old pod: never deleted.
	open := filepath.Join(source, "fe-old", "request-trace.000001.jsonl.gz")
	if err := os.WriteFile(open, data[:len(data)-8], 0o644); err != nil {
		t.Fatal(err)
	}
	// The new pod's segment is the same traffic a day later: its window is the later one.
	later := requesttrace.Window{Start: w.Start.Add(24 * time.Hour), End: w.End.Add(24 * time.Hour), StaleBefore: w.End}
	shifted := shiftedSegment(t, data, 24*time.Hour)
	newSeg := filepath.Join(source, "fe-new", "request-trace.000000.jsonl.gz")
	if err := os.WriteFile(newSeg, shifted, 0o644); err != nil {
		t.Fatal(err)
	}
	oldSeg := filepath.Join(source, "fe-old", "request-trace.000000.jsonl.gz")

	keep := TraceWindow{Source: claim, Directory: requestUID, Window: later, Out: filepath.Join(dir, "a.jsonl.gz")}
	sum, err := keep.Cut()
	if err != nil {
		t.Fatal(err)
	}
	if sum.PrunedSegments != 0 || sum.Requests != 36 {
		t.Errorf("without Prune: %+v", sum)
	}
	if _, err := os.Stat(oldSeg); err != nil {
		t.Fatalf("without Prune the old segment went: %v", err)
	}

	prune := TraceWindow{Source: claim, Directory: requestUID, Window: later, Out: filepath.Join(dir, "b.jsonl.gz"), Prune: true}
	sum, err = prune.Cut()
	if err != nil {
		t.Fatal(err)
	}
	if sum.PrunedSegments != 1 || sum.Requests != 36 || sum.TruncatedSegments != 1 {
		t.Errorf("with Prune: %+v, want the one old complete segment deleted and the window's 36 requests", sum)
	}
	if _, err := os.Stat(oldSeg); !os.IsNotExist(err) {
		t.Errorf("the old segment is still there: %v", err)
	}
	for _, kept := range []string{open, newSeg} {
		if _, err := os.Stat(kept); err != nil {
			t.Errorf("%s was deleted: %v", kept, err)
		}
	}
	msg, err := SummaryMessage(sum)
	if err != nil || !strings.Contains(string(msg), `"prunedSegments":1`) || strings.Contains(string(msg), "fe-old") {
		t.Errorf("summary message %s (%v): want the count, not the names", msg, err)
	}
}

// shiftedSegment is the real segment with every record's times moved by d, as one gzip stream.
func shiftedSegment(t *testing.T, data []byte, d time.Duration) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	for _, line := range bytes.Split(bytes.TrimSpace(plain), []byte("\n")) {
		var rec map[string]any
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.UseNumber()
		if err := dec.Decode(&rec); err != nil {
			t.Fatal(err)
		}
		shift(rec, d.Milliseconds())
		b, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = zw.Write(append(b, '\n'))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// shift adds ms to every time of a record (event_time_unix_ms, request_received_ms).
func shift(v any, ms int64) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	for k, e := range m {
		if n, ok := e.(json.Number); ok && (k == "event_time_unix_ms" || k == "request_received_ms") {
			i, _ := n.Int64()
			m[k] = json.Number(strconv.FormatInt(i+ms, 10))
			continue
		}
		shift(e, ms)
	}
}
