package output

import (
	"encoding/json"
	"errors"
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
	if err := w.Checkpoint(EventRequestedConfig, map[string]any{"optimizer": map[string]any{"max_trials": 2}}); err != nil {
		t.Fatal(err)
	}
	rec := Candidate{CandidateID: "candidate-000001", Status: StatusFeasible, Score: &score, UsedGPUs: 2,
		Config: map[string]any{"backend": "vllm"}, PredictionConfig: &PredictionConfig{Engine: Engine{Backend: "vllm"}},
		Metrics: map[string]float64{"mean_ttft_ms": 12.5}}
	if err := w.Checkpoint(EventCandidateCompleted, rec); err != nil {
		t.Fatal(err)
	}
	// AISimulate's checkpoint budget: a record over 1 MiB is refused and not written.
	if err := w.Checkpoint(EventCandidateCompleted, Candidate{CandidateID: "candidate-000002", Reason: strings.Repeat("x", EventRecordMaxBytes)}); !errors.Is(err, ErrEventBudget) {
		t.Errorf("a record over 1 MiB: err = %v, want ErrEventBudget", err)
	}
	w.Close()
	// A watcher may read while the writer is mid-line.
	f, err := os.OpenFile(filepath.Join(dir, EventsFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"event":"candidate_compl`); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	wantLines := `{"event":"requested_config","value":{"optimizer":{"max_trials":2}}}` + "\n" +
		`{"event":"candidate_completed","value":{"candidate_id":"candidate-000001","config":{"backend":"vllm"},"metrics":{"mean_ttft_ms":12.5},` +
		`"prediction_config":{"engine":{"backend":"vllm"}},"score":1.5,"status":"feasible","used_gpus":2}}` + "\n" + `{"event":"candidate_compl`
	if diff := cmp.Diff(wantLines, string(data)); diff != "" {
		t.Errorf("ledger (-want +got):\n%s", diff)
	}
	got, err := ReadEvents(strings.NewReader(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Event != EventRequestedConfig || got[1].Event != EventCandidateCompleted {
		t.Fatalf("events %+v", got)
	}
	if n, ok := got[0].MaxTrials(); !ok || n != 2 {
		t.Errorf("MaxTrials = %d, %v", n, ok)
	}
	c, err := got[1].Candidate()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&rec, c); diff != "" {
		t.Errorf("candidate (-want +got):\n%s", diff)
	}
	if _, err := got[0].Candidate(); err == nil {
		t.Error("a requested_config event decoded as a candidate")
	}
	if _, ok := got[1].MaxTrials(); ok {
		t.Error("a candidate_completed event has a trial budget")
	}
}

// TestEventAccessorsAreStrict: the record of a candidate_completed event is read like
// recommendation.json (keys case-sensitive, no unknown or duplicate keys); a budget must be a
// positive integer.
func TestEventAccessorsAreStrict(t *testing.T) {
	for _, value := range []string{
		`{"candidate_id":"c","status":"feasible","score":1,"Score":1e9}`,
		`{"candidate_id":"c","status":"feasible","score":1,"score":1e9}`,
		`{"candidate_id":"c","status":"feasible","surprise":1}`,
		`[1]`, ``,
	} {
		if c, err := (Event{Event: EventCandidateCompleted, Value: json.RawMessage(value)}).Candidate(); err == nil {
			t.Errorf("%s: decoded as %+v", value, c)
		}
	}
	for _, value := range []string{
		`{"optimizer":{"max_trials":0}}`, `{"optimizer":{"max_trials":-3}}`, `{"optimizer":{"max_trials":2.5}}`,
		`{"optimizer":{"MAX_TRIALS":5}}`, `{"optimizer":{}}`, `{}`, `"x"`, ``,
	} {
		if n, ok := (Event{Event: EventRequestedConfig, Value: json.RawMessage(value)}).MaxTrials(); ok {
			t.Errorf("%s: budget %d", value, n)
		}
	}
	// Keys of the line are case-sensitive too: {"EVENT": ...} is no event kind.
	got, err := ReadEvents(strings.NewReader(`{"EVENT":"candidate_completed","Value":{}}` + "\n"))
	if err != nil || len(got) != 1 || got[0].Event != "" || got[0].Value != nil {
		t.Errorf("case-folded keys: %+v, %v", got, err)
	}
	if _, err := ReadEvents(strings.NewReader("[1,2]\n")); err == nil {
		t.Error("a JSON line that is not an event object was accepted")
	}
}

// TestRealLedger reads lines the real AISimulate wrote (testdata/aisimulate-0.13): the budget of
// requested_config, and each candidate_completed record.
func TestRealLedger(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "aisimulate-0.13", EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	events, err := ReadEvents(f)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	var ids []string
	for _, e := range events {
		kinds = append(kinds, e.Event)
		switch e.Event {
		case EventRequestedConfig:
			if n, ok := e.MaxTrials(); !ok || n != 48 {
				t.Errorf("max_trials = %d, %v; want 48", n, ok)
			}
		case EventCandidateCompleted:
			c, err := e.Candidate()
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, c.CandidateID)
			if c.Status != StatusFeasible || c.Score == nil || c.UsedGPUs == 0 || c.PredictionConfig == nil ||
				c.Metrics["output_throughput_tok_s"] != *c.Score || c.ReasonCategory != "" || c.ErrorBand != nil {
				t.Errorf("%s: %s score %v gpus %d", c.CandidateID, c.Status, c.Score, c.UsedGPUs)
			}
		}
	}
	wantKinds := []string{EventRequestedConfig}
	for range 5 {
		wantKinds = append(wantKinds, EventWaveAdmitted, EventCandidateCompleted)
	}
	if diff := cmp.Diff(wantKinds, kinds); diff != "" {
		t.Errorf("kinds (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"candidate-000001", "candidate-000002", "candidate-000003", "candidate-000004", "candidate-000005"}, ids); diff != "" {
		t.Errorf("ids (-want +got):\n%s", diff)
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
