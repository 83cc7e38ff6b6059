// Package output defines the files aisim (and AISimulate) write for a
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
// cache. AISimulate counts statuses over its candidate records, and a cache hit has none (its
// trials are Evaluated + Unsupported + ResourceLimited + CacheHits); aisim keeps a record of each
// cache hit and counts it under its status (and Evaluated) too.
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
	PredictionConfig *PredictionConfig  `json:"prediction_config,omitempty"`
	UsedGPUs         int                `json:"used_gpus"`
	Score            *float64           `json:"score"`
	Metrics          Report             `json:"metrics,omitempty"`
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

// Event is one line of execution-events.jsonl, the search's ledger. The format is AISimulate's
// (the 0.13 line); aisim writes the same lines.
//
// Every line is one JSON object {"event": <kind>, "value": {...}}, written by AISimulate's
// aisimulate/supervision.py `checkpoint(event, value)`, which refuses a record over 1 MiB
// (EventRecordMaxBytes) and a ledger that would grow past 64 MiB (EventsMaxBytes). The kinds:
//
//   - requested_config (recommend.py `_run_recommendation`): the validated input with
//     AISimulate's defaults filled in (config.model_dump); MaxTrials reads its
//     optimizer.max_trials. The first line of a recommendation.
//   - resource_plan (main.py `_predict`): predict's host-memory admission plan (build_plan).
//     The only line of a prediction's ledger.
//   - wave_admitted (resource_scheduler.py `evaluate_waves`): the admission plan of a wave of
//     candidates evaluated in parallel; wave_interrupted: a wave stopped by memory pressure or
//     its deadline, with the candidates retried.
//   - candidate_completed (sweeper/search.py `_record`): the full CandidateRecord, exactly an
//     element of recommendation.json's candidates (Candidate reads it), for every candidate that
//     reached an outcome, whatever its status. A cache hit (a duplicate served from the run's
//     cache) writes no line; recommendation.json's counts.cache_hits counts them.
//   - optimizer_stopped (sweeper/search.py): the optimizer could not suggest more candidates;
//     value.reason says why, and the search returns what it has.
//
// There is no start or end event: a search has ended when its process has.
//
// Where the ledger is: AISimulate's supervisor (supervision.py `run_process`/`_run_process`)
// has the worker append it to $TMPDIR/aisimulate-monitor-XXXX/events.jsonl (a
// tempfile.TemporaryDirectory) and copies its complete lines into <output-dir>/EventsFile only
// after the workers stopped, then deletes the temporary directory: the ledger of the output
// directory is final, the monitor's is the live working copy (the operator's reporter follows
// both, internal/reporter/progress.go). aisim writes EventsFile live.
type Event struct {
	Event string          `json:"event"`
	Value json.RawMessage `json:"value"`
}

// Event kinds (see Event).
const (
	EventRequestedConfig    = "requested_config"
	EventResourcePlan       = "resource_plan"
	EventWaveAdmitted       = "wave_admitted"
	EventWaveInterrupted    = "wave_interrupted"
	EventCandidateCompleted = "candidate_completed"
	EventOptimizerStopped   = "optimizer_stopped"
)

// Limits of AISimulate's checkpoint (supervision.py): a record over EventRecordMaxBytes, or one
// that would take the ledger past EventsMaxBytes, is refused (a resource limit).
const (
	EventRecordMaxBytes = 1 << 20
	EventsMaxBytes      = 64 << 20
)

// NewEvent builds an event of kind whose value is v encoded as JSON.
func NewEvent(kind string, v any) (Event, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return Event{}, fmt.Errorf("%s: %w", kind, err)
	}
	return Event{Event: kind, Value: raw}, nil
}

// Candidate decodes the CandidateRecord of a candidate_completed event, as strictly as
// recommendation.json is read (ParseSweepResult).
func (e Event) Candidate() (*Candidate, error) {
	if e.Event != EventCandidateCompleted {
		return nil, fmt.Errorf("a %s event carries no candidate record", e.Event)
	}
	var c Candidate
	if err := strictUnmarshal(e.Value, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", e.Event, err)
	}
	return &c, nil
}

// MaxTrials reads optimizer.max_trials of a requested_config event: the search's trial budget
// (false when the event is of another kind or the value has no positive integer there).
func (e Event) MaxTrials() (int64, bool) {
	if e.Event != EventRequestedConfig {
		return 0, false
	}
	var v struct {
		Optimizer struct {
			MaxTrials *int64 `json:"max_trials"`
		} `json:"optimizer"`
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(e.Value, &v); err != nil || v.Optimizer.MaxTrials == nil || *v.Optimizer.MaxTrials <= 0 {
		return 0, false
	}
	return *v.Optimizer.MaxTrials, true
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

// ReadEvents parses execution-events.jsonl. A line that is not JSON is skipped: a truncated last
// line (a writer still appending, or a ledger cut for the Run's artifacts, whose marker line ends
// it) is ignored so watchers can read a live file. A JSON line that is not an event object is an
// error. Keys match case-sensitively.
func ReadEvents(r io.Reader) ([]Event, error) {
	var out []Event
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for line := 1; sc.Scan(); line++ {
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		var e Event
		if err := kjson.UnmarshalCaseSensitivePreserveInts(text, &e); err != nil {
			if !json.Valid(text) {
				continue
			}
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		e.Value = append(json.RawMessage(nil), e.Value...)
		out = append(out, e)
	}
	return out, sc.Err()
}

// EventWriter appends events to execution-events.jsonl, one line each, written with one write
// call so that a watcher tailing the file sees progress as it happens. Like AISimulate's
// checkpoint it refuses a record over EventRecordMaxBytes and a ledger over EventsMaxBytes.
type EventWriter struct {
	f    *os.File
	size int64
}

// CreateEventWriter truncates/creates the events file in dir.
func CreateEventWriter(dir string) (*EventWriter, error) {
	f, err := os.OpenFile(filepath.Join(dir, EventsFile), os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &EventWriter{f: f}, nil
}

// ErrEventBudget is returned by EventWriter.Write for a record or a ledger over AISimulate's
// checkpoint limits.
var ErrEventBudget = errors.New("execution evidence exceeds the bounded checkpoint budget")

// Write appends one event as a single line.
func (w *EventWriter) Write(e Event) error {
	data, err := MarshalLine(e)
	if err != nil {
		return err
	}
	if len(data) > EventRecordMaxBytes || w.size+int64(len(data)) > EventsMaxBytes {
		return fmt.Errorf("%s: %w", e.Event, ErrEventBudget)
	}
	n, err := w.f.Write(data)
	w.size += int64(n)
	return err
}

// Checkpoint appends an event of kind with value v (AISimulate's checkpoint(event, value)).
func (w *EventWriter) Checkpoint(kind string, v any) error {
	e, err := NewEvent(kind, v)
	if err != nil {
		return err
	}
	return w.Write(e)
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
func WriteRecommendation(dir string, i int, doc *PredictionConfig) error {
	if err := os.MkdirAll(filepath.Join(dir, RecommendationsDir), 0o755); err != nil {
		return err
	}
	data, err := doc.YAML()
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
