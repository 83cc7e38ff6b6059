package requesttrace

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dgdr-operator/dgdr-operator/internal/testing/capture"
)

// t0 is a Unix time in ms; records below arrive at t0 + offsets.
const t0 = 1_760_000_000_000

// endRecord is a request_end record as the Frontend's gzip sink wraps it: a request arriving at
// t0+arrival and ending at t0+end, with the fields the Frontend adds beside the replay's (a
// request id, timings, worker ids), which a window must not carry.
func endRecord(arrival, end int) string {
	return fmt.Sprintf(`{"timestamp": %d, "event": {"schema": "dynamo.request.trace.v1", "event_type": "request_end", "event_time_unix_ms": %d, `+
		`"request": {"request_id": "id-%d", "input_tokens": 20, "output_tokens": 3, "request_received_ms": %d, "ttft_ms": 9.5, `+
		`"worker": {"prefill_worker_id": 7}, "replay": {"trace_block_size": 16, "input_length": 20, "input_sequence_hashes": [1, 18446744073709551615]}}}}`,
		end, t0+end, arrival, t0+arrival)
}

// windowLineOf is what a window holds of endRecord(arrival, end) as its request number seq.
func windowLineOf(seq, arrival, end int) string {
	return fmt.Sprintf(`{"schema":"dynamo.request.trace.v1","event_type":"request_end","event_time_unix_ms":%d,"request":{"request_id":"w%010d","output_tokens":3,`+
		`"request_received_ms":%d,"replay":{"trace_block_size":16,"input_length":20,"input_sequence_hashes":[1,18446744073709551615]}}}`,
		t0+end, seq, t0+arrival)
}

// segmentOf is a closed gzip segment of lines.
func segmentOf(lines ...string) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	for _, l := range lines {
		fmt.Fprintln(zw, l)
	}
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// openSegment is a segment whose writer flushed lines and then a partial line, and never closed
// the stream (no gzip trailer).
func openSegment(partial string, lines ...string) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	for _, l := range lines {
		fmt.Fprintln(zw, l)
	}
	fmt.Fprint(zw, partial)
	if err := zw.Flush(); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// at is the time t0+ms.
func at(ms int) time.Time { return time.UnixMilli(t0 + int64(ms)).UTC() }

// entry is what a capture's path holds: file data, or something else a tenant may put there.
type entry struct {
	data []byte
	// fifo, dir and link (a symbolic link to link, relative to the capture) make it that instead.
	fifo, dir bool
	link      string
}

func data(b []byte) entry { return entry{data: b} }

// captureOf writes a capture directory and opens it.
func captureOf(t *testing.T, entries map[string]entry) *os.Root {
	t.Helper()
	dir := t.TempDir()
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range entries {
			if !yield(n) {
				return
			}
		}
	})
	for _, name := range names {
		e := entries[name]
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch {
		case e.fifo:
			err = syscall.Mkfifo(p, 0o644)
		case e.dir:
			err = os.Mkdir(p, 0o755)
		case e.link != "":
			err = os.Symlink(e.link, p)
		default:
			err = os.WriteFile(p, e.data, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return root
}

// windowLines reads a window file back, line by line.
func windowLines(t *testing.T, data []byte) []string {
	t.Helper()
	text, err := io.ReadAll(gzipReader(t, data))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for l := range strings.Lines(string(text)) {
		lines = append(lines, strings.TrimSuffix(l, "\n"))
	}
	return lines
}

func TestCutWindow(t *testing.T) {
	tool := `{"timestamp": 1, "event": {"schema": "dynamo.request.trace.v1", "event_type": "tool_end", "event_time_unix_ms": 1760000000150, "tool": {"tool_call_id": "c"}}}`
	// No request_received_ms: the record's event time is the arrival.
	noReceived := `{"schema": "dynamo.request.trace.v1", "event_type": "request_end", "event_time_unix_ms": 1760000000450, ` +
		`"request": {"request_id": "bare", "output_tokens": 0, "replay": {"trace_block_size": 16, "input_length": 4, "input_sequence_hashes": [9]}}}`
	noReceivedLine := `{"schema":"dynamo.request.trace.v1","event_type":"request_end","event_time_unix_ms":1760000000450,"request":{"request_id":"w0000000006","output_tokens":0,` +
		`"request_received_ms":1760000000450,"replay":{"trace_block_size":16,"input_length":4,"input_sequence_hashes":[9]}}}`
	agentic := `{"schema": "dynamo.request.trace.v1", "event_type": "request_end", "agent_context": {"session": "prompt text"}, ` +
		`"request": {"output_tokens": 2, "request_received_ms": 1760000000500.25, "replay": {"trace_block_size": 16, "input_length": 4, "input_sequence_hashes": []}}}`
	agenticLine := `{"schema":"dynamo.request.trace.v1","event_type":"request_end","agent_context":{},"request":{"request_id":"w0000000007","output_tokens":2,` +
		`"request_received_ms":1760000000500.25,"replay":{"trace_block_size":16,"input_length":4,"input_sequence_hashes":[]}}}`
	long := `{"pad": "` + strings.Repeat("x", maxLine) + `"}`
	tests := []struct {
		name      string
		capture   map[string]entry
		window    Window
		wantLines []string
		want      WindowSummary
	}{{
		name: "two pods, merged in completion order across pods and segments, reduced to the replay's fields",
		capture: map[string]entry{
			"fe-a/request-trace.000000.jsonl.gz": data(segmentOf(endRecord(100, 900), endRecord(0, 950), tool)),
			"fe-a/request-trace.000001.jsonl.gz": data(segmentOf(endRecord(300, 1000), noReceived, agentic)),
			"fe-b/request-trace.000000.jsonl.gz": data(segmentOf(endRecord(200, 400), endRecord(50, 600))),
		},
		window: Window{Start: at(0), End: at(1000)},
		// noReceived completes at 450 (its event time) and agentic, with no event time, at its
		// arrival (500.25), after fe-a's 1000: a pod's own order is never changed.
		wantLines: []string{windowLineOf(1, 200, 400), windowLineOf(2, 50, 600), windowLineOf(3, 100, 900), windowLineOf(4, 0, 950),
			windowLineOf(5, 300, 1000), noReceivedLine, agenticLine},
		want: WindowSummary{Requests: 7, Segments: 3, Pods: 2, FirstArrival: at(0), LastArrival: at(500).Add(250 * time.Microsecond)},
	}, {
		name: "the window holds its start and not its end",
		capture: map[string]entry{
			"fe-a/request-trace.000000.jsonl.gz": data(segmentOf(
				endRecord(99, 2000), endRecord(100, 2001), endRecord(150, 2002), endRecord(199, 2003), endRecord(200, 2004))),
		},
		window:    Window{Start: at(100), End: at(200)},
		wantLines: []string{windowLineOf(1, 100, 2001), windowLineOf(2, 150, 2002), windowLineOf(3, 199, 2003)},
		want:      WindowSummary{Requests: 3, Segments: 1, Pods: 1, FirstArrival: at(100), LastArrival: at(199)},
	}, {
		name: "segments are read in index order, not name order; other files are ignored",
		capture: map[string]entry{
			"fe-a/request-trace.000010.jsonl.gz": data(segmentOf(endRecord(10, 30))),
			"fe-a/request-trace.9.jsonl.gz":      data(segmentOf(endRecord(11, 20))),
			"fe-a/request-trace.tmp.jsonl.gz":    data([]byte("not a segment")),
			"fe-a/notes.txt":                     data([]byte("not a segment")),
		},
		window:    Window{Start: at(0), End: at(100)},
		wantLines: []string{windowLineOf(1, 11, 20), windowLineOf(2, 10, 30)},
		want:      WindowSummary{Requests: 2, Segments: 2, Pods: 1, FirstArrival: at(10), LastArrival: at(11)},
	}, {
		name: "the open last segments of live pods are skipped and counted",
		capture: map[string]entry{
			"fe-a/request-trace.000000.jsonl.gz": data(segmentOf(endRecord(0, 10))),
			// Flushed records, then a line cut in the middle, and no trailer.
			"fe-a/request-trace.000001.jsonl.gz": data(openSegment(`{"timestamp": 5, "event": {"sche`, endRecord(20, 30))),
			// Whole lines, no trailer.
			"fe-b/request-trace.000000.jsonl.gz": data(openSegment("", endRecord(5, 10))),
			// Created, nothing written yet.
			"fe-c/request-trace.000000.jsonl.gz": data(nil),
			// A gzip header cut short.
			"fe-d/request-trace.000003.jsonl.gz": data(segmentOf(endRecord(1, 2))[:5]),
		},
		window:    Window{Start: at(0), End: at(100)},
		wantLines: []string{windowLineOf(1, 0, 10)},
		want:      WindowSummary{Requests: 1, Segments: 1, TruncatedSegments: 4, Pods: 4, FirstArrival: at(0), LastArrival: at(0)},
	}, {
		name: "segments whose requests all arrived before the age bound are stale; open and empty ones never",
		capture: map[string]entry{
			"fe-a/request-trace.000000.jsonl.gz": data(segmentOf(endRecord(10, 20), endRecord(40, 900))),
			// One request arrived at the bound: the segment is kept.
			"fe-a/request-trace.000001.jsonl.gz": data(segmentOf(endRecord(45, 60), endRecord(50, 70))),
			"fe-a/request-trace.000002.jsonl.gz": data(segmentOf(tool)),
			"fe-b/request-trace.000000.jsonl.gz": data(segmentOf(endRecord(30, 35))),
			"fe-b/request-trace.000001.jsonl.gz": data(openSegment("", endRecord(31, 36))),
			"fe-c/request-trace.000000.jsonl.gz": data(segmentOf(endRecord(500, 510))),
		},
		window:    Window{Start: at(100), End: at(1000), StaleBefore: at(50)},
		wantLines: []string{windowLineOf(1, 500, 510)},
		want: WindowSummary{Requests: 1, Segments: 5, TruncatedSegments: 1, Pods: 3, FirstArrival: at(500), LastArrival: at(500),
			Stale: []string{"fe-a/request-trace.000000.jsonl.gz", "fe-b/request-trace.000000.jsonl.gz"}},
	}, {
		name: "hostile entries are skipped and counted: a FIFO, a symbolic link to a segment, a linked pod directory, a directory as a segment, a damaged segment",
		capture: map[string]entry{
			"fe-a/request-trace.000000.jsonl.gz": data(segmentOf(endRecord(0, 10))),
			// A read of a FIFO would block until someone writes to it.
			"fe-a/request-trace.000001.jsonl.gz": {fifo: true},
			// Another pod's segment, again: it is not read twice.
			"fe-a/request-trace.000002.jsonl.gz": {link: "../fe-b/request-trace.000000.jsonl.gz"},
			"fe-a/request-trace.000003.jsonl.gz": {dir: true},
			"fe-a/request-trace.000004.jsonl.gz": data([]byte("a text file, not a gzip stream\n")),
			"fe-b/request-trace.000000.jsonl.gz": data(segmentOf(endRecord(1, 11))),
			// Another pod's directory, or a directory outside the request's: never followed.
			"fe-c":                               {link: "fe-b"},
			"fe-d":                               {link: "/"},
			"fe-e":                               data([]byte("a file where a pod directory goes")),
			"fe-f/request-trace.000000.jsonl.gz": {link: "/etc/passwd"},
		},
		window:    Window{Start: at(0), End: at(100)},
		wantLines: []string{windowLineOf(1, 0, 10), windowLineOf(2, 1, 11)},
		want:      WindowSummary{Requests: 2, Segments: 2, SkippedSegments: 5, SkippedDirectories: 3, Pods: 3, FirstArrival: at(0), LastArrival: at(1)},
	}, {
		name: "lines that cannot be placed in time are skipped and counted, as are malformed records outside the window",
		capture: map[string]entry{
			"fe-a/request-trace.000000.jsonl.gz": data(segmentOf(
				endRecord(0, 10),
				`{"timestamp": 5, "event": {"sche`,
				`[1, 2]`,
				`{"schema": "v0", "event_type": "request_end"}`,
				`{"schema": "dynamo.request.trace.v1", "event_type": "request_end", "request": {"output_tokens": 1}}`,
				long,
				// Outside the window: read only for its arrival.
				strings.Replace(endRecord(5000, 5001), `"output_tokens": 3, `, "", 1),
				endRecord(1, 12))),
		},
		window:    Window{Start: at(0), End: at(100)},
		wantLines: []string{windowLineOf(1, 0, 10), windowLineOf(2, 1, 12)},
		want:      WindowSummary{Requests: 2, Segments: 1, SkippedLines: 5, Pods: 1, FirstArrival: at(0), LastArrival: at(1)},
	}, {
		name: "an empty window",
		capture: map[string]entry{
			"fe-a/request-trace.000000.jsonl.gz": data(segmentOf(endRecord(0, 10), tool)),
		},
		window: Window{Start: at(1000), End: at(2000)},
		want:   WindowSummary{Segments: 1, Pods: 1},
	}, {
		name:    "no segments at all",
		capture: map[string]entry{"fe-a": {dir: true}},
		window:  Window{Start: at(0), End: at(1)},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			done := make(chan struct{})
			var got WindowSummary
			var err error
			go func() {
				defer close(done)
				got, err = CutWindow(captureOf(t, tc.capture), tc.window, Limits{}, &out)
			}()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the cut blocks")
			}
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(out.Bytes())
			tc.want.SHA256 = hex.EncodeToString(sum[:])
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("summary (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantLines, windowLines(t, out.Bytes())); diff != "" {
				t.Errorf("lines of the window (-want +got):\n%s", diff)
			}
		})
	}
}

// A malformed request of the window fails the cut naming its segment, line and field, and a
// window over its bounds fails naming the bound; nothing is written either way. So does a window
// that ends before it starts.
func TestCutWindowErrors(t *testing.T) {
	ok := endRecord(0, 10)
	noOutput := strings.Replace(endRecord(50, 60), `"output_tokens": 3, `, "", 1)
	tests := []struct {
		name    string
		capture map[string]entry
		window  Window
		limits  Limits
		want    string
		wantErr any
	}{
		{"a request of the window without output tokens", map[string]entry{
			"fe-a/request-trace.000000.jsonl.gz": data(segmentOf(ok)),
			"fe-b/request-trace.000002.jsonl.gz": data(segmentOf(ok, noOutput)),
		}, Window{Start: at(0), End: at(100)}, Limits{},
			"fe-b/request-trace.000002.jsonl.gz: a request of the window has a malformed record: line 2: event.request.output_tokens: required",
			new(*MalformedRecordError)},
		{"more requests than the bound", map[string]entry{
			"fe-a/request-trace.000000.jsonl.gz": data(segmentOf(ok, endRecord(1, 11))),
			"fe-b/request-trace.000000.jsonl.gz": data(segmentOf(endRecord(2, 12))),
		}, Window{Start: at(0), End: at(100)}, Limits{MaxRequests: 2},
			"the window holds more than 2 requests, the most a window may hold", new(*WindowTooLargeError)},
		{"more bytes than the bound", map[string]entry{
			"fe-a/request-trace.000000.jsonl.gz": data(segmentOf(ok, endRecord(1, 11))),
		}, Window{Start: at(0), End: at(100)}, Limits{MaxBytes: int64(len(windowLineOf(1, 0, 10))) + 1},
			fmt.Sprintf("the window's records take more than %d bytes uncompressed", len(windowLineOf(1, 0, 10))+1), new(*WindowTooLargeError)},
		{"an end before the start", map[string]entry{}, Window{Start: at(100), End: at(100)}, Limits{},
			"the window's start 2025-10-09T08:53:20Z is not before its end 2025-10-09T08:53:20Z", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			_, err := CutWindow(captureOf(t, tc.capture), tc.window, tc.limits, &out)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			if tc.wantErr != nil && !errors.As(err, tc.wantErr) {
				t.Errorf("got %T, want %T", err, tc.wantErr)
			}
			if out.Len() != 0 {
				t.Errorf("%d bytes written", out.Len())
			}
		})
	}
}

// A window over its bounds is refused as soon as the survey passes them, but a segment still
// being written (no gzip trailer) is not part of the window, however much it holds.
func TestOpenSegmentDoesNotCountAgainstTheBounds(t *testing.T) {
	var lines []string
	for i := range 10 {
		lines = append(lines, endRecord(i, 100+i))
	}
	capture := captureOf(t, map[string]entry{
		"fe-a/request-trace.000000.jsonl.gz": data(segmentOf(lines[:2]...)),
		"fe-a/request-trace.000001.jsonl.gz": data(openSegment("", lines[2:]...)),
	})
	sum, err := CutWindow(capture, Window{Start: at(0), End: at(1000)}, Limits{MaxRequests: 3}, io.Discard)
	if err != nil || sum.Requests != 2 || sum.TruncatedSegments != 1 {
		t.Errorf("got %+v, %v; want 2 requests and the open segment skipped", sum, err)
	}
}

// The two traces the real Frontend wrote (testdata), as the segments of two pods: a window
// over all of them holds every request of both, and reads back as the same requests; a window
// over part of them holds those that arrive in it. No line carries a field the replay does not
// read.
func TestCutWindowOfTheRealCapture(t *testing.T) {
	gz, err := os.ReadFile(captureGzip)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := os.ReadFile(captureJSONL)
	if err != nil {
		t.Fatal(err)
	}
	capture := captureOf(t, map[string]entry{
		"frontend-a/request-trace.000000.jsonl.gz": data(gz),
		"frontend-b/request-trace.000000.jsonl.gz": data(segmentOf(strings.TrimSpace(string(plain)))),
	})
	a, err := Read(captureGzip, FormatDynamo, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Read(captureJSONL, FormatDynamo, 0)
	if err != nil {
		t.Fatal(err)
	}
	all := append(append([]Request(nil), a.Requests...), b.Requests...)
	arrivals := make([]float64, len(all))
	for i, r := range all {
		arrivals[i] = r.TimestampMs
	}
	slices.Sort(arrivals)
	first, median, last := fromUnixMs(arrivals[0]), fromUnixMs(arrivals[len(arrivals)/2]), fromUnixMs(arrivals[len(arrivals)-1])
	for _, tc := range []struct {
		name   string
		window Window
	}{
		{"all of it", Window{Start: first, End: last.Add(time.Millisecond)}},
		{"the later half", Window{Start: median, End: last.Add(time.Millisecond)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want tokens
			for _, r := range all {
				if at := fromUnixMs(r.TimestampMs); !at.Before(tc.window.Start) && at.Before(tc.window.End) {
					want.add(r)
				}
			}
			var out bytes.Buffer
			sum, err := CutWindow(capture, tc.window, Limits{}, &out)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseDynamo(gzipReader(t, out.Bytes()), 16)
			if err != nil {
				t.Fatal(err)
			}
			var read tokens
			for _, r := range got.Requests {
				read.add(r)
			}
			if diff := cmp.Diff(want, read); diff != "" {
				t.Errorf("requests read back from the window (-want +got):\n%s", diff)
			}
			if sum.Requests != want.Requests || sum.Pods != 2 || sum.Segments != 2 {
				t.Errorf("summary %+v, want %d requests of 2 segments of 2 pods", sum, want.Requests)
			}
			for _, l := range windowLines(t, out.Bytes()) {
				if keys := jsonKeys(t, l); !slices.Equal(keys, windowKeys) {
					t.Fatalf("a window line carries %v, want only %v: %s", keys, windowKeys, l)
				}
			}
		})
	}
}

// windowKeys are the object keys a window line of a record with an event time has, as jsonKeys
// lists them.
var windowKeys = []string{"event_time_unix_ms", "event_type", "request", "request.output_tokens", "request.replay",
	"request.replay.input_length", "request.replay.input_sequence_hashes", "request.replay.trace_block_size",
	"request.request_id", "request.request_received_ms", "schema"}

// jsonKeys lists the object keys of a JSON document as dotted paths, sorted.
func jsonKeys(t *testing.T, doc string) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatal(err)
	}
	var keys []string
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		if m, ok := v.(map[string]any); ok {
			for k, e := range m {
				keys = append(keys, prefix+k)
				walk(prefix+k+".", e)
			}
		}
	}
	walk("", v)
	slices.Sort(keys)
	return keys
}

// A cut holds one line and one record per pod in memory, not the window: cutting a window of
// 64 MiB of records (uncompressed, 4 pods) grows the heap by less than 24 MiB. Holding the window
// before writing it took 2.4 times its size.
func TestCutWindowMemoryIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("writes ~100 MiB of records")
	}
	dir := t.TempDir()
	ids := capture.SequenceHashes(400)
	var windowBytes int64
	const pods, segments, records = 4, 3, 700
	for p := range pods {
		for s := range segments {
			capture.WriteSegment(t, dir, p, s, func(w io.Writer) {
				for i := range records {
					n := int64(s*records+i) * 10
					if _, err := capture.RequestEnd(w, t0+n+int64(p), 6400, ids); err != nil {
						t.Fatal(err)
					}
				}
			})
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()

	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		var m runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > peak.Load() {
				peak.Store(m.HeapAlloc)
			}
		}
	})
	cw := &counter{}
	began := time.Now()
	sum, err := CutWindow(root, Window{Start: at(0), End: at(1 << 30)}, Limits{}, cw)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	windowBytes = cw.uncompressed(t)
	if sum.Requests != pods*segments*records || windowBytes < 64<<20 {
		t.Fatalf("the window holds %d requests in %d bytes, want %d in at least 64 MiB", sum.Requests, windowBytes, pods*segments*records)
	}
	grown := int64(peak.Load()) - int64(base.HeapAlloc)
	t.Logf("a window of %d MiB cut in %s with a heap peak of %d MiB over the baseline", windowBytes>>20, time.Since(began).Round(time.Second), grown>>20)
	// The live heap is a few MiB; the collector lets it double before it runs.
	if grown > 24<<20 {
		t.Errorf("the heap grew by %d MiB cutting a window of %d MiB: the cut holds the window", grown>>20, windowBytes>>20)
	}
}

// counter keeps only what a window's gzip stream decompresses to, counting it.
type counter struct{ buf bytes.Buffer }

func (c *counter) Write(p []byte) (int, error) { return c.buf.Write(p) }

func (c *counter) uncompressed(t *testing.T) int64 {
	t.Helper()
	n, err := io.Copy(io.Discard, gzipReader(t, c.buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// tokens are the totals of a set of requests.
type tokens struct{ Requests, Input, Output int }

func (t *tokens) add(r Request) {
	t.Requests, t.Input, t.Output = t.Requests+1, t.Input+r.Input, t.Output+r.Output
}

func gzipReader(t *testing.T, data []byte) io.Reader {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return zr
}
