package requesttrace

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"container/heap"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// A capture (spec.deployment.capture) is a directory per request, named after the request's UID,
// holding a directory per Frontend pod, named after the pod, each holding the segments its
// request-trace sink wrote: request-trace.000000.jsonl.gz, request-trace.000001.jsonl.gz, ...
// (internal/render/capture.go). Each segment is one gzip stream of Dynamo request-trace records
// in completion order.
//
// The claim is written by the Frontend pods and by anything else in the namespace that mounts
// it, so a cut trusts none of it: it reads only directories and regular files, never through a
// symbolic link, opens without blocking (a FIFO), holds a bounded amount of it in memory
// whatever the window's size, and skips what it cannot read, counting it.

// segmentName matches a segment's file name and captures its index.
var segmentName = regexp.MustCompile(`^request-trace\.([0-9]+)\.jsonl\.gz$`)

// Window is the span of request arrivals a window holds: Start inclusive, End exclusive.
type Window struct {
	Start, End time.Time
	// StaleBefore, when set, lists in the summary's Stale the complete segments all of whose
	// requests arrived before it: those a capture's age bound lets go.
	StaleBefore time.Time
}

// Limits bound a window; a zero field takes its default.
type Limits struct {
	// MaxRequests is the most requests a window may hold (DefaultMaxWindowRequests).
	MaxRequests int
	// MaxBytes is the most bytes a window file may hold uncompressed (DefaultMaxWindowBytes).
	MaxBytes int64
}

// The default bounds of a window, and the fixed bounds of a cut. What a cut holds in memory is
// bounded by these, not by the window: one line (maxLine), and one record per merged pod.
const (
	// DefaultMaxWindowRequests is Limits.MaxRequests when unset.
	DefaultMaxWindowRequests = 1_000_000
	// DefaultMaxWindowBytes is Limits.MaxBytes when unset: the window file's uncompressed size,
	// which also bounds its compressed size on disk.
	DefaultMaxWindowBytes int64 = 128 << 20
	// MaxWindowPods is the most Frontend pods whose segments hold requests of one window: the
	// merge keeps a segment of each open.
	MaxWindowPods = 128
	// maxMergeBytes bounds the records the merge holds at once, one per pod (the longest window
	// record of each pod).
	maxMergeBytes = 32 << 20
	// maxEntries bounds the directory entries a cut lists (pod directories, and files of each).
	maxEntries = 65536
)

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
	// SkippedSegments is the number of files named like segments that were skipped: not a regular
	// file (a symbolic link, a FIFO, a device, a directory), unreadable, or not a gzip stream.
	SkippedSegments int `json:"skippedSegments,omitempty"`
	// SkippedDirectories is the number of entries of the capture that were skipped as pod
	// directories: not a directory (a symbolic link among them), or unreadable.
	SkippedDirectories int `json:"skippedDirectories,omitempty"`
	// SkippedLines is the number of lines of read segments that were skipped because they cannot be
	// placed in time: not a JSON object, not a Dynamo request-trace record, a request_end record
	// without a valid arrival, or a line longer than the reader's limit.
	SkippedLines int `json:"skippedLines,omitempty"`
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
	// before Window.StaleBefore; never a truncated or skipped one, nor one without a request.
	Stale []string `json:"-"`
}

// WindowTooLargeError is a window over one of its bounds. Nothing was written.
type WindowTooLargeError struct {
	// Bound names what is bounded: "requests", "bytes", "pods", "merge bytes" or "entries".
	Bound string
	// Max is the bound.
	Max int64
}

func (e *WindowTooLargeError) Error() string {
	switch e.Bound {
	case "requests":
		return fmt.Sprintf("the window holds more than %d requests, the most a window may hold", e.Max)
	case "bytes":
		return fmt.Sprintf("the window's records take more than %d bytes uncompressed, the most a window file may hold", e.Max)
	case "pods":
		return fmt.Sprintf("the segments of more than %d Frontend pods hold requests of the window, the most one cut merges", e.Max)
	case "merge bytes":
		return fmt.Sprintf("the longest window record of each Frontend pod take more than %d bytes together, the most the merge holds at once", e.Max)
	default:
		return fmt.Sprintf("the capture has more than %d %s, the most a cut lists", e.Max, e.Bound)
	}
}

// MalformedRecordError is a request of the window whose record is malformed. Nothing was written.
type MalformedRecordError struct {
	// Segment is the segment, relative to the capture.
	Segment string
	Err     *ParseError
}

func (e *MalformedRecordError) Error() string {
	return fmt.Sprintf("%s: a request of the window has a malformed record: %v", e.Segment, e.Err)
}

func (e *MalformedRecordError) Unwrap() error { return e.Err }

// OpenCapture opens the directory dir of the capture mounted at mount (dir a single path
// component, the request's UID), refusing a dir that is a symbolic link.
func OpenCapture(mount, dir string) (*os.Root, error) {
	if dir == "" || dir == "." || dir == ".." || path.Base(dir) != dir {
		return nil, fmt.Errorf("the capture directory %q is not one path component", dir)
	}
	root, err := os.OpenRoot(mount)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return openDir(root, dir)
}

// errNotDirectory and errNotRegular mark an entry of the wrong type.
var (
	errNotDirectory = errors.New("not a directory (a symbolic link is not followed)")
	errNotRegular   = errors.New("not a regular file (a symbolic link is not followed)")
)

// openDir opens the directory name of parent, which must be a directory itself: os.Root follows
// a symbolic link that stays inside it, so the directory opened must be the one Lstat saw.
func openDir(parent *os.Root, name string) (*os.Root, error) {
	fi, err := parent.Lstat(name)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s: %w", name, errNotDirectory)
	}
	r, err := parent.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	if opened, err := r.Stat("."); err != nil || !os.SameFile(fi, opened) {
		r.Close()
		return nil, fmt.Errorf("%s: %w", name, errNotDirectory)
	}
	return r, nil
}

// openRegular opens the regular file name of dir for reading without following a symbolic link
// and without blocking (a FIFO would block an ordinary open until a writer comes), and returns
// it with its Lstat.
func openRegular(dir *os.Root, name string) (*os.File, fs.FileInfo, error) {
	f, err := dir.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	opened, err := f.Stat()
	if err == nil && !opened.Mode().IsRegular() {
		err = fmt.Errorf("%s: %w", name, errNotRegular)
	}
	var fi fs.FileInfo
	if err == nil {
		// os.Root follows a symbolic link inside the root: the name must be the file itself.
		if fi, err = dir.Lstat(name); err == nil && (!fi.Mode().IsRegular() || !os.SameFile(fi, opened)) {
			err = fmt.Errorf("%s: %w", name, errNotRegular)
		}
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// segment is one segment file of a capture and what the survey found in it.
type segment struct {
	// name is its path in the capture, file its name in its pod directory, index its index.
	name, file string
	index      uint64
	// info is its Lstat when surveyed: the merge reads the same file.
	info fs.FileInfo
	// requests is the number of its requests in the window, bytes their window lines' size
	// (newlines included), longest the longest window line.
	requests int
	bytes    int64
	longest  int
}

// pod is a pod directory of a capture and its segments, by index.
type pod struct {
	name     string
	info     fs.FileInfo
	segments []*segment
}

// CutWindow reads every segment of the capture (one directory per Frontend pod), keeps the
// request_end records whose arrival (request.request_received_ms, else event_time_unix_ms, as
// ParseDynamo reads it) lies in w, and writes them to out as one gzip JSONL stream, each record
// reduced to the fields a replay reads (appendWindowLine). Records are merged across pods in
// completion order (event_time_unix_ms, else the arrival), the order of each segment, so the
// merge holds one record per pod; ties keep the order of pods and lines, so the same capture
// always gives the same file. Readers order requests by arrival.
//
// A nil capture is an empty one (no Frontend pod wrote to it yet). It reads the capture twice. The survey reads every segment: it skips and counts what it cannot
// read (SkippedSegments, SkippedDirectories, SkippedLines: a line it cannot place in time), skips whole a
// segment whose gzip stream ends early (its records may end in a partial line, and which of them
// were flushed depends on the Frontend's buffering), and returns, before anything is written, a
// *WindowTooLargeError for a window over lim or over the merge's bounds, and a
// *MalformedRecordError for a request of the window whose record is malformed. The merge then
// reads the segments holding requests of the window again, one open per pod, and fails if one
// changed in between.
func CutWindow(capture *os.Root, w Window, lim Limits, out io.Writer) (WindowSummary, error) {
	var sum WindowSummary
	if !w.Start.Before(w.End) {
		return sum, fmt.Errorf("the window's start %s is not before its end %s", w.Start.Format(time.RFC3339), w.End.Format(time.RFC3339))
	}
	if lim.MaxRequests <= 0 {
		lim.MaxRequests = DefaultMaxWindowRequests
	}
	lim.MaxRequests = min(lim.MaxRequests, maxWindowID)
	if lim.MaxBytes <= 0 {
		lim.MaxBytes = DefaultMaxWindowBytes
	}
	pods, err := listCapture(capture, &sum)
	if err != nil {
		return sum, err
	}
	s := &survey{lim: lim, startMs: unixMs(w.Start), endMs: unixMs(w.End), staleMs: math.Inf(-1),
		first: math.Inf(1), last: math.Inf(-1), sum: &sum}
	if !w.StaleBefore.IsZero() {
		s.staleMs = unixMs(w.StaleBefore)
	}
	for _, p := range pods {
		if err := s.pod(capture, p); err != nil {
			return sum, err
		}
	}
	sum.Requests = s.requests
	if s.requests > 0 {
		sum.FirstArrival, sum.LastArrival = fromUnixMs(s.first), fromUnixMs(s.last)
	}
	merged := slices.DeleteFunc(pods, func(p *pod) bool {
		p.segments = slices.DeleteFunc(p.segments, func(seg *segment) bool { return seg.requests == 0 })
		return len(p.segments) == 0
	})
	if len(merged) > MaxWindowPods {
		return sum, &WindowTooLargeError{Bound: "pods", Max: MaxWindowPods}
	}
	var held int64
	for _, p := range merged {
		held += int64(slices.MaxFunc(p.segments, func(a, b *segment) int { return cmp.Compare(a.longest, b.longest) }).longest)
	}
	if held > maxMergeBytes {
		return sum, &WindowTooLargeError{Bound: "merge bytes", Max: maxMergeBytes}
	}
	h := sha256.New()
	if err := merge(capture, w, merged, s.bytes, io.MultiWriter(out, h)); err != nil {
		return sum, err
	}
	sum.SHA256 = hex.EncodeToString(h.Sum(nil))
	return sum, nil
}

// listCapture lists the capture's pod directories (skipping and counting other entries) and
// their segments, ordered by pod, then index. Other files are not the sink's and are ignored. A
// nil capture is an empty one.
func listCapture(capture *os.Root, sum *WindowSummary) ([]*pod, error) {
	if capture == nil {
		return nil, nil
	}
	entries, err := readDir(capture)
	if err != nil {
		return nil, fmt.Errorf("listing the capture: %w", err)
	}
	var pods []*pod
	listed := len(entries)
	for _, e := range entries {
		if !e.IsDir() {
			sum.SkippedDirectories++
			continue
		}
		dir, err := openDir(capture, e.Name())
		if err != nil {
			sum.SkippedDirectories++
			continue
		}
		info, err := dir.Stat(".")
		var files []fs.DirEntry
		if err == nil {
			files, err = readDir(dir)
		}
		dir.Close()
		if listed += len(files); listed > maxEntries {
			return nil, &WindowTooLargeError{Bound: "entries", Max: maxEntries}
		}
		if err != nil {
			sum.SkippedDirectories++
			continue
		}
		p := &pod{name: e.Name(), info: info}
		for _, f := range files {
			m := segmentName.FindStringSubmatch(f.Name())
			if m == nil {
				continue
			}
			index, err := strconv.ParseUint(m[1], 10, 64)
			if err != nil {
				sum.SkippedSegments++
				continue
			}
			p.segments = append(p.segments, &segment{name: path.Join(p.name, f.Name()), file: f.Name(), index: index})
		}
		if len(p.segments) == 0 {
			continue
		}
		slices.SortFunc(p.segments, func(a, b *segment) int { return cmp.Compare(a.index, b.index) })
		pods = append(pods, p)
	}
	slices.SortFunc(pods, func(a, b *pod) int { return cmp.Compare(a.name, b.name) })
	sum.Pods = len(pods)
	return pods, nil
}

// readDir lists the directory dir of r, at most maxEntries entries.
func readDir(r *os.Root) ([]fs.DirEntry, error) {
	f, err := r.Open(".")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []fs.DirEntry
	for {
		batch, err := f.ReadDir(1024)
		out = append(out, batch...)
		if len(out) > maxEntries {
			return nil, &WindowTooLargeError{Bound: "entries", Max: maxEntries}
		}
		if errors.Is(err, io.EOF) || (err == nil && len(batch) == 0) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// survey is the first reading of a capture: what each segment holds of the window.
type survey struct {
	lim            Limits
	startMs, endMs float64
	staleMs        float64
	sum            *WindowSummary
	// requests and bytes are the totals of the complete segments surveyed so far; first and
	// last their earliest and latest arrival.
	requests    int
	bytes       int64
	first, last float64
	// line and windowLine are buffers reused for every line.
	line, windowLine []byte
}

// pod surveys the segments of p.
func (s *survey) pod(capture *os.Root, p *pod) error {
	dir, err := openDir(capture, p.name)
	if err == nil {
		defer dir.Close()
		if info, serr := dir.Stat("."); serr != nil || !os.SameFile(info, p.info) {
			err = fmt.Errorf("%s: %w", p.name, errNotDirectory)
		}
	}
	if err != nil {
		// Listed, then gone or replaced: none of its segments is read.
		s.sum.SkippedDirectories++
		p.segments = nil
		return nil
	}
	for _, seg := range p.segments {
		if err := s.segment(dir, seg); err != nil {
			return err
		}
	}
	return nil
}

// segmentState is how reading a segment ended.
type segmentState int

const (
	segmentComplete segmentState = iota
	segmentTruncated
	segmentBad
)

// readState classifies the error that ended the reading of a gzip stream.
func readState(err error) segmentState {
	switch {
	case err == nil:
		return segmentComplete
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return segmentTruncated
	default:
		// Not gzip (gzip.ErrHeader), corrupt (flate.CorruptInputError, gzip.ErrChecksum), or
		// unreadable.
		return segmentBad
	}
}

// segment surveys one segment: it counts and measures its requests of the window, and adds them
// to the totals when the segment is complete.
func (s *survey) segment(dir *os.Root, seg *segment) error {
	f, info, err := openRegular(dir, seg.file)
	if err != nil {
		s.sum.SkippedSegments++
		return nil
	}
	defer f.Close()
	seg.info = info
	seg.requests, seg.bytes, seg.longest = 0, 0, 0
	bad, newest := 0, math.Inf(-1)
	first, last := math.Inf(1), math.Inf(-1)
	zr, err := gzip.NewReader(bufio.NewReaderSize(f, 64<<10))
	if err != nil {
		s.skip(seg, readState(err))
		return nil
	}
	lr := &lineReader{r: bufio.NewReaderSize(zr, 64<<10), buf: &s.line}
	var over error
	for {
		text, tooLong, err := lr.next()
		if err != nil {
			if st := readState(ignoreEOF(err)); st != segmentComplete {
				s.skip(seg, st)
				return nil
			}
			break
		}
		if over != nil {
			continue // reading on only to tell a truncated segment from a complete one
		}
		if tooLong {
			bad++
			continue
		}
		if len(text) == 0 {
			continue
		}
		rec, req, err := placeDynamoRecord(text, lr.line)
		if err != nil {
			bad++
			continue
		}
		if rec == nil {
			continue
		}
		a := rec.req.TimestampMs
		newest = math.Max(newest, a)
		if a < s.startMs || a >= s.endMs {
			continue
		}
		if err := rec.complete(req); err != nil {
			// The partial last line of a truncated segment is that cut, not a malformed record.
			over = &MalformedRecordError{Segment: seg.name, Err: err.(*ParseError)}
			continue
		}
		s.windowLine = rec.appendWindowLine(s.windowLine[:0], 0)
		seg.requests++
		seg.bytes += int64(len(s.windowLine)) + 1
		seg.longest = max(seg.longest, len(s.windowLine))
		first, last = math.Min(first, a), math.Max(last, a)
		switch {
		case s.requests+seg.requests > s.lim.MaxRequests:
			over = &WindowTooLargeError{Bound: "requests", Max: int64(s.lim.MaxRequests)}
		case s.bytes+seg.bytes > s.lim.MaxBytes:
			over = &WindowTooLargeError{Bound: "bytes", Max: s.lim.MaxBytes}
		}
	}
	if over != nil {
		return over
	}
	s.sum.Segments++
	s.sum.SkippedLines += bad
	s.requests += seg.requests
	s.bytes += seg.bytes
	s.first, s.last = math.Min(s.first, first), math.Max(s.last, last)
	if !math.IsInf(s.staleMs, -1) && !math.IsInf(newest, -1) && newest < s.staleMs {
		s.sum.Stale = append(s.sum.Stale, seg.name)
	}
	return nil
}

// skip counts a segment that is not read, and takes none of it into the window.
func (s *survey) skip(seg *segment, st segmentState) {
	seg.requests = 0
	if st == segmentTruncated {
		s.sum.TruncatedSegments++
	} else {
		s.sum.SkippedSegments++
	}
}

func ignoreEOF(err error) error {
	if errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil
	}
	return err
}

// lineReader reads the lines of a stream one at a time into a shared buffer, each at most
// maxLine bytes: a longer line is read through and reported, never held.
type lineReader struct {
	r    *bufio.Reader
	buf  *[]byte
	line int
}

// next returns the next line, trimmed (valid until the next call), and whether it was too long;
// io.EOF after the last one, or the stream's error.
func (l *lineReader) next() ([]byte, bool, error) {
	b := (*l.buf)[:0]
	tooLong := false
	for {
		frag, err := l.r.ReadSlice('\n')
		if !tooLong {
			if len(b)+len(frag) > maxLine+1 {
				tooLong, b = true, b[:0]
			} else {
				b = append(b, frag...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		*l.buf = b
		if err != nil && (!errors.Is(err, io.EOF) || (len(frag) == 0 && len(b) == 0 && !tooLong)) {
			// io.EOF with nothing read; any other error, also after part of a line.
			return nil, false, err
		}
		l.line++
		return bytes.TrimSpace(b), tooLong, nil
	}
}

// stream is one pod's window records in the merge: its segments holding requests of the window,
// read in order, and the record at its head.
type stream struct {
	order    int
	dir      *os.Root
	segments []*segment
	next     int
	f        *os.File
	lr       *lineReader
	zr       *gzip.Reader
	seen     int
	cur      *segment
	// head is the window line of the stream's next record and key its completion time.
	head []byte
	key  float64
}

// advance moves the head to the stream's next record of the window; false when there is none.
func (s *stream) advance(startMs, endMs float64) (bool, error) {
	for {
		if s.cur == nil {
			if s.next == len(s.segments) {
				return false, nil
			}
			if err := s.open(s.segments[s.next]); err != nil {
				return false, err
			}
			s.next++
		}
		text, tooLong, err := s.lr.next()
		if err != nil {
			if err := ignoreEOF(err); err != nil {
				return false, s.changed("its gzip stream no longer ends cleanly: %v", err)
			}
			if s.seen != s.cur.requests {
				return false, s.changed("it holds %d requests of the window, not %d", s.seen, s.cur.requests)
			}
			s.close()
			continue
		}
		if tooLong || len(text) == 0 {
			continue
		}
		rec, req, err := placeDynamoRecord(text, s.lr.line)
		if err != nil || rec == nil || rec.req.TimestampMs < startMs || rec.req.TimestampMs >= endMs {
			continue
		}
		if err := rec.complete(req); err != nil {
			return false, s.changed("%v", err)
		}
		s.seen++
		if s.seen > s.cur.requests {
			return false, s.changed("it holds more requests of the window than the %d it held", s.cur.requests)
		}
		s.head = rec.appendWindowLine(s.head[:0], 0)
		s.key = rec.req.TimestampMs
		if rec.hasEventTime {
			s.key = rec.eventTimeMs
		}
		return true, nil
	}
}

// open starts reading seg, which must be the file the survey read.
func (s *stream) open(seg *segment) error {
	f, info, err := openRegular(s.dir, seg.file)
	if err == nil && !os.SameFile(info, seg.info) {
		f.Close()
		err = errors.New("another file took its name")
	}
	if err != nil {
		return fmt.Errorf("the segment %s changed during the cut: %w", seg.name, err)
	}
	zr, err := gzip.NewReader(bufio.NewReaderSize(f, 32<<10))
	if err != nil {
		f.Close()
		return fmt.Errorf("the segment %s changed during the cut: %w", seg.name, err)
	}
	s.f, s.zr, s.cur, s.seen = f, zr, seg, 0
	s.lr = &lineReader{r: bufio.NewReaderSize(zr, 32<<10), buf: s.lr.buf}
	return nil
}

func (s *stream) close() {
	if s.f != nil {
		s.f.Close()
	}
	s.f, s.zr, s.cur = nil, nil, nil
}

func (s *stream) changed(format string, args ...any) error {
	name := s.cur.name
	s.close()
	return fmt.Errorf("the segment %s changed during the cut: %s", name, fmt.Sprintf(format, args...))
}

// streams is a min-heap of streams by their head's completion time, then pod order.
type streams []*stream

func (h streams) Len() int { return len(h) }
func (h streams) Less(i, j int) bool {
	return cmp.Or(cmp.Compare(h[i].key, h[j].key), cmp.Compare(h[i].order, h[j].order)) < 0
}
func (h streams) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *streams) Push(x any)   { *h = append(*h, x.(*stream)) }
func (h *streams) Pop() any {
	old := *h
	s := old[len(old)-1]
	*h = old[:len(old)-1]
	return s
}

var newline = []byte{'\n'}

// merge writes the window records of pods to out as one gzip stream, merged by completion time;
// want is the size the survey measured.
func merge(capture *os.Root, w Window, pods []*pod, want int64, out io.Writer) error {
	startMs, endMs := unixMs(w.Start), unixMs(w.End)
	var line []byte
	h := make(streams, 0, len(pods))
	defer func() {
		for _, s := range h {
			s.close()
			s.dir.Close()
		}
	}()
	for i, p := range pods {
		dir, err := openDir(capture, p.name)
		if err == nil {
			if info, serr := dir.Stat("."); serr != nil || !os.SameFile(info, p.info) {
				dir.Close()
				err = errNotDirectory
			}
		}
		if err != nil {
			return fmt.Errorf("the pod directory %s changed during the cut: %w", p.name, err)
		}
		longest := slices.MaxFunc(p.segments, func(a, b *segment) int { return cmp.Compare(a.longest, b.longest) }).longest
		s := &stream{order: i, dir: dir, segments: p.segments, head: make([]byte, 0, longest), lr: &lineReader{buf: &line}}
		ok, err := s.advance(startMs, endMs)
		if err != nil {
			dir.Close()
			return err
		}
		if !ok {
			dir.Close()
			return fmt.Errorf("the pod directory %s changed during the cut: it holds no request of the window", p.name)
		}
		h = append(h, s)
	}
	heap.Init(&h)
	zw := gzip.NewWriter(out)
	var written int64
	for seq := 1; h.Len() > 0; seq++ {
		s := h[0]
		setWindowID(s.head, seq)
		if _, err := zw.Write(s.head); err != nil {
			return err
		}
		if _, err := zw.Write(newline); err != nil {
			return err
		}
		written += int64(len(s.head)) + 1
		ok, err := s.advance(startMs, endMs)
		if err != nil {
			return err
		}
		if ok {
			heap.Fix(&h, 0)
			continue
		}
		heap.Pop(&h)
		s.close()
		s.dir.Close()
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if written != want {
		return fmt.Errorf("the window's records took %d bytes, not the %d the first reading measured: the capture changed during the cut", written, want)
	}
	return nil
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
