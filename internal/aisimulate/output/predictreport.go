package output

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// PredictionInvalid is prediction_status when no request completed: the serving metrics are null
// and `predict` exits 1.
const PredictionInvalid = "invalid"

// Prediction is prediction.json, and without PowerDiagnostics the object `predict --format json`
// prints: AISimulate's flat replay report (predict.py run_prediction). The report's keys grow
// with AISimulate's versions and differ by deployment (EPD, agentic, trace sources), so every
// key whose value is a number or null is a metric, as sweeper/score.py reads them; the few
// non-numeric keys are typed and any other non-numeric key is refused.
type Prediction struct {
	// Metrics maps a report key (mean_ttft_ms, gpu_hours, num_tpot_samples, power_w, ...) to its
	// value; nil means null (an invalid prediction's serving metrics, an unmodelled metric).
	Metrics map[string]*float64
	// Status is prediction_status: PredictionInvalid, or empty for a valid prediction (the key
	// is absent then).
	Status string
	// StopReason and Diagnostic say why a prediction is invalid.
	StopReason string
	Diagnostic string
	// KVEvictionPolicy is kv_eviction_policy (lru).
	KVEvictionPolicy string
	// KVCachePrecision is kv_cache_precision, per worker role.
	KVCachePrecision map[string]KVCachePrecision
	// Provenance is prediction_provenance: the timing source of each worker role.
	Provenance map[string]TimingProvenance
	// MetricSemantics is metric_semantics (analytical_epd_overlay for an EPD deployment).
	MetricSemantics string
	// AgenticQualification is agentic_qualification (functional_only for an agentic replay).
	AgenticQualification string
	// PowerDiagnostics is power_diagnostics, written to prediction.json only.
	PowerDiagnostics json.RawMessage
}

// KVCachePrecision is the KV cache's data type and where it came from.
type KVCachePrecision struct {
	DType  string `json:"dtype"`
	Source string `json:"source"`
}

// TimingProvenance is a worker role's timing source: estimator, timing_source and data_version
// (or the reason it is unavailable), or only unavailable_reason.
type TimingProvenance struct {
	DataIdentity                 json.RawMessage `json:"data_identity"`
	DataVersion                  *string         `json:"data_version"`
	DataVersionUnavailableReason *string         `json:"data_version_unavailable_reason"`
	Estimator                    string          `json:"estimator,omitempty"`
	TimingSource                 string          `json:"timing_source,omitempty"`
	UnavailableReason            string          `json:"unavailable_reason,omitempty"`
}

// typedPrediction holds the non-numeric keys of the report.
type typedPrediction struct {
	Status               string                      `json:"prediction_status,omitempty"`
	StopReason           string                      `json:"stop_reason,omitempty"`
	Diagnostic           string                      `json:"diagnostic,omitempty"`
	KVEvictionPolicy     string                      `json:"kv_eviction_policy,omitempty"`
	KVCachePrecision     map[string]KVCachePrecision `json:"kv_cache_precision,omitempty"`
	Provenance           map[string]TimingProvenance `json:"prediction_provenance,omitempty"`
	MetricSemantics      string                      `json:"metric_semantics,omitempty"`
	AgenticQualification string                      `json:"agentic_qualification,omitempty"`
	PowerDiagnostics     json.RawMessage             `json:"power_diagnostics,omitempty"`
}

// typedKeys are the JSON keys of typedPrediction.
var typedKeys = []string{
	"prediction_status", "stop_reason", "diagnostic", "kv_eviction_policy", "kv_cache_precision",
	"prediction_provenance", "metric_semantics", "agentic_qualification", "power_diagnostics",
}

// Metric is the value of a metric, false when it is missing or null.
func (p *Prediction) Metric(key string) (float64, bool) {
	v := p.Metrics[key]
	if v == nil {
		return 0, false
	}
	return *v, true
}

// Report is the metrics without the null ones: the report sweeper/score.py scores.
func (p *Prediction) Report() Report {
	out := make(Report, len(p.Metrics))
	for k, v := range p.Metrics {
		if v != nil {
			out[k] = *v
		}
	}
	return out
}

// Summary is the prediction without power_diagnostics: what `predict --format json` prints.
func (p *Prediction) Summary() *Prediction {
	s := *p
	s.PowerDiagnostics = nil
	return &s
}

// MarshalJSON writes the flat report.
func (p Prediction) MarshalJSON() ([]byte, error) {
	raw, err := json.Marshal(typedPrediction{
		Status: p.Status, StopReason: p.StopReason, Diagnostic: p.Diagnostic, KVEvictionPolicy: p.KVEvictionPolicy,
		KVCachePrecision: p.KVCachePrecision, Provenance: p.Provenance, MetricSemantics: p.MetricSemantics,
		AgenticQualification: p.AgenticQualification, PowerDiagnostics: p.PowerDiagnostics,
	})
	if err != nil {
		return nil, err
	}
	flat := map[string]any{}
	if err := json.Unmarshal(raw, &flat); err != nil {
		return nil, err
	}
	for k, v := range p.Metrics {
		if slices.Contains(typedKeys, k) {
			return nil, fmt.Errorf("metric %s: the key is not numeric in the report", k)
		}
		flat[k] = v
	}
	return json.Marshal(flat)
}

// UnmarshalJSON reads the flat report: the typed keys strictly, every other key as a number or
// null.
func (p *Prediction) UnmarshalJSON(data []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return err
	}
	if fields == nil {
		return fmt.Errorf("a prediction is a JSON object, not null")
	}
	typed := map[string]json.RawMessage{}
	metrics := map[string]*float64{}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		raw := fields[k]
		if slices.Contains(typedKeys, k) {
			typed[k] = raw
			continue
		}
		if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			metrics[k] = nil
			continue
		}
		var v float64
		if err := json.Unmarshal(raw, &v); err != nil {
			return fmt.Errorf("%s: want a number or null, got %s", k, truncate(raw))
		}
		metrics[k] = &v
	}
	joined, err := json.Marshal(typed)
	if err != nil {
		return err
	}
	var t typedPrediction
	if err := strictUnmarshal(joined, &t); err != nil {
		return err
	}
	*p = Prediction{
		Metrics: metrics, Status: t.Status, StopReason: t.StopReason, Diagnostic: t.Diagnostic,
		KVEvictionPolicy: t.KVEvictionPolicy, KVCachePrecision: t.KVCachePrecision, Provenance: t.Provenance,
		MetricSemantics: t.MetricSemantics, AgenticQualification: t.AgenticQualification, PowerDiagnostics: t.PowerDiagnostics,
	}
	return nil
}

func truncate(raw json.RawMessage) string {
	s := strings.TrimSpace(string(raw))
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return s
}

// ParsePrediction decodes prediction.json content (or `predict --format json` output). A
// prediction must say how many requests completed: completed_requests is required, and an
// invalid status must be the one AISimulate writes.
func ParsePrediction(data []byte) (*Prediction, error) {
	var p Prediction
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, err
	}
	if _, ok := p.Metric(KeyCompletedRequests); !ok {
		return nil, fmt.Errorf("%s: required", KeyCompletedRequests)
	}
	if p.Status != "" && p.Status != PredictionInvalid {
		return nil, fmt.Errorf("prediction_status: unsupported value %q", p.Status)
	}
	return &p, nil
}

// ReadPrediction reads prediction.json from dir (or a file path).
func ReadPrediction(path string) (*Prediction, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, PredictionFile)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p, err := ParsePrediction(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}
