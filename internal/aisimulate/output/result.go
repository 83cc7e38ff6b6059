// Package result defines the files aisim (and AISimulate) write for a
// recommendation or prediction, with readers and writers. It has no
// dependency on the rest of aisim so other components (e.g. the operator's
// reporter) can import it to read a search's output directory.
package output

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// File names inside an output directory.
const (
	RecommendationFile = "recommendation.json"
	PredictionFile     = "prediction.json"
	EventsFile         = "execution-events.jsonl"
	RecommendationsDir = "recommendations"
)

// SchemaVersion of recommendation.json.
const SchemaVersion = "1.1"

// Candidate statuses.
const (
	StatusFeasible        = "feasible"
	StatusInfeasible      = "infeasible"
	StatusUnsupported     = "unsupported"
	StatusTimedOut        = "timed_out"
	StatusFailed          = "failed"
	StatusResourceLimited = "resource_limited"
)

// Reason categories used by aisim (a subset of AISimulate's list).
const (
	ReasonGPUBudget       = "gpu_budget"
	ReasonKVCapacity      = "kv_capacity"
	ReasonSLAConstraint   = "sla_constraint"
	ReasonLoadConstraint  = "load_constraint" // min_gpus: goodput below min_goodput_rps
	ReasonBackendTopology = "backend_topology"
	ReasonRuntimeTimeout  = "runtime_timeout"
	ReasonReplayRuntime   = "replay_runtime"
	ReasonInvalidMetrics  = "invalid_metrics"
)

// SweepResult is recommendation.json.
type SweepResult struct {
	SchemaVersion      string      `json:"schema_version"`
	CandidateRetention string      `json:"candidate_retention"`
	Counts             Counts      `json:"counts"`
	Candidates         []Candidate `json:"candidates"`
	Views              Views       `json:"views"`
	Provenance         Provenance  `json:"provenance"`
}

// Counts summarizes candidate outcomes. Evaluated == Feasible + Infeasible
// + TimedOut + Failed; CacheHits are duplicates served from a run-local
// cache (they are also counted under their status).
type Counts struct {
	Evaluated       int `json:"evaluated"`
	Feasible        int `json:"feasible"`
	Infeasible      int `json:"infeasible"`
	Unsupported     int `json:"unsupported"`
	TimedOut        int `json:"timed_out"`
	Failed          int `json:"failed"`
	ResourceLimited int `json:"resource_limited"`
	CacheHits       int `json:"cache_hits"`
}

// Candidate is one CandidateRecord, in evaluation order.
type Candidate struct {
	CandidateID    string `json:"candidate_id"`
	Status         string `json:"status"`
	ReasonCategory string `json:"reason_category,omitempty"`
	Reason         string `json:"reason,omitempty"`
	// Config is the internal sample (mode, backend, per-role tp/attention_dp/
	// moe_tp/moe_ep/replicas, scheduler fields, load).
	Config map[string]any `json:"config"`
	// PredictionConfig is the concrete, replayable `predict` input document.
	PredictionConfig map[string]any     `json:"prediction_config,omitempty"`
	UsedGPUs         int                `json:"used_gpus"`
	Score            *float64           `json:"score"`
	Metrics          map[string]float64 `json:"metrics,omitempty"`
	Objectives       map[string]float64 `json:"objectives,omitempty"`
	Provenance       map[string]any     `json:"provenance,omitempty"`
	// ErrorBand is the estimator's expected error on the candidate's metrics (aisim only;
	// absent in AISimulate's output and in older aisim output).
	ErrorBand *ErrorBand `json:"error_band,omitempty"`
}

// ErrorBand is an estimator's expected relative error per metric, from its out-of-sample
// residuals against measured serving runs: Metrics is keyed by metric name (ttft_ms, tpot_ms,
// itl_ms, ...). Extrapolated says the deployment is outside what the residuals cover (another
// GPU, a MoE model, ...), so the figures are a floor rather than an estimate.
type ErrorBand struct {
	Basis        string                `json:"basis"`
	Extrapolated bool                  `json:"extrapolated"`
	Metrics      map[string]ErrorRange `json:"metrics"`
}

// ErrorRange is a metric's relative error in percent: half of the calibration rows were
// within MedianAbsPct, four in five within P80AbsPct.
type ErrorRange struct {
	MedianAbsPct float64 `json:"median_abs_pct"`
	P80AbsPct    float64 `json:"p80_abs_pct"`
}

// Format renders a metric value with its band, e.g. "154 ms ±25%" (no band: "154 ms").
func (b *ErrorBand) Format(metric string, value float64, unit string) string {
	s := fmt.Sprintf("%.3g %s", value, unit)
	if math.Abs(value) >= 100 {
		s = fmt.Sprintf("%.0f %s", value, unit)
	}
	if b == nil {
		return s
	}
	r, ok := b.Metrics[metric]
	if !ok {
		return s
	}
	return fmt.Sprintf("%s ±%.0f%%", s, r.MedianAbsPct)
}

// Views lists selected candidate ids, best first (top_n) or in Pareto order
// (pareto_front). They map 1:1 to recommendations/NNNN.yaml.
type Views struct {
	TopN        []string `json:"top_n,omitempty"`
	ParetoFront []string `json:"pareto_front,omitempty"`
}

// Selected returns the ids of whichever view is present.
func (v Views) Selected() []string {
	if len(v.ParetoFront) > 0 {
		return v.ParetoFront
	}
	return v.TopN
}

// Provenance records who produced the result and from what input.
type Provenance struct {
	Implementation        string         `json:"implementation"`
	ImplementationVersion string         `json:"implementation_version"`
	Estimator             string         `json:"estimator"`
	SearchStrategy        string         `json:"search_strategy"`
	RunID                 string         `json:"run_id"`
	CreatedAt             string         `json:"created_at"`
	InputFingerprint      string         `json:"input_fingerprint"`
	Config                map[string]any `json:"config"`
	Note                  string         `json:"note,omitempty"`
}

// Candidate returns the record with the given id.
func (r *SweepResult) Candidate(id string) (*Candidate, bool) {
	for i := range r.Candidates {
		if r.Candidates[i].CandidateID == id {
			return &r.Candidates[i], true
		}
	}
	return nil, false
}

// Selected returns the selected candidates in view order (index i ↔
// recommendations/{i+1:04d}.yaml).
func (r *SweepResult) Selected() []Candidate {
	var out []Candidate
	for _, id := range r.Views.Selected() {
		if c, ok := r.Candidate(id); ok {
			out = append(out, *c)
		}
	}
	return out
}

// Row is one element of `recommend --format json` output.
type Row struct {
	Rank       int                `json:"rank"`
	Score      *float64           `json:"score"`
	Objectives map[string]float64 `json:"objectives,omitempty"`
	UsedGPUs   int                `json:"used_gpus"`
	ConfigPath string             `json:"config_path"`
}

// Event is one line of execution-events.jsonl. Event is "search_started",
// "candidate_settled", "search_finished" or "prediction_finished".
type Event struct {
	Event       string   `json:"event"`
	RunID       string   `json:"run_id,omitempty"`
	CandidateID string   `json:"candidate_id,omitempty"`
	Status      string   `json:"status,omitempty"`
	Reason      string   `json:"reason_category,omitempty"`
	UsedGPUs    int      `json:"used_gpus,omitempty"`
	Score       *float64 `json:"score,omitempty"`
	CacheHit    bool     `json:"cache_hit,omitempty"`
	Settled     int      `json:"settled,omitempty"`
	Budget      int      `json:"budget,omitempty"`
	Counts      *Counts  `json:"counts,omitempty"`
	Outcome     string   `json:"outcome,omitempty"` // search_finished: completed|no_feasible|interrupted|failed
	// Metrics, Objectives and PredictionConfig repeat the candidate record on a
	// candidate_settled event of a feasible candidate that is not a cache hit (aisim;
	// absent in older aisim ledgers and in AISimulate's): enough for a reader of the live
	// ledger to publish the best candidates so far before recommendation.json exists.
	// Readers that do not know them ignore them.
	Metrics          map[string]float64 `json:"metrics,omitempty"`
	Objectives       map[string]float64 `json:"objectives,omitempty"`
	PredictionConfig map[string]any     `json:"prediction_config,omitempty"`
}

// Prediction is prediction.json.
type Prediction struct {
	Summary    Summary        `json:"summary"`
	Memory     map[string]any `json:"memory"`
	Config     map[string]any `json:"config"`
	Provenance Provenance     `json:"provenance"`
}

// Distribution is a latency distribution in milliseconds.
type Distribution struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
}

// Summary is the `predict --format json` object.
type Summary struct {
	NumRequests          int            `json:"num_requests"`
	CompletedRequests    int            `json:"completed_requests"`
	TotalOutputTokens    int            `json:"total_output_tokens"`
	DurationMs           float64        `json:"duration_ms"`
	RequestThroughputRPS float64        `json:"request_throughput_rps"`
	OutputThroughputTokS float64        `json:"output_throughput_tok_s"`
	PerUserTokS          float64        `json:"mean_output_token_throughput_per_user"`
	GoodputRPS           float64        `json:"goodput_request_throughput_rps"`
	GoodputTokS          float64        `json:"goodput_output_throughput_tok_s"`
	Concurrency          int            `json:"concurrency,omitempty"`
	RequestRate          float64        `json:"request_rate,omitempty"`
	UsedGPUs             int            `json:"used_gpus"`
	TTFT                 Distribution   `json:"ttft_ms"`
	TPOT                 Distribution   `json:"tpot_ms"`
	ITL                  Distribution   `json:"itl_ms"`
	E2E                  Distribution   `json:"e2e_latency_ms"`
	KVCapacityTokens     map[string]int `json:"kv_cache_capacity_tokens"`
	// ErrorBand: see Candidate.ErrorBand.
	ErrorBand *ErrorBand `json:"error_band,omitempty"`
}

// MarshalCanonical renders v as indented JSON with sorted keys and refuses
// NaN/Inf (AISimulate's JSON is strict).
func MarshalCanonical(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return nil, err
	}
	out, err := json.MarshalIndent(generic, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// CheckFinite reports the first NaN/Inf in metric-like maps.
func CheckFinite(m map[string]float64) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if math.IsNaN(m[k]) || math.IsInf(m[k], 0) {
			return fmt.Errorf("%s is not finite", k)
		}
	}
	return nil
}

// WriteJSONFile writes v canonically to path (via a temp file and rename so
// a reader never sees a partial file).
func WriteJSONFile(path string, v any) error {
	data, err := MarshalCanonical(v)
	if err != nil {
		return err
	}
	return writeAtomic(path, data)
}

func writeAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// ReadSweepResult reads recommendation.json from dir (or a file path).
func ReadSweepResult(path string) (*SweepResult, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, RecommendationFile)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r, err := ParseSweepResult(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// ParseSweepResult decodes recommendation.json content strictly.
func ParseSweepResult(data []byte) (*SweepResult, error) {
	var r SweepResult
	if err := strictUnmarshal(data, &r); err != nil {
		return nil, err
	}
	if r.SchemaVersion != SchemaVersion && r.SchemaVersion != "1.0" {
		return nil, fmt.Errorf("unsupported schema_version %q", r.SchemaVersion)
	}
	return &r, nil
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
	var p Prediction
	if err := strictUnmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &p, nil
}

// strictUnmarshal decodes exactly: keys match case-sensitively (encoding/json would accept
// "Schema_Version"), unknown and duplicate keys are errors, and integers stay integers.
func strictUnmarshal(data []byte, v any) error {
	strictErrs, err := kjson.UnmarshalStrict(data, v)
	if err != nil {
		return err
	}
	return errors.Join(strictErrs...)
}

// RecommendationPath is the numbered YAML for 0-based view index i.
func RecommendationPath(dir string, i int) string {
	return filepath.Join(dir, RecommendationsDir, fmt.Sprintf("%04d.yaml", i+1))
}

var numbered = regexp.MustCompile(`^[0-9]{4,}\.yaml$`)

// ReadRecommendations reads recommendations/NNNN.yaml in order; each is a
// concrete predict input document.
func ReadRecommendations(dir string) ([]map[string]any, error) {
	entries, err := os.ReadDir(filepath.Join(dir, RecommendationsDir))
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if numbered.MatchString(e.Name()) {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	var out []map[string]any
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(dir, RecommendationsDir, n))
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := yaml.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		out = append(out, m)
	}
	return out, nil
}

// ReadEvents parses execution-events.jsonl. A truncated last line (a writer
// still appending) is ignored so watchers can read a live file.
func ReadEvents(r io.Reader) ([]Event, error) {
	var out []Event
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		var e Event
		if err := json.Unmarshal([]byte(text), &e); err != nil {
			if !json.Valid([]byte(text)) {
				continue
			}
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

// EventWriter appends events to execution-events.jsonl, flushing each line
// so a watcher tailing the file sees progress as it happens.
type EventWriter struct {
	f *os.File
}

// CreateEventWriter truncates/creates the events file in dir.
func CreateEventWriter(dir string) (*EventWriter, error) {
	f, err := os.OpenFile(filepath.Join(dir, EventsFile), os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &EventWriter{f: f}, nil
}

// Write appends one event as a single line.
func (w *EventWriter) Write(e Event) error {
	data, err := MarshalLine(e)
	if err != nil {
		return err
	}
	_, err = w.f.Write(data)
	return err
}

// MarshalLine renders one compact JSON line with sorted keys.
func MarshalLine(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var generic any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&generic); err != nil {
		return nil, err
	}
	out, err := json.Marshal(generic)
	return append(out, '\n'), err
}

// Close closes the file.
func (w *EventWriter) Close() error { return w.f.Close() }

// WriteRecommendation writes one numbered YAML (0-based index i).
func WriteRecommendation(dir string, i int, doc map[string]any) error {
	if err := os.MkdirAll(filepath.Join(dir, RecommendationsDir), 0o755); err != nil {
		return err
	}
	data, err := yaml.Marshal(doc)
	if err != nil {
		return err
	}
	return writeAtomic(RecommendationPath(dir, i), data)
}

// KnownFile reports whether name (relative to an output dir) is a file aisim
// owns and may replace with --overwrite.
func KnownFile(rel string) bool {
	switch rel {
	case RecommendationFile, PredictionFile, EventsFile, "recommendation.csv", "requests.jsonl",
		"resource-plan.json", "resource-runtime.json":
		return true
	}
	dir, name := filepath.Split(rel)
	return filepath.Clean(dir) == RecommendationsDir && numbered.MatchString(name)
}
