package output

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const realPredict = "testdata/aisimulate-0.13-predict"

// TestReadsTheRealPrediction: the prediction.json and the --format json output the real
// AISimulate wrote decode, carry the metrics the gate reads, and encode back to the same object.
func TestReadsTheRealPrediction(t *testing.T) {
	p, err := ReadPrediction(realPredict)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, k := range []string{"completed_requests", "num_ttft_samples", "num_tpot_samples", "num_e2e_latency_samples", "mean_tpot_ms", "gpu_hours", "duration_ms", "output_throughput_tok_s"} {
		v, ok := p.Metric(k)
		if !ok {
			t.Errorf("%s: missing", k)
		}
		got[k] = v
	}
	want := map[string]float64{
		"completed_requests": 40, "num_ttft_samples": 40, "num_tpot_samples": 40, "num_e2e_latency_samples": 40,
		"mean_tpot_ms": 6.158349015873014, "gpu_hours": 0.0006568729013888883, "duration_ms": 2364.742445,
		"output_throughput_tok_s": 1082.5703261735127,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
	if _, ok := p.Metric("power_w"); ok || p.Metrics["power_w"] != nil {
		t.Errorf("power_w is null in the file, got %v", p.Metrics["power_w"])
	}
	if p.Status != "" || p.KVEvictionPolicy != "lru" || p.Provenance["aggregated"].Estimator != "op_level" ||
		p.KVCachePrecision["aggregated"].DType != "bfloat16" || len(p.PowerDiagnostics) == 0 {
		t.Errorf("typed fields: %+v", p)
	}

	for _, file := range []string{PredictionFile, "stdout.json"} {
		t.Run(file, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(realPredict, file))
			if err != nil {
				t.Fatal(err)
			}
			p, err := ParsePrediction(raw)
			if err != nil {
				t.Fatal(err)
			}
			enc, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			var before, after any
			if err := json.Unmarshal(raw, &before); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(enc, &after); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(before, after); diff != "" {
				t.Errorf("re-encoded prediction differs (-file +encoded):\n%s", diff)
			}
		})
	}

	stdout, err := ReadPrediction(filepath.Join(realPredict, "stdout.json"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(p.Summary(), stdout); diff != "" {
		t.Errorf("stdout is prediction.json without power_diagnostics (-file +stdout):\n%s", diff)
	}
}

func TestParsePrediction(t *testing.T) {
	invalid := `{"completed_requests": 0, "num_requests": 4, "mean_ttft_ms": null, "prediction_status": "invalid",
		"stop_reason": "no_completed_requests", "diagnostic": "No requests completed"}`
	for _, tc := range []struct {
		name    string
		doc     string
		want    Report
		status  string
		wantErr string
	}{
		{name: "valid", doc: `{"completed_requests": 3, "mean_tpot_ms": 5.5}`, want: Report{"completed_requests": 3, "mean_tpot_ms": 5.5}},
		{name: "invalid drops null metrics", doc: invalid, want: Report{"completed_requests": 0, "num_requests": 4}, status: PredictionInvalid},
		{name: "no completed_requests", doc: `{"mean_tpot_ms": 5}`, wantErr: "completed_requests: required"},
		{name: "null completed_requests", doc: `{"completed_requests": null}`, wantErr: "completed_requests: required"},
		{name: "string metric", doc: `{"completed_requests": 1, "mean_tpot_ms": "5"}`, wantErr: `mean_tpot_ms: want a number or null, got "5"`},
		{name: "object metric", doc: `{"completed_requests": 1, "memory_diagnostics": {}}`, wantErr: "memory_diagnostics: want a number or null"},
		{name: "unknown status", doc: `{"completed_requests": 1, "prediction_status": "ok"}`, wantErr: `prediction_status: unsupported value "ok"`},
		{name: "unknown provenance field", doc: `{"completed_requests": 1, "prediction_provenance": {"aggregated": {"estimator": "x", "extra": 1}}}`, wantErr: "extra"},
		{name: "typed key of the wrong type", doc: `{"completed_requests": 1, "kv_eviction_policy": 3}`, wantErr: "kv_eviction_policy"},
		{name: "null document", doc: `null`, wantErr: "not null"},
		{name: "an array", doc: `[]`, wantErr: "cannot unmarshal array"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParsePrediction([]byte(tc.doc))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, p.Report()); diff != "" {
				t.Errorf("report (-want +got):\n%s", diff)
			}
			if p.Status != tc.status {
				t.Errorf("status %q, want %q", p.Status, tc.status)
			}
		})
	}
}

func TestPredictionRefusesATypedKeyAsAMetric(t *testing.T) {
	one := 1.0
	if _, err := json.Marshal(Prediction{Metrics: map[string]*float64{"stop_reason": &one}}); err == nil || !strings.Contains(err.Error(), "stop_reason") {
		t.Errorf("error %v, want one naming stop_reason", err)
	}
}
