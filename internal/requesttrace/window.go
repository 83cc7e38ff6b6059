package requesttrace

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path"
	"regexp"
	"slices"
	"strconv"
	"time"
)

// A capture (spec.deployment.capture) is a directory per Frontend pod, named after the pod, each
// holding the segments its request-trace sink wrote: request-trace.000000.jsonl.gz,
// request-trace.000001.jsonl.gz, ... (internal/render/capture.go). Each segment is one gzip
// stream of Dynamo request-trace records in completion order.

// segmentName matches a segment's file name and captures its index.
var segmentName = regexp.MustCompile(`^request-trace\.([0-9]+)\.jsonl\.gz$`)

// Window is the span of request arrivals a window holds: Start inclusive, End exclusive.
type Window struct {
	Start, End time.Time
	// StaleBefore, when set, lists in the summary's Stale the complete segments all of whose
	// requests arrived before it: those a capture's age bound lets go.
	StaleBefore time.Time
}

// WindowSummary describes a cut window. It is small (well under the 4 KiB of a termination
// message) and is what the operator records about the window.
type WindowSummary struct {
	// Requests is the number of requests in the window.
	Requests int `json:"requests"`
	// SHA256 is the hex SHA-256 of the window file as written.
	SHA256 string `json:"sha256"`
	// Segments is the number of segments read.
	Segments int `json:"segments"`
	// TruncatedSegments is the number of segments skipped because their gzip stream ends early:
	// the open segment of a Frontend that is still running, or of one killed before it closed it.
	TruncatedSegments int `json:"truncatedSegments"`
	// Pods is the number of pod directories holding at least one segment.
	Pods int `json:"pods"`
	// FirstArrival and LastArrival are the earliest and latest arrival in the window (UTC), absent
	// when it is empty.
	FirstArrival time.Time `json:"firstArrival,omitzero"`
	LastArrival  time.Time `json:"lastArrival,omitzero"`
	// PrunedSegments is the number of stale segments deleted after the cut (set by the caller
	// that deletes them).
	PrunedSegments int `json:"prunedSegments,omitempty"`
	// Stale names the complete segments, relative to the capture, whose requests all arrived
	// before Window.StaleBefore; never a truncated one, nor one without a request.
	Stale []string `json:"-"`
}

// segment is one segment file of a capture: its path in the capture, pod directory and index.
type segment struct {
	name  string
	pod   string
	index uint64
}

// windowRecord is a request of the window: its arrival (Unix ms) and its line as captured.
type windowRecord struct {
	arrivalMs float64
	text      []byte
}

// CutWindow reads every segment of the capture in capture (one directory per Frontend pod),
// keeps the request_end records whose arrival (request.request_received_ms, else
// event_time_unix_ms, as ParseDynamo reads it) lies in w, and writes them to out as one gzip JSONL
// stream ordered by arrival, each line as captured. A malformed record fails naming its segment,
// line and field, wherever it lies in time. A segment whose gzip stream ends early is skipped
// whole and counted: its records may end in a partial line, and which of them were flushed
// depends on the Frontend's buffering.
func CutWindow(capture fs.FS, w Window, out io.Writer) (WindowSummary, error) {
	var sum WindowSummary
	if !w.Start.Before(w.End) {
		return sum, fmt.Errorf("the window's start %s is not before its end %s", w.Start.Format(time.RFC3339), w.End.Format(time.RFC3339))
	}
	segments, err := listSegments(capture)
	if err != nil {
		return sum, err
	}
	startMs, endMs := unixMs(w.Start), unixMs(w.End)
	var kept []windowRecord
	pods := map[string]bool{}
	for _, s := range segments {
		pods[s.pod] = true
		recs, newest, truncated, err := readSegment(capture, s.name, startMs, endMs)
		if err != nil {
			return sum, err
		}
		if truncated {
			sum.TruncatedSegments++
			continue
		}
		sum.Segments++
		kept = append(kept, recs...)
		if !w.StaleBefore.IsZero() && !math.IsInf(newest, -1) && newest < unixMs(w.StaleBefore) {
			sum.Stale = append(sum.Stale, s.name)
		}
	}
	sum.Pods = len(pods)
	// Segments hold records in completion order; a replay needs arrival order. Ties keep the
	// order of pods, segments and lines, so the same capture always gives the same file.
	slices.SortStableFunc(kept, func(a, b windowRecord) int { return cmp.Compare(a.arrivalMs, b.arrivalMs) })
	sum.Requests = len(kept)
	if len(kept) > 0 {
		sum.FirstArrival, sum.LastArrival = fromUnixMs(kept[0].arrivalMs), fromUnixMs(kept[len(kept)-1].arrivalMs)
	}
	h := sha256.New()
	zw := gzip.NewWriter(io.MultiWriter(out, h))
	for _, r := range kept {
		if _, err := zw.Write(append(r.text, '\n')); err != nil {
			return sum, err
		}
	}
	if err := zw.Close(); err != nil {
		return sum, err
	}
	sum.SHA256 = hex.EncodeToString(h.Sum(nil))
	return sum, nil
}

// listSegments returns the capture's segments ordered by pod, then index. Other files are not
// the sink's and are ignored.
func listSegments(capture fs.FS) ([]segment, error) {
	names, err := fs.Glob(capture, "*/request-trace.*.jsonl.gz")
	if err != nil {
		return nil, err
	}
	var out []segment
	for _, name := range names {
		m := segmentName.FindStringSubmatch(path.Base(name))
		if m == nil {
			continue
		}
		index, err := strconv.ParseUint(m[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: the segment index: %w", name, err)
		}
		out = append(out, segment{name: name, pod: path.Dir(name), index: index})
	}
	slices.SortFunc(out, func(a, b segment) int {
		return cmp.Or(cmp.Compare(a.pod, b.pod), cmp.Compare(a.index, b.index))
	})
	return out, nil
}

// readSegment returns the records of one segment that arrive in [startMs, endMs) and the newest
// arrival of all its records (-Inf without one), or truncated when its gzip stream ends early.
func readSegment(capture fs.FS, name string, startMs, endMs float64) (recs []windowRecord, newest float64, truncated bool, err error) {
	newest = math.Inf(-1)
	f, err := capture.Open(name)
	if err != nil {
		return nil, newest, false, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if isTruncation(err) {
		return nil, newest, true, nil
	}
	if err != nil {
		return nil, newest, false, fmt.Errorf("%s: %w", name, err)
	}
	_, err = scanDynamo(zr, func(_ int, text []byte, rec *dynamoRecord) error {
		a := rec.req.TimestampMs
		newest = math.Max(newest, a)
		if a >= startMs && a < endMs {
			recs = append(recs, windowRecord{arrivalMs: a, text: bytes.Clone(text)})
		}
		return nil
	})
	if isTruncation(err) {
		return nil, newest, true, nil
	}
	var pe *ParseError
	if errors.As(err, &pe) {
		// The scanner hands over a stream's partial last line before its error: a malformed last
		// line of a truncated segment is that cut, not a malformed record.
		if _, rest := io.Copy(io.Discard, zr); isTruncation(rest) {
			return nil, newest, true, nil
		}
	}
	if err != nil {
		return nil, newest, false, fmt.Errorf("%s: %w", name, err)
	}
	return recs, newest, false, nil
}

// isTruncation reports whether err is a gzip stream that ends early (an empty file included).
func isTruncation(err error) bool {
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// unixMs and fromUnixMs convert between times and Unix ms, exactly for whole milliseconds
// (a float64 of Unix nanoseconds is not exact).
func unixMs(t time.Time) float64 {
	return float64(t.UnixMilli()) + float64(t.Nanosecond()%int(time.Millisecond))/1e6
}

func fromUnixMs(ms float64) time.Time {
	whole := math.Floor(ms)
	return time.UnixMilli(int64(whole)).Add(time.Duration(math.Round((ms - whole) * 1e6))).UTC()
}
