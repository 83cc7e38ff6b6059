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
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/internal/requesttrace"
)

// captureSegment is a segment the real Dynamo Frontend wrote: 36 requests arriving between
// these two times (its README says how it was made).
const captureSegment = "../../tools/aisim/trace/testdata/dynamo/frontend-capture.000000.jsonl.gz"

// newCapture is a capture claim's directory with the real segment as the first segment of pod,
// and the directory a window file goes to.
func newCapture(t *testing.T, pods ...string) (source, out string) {
	t.Helper()
	data, err := os.ReadFile(captureSegment)
	if err != nil {
		t.Fatal(err)
	}
	source = t.TempDir()
	for _, pod := range pods {
		if err := os.Mkdir(filepath.Join(source, pod), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(source, pod, "request-trace.000000.jsonl.gz"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return source, t.TempDir()
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
			tw := TraceWindow{Source: source, Window: captureWindow(t), Out: filepath.Join(dir, jobcontract.TraceWindowFile), MinRequests: tc.minRequests}
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
	notDir := filepath.Join(source, "fe-a", "request-trace.000000.jsonl.gz")
	broken := filepath.Join(source, "fe-b")
	if err := os.Mkdir(broken, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(broken, "request-trace.000001.jsonl.gz"), []byte("plain text"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, source, want string
	}{
		{"no capture", filepath.Join(source, "missing"), "the capture: stat " + filepath.Join(source, "missing") + ": no such file or directory"},
		{"a file, not a directory", notDir, "the capture " + notDir + " is not a directory"},
		{"a damaged segment", source, "cutting the trace window of the capture " + source + ": fe-b/request-trace.000001.jsonl.gz: gzip: invalid header"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tw := TraceWindow{Source: tc.source, Window: captureWindow(t), Out: filepath.Join(dir, jobcontract.TraceWindowFile), MinRequests: 1}
			if _, err := tw.Cut(); err == nil || err.Error() != tc.want {
				t.Errorf("got %v, want %q", err, tc.want)
			}
			if _, err := os.Stat(tw.Out); !os.IsNotExist(err) {
				t.Errorf("a window file was left: %v", err)
			}
		})
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
	source, dir := newCapture(t, "fe-old", "fe-new")
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

	keep := TraceWindow{Source: source, Window: later, Out: filepath.Join(dir, "a.jsonl.gz")}
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

	prune := TraceWindow{Source: source, Window: later, Out: filepath.Join(dir, "b.jsonl.gz"), Prune: true}
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
