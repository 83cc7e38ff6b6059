package output

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEventsAppendAndTolerateATruncatedTail(t *testing.T) {
	dir := t.TempDir()
	w, err := CreateEventWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	score := 1.5
	want := []Event{
		{Event: "search_started", RunID: "r", Budget: 2},
		{Event: "candidate_settled", CandidateID: "candidate-000001", Status: StatusFeasible, Score: &score, Settled: 1, Budget: 2},
	}
	for _, e := range want {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	// A watcher may read while the writer is mid-line.
	f, err := os.OpenFile(filepath.Join(dir, EventsFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"event":"candidate_sett`); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	r, _ := os.Open(filepath.Join(dir, EventsFile))
	defer r.Close()
	got, err := ReadEvents(r)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestCanonicalJSONSortsKeysAndRejectsNaN(t *testing.T) {
	got, err := MarshalCanonical(map[string]any{"b": 1, "a": map[string]any{"d": 2, "c": 3}})
	if err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"a\": {\n    \"c\": 3,\n    \"d\": 2\n  },\n  \"b\": 1\n}\n"
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := MarshalCanonical(map[string]float64{"x": math.NaN()}); err == nil {
		t.Errorf("NaN was encoded")
	}
	if err := CheckFinite(map[string]float64{"a": 1, "b": math.Inf(1)}); err == nil || !strings.HasPrefix(err.Error(), "b ") {
		t.Errorf("CheckFinite = %v", err)
	}
}

func TestKnownFiles(t *testing.T) {
	for name, want := range map[string]bool{
		"recommendation.json": true, "execution-events.jsonl": true, "prediction.json": true,
		"recommendations/0001.yaml": true, "recommendations/12345.yaml": true,
		"recommendations/notes.yaml": false, "notes.txt": false, "0001.yaml": false,
	} {
		if got := KnownFile(name); got != want {
			t.Errorf("KnownFile(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestReadSweepResultRejectsUnknownSchema(t *testing.T) {
	dir := t.TempDir()
	if err := WriteJSONFile(filepath.Join(dir, RecommendationFile), SweepResult{SchemaVersion: "9.9"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSweepResult(dir); err == nil || !strings.Contains(err.Error(), "unsupported schema_version") {
		t.Errorf("err = %v", err)
	}
	r := &SweepResult{SchemaVersion: SchemaVersion, Candidates: []Candidate{{CandidateID: "candidate-000001"}, {CandidateID: "candidate-000002"}},
		Views: Views{ParetoFront: []string{"candidate-000002"}}}
	if diff := cmp.Diff([]Candidate{{CandidateID: "candidate-000002"}}, r.Selected()); diff != "" {
		t.Errorf("Selected (-want +got):\n%s", diff)
	}
}
