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

// FuzzReadEvents: execution-events.jsonl parsing tolerates anything (a half-written last line
// included) without panicking.
func FuzzReadEvents(f *testing.F) {
	f.Add([]byte("{\"event\":\"candidate_settled\",\"candidate_id\":\"candidate-000001\",\"status\":\"feasible\",\"settled\":1,\"budget\":4}\n{\"event\":\"cand"))
	f.Add([]byte("\n\n{}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = output.ReadEvents(bytes.NewReader(data))
	})
}
