package requesttrace

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

// FormatDynamo is Dynamo's request trace (dynamo.request.trace.v1), as the frontend writes it
// with DYN_REQUEST_TRACE.
const FormatDynamo = "dynamo"

// DynamoSchema is the schema every record of a Dynamo request trace names.
const DynamoSchema = "dynamo.request.trace.v1"

// A Dynamo request trace has one JSON record per line, either bare or, as the frontend's jsonl
// and jsonl_gz sinks write it, wrapped as {"timestamp": <ms since the sink started>, "event":
// <record>}. Only request_end records are requests; tool and payload events are skipped. A
// request_end record holds, under request: output_tokens, request_received_ms (the arrival,
// Unix ms; the record's event_time_unix_ms stands in when it is absent) and replay:
// {trace_block_size, input_length, input_sequence_hashes}. The hashes are Dynamo's chained
// sequence hashes of the prompt's blocks (the last one covers a partial block), unsigned 64-bit.

// Read parses a trace file of format (mooncake or dynamo). A dynamo file whose name ends in .gz
// is read through gzip, as the frontend's default sink writes it.
func Read(path, format string, blockSize int) (*Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	var t *Trace
	switch format {
	case "", FormatMooncake:
		t, err = Parse(r, blockSize)
	case FormatDynamo:
		if strings.HasSuffix(path, ".gz") {
			zr, zerr := gzip.NewReader(f)
			if zerr != nil {
				return nil, zerr
			}
			defer zr.Close()
			r = zr
		}
		t, err = ParseDynamo(r, blockSize)
	default:
		return nil, fmt.Errorf("trace format %q is not supported", format)
	}
	if t != nil {
		t.Path = path
	}
	return t, err
}

// ParseDynamo reads a Dynamo request trace. blockSize, when positive, must equal the records'
// trace_block_size. Requests are ordered by arrival: the frontend writes a record when its
// request ends, so file order is completion order. Hashes are renumbered densely in order of
// first appearance (equal hashes stay equal), which the prefix cache needs and keeps the ids
// within int64.
func ParseDynamo(r io.Reader, blockSize int) (*Trace, error) {
	t := &Trace{Format: FormatDynamo}
	ids := map[uint64]int64{}
	firstBlockLine := 0
	last, err := scanDynamo(r, func(line int, _ []byte, rec *dynamoRecord) error {
		switch {
		case rec.agentic:
			return &ParseError{Line: line, Field: rec.prefix + "agent_context",
				Reason: "agentic Dynamo traces (session dependencies and tool waits) are not supported by aisim"}
		case t.BlockSize == 0 && blockSize > 0 && rec.blockSize != blockSize:
			return &ParseError{Line: line, Field: rec.prefix + "request.replay.trace_block_size",
				Reason: fmt.Sprintf("%d does not match traffic.source.block_size %d", rec.blockSize, blockSize)}
		case t.BlockSize == 0:
			t.BlockSize, firstBlockLine = rec.blockSize, line
		case rec.blockSize != t.BlockSize:
			return &ParseError{Line: line, Field: rec.prefix + "request.replay.trace_block_size",
				Reason: fmt.Sprintf("%d differs from %d on line %d (one trace has one block size)", rec.blockSize, t.BlockSize, firstBlockLine)}
		}
		req := rec.req
		req.HashIDs = make([]int64, len(rec.hashes))
		for i, h := range rec.hashes {
			id, ok := ids[h]
			if !ok {
				id = int64(len(ids))
				ids[h] = id
			}
			req.HashIDs[i] = id
		}
		t.Requests = append(t.Requests, req)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(t.Requests) == 0 {
		return nil, &ParseError{Line: last, Reason: "the trace has no request_end records"}
	}
	slices.SortStableFunc(t.Requests, func(a, b Request) int { return cmp.Compare(a.TimestampMs, b.TimestampMs) })
	return t, nil
}

// scanDynamo calls visit with every request_end record of a Dynamo request trace, its line number
// and its text (valid only during the call), and returns the number of lines read. It stops at
// the first malformed record, the first error of visit, or the first error of r.
func scanDynamo(r io.Reader, visit func(line int, text []byte, rec *dynamoRecord) error) (int, error) {
	return scanLines(r, func(line int, b []byte) error {
		rec, err := parseDynamoRecord(b, line)
		if err != nil || rec == nil {
			return err
		}
		return visit(line, b, rec)
	})
}

// dynamoRecord is one request_end record: the request, its block size and raw hashes, whether it
// carries an agent_context, and the path prefix of its fields on the line ("event." when
// wrapped). outputTokens is request.output_tokens as recorded (req.Output is at least 1), and
// eventTimeMs the record's event_time_unix_ms, when it has a valid one (hasEventTime).
type dynamoRecord struct {
	req          Request
	blockSize    int
	hashes       []uint64
	agentic      bool
	prefix       string
	outputTokens int
	eventTimeMs  float64
	hasEventTime bool
}

// object decodes raw as a JSON object with numbers kept textual; nil when raw is not one.
func object(raw json.RawMessage) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return nil
	}
	return m
}

func present(m map[string]json.RawMessage, k string) (json.RawMessage, bool) {
	v, ok := m[k]
	return v, ok && string(v) != "null"
}

// parseDynamoRecord returns nil for a record that is not a request (a tool or payload event).
func parseDynamoRecord(b []byte, line int) (*dynamoRecord, error) {
	rec, req, err := placeDynamoRecord(b, line)
	if err != nil || rec == nil {
		return nil, err
	}
	if err := rec.complete(req); err != nil {
		return nil, err
	}
	return rec, nil
}

// placeDynamoRecord reads what places a line in time: whether it is a request_end record and
// when its request arrived (req.TimestampMs). It returns the record so far and its request
// object for complete, or nil for a record that is not a request.
func placeDynamoRecord(b []byte, line int) (*dynamoRecord, map[string]json.RawMessage, error) {
	top := object(b)
	if top == nil {
		var v any
		reason := "not a JSON object"
		if err := json.Unmarshal(b, &v); err != nil {
			reason += ": " + err.Error()
		}
		return nil, nil, &ParseError{Line: line, Reason: reason}
	}
	rec := &dynamoRecord{req: Request{Line: line}}
	fail := func(field, format string, args ...any) (*dynamoRecord, map[string]json.RawMessage, error) {
		return nil, nil, &ParseError{Line: line, Field: rec.prefix + field, Reason: fmt.Sprintf(format, args...)}
	}
	ev := top
	if raw, ok := top["event"]; ok {
		if ev = object(raw); ev == nil {
			return fail("event", "expected an object (the wrapped record)")
		}
		rec.prefix = "event."
	}
	var schema, eventType string
	if raw, ok := present(ev, "schema"); !ok || json.Unmarshal(raw, &schema) != nil || schema != DynamoSchema {
		return fail("schema", "expected %q, got %s", DynamoSchema, orMissing(raw, ok))
	}
	if raw, ok := present(ev, "event_type"); !ok || json.Unmarshal(raw, &eventType) != nil {
		return fail("event_type", "expected a string, got %s", orMissing(raw, ok))
	}
	if eventType != "request_end" {
		return nil, nil, nil
	}
	// Whether an agentic record can be replayed is the reader's call, not the format's.
	_, rec.agentic = present(ev, "agent_context")
	reqRaw, ok := present(ev, "request")
	req := object(reqRaw)
	if !ok || req == nil {
		return fail("request", "required on a request_end record (an object)")
	}
	var err error
	if v, ok := present(ev, "event_time_unix_ms"); ok {
		if t, err := number(v); err == nil {
			rec.eventTimeMs, rec.hasEventTime = t, true
		}
	}
	if v, ok := present(req, "request_received_ms"); ok {
		if rec.req.TimestampMs, err = number(v); err != nil {
			return fail("request.request_received_ms", "%v", err)
		}
	} else if v, ok := present(ev, "event_time_unix_ms"); ok {
		if rec.req.TimestampMs, err = number(v); err != nil {
			return fail("event_time_unix_ms", "%v", err)
		}
	} else {
		return fail("request.request_received_ms", "required (or event_time_unix_ms)")
	}
	rec.req.HasTimestamp = true
	return rec, req, nil
}

// complete reads the rest of a placed request_end record from its request object.
func (rec *dynamoRecord) complete(req map[string]json.RawMessage) error {
	line := rec.req.Line
	fail := func(field, format string, args ...any) error {
		return &ParseError{Line: line, Field: rec.prefix + field, Reason: fmt.Sprintf(format, args...)}
	}
	var err error
	out, ok := present(req, "output_tokens")
	if !ok {
		return fail("request.output_tokens", "required")
	}
	if rec.outputTokens, err = count(out, 0); err != nil {
		return fail("request.output_tokens", "%v", err)
	}
	// A request cancelled before its first token still ran its prefill; it replays as one token.
	rec.req.Output = max(1, rec.outputTokens)
	replayRaw, ok := present(req, "replay")
	replay := object(replayRaw)
	if !ok || replay == nil {
		return fail("request.replay", "required (an object: trace_block_size, input_length, input_sequence_hashes)")
	}
	v, ok := present(replay, "trace_block_size")
	if !ok {
		return fail("request.replay.trace_block_size", "required")
	}
	if rec.blockSize, err = count(v, 1); err != nil {
		return fail("request.replay.trace_block_size", "%v", err)
	}
	if v, ok = present(replay, "input_length"); !ok {
		return fail("request.replay.input_length", "required")
	}
	if rec.req.Input, err = count(v, 1); err != nil {
		return fail("request.replay.input_length", "%v", err)
	}
	hv, ok := present(replay, "input_sequence_hashes")
	var hashes []json.Number
	if !ok || json.Unmarshal(hv, &hashes) != nil {
		return fail("request.replay.input_sequence_hashes", "required (a list of unsigned 64-bit integers)")
	}
	if need := (rec.req.Input + rec.blockSize - 1) / rec.blockSize; len(hashes) > need {
		return fail("request.replay.input_sequence_hashes", "%d blocks for %d input tokens (at most %d of %d tokens)", len(hashes), rec.req.Input, need, rec.blockSize)
	}
	rec.hashes = make([]uint64, len(hashes))
	for i, n := range hashes {
		if rec.hashes[i], err = strconv.ParseUint(string(n), 10, 64); err != nil {
			return fail(fmt.Sprintf("request.replay.input_sequence_hashes[%d]", i), "expected an unsigned 64-bit integer, got %s", n)
		}
	}
	return nil
}

// appendWindowLine appends the record as a window holds it: the fields a replay reads, as
// parsed, and nothing else (no timings, worker ids or anything the Frontend may add):
//
//	{"schema":"dynamo.request.trace.v1","event_type":"request_end","event_time_unix_ms":E,
//	 "request":{"request_id":"w0000000001","output_tokens":N,"request_received_ms":A,
//	 "replay":{"trace_block_size":B,"input_length":L,"input_sequence_hashes":[...]}}}
//
// The request id is the record's position in the window (seq), not the captured one: readers need
// one, unique, and the Frontend's is not the window's to pass on. It has a fixed width (ten
// digits, more than a window may hold requests), so a line's length does not depend on it and
// setWindowID can set it later. event_time_unix_ms only when the
// record had a valid one; an agentic record keeps an empty "agent_context" object, so that
// readers refuse it as they refuse the captured record.
func (rec *dynamoRecord) appendWindowLine(dst []byte, seq int) []byte {
	dst = append(dst, `{"schema":"`+DynamoSchema+`","event_type":"request_end"`...)
	if rec.hasEventTime {
		dst = append(dst, `,"event_time_unix_ms":`...)
		dst = strconv.AppendFloat(dst, rec.eventTimeMs, 'f', -1, 64)
	}
	if rec.agentic {
		dst = append(dst, `,"agent_context":{}`...)
	}
	dst = append(dst, `,"request":{"request_id":"`...)
	dst = appendWindowID(dst, seq)
	dst = append(dst, `","output_tokens":`...)
	dst = strconv.AppendInt(dst, int64(rec.outputTokens), 10)
	dst = append(dst, `,"request_received_ms":`...)
	dst = strconv.AppendFloat(dst, rec.req.TimestampMs, 'f', -1, 64)
	dst = append(dst, `,"replay":{"trace_block_size":`...)
	dst = strconv.AppendInt(dst, int64(rec.blockSize), 10)
	dst = append(dst, `,"input_length":`...)
	dst = strconv.AppendInt(dst, int64(rec.req.Input), 10)
	dst = append(dst, `,"input_sequence_hashes":[`...)
	for i, h := range rec.hashes {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendUint(dst, h, 10)
	}
	return append(dst, "]}}}"...)
}

// windowIDPrefix starts the request id of a window line; its digits follow.
const windowIDPrefix = `,"request":{"request_id":"w`

// maxWindowID is the largest position a window's request id can hold.
const maxWindowID = 9_999_999_999

func appendWindowID(dst []byte, seq int) []byte {
	return fmt.Appendf(dst, "w%010d", seq)
}

// setWindowID sets the request id of a window line that appendWindowLine wrote.
func setWindowID(line []byte, seq int) {
	i := bytes.Index(line, []byte(windowIDPrefix)) + len(windowIDPrefix)
	copy(line[i:i+10], fmt.Appendf(nil, "%010d", seq))
}

func orMissing(raw json.RawMessage, ok bool) string {
	if !ok {
		return "nothing"
	}
	return string(raw)
}
