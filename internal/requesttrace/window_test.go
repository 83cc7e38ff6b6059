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
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// t0 is a Unix time in ms; records below arrive at t0 + offsets.
const t0 = 1_760_000_000_000

// endRecord is a request_end record as the Frontend's gzip sink wraps it: id arrives at
// t0+arrival and ends at t0+end.
func endRecord(id string, arrival, end int) string {
	return fmt.Sprintf(`{"timestamp": %d, "event": {"schema": "dynamo.request.trace.v1", "event_type": "request_end", "event_time_unix_ms": %d, `+
		`"request": {"request_id": %q, "output_tokens": 3, "request_received_ms": %d, "replay": {"trace_block_size": 16, "input_length": 20, "input_sequence_hashes": [1, 2]}}}}`,
		end, t0+end, id, t0+arrival)
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

func file(data []byte) *fstest.MapFile { return &fstest.MapFile{Data: data} }

// at is the time t0+ms.
func at(ms int) time.Time { return time.UnixMilli(t0 + int64(ms)).UTC() }

// windowIDs reads a window file back: the request ids in file order.
func windowIDs(t *testing.T, data []byte) []string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	text, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for l := range strings.Lines(string(text)) {
		type record struct {
			Request struct {
				ID string `json:"request_id"`
			} `json:"request"`
		}
		var rec struct {
			record
			Event *record `json:"event"`
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("window line %q: %v", l, err)
		}
		if rec.Event != nil {
			rec.record = *rec.Event
		}
		ids = append(ids, rec.Request.ID)
	}
	return ids
}

func TestCutWindow(t *testing.T) {
	tool := `{"timestamp": 1, "event": {"schema": "dynamo.request.trace.v1", "event_type": "tool_end", "event_time_unix_ms": 1760000000150, "tool": {"tool_call_id": "c"}}}`
	// No request_received_ms: the record's event time is the arrival.
	noReceived := `{"schema": "dynamo.request.trace.v1", "event_type": "request_end", "event_time_unix_ms": 1760000000450, ` +
		`"request": {"request_id": "bare", "output_tokens": 1, "replay": {"trace_block_size": 16, "input_length": 4, "input_sequence_hashes": [9]}}}`
	tests := []struct {
		name    string
		capture fstest.MapFS
		window  Window
		wantIDs []string
		want    WindowSummary
	}{{
		name: "two pods, completions out of arrival order, ordered by arrival across pods and segments",
		capture: fstest.MapFS{
			"fe-a/request-trace.000000.jsonl.gz": file(segmentOf(endRecord("a1", 100, 900), endRecord("a0", 0, 950), tool)),
			"fe-a/request-trace.000001.jsonl.gz": file(segmentOf(endRecord("a2", 300, 1000), noReceived)),
			"fe-b/request-trace.000000.jsonl.gz": file(segmentOf(endRecord("b0", 200, 400), endRecord("b1", 50, 600))),
		},
		window:  Window{Start: at(0), End: at(1000)},
		wantIDs: []string{"a0", "b1", "a1", "b0", "a2", "bare"},
		want:    WindowSummary{Requests: 6, Segments: 3, Pods: 2, FirstArrival: at(0), LastArrival: at(450)},
	}, {
		name: "the window holds its start and not its end",
		capture: fstest.MapFS{
			"fe-a/request-trace.000000.jsonl.gz": file(segmentOf(
				endRecord("before", 99, 2000), endRecord("start", 100, 2000), endRecord("inside", 150, 2000),
				endRecord("lastms", 199, 2000), endRecord("end", 200, 2000))),
		},
		window:  Window{Start: at(100), End: at(200)},
		wantIDs: []string{"start", "inside", "lastms"},
		want:    WindowSummary{Requests: 3, Segments: 1, Pods: 1, FirstArrival: at(100), LastArrival: at(199)},
	}, {
		name: "segments are read in index order, not name order; other files are ignored",
		capture: fstest.MapFS{
			"fe-a/request-trace.000010.jsonl.gz": file(segmentOf(endRecord("ten", 10, 20))),
			"fe-a/request-trace.9.jsonl.gz":      file(segmentOf(endRecord("nine", 10, 20))),
			"fe-a/request-trace.tmp.jsonl.gz":    file([]byte("not a segment")),
			"fe-a/notes.txt":                     file([]byte("not a segment")),
			"request-trace.000000.jsonl.gz":      file([]byte("not in a pod directory")),
		},
		window:  Window{Start: at(0), End: at(100)},
		wantIDs: []string{"nine", "ten"},
		want:    WindowSummary{Requests: 2, Segments: 2, Pods: 1, FirstArrival: at(10), LastArrival: at(10)},
	}, {
		name: "the open last segments of live pods are skipped and counted",
		capture: fstest.MapFS{
			"fe-a/request-trace.000000.jsonl.gz": file(segmentOf(endRecord("a0", 0, 10))),
			// Flushed records, then a line cut in the middle, and no trailer.
			"fe-a/request-trace.000001.jsonl.gz": file(openSegment(`{"timestamp": 5, "event": {"sche`, endRecord("a1", 20, 30))),
			// Whole lines, no trailer.
			"fe-b/request-trace.000000.jsonl.gz": file(openSegment("", endRecord("b0", 5, 10))),
			// Created, nothing written yet.
			"fe-c/request-trace.000000.jsonl.gz": file(nil),
			// A gzip header cut short.
			"fe-d/request-trace.000003.jsonl.gz": file(segmentOf(endRecord("d0", 1, 2))[:5]),
		},
		window:  Window{Start: at(0), End: at(100)},
		wantIDs: []string{"a0"},
		want:    WindowSummary{Requests: 1, Segments: 1, TruncatedSegments: 4, Pods: 4, FirstArrival: at(0), LastArrival: at(0)},
	}, {
		name: "segments whose requests all arrived before the age bound are stale; open and empty ones never",
		capture: fstest.MapFS{
			"fe-a/request-trace.000000.jsonl.gz": file(segmentOf(endRecord("old0", 10, 20), endRecord("old1", 40, 900))),
			// One request arrived at the bound: the segment is kept.
			"fe-a/request-trace.000001.jsonl.gz": file(segmentOf(endRecord("old2", 45, 60), endRecord("edge", 50, 70))),
			"fe-a/request-trace.000002.jsonl.gz": file(segmentOf(tool)),
			"fe-b/request-trace.000000.jsonl.gz": file(segmentOf(endRecord("b0", 30, 35))),
			"fe-b/request-trace.000001.jsonl.gz": file(openSegment("", endRecord("b1", 31, 36))),
			"fe-c/request-trace.000000.jsonl.gz": file(segmentOf(endRecord("new", 500, 510))),
		},
		window:  Window{Start: at(100), End: at(1000), StaleBefore: at(50)},
		wantIDs: []string{"new"},
		want: WindowSummary{Requests: 1, Segments: 5, TruncatedSegments: 1, Pods: 3, FirstArrival: at(500), LastArrival: at(500),
			Stale: []string{"fe-a/request-trace.000000.jsonl.gz", "fe-b/request-trace.000000.jsonl.gz"}},
	}, {
		name: "an empty window",
		capture: fstest.MapFS{
			"fe-a/request-trace.000000.jsonl.gz": file(segmentOf(endRecord("a0", 0, 10), tool)),
		},
		window: Window{Start: at(1000), End: at(2000)},
		want:   WindowSummary{Segments: 1, Pods: 1},
	}, {
		name:    "no segments at all",
		capture: fstest.MapFS{"fe-a": &fstest.MapFile{Mode: os.ModeDir}},
		window:  Window{Start: at(0), End: at(1)},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			got, err := CutWindow(tc.capture, tc.window, &out)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(out.Bytes())
			tc.want.SHA256 = hex.EncodeToString(sum[:])
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("summary (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantIDs, windowIDs(t, out.Bytes())); diff != "" {
				t.Errorf("requests of the window (-want +got):\n%s", diff)
			}
		})
	}
}

// A malformed record fails the cut naming its segment, line and field, wherever it lies in time;
// so do a damaged closed segment and a window that ends before it starts.
func TestCutWindowErrors(t *testing.T) {
	ok := endRecord("ok", 0, 10)
	bad := strings.Replace(endRecord("bad", 99999, 99999), `"output_tokens": 3, `, "", 1)
	corrupt := segmentOf(ok)
	corrupt[len(corrupt)-6] ^= 0xff // the trailer's CRC
	tests := []struct {
		name    string
		capture fstest.MapFS
		window  Window
		want    string
	}{
		{"a record without output tokens, outside the window", fstest.MapFS{
			"fe-a/request-trace.000000.jsonl.gz": file(segmentOf(ok)),
			"fe-b/request-trace.000002.jsonl.gz": file(segmentOf(ok, bad)),
		}, Window{Start: at(0), End: at(100)},
			"fe-b/request-trace.000002.jsonl.gz: line 2: event.request.output_tokens: required"},
		{"a line that is not JSON in a closed segment", fstest.MapFS{
			"fe-a/request-trace.000000.jsonl.gz": file(segmentOf(ok, `{"timestamp": 5, "event": {"sche`)),
		}, Window{Start: at(0), End: at(100)},
			"fe-a/request-trace.000000.jsonl.gz: line 2: not a JSON object"},
		{"a checksum that does not match", fstest.MapFS{
			"fe-a/request-trace.000000.jsonl.gz": file(corrupt),
		}, Window{Start: at(0), End: at(100)},
			"fe-a/request-trace.000000.jsonl.gz: gzip: invalid checksum"},
		{"not gzip", fstest.MapFS{
			"fe-a/request-trace.000000.jsonl.gz": file([]byte(ok + "\n")),
		}, Window{Start: at(0), End: at(100)},
			"fe-a/request-trace.000000.jsonl.gz: gzip: invalid header"},
		{"an end before the start", fstest.MapFS{}, Window{Start: at(100), End: at(100)},
			"the window's start 2025-10-09T08:53:20Z is not before its end 2025-10-09T08:53:20Z"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := CutWindow(tc.capture, tc.window, io.Discard)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
	_, err := CutWindow(fstest.MapFS{"fe-b/request-trace.000002.jsonl.gz": file(segmentOf(bad))}, Window{Start: at(0), End: at(1)}, io.Discard)
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Line != 1 || pe.Field != "event.request.output_tokens" {
		t.Errorf("got %v, want a *ParseError of line 1, event.request.output_tokens", err)
	}
}

// The two traces the real Frontend wrote (testdata), as the segments of two pods: a window
// over all of them holds every request of both, in arrival order, and reads back as the same
// requests; a window over part of them holds those that arrive in it.
func TestCutWindowOfTheRealCapture(t *testing.T) {
	gz, err := os.ReadFile(captureGzip)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := os.ReadFile(captureJSONL)
	if err != nil {
		t.Fatal(err)
	}
	capture := fstest.MapFS{
		"frontend-a/request-trace.000000.jsonl.gz": file(gz),
		"frontend-b/request-trace.000000.jsonl.gz": file(segmentOf(strings.TrimSpace(string(plain)))),
	}
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
			sum, err := CutWindow(capture, tc.window, &out)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseDynamo(gzipReader(t, out.Bytes()), 16)
			if err != nil {
				t.Fatal(err)
			}
			var read tokens
			for i, r := range got.Requests {
				read.add(r)
				if r.Line != i+1 {
					t.Errorf("request %d is on line %d: the window is not in arrival order", i+1, r.Line)
				}
			}
			if diff := cmp.Diff(want, read); diff != "" {
				t.Errorf("requests read back from the window (-want +got):\n%s", diff)
			}
			if sum.Requests != want.Requests || sum.Pods != 2 || sum.Segments != 2 {
				t.Errorf("summary %+v, want %d requests of 2 segments of 2 pods", sum, want.Requests)
			}
		})
	}
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
