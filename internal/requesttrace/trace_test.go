package requesttrace

import (
	"errors"
	"strings"
	"testing"
)

func TestParseFieldsAndAliases(t *testing.T) {
	in := `{"timestamp": 0, "input_length": 1000, "output_length": 10, "hash_ids": [1, 2]}

{"created_time": 250.5, "input_tokens": 600, "output_tokens": 5, "hash_ids": [1, 3], "request_id": "x", "priority": 2}
{"session_id": "s", "timestamp": 1000, "output_length": 7, "hash_ids": [4]}
{"session_id": "s", "delay": 40, "output_length": 7, "hash_ids": [4, 5]}
`
	tr, err := Parse(strings.NewReader(in), 512)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Requests) != 4 {
		t.Fatalf("%d requests", len(tr.Requests))
	}
	r := tr.Requests[1]
	if r.Line != 3 || r.Input != 600 || r.Output != 5 || r.TimestampMs != 250.5 || !r.HasTimestamp {
		t.Errorf("aliases: %+v", r)
	}
	if tr.Requests[2].Input != 512 || tr.Requests[3].Input != 1024 {
		t.Errorf("input from hash_ids: %d, %d", tr.Requests[2].Input, tr.Requests[3].Input)
	}
	arr, err := tr.Arrivals(2)
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{0, 0.12525, 0.5, 0.52}; !equal(arr, want) {
		t.Errorf("arrivals at speedup 2: %v, want %v", arr, want)
	}
}

func equal(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if d := a[i] - b[i]; d > 1e-12 || d < -1e-12 {
			return false
		}
	}
	return true
}

// Malformed rows are refused naming their line and field.
func TestParseErrors(t *testing.T) {
	ok := `{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1]}` + "\n"
	cases := []struct{ row, want string }{
		{`{"timestamp": 0, "input_length": 10, "hash_ids": [1]}`, "line 2: output_length: required"},
		{`{"timestamp": 0, "input_length": 10, "output_length": 0, "hash_ids": [1]}`, "line 2: output_length: must be >= 1"},
		{`{"timestamp": 0, "input_length": 10.5, "output_length": 1, "hash_ids": [1]}`, "line 2: input_length: expected an integer"},
		{`{"timestamp": 0, "input_tokens": "10", "output_length": 1, "hash_ids": [1]}`, "line 2: input_tokens: expected an integer"},
		{`{"timestamp": 0, "input_length": 10, "output_length": 1}`, "line 2: hash_ids: required"},
		{`{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": "1,2"}`, "line 2: hash_ids: expected a list"},
		{`{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1, -2]}`, "line 2: hash_ids[1]: expected a non-negative integer"},
		{`{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1, 2]}`, "line 2: hash_ids: 2 blocks for 10 input tokens"},
		{`{"timestamp": "soon", "input_length": 10, "output_length": 1, "hash_ids": [1]}`, "line 2: timestamp: expected a number"},
		{`{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1]`, "line 2: not a JSON object"},
		{`[1, 2]`, "line 2: not a JSON object"},
		{`{"timestamp": 0, "output_length": 1, "hash_ids": []}`, "line 2: input_length: required when hash_ids is empty"},
	}
	for _, tc := range cases {
		_, err := Parse(strings.NewReader(ok+tc.row+"\n"+ok), 512)
		var pe *ParseError
		if !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.row, err, tc.want)
		}
	}
	tr, err := Parse(strings.NewReader(ok+`{"input_length": 10, "output_length": 1, "hash_ids": [1]}`+"\n"), 512)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Arrivals(1); err == nil || !strings.HasPrefix(err.Error(), "line 2: timestamp: required") {
		t.Errorf("a row without timestamp: %v", err)
	}
	if _, err := Parse(strings.NewReader("\n\n"), 512); err == nil {
		t.Error("an empty trace parsed")
	}
}
