// Package requesttrace reads request traces, one request per JSONL line, in the two formats a
// search replays: mooncake and Dynamo's request trace (dynamo.request.trace.v1, as the Dynamo
// Frontend writes it). It also cuts a time window out of the segments a capture wrote (window.go).
// aisim reads traces through it, and so does the operator's search input container, so both read a
// trace the same way.
//
// A mooncake row (AISimulate contract §3.4) carries the request's arrival `timestamp` (or
// `created_time`) in milliseconds, its prompt length `input_length` (or `input_tokens`), its
// response length `output_length` (or `output_tokens`), and `hash_ids`: one id per block of
// block_size prompt tokens, equal ids meaning equal content from the start of the prompt (the
// ids are chained, so a shared id implies a shared prefix up to it). Optional `session_id` and
// `delay` (or `delay_ms`) describe multi-turn sessions; other documented fields (request_id,
// priority, ...) are accepted and not used.
package requesttrace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
)

// DefaultBlockSize is the mooncake format's hash-block size in tokens.
const DefaultBlockSize = 512

// FormatMooncake is the mooncake trace format (the default).
const FormatMooncake = "mooncake"

// Request is one row of a trace.
type Request struct {
	// Line is the row's 1-based line number in the file.
	Line int
	// TimestampMs is the arrival time in milliseconds; HasTimestamp is false when the row has none.
	TimestampMs  float64
	HasTimestamp bool
	Input        int
	Output       int
	HashIDs      []int64
	Session      string
	DelayMs      float64
}

// Trace is a parsed trace file.
type Trace struct {
	Path string
	// Format is the file's format (FormatMooncake or FormatDynamo).
	Format    string
	BlockSize int
	Requests  []Request
}

// ParseError names the line and field of a malformed row.
type ParseError struct {
	Line   int
	Field  string
	Reason string
}

func (e *ParseError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("line %d: %s", e.Line, e.Reason)
	}
	return fmt.Sprintf("line %d: %s: %s", e.Line, e.Field, e.Reason)
}

// maxLine bounds one row (a 1M-token prompt has ~2000 hash ids of ~10 bytes each).
const maxLine = 16 << 20

// ReadFile parses a mooncake trace file.
func ReadFile(path string, blockSize int) (*Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := Parse(f, blockSize)
	if t != nil {
		t.Path = path
	}
	return t, err
}

// Parse reads mooncake JSONL. Blank lines are skipped; every other line must be a JSON object
// with the required fields, or a *ParseError names its line and field.
func Parse(r io.Reader, blockSize int) (*Trace, error) {
	if blockSize <= 0 {
		blockSize = DefaultBlockSize
	}
	t := &Trace{Format: FormatMooncake, BlockSize: blockSize}
	line, err := scanLines(r, func(line int, b []byte) error {
		req, err := parseRow(b, line, blockSize)
		if err == nil {
			t.Requests = append(t.Requests, req)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(t.Requests) == 0 {
		return nil, &ParseError{Line: line, Reason: "the trace has no requests"}
	}
	return t, nil
}

// scanLines calls visit with every non-blank line of r (trimmed; valid only during the call) and
// its number, and returns the number of lines read. It stops at the first error of visit or of r.
func scanLines(r io.Reader, visit func(line int, b []byte) error) (int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if err := visit(line, b); err != nil {
			return line, err
		}
	}
	return line, scanError(sc, line)
}

func parseRow(b []byte, line, blockSize int) (Request, error) {
	req := Request{Line: line}
	var row map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&row); err != nil || row == nil {
		reason := "not a JSON object"
		if err != nil {
			reason += ": " + err.Error()
		}
		return req, &ParseError{Line: line, Reason: reason}
	}
	if dec.More() {
		return req, &ParseError{Line: line, Reason: "more than one JSON value on the line"}
	}
	fail := func(field, format string, args ...any) (Request, error) {
		return req, &ParseError{Line: line, Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	// either returns the first present key of a pair of aliases.
	either := func(a, b string) (string, json.RawMessage) {
		if v, ok := row[a]; ok && string(v) != "null" {
			return a, v
		}
		if v, ok := row[b]; ok && string(v) != "null" {
			return b, v
		}
		return "", nil
	}
	var err error
	if k, v := either("output_length", "output_tokens"); k == "" {
		return fail("output_length", "required (or output_tokens)")
	} else if req.Output, err = count(v, 1); err != nil {
		return fail(k, "%v", err)
	}
	raw, ok := row["hash_ids"]
	if !ok || string(raw) == "null" {
		return fail("hash_ids", "required (one id per %d-token prompt block)", blockSize)
	}
	var ids []json.Number
	if err := json.Unmarshal(raw, &ids); err != nil {
		return fail("hash_ids", "expected a list of non-negative integers")
	}
	req.HashIDs = make([]int64, len(ids))
	for i, n := range ids {
		v, err := strconv.ParseInt(string(n), 10, 64)
		if err != nil || v < 0 {
			return fail(fmt.Sprintf("hash_ids[%d]", i), "expected a non-negative integer, got %s", n)
		}
		req.HashIDs[i] = v
	}
	if k, v := either("input_length", "input_tokens"); k != "" {
		if req.Input, err = count(v, 1); err != nil {
			return fail(k, "%v", err)
		}
		if need := (req.Input + blockSize - 1) / blockSize; len(req.HashIDs) > need {
			return fail("hash_ids", "%d blocks for %d input tokens (at most %d of %d tokens)", len(req.HashIDs), req.Input, need, blockSize)
		}
	} else {
		if len(req.HashIDs) == 0 {
			return fail("input_length", "required when hash_ids is empty")
		}
		req.Input = len(req.HashIDs) * blockSize
	}
	if k, v := either("timestamp", "created_time"); k != "" {
		if req.TimestampMs, err = number(v); err != nil {
			return fail(k, "%v", err)
		}
		req.HasTimestamp = true
	}
	if k, v := either("delay", "delay_ms"); k != "" {
		if req.DelayMs, err = number(v); err != nil {
			return fail(k, "%v", err)
		}
	}
	if v, ok := row["session_id"]; ok && string(v) != "null" {
		var s any
		if err := json.Unmarshal(v, &s); err != nil {
			return fail("session_id", "expected a string or an integer")
		}
		switch s := s.(type) {
		case string:
			req.Session = s
		case float64:
			req.Session = strconv.FormatFloat(s, 'f', -1, 64)
		default:
			return fail("session_id", "expected a string or an integer")
		}
	}
	return req, nil
}

// count decodes a strict integer >= minimum.
func count(v json.RawMessage, minimum int) (int, error) {
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("expected an integer, got %s", v)
	}
	if n < int64(minimum) {
		return 0, fmt.Errorf("must be >= %d, got %d", minimum, n)
	}
	if n > math.MaxInt32 {
		return 0, fmt.Errorf("is too large (%d)", n)
	}
	return int(n), nil
}

// number decodes a finite, non-negative number.
func number(v json.RawMessage) (float64, error) {
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fmt.Errorf("expected a number, got %s", v)
	}
	if f < 0 {
		return 0, fmt.Errorf("must be >= 0, got %s", v)
	}
	return f, nil
}

// Arrivals returns every request's arrival in seconds from the first one, replayed at speedup
// (2 = twice as fast), in trace order. A session's later turn without a timestamp arrives its
// delay after the previous turn's arrival (aisim does not wait for the previous response). It
// fails naming the line of a row whose arrival cannot be known.
func (t *Trace) Arrivals(speedup float64) ([]float64, error) {
	if speedup <= 0 {
		speedup = 1
	}
	out := make([]float64, len(t.Requests))
	last := map[string]float64{}
	first := math.Inf(1)
	for i, r := range t.Requests {
		ms := r.TimestampMs
		switch {
		case r.HasTimestamp:
		case r.Session != "":
			prev, ok := last[r.Session]
			if !ok {
				return nil, &ParseError{Line: r.Line, Field: "timestamp", Reason: "required on the first turn of a session for trace_timestamps replay"}
			}
			ms = prev + r.DelayMs
		default:
			return nil, &ParseError{Line: r.Line, Field: "timestamp", Reason: "required for trace_timestamps replay"}
		}
		if r.Session != "" {
			last[r.Session] = ms
		}
		out[i] = ms
		first = min(first, ms)
	}
	for i := range out {
		out[i] = (out[i] - first) / 1e3 / speedup
	}
	return out, nil
}

// MaxTokens is the largest input + output of any request (the KV one request needs).
func (t *Trace) MaxTokens() (maxTotal, maxInput int) {
	for _, r := range t.Requests {
		maxTotal = max(maxTotal, r.Input+r.Output)
		maxInput = max(maxInput, r.Input)
	}
	return maxTotal, maxInput
}

// MeanTokens is the mean input and output length.
func (t *Trace) MeanTokens() (input, output float64) {
	for _, r := range t.Requests {
		input += float64(r.Input)
		output += float64(r.Output)
	}
	n := float64(len(t.Requests))
	return input / n, output / n
}

// Rate is the trace's mean arrival rate in requests per second at speedup 1 (0 when the
// trace spans no time or has no timestamps).
func (t *Trace) Rate() float64 {
	arr, err := t.Arrivals(1)
	if err != nil || len(arr) < 2 {
		return 0
	}
	span := slices.Max(arr)
	if span <= 0 {
		return 0
	}
	return float64(len(arr)-1) / span
}

// scanError is the error that ended a scan after line lines, if any; a line over the scanner's
// limit is a ParseError naming it.
func scanError(sc *bufio.Scanner, line int) error {
	err := sc.Err()
	if errors.Is(err, bufio.ErrTooLong) {
		return &ParseError{Line: line + 1, Reason: fmt.Sprintf("longer than %d bytes", maxLine)}
	}
	return err
}
