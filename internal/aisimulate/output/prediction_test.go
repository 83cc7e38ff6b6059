package output

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/document"
)

// generic decodes JSON with numbers as float64, so that 1 and 1.0 compare equal.
func generic(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestPredictionConfigKeepsAISimulateDocuments: every predict document AISimulate documents, every
// prediction_config of a real AISimulate ledger and aisim's golden output decode strictly and
// encode back to the same fields and values.
func TestPredictionConfigKeepsAISimulateDocuments(t *testing.T) {
	docs := map[string][]byte{}
	paths, err := filepath.Glob("../../../tools/aisim/app/testdata/aisimulate-docs/predict/*.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no stored predict documents: %v", err)
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		docs[filepath.Base(p)] = data
	}
	// aisim's own output (its golden search).
	golden := "../../../tools/aisim/app/testdata/golden/"
	if docs["aisim recommendations/0001.yaml"], err = os.ReadFile(golden + "recommendations_0001.yaml"); err != nil {
		t.Fatal(err)
	}
	sweep, err := ReadSweepResult(golden + RecommendationFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range sweep.Candidates {
		if c.PredictionConfig != nil {
			if docs["aisim "+c.CandidateID], err = json.Marshal(c.PredictionConfig); err != nil {
				t.Fatal(err)
			}
		}
	}
	ledger, err := os.ReadFile("testdata/aisimulate-0.13/execution-events.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	events, err := ReadEvents(bytes.NewReader(ledger))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		if e.Event != EventCandidateCompleted {
			continue
		}
		var rec struct {
			ID  string          `json:"candidate_id"`
			Doc json.RawMessage `json:"prediction_config"`
		}
		if err := json.Unmarshal(e.Value, &rec); err != nil {
			t.Fatal(err)
		}
		docs["ledger "+rec.ID] = rec.Doc
	}
	for name, data := range docs {
		t.Run(name, func(t *testing.T) {
			pc, err := DecodePredictionConfig(data)
			if err != nil {
				t.Fatalf("decoding: %v", err)
			}
			encoded, err := json.Marshal(pc)
			if err != nil {
				t.Fatal(err)
			}
			asJSON, err := yamlToJSON(data)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(generic(t, asJSON), generic(t, encoded)); diff != "" {
				t.Errorf("encoded back (-document +encoded):\n%s", diff)
			}
		})
	}
}

func TestDecodePredictionConfigIsStrict(t *testing.T) {
	tests := []struct {
		name, doc, wantErr string
	}{
		{name: "unknown field", doc: "engine: {mode: aggregated, workers: {aggregated: {parallelism: {tensr: 2}}}}", wantErr: `unknown field "engine.workers.aggregated.parallelism.tensr"`},
		{name: "unknown role", doc: "engine: {workers: {mixed: {}}}", wantErr: `unknown field "engine.workers.mixed"`},
		{name: "a float is no integer", doc: "engine: {workers: {aggregated: {parallelism: {tensor: 2.0}}}}", wantErr: "tensor"},
		{name: "duplicate key", doc: "engine: {mode: aggregated}\nengine: {mode: disaggregated}", wantErr: "duplicate key"},
		{name: "not a mapping", doc: "[1, 2]", wantErr: "must be one mapping"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodePredictionConfig([]byte(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func yamlToJSON(data []byte) ([]byte, error) {
	v, err := document.ParseMapping(data)
	if err != nil {
		return nil, err
	}
	return document.Canonical(v.JSON())
}
