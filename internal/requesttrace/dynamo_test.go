package requesttrace

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	// captureDir holds a trace the real Dynamo Frontend wrote (its README says how).
	captureDir   = "../../tools/aisim/trace/testdata/dynamo"
	captureJSONL = captureDir + "/frontend-capture.jsonl"
	captureGzip  = captureDir + "/frontend-capture.000000.jsonl.gz"
)

func TestParseDynamoRecords(t *testing.T) {
	const (
		bare    = `{"schema": "dynamo.request.trace.v1", "event_type": "request_end", "event_time_unix_ms": 2000, "request": {"request_id": "a", "output_tokens": 5, "request_received_ms": 1900, "replay": {"trace_block_size": 4, "input_length": 10, "input_sequence_hashes": [18446744073709551615, 7, 9]}}}`
		wrapped = `{"timestamp": 12, "event": {"schema": "dynamo.request.trace.v1", "event_type": "request_end", "event_time_unix_ms": 1500, "request": {"request_id": "b", "output_tokens": 0, "replay": {"trace_block_size": 4, "input_length": 8, "input_sequence_hashes": [18446744073709551615, 7]}}}}`
		tool    = `{"schema": "dynamo.request.trace.v1", "event_type": "tool_end", "event_time_unix_ms": 1700, "tool": {"tool_call_id": "c", "tool_class": "x"}}`
	)
	tests := []struct {
		name      string
		in        string
		blockSize int
		want      *Trace
	}{{
		name: "bare and wrapped records, ordered by arrival; a tool event is skipped",
		in:   bare + "\n\n" + tool + "\n" + wrapped + "\n",
		want: &Trace{Format: FormatDynamo, BlockSize: 4, Requests: []Request{
			// No request_received_ms: the record's event time is the arrival. No output token:
			// the prefill still ran, so it replays as one token.
			{Line: 4, TimestampMs: 1500, HasTimestamp: true, Input: 8, Output: 1, HashIDs: []int64{0, 1}},
			{Line: 1, TimestampMs: 1900, HasTimestamp: true, Input: 10, Output: 5, HashIDs: []int64{0, 1, 2}},
		}},
	}, {
		name:      "a given block size equal to the records'",
		in:        bare,
		blockSize: 4,
		want: &Trace{Format: FormatDynamo, BlockSize: 4, Requests: []Request{
			{Line: 1, TimestampMs: 1900, HasTimestamp: true, Input: 10, Output: 5, HashIDs: []int64{0, 1, 2}},
		}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseDynamo(strings.NewReader(tc.in), tc.blockSize)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// Malformed records are refused naming their line and the field's path on the line.
func TestParseDynamoErrors(t *testing.T) {
	rec := func(request string) string {
		return `{"schema": "dynamo.request.trace.v1", "event_type": "request_end", "event_time_unix_ms": 1, "request": ` + request + `}`
	}
	const ok = `{"schema": "dynamo.request.trace.v1", "event_type": "request_end", "event_time_unix_ms": 1, "request": {"output_tokens": 1, "replay": {"trace_block_size": 4, "input_length": 4, "input_sequence_hashes": [1]}}}`
	tests := []struct {
		name, line string
		blockSize  int
		want       ParseError
	}{
		{"not JSON", `{"schema": `, 0, ParseError{Line: 2}},
		{"wrapped event not an object", `{"timestamp": 1, "event": [1]}`, 0, ParseError{Line: 2, Field: "event"}},
		{"another schema", `{"schema": "v0", "event_type": "request_end"}`, 0, ParseError{Line: 2, Field: "schema"}},
		{"no event type", `{"schema": "dynamo.request.trace.v1"}`, 0, ParseError{Line: 2, Field: "event_type"}},
		{"agentic record", `{"schema": "dynamo.request.trace.v1", "event_type": "request_end", "event_time_unix_ms": 1, "agent_context": {"session_id": "s"}, "request": {"output_tokens": 1, "replay": {"trace_block_size": 4, "input_length": 4, "input_sequence_hashes": [1]}}}`, 0,
			ParseError{Line: 2, Field: "agent_context"}},
		{"no request", `{"schema": "dynamo.request.trace.v1", "event_type": "request_end", "event_time_unix_ms": 1}`, 0, ParseError{Line: 2, Field: "request"}},
		{"no output tokens", rec(`{"replay": {"trace_block_size": 4, "input_length": 4, "input_sequence_hashes": [1]}}`), 0,
			ParseError{Line: 2, Field: "request.output_tokens"}},
		{"output tokens not an integer, wrapped", `{"timestamp": 3, "event": ` + rec(`{"output_tokens": "many", "replay": {}}`) + `}`, 0,
			ParseError{Line: 2, Field: "event.request.output_tokens"}},
		{"negative arrival", rec(`{"output_tokens": 1, "request_received_ms": -4, "replay": {}}`), 0,
			ParseError{Line: 2, Field: "request.request_received_ms"}},
		{"no arrival at all", `{"schema": "dynamo.request.trace.v1", "event_type": "request_end", "request": {"output_tokens": 1}}`, 0,
			ParseError{Line: 2, Field: "request.request_received_ms"}},
		{"no replay metrics", rec(`{"output_tokens": 1}`), 0, ParseError{Line: 2, Field: "request.replay"}},
		{"zero block size", rec(`{"output_tokens": 1, "replay": {"trace_block_size": 0, "input_length": 4, "input_sequence_hashes": [1]}}`), 0,
			ParseError{Line: 2, Field: "request.replay.trace_block_size"}},
		{"a second block size", rec(`{"output_tokens": 1, "replay": {"trace_block_size": 8, "input_length": 4, "input_sequence_hashes": [1]}}`), 0,
			ParseError{Line: 2, Field: "request.replay.trace_block_size"}},
		{"no input length", rec(`{"output_tokens": 1, "replay": {"trace_block_size": 4, "input_sequence_hashes": [1]}}`), 0,
			ParseError{Line: 2, Field: "request.replay.input_length"}},
		{"hashes not a list", rec(`{"output_tokens": 1, "replay": {"trace_block_size": 4, "input_length": 4, "input_sequence_hashes": "1"}}`), 0,
			ParseError{Line: 2, Field: "request.replay.input_sequence_hashes"}},
		{"more hashes than blocks", rec(`{"output_tokens": 1, "replay": {"trace_block_size": 4, "input_length": 5, "input_sequence_hashes": [1, 2, 3]}}`), 0,
			ParseError{Line: 2, Field: "request.replay.input_sequence_hashes"}},
		{"a negative hash", rec(`{"output_tokens": 1, "replay": {"trace_block_size": 4, "input_length": 8, "input_sequence_hashes": [1, -2]}}`), 0,
			ParseError{Line: 2, Field: "request.replay.input_sequence_hashes[1]"}},
		{"a hash beyond 64 bits", rec(`{"output_tokens": 1, "replay": {"trace_block_size": 4, "input_length": 8, "input_sequence_hashes": [18446744073709551616]}}`), 0,
			ParseError{Line: 2, Field: "request.replay.input_sequence_hashes[0]"}},
		{"block size other than traffic.source.block_size", ok, 16, ParseError{Line: 1, Field: "request.replay.trace_block_size"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := ok + "\n" + tc.line + "\n"
			if tc.want.Line == 1 {
				in = tc.line + "\n"
			}
			_, err := ParseDynamo(strings.NewReader(in), tc.blockSize)
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("got %v, want a *ParseError", err)
			}
			got := ParseError{Line: pe.Line, Field: pe.Field}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s\n(%v)", diff, err)
			}
		})
	}
	_, err := ParseDynamo(strings.NewReader(`{"schema": "dynamo.request.trace.v1", "event_type": "tool_end"}`+"\n"), 0)
	if err == nil || !strings.Contains(err.Error(), "no request_end records") {
		t.Errorf("a trace without requests: %v", err)
	}
}

// The frontend's request trace carries no prompt or response text: only lengths, timings,
// identifiers and prefix hashes. Every field the capture holds is one of these, every string is
// an identifier, and no word of the prompts sent (send-requests.sh) appears anywhere.
func TestCapturedFrontendTraceCarriesNoPromptText(t *testing.T) {
	allowed := []string{
		"timestamp", "event", "event.schema", "event.event_type", "event.event_time_unix_ms", "event.request",
		"event.request.request_id", "event.request.input_tokens", "event.request.output_tokens", "event.request.cached_tokens",
		"event.request.request_received_ms", "event.request.prefill_wait_time_ms", "event.request.prefill_time_ms",
		"event.request.ttft_ms", "event.request.total_time_ms", "event.request.avg_itl_ms",
		"event.request.worker", "event.request.worker.prefill_worker_id", "event.request.worker.decode_worker_id",
		"event.request.replay", "event.request.replay.trace_block_size", "event.request.replay.input_length",
		"event.request.replay.input_sequence_hashes",
	}
	stringFields := map[string]*regexp.Regexp{
		"event.schema":             regexp.MustCompile(`^dynamo\.request\.trace\.v1$`),
		"event.event_type":         regexp.MustCompile(`^request_end$`),
		"event.request.request_id": regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`),
	}
	script, err := os.ReadFile(captureDir + "/send-requests.sh")
	if err != nil {
		t.Fatal(err)
	}
	// Words of the prompts: the capture must hold none of them (long enough not to occur by chance in a UUID or a key).
	var promptWords []string
	for _, w := range regexp.MustCompile(`[A-Za-z]{7,}`).FindAllString(string(script), -1) {
		if !slices.Contains([]string{"Content", "application", "completions", "messages", "content"}, w) {
			promptWords = append(promptWords, w)
		}
	}
	if len(promptWords) < 20 {
		t.Fatalf("only %d prompt words found in send-requests.sh", len(promptWords))
	}
	for _, path := range []string{captureJSONL, captureGzip} {
		data := readMaybeGzip(t, path)
		for _, w := range promptWords {
			if bytes.Contains(data, []byte(w)) {
				t.Errorf("%s contains the prompt word %q", path, w)
			}
		}
		for i, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
			var rec any
			dec := json.NewDecoder(bytes.NewReader(line))
			dec.UseNumber()
			if err := dec.Decode(&rec); err != nil {
				t.Fatalf("%s line %d: %v", path, i+1, err)
			}
			walk("", rec, func(field string, v any) {
				if !slices.Contains(allowed, field) {
					t.Errorf("%s line %d: field %s is not a length, timing, identifier or hash", path, i+1, field)
				}
				if s, ok := v.(string); ok {
					if re, known := stringFields[field]; !known || !re.MatchString(s) {
						t.Errorf("%s line %d: %s holds the string %q", path, i+1, field, s)
					}
				}
			})
		}
	}
}

// walk calls visit with every field's dotted path and scalar value (arrays are one field).
func walk(path string, v any, visit func(field string, v any)) {
	switch v := v.(type) {
	case map[string]any:
		if path != "" {
			visit(path, nil)
		}
		for k, x := range v {
			p := k
			if path != "" {
				p = path + "." + k
			}
			walk(p, x, visit)
		}
	case []any:
		visit(path, nil)
		for _, x := range v {
			if _, ok := x.(json.Number); !ok {
				visit(path+"[]", x)
			}
		}
	default:
		visit(path, v)
	}
}

func readMaybeGzip(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	}
	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
