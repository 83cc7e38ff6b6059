package output_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
)

// FuzzParseSweepResult: recommendation.json parsing never panics, and a parsed result survives a
// canonical round trip unchanged.
func FuzzParseSweepResult(f *testing.F) {
	files, _ := filepath.Glob("../app/testdata/golden/recommendation.json")
	for _, file := range files {
		data, _ := os.ReadFile(file)
		f.Add(data)
	}
	f.Add([]byte(`{"schema_version":"1.1","counts":{},"candidates":[],"views":{"top_n":["candidate-000001"]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := output.ParseSweepResult(data)
		if err != nil {
			return
		}
		_ = r.Selected()
		out, err := output.MarshalCanonical(r)
		if err != nil {
			return // e.g. NaN cannot come from JSON, but be lenient about non-finite floats
		}
		back, err := output.ParseSweepResult(out)
		if err != nil {
			t.Fatalf("re-parsing our own output: %v\n%s", err, out)
		}
		// Serialization is a fixed point: what we write reads back to the same bytes.
		again, err := output.MarshalCanonical(back)
		if err != nil || !bytes.Equal(out, again) {
			t.Fatalf("round trip changed the result:\n%s\n%s", out, again)
		}
	})
}

// FuzzReadEvents: execution-events.jsonl parsing, and reading an event's record and budget,
// tolerate anything (a half-written last line included) without panicking.
func FuzzReadEvents(f *testing.F) {
	if real, err := os.ReadFile(filepath.Join("testdata", "aisimulate-0.13", output.EventsFile)); err == nil {
		f.Add(real)
	}
	f.Add([]byte("{\"event\":\"requested_config\",\"value\":{\"optimizer\":{\"max_trials\":4}}}\n" +
		"{\"event\":\"candidate_completed\",\"value\":{\"candidate_id\":\"candidate-000001\",\"status\":\"feasible\",\"score\":1}}\n{\"event\":\"cand"))
	f.Add([]byte("\n\n{}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		events, _ := output.ReadEvents(bytes.NewReader(data))
		for _, e := range events {
			_, _ = e.Candidate()
			_, _ = e.MaxTrials()
		}
	})
}
