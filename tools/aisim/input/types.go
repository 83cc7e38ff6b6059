// Package input decodes the AISimulate `predict` / `recommend` input document
// strictly (unknown keys, wrong scalar types and unsupported fields are errors
// naming their path) into typed Go values for the subset aisim models.
package input

import (
	"math"
	"slices"
	"strconv"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/document"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
)

// Command selects which document type is decoded; the same YAML keys mean
// different things (domains and optimization are recommend-only).
type Command int

// Commands.
const (
	Recommend Command = iota
	Predict
)

// Modes and roles in their public spelling (backends: output.Backends).
const (
	ModeAggregated    = "aggregated"
	ModeDisaggregated = "disaggregated"

	RoleAggregated = "aggregated"
	RolePrefill    = "prefill"
	RoleDecode     = "decode"
)

// Load types (the typed document's).
const (
	LoadConcurrency        = output.LoadConcurrency
	LoadPoisson            = output.LoadPoisson
	LoadConstantRate       = output.LoadConstantRate
	LoadKVCapacityFraction = output.LoadKVCapacityFraction
	// LoadTraceTimestamps replays a trace at its recorded arrival times (Intensity: speedup).
	LoadTraceTimestamps = output.LoadTraceTimestamps
)

// FieldError is a validation failure at a document path. The CLI prints it
// as "<file>: <path>: <reason>".
type FieldError struct {
	Path   string
	Reason string
}

func (e *FieldError) Error() string {
	if e.Path == "" {
		return e.Reason
	}
	return e.Path + ": " + e.Reason
}

// Document is a decoded, defaulted input document.
type Document struct {
	Command      Command
	Traffic      Traffic
	Engine       Engine
	Evaluation   Evaluation
	Optimization Optimization
	Optimizer    Optimizer
	// Raw is the document after --set overrides (before defaulting); its
	// canonical JSON is the input fingerprint.
	Raw *document.Value
	// Ignored lists the accepted sections aisim does not model: router and planner (aisim routes
	// round-robin and its pools never scale), execution (no supervisor process to budget), and
	// per-role startup_seconds.
	Ignored []string
}

// Traffic is the workload: synthetic requests of fixed lengths, or a trace (Trace set; the
// token lengths are then 0 and come from the trace's rows).
type Traffic struct {
	InputTokens  int
	OutputTokens int
	// CachedPrefixTokens is traffic.source.cached_prefix_tokens: the prompt's leading tokens
	// already in the prefix cache (computed only when the role's prefix caching is off).
	CachedPrefixTokens int
	Load               Load
	Stop               Stop
	Trace              *TraceSource
	// Session is set for a synthetic-session source (InputTokens/OutputTokens then hold the
	// per-turn new input and response); the load and stop then count sessions.
	Session *SessionSource
}

// SessionSource is a traffic.source of type synthetic-session: multi-turn sessions whose turns
// run in order, each prompt carrying the conversation so far.
type SessionSource struct {
	Turns             int
	SharedPrefixRatio float64
	PrefixGroups      int
	InterTurnDelayMs  float64
}

// TraceSource is a traffic.source of type trace.
type TraceSource struct {
	Path   string
	Format string
	// BlockSize is the trace's hash-block size in tokens (the format's default when not given).
	BlockSize    int
	BlockSizeSet bool
}

// Load is the offered load. Intensity holds the concurrency, request rate or
// KV fraction (a single point unless a domain was given).
type Load struct {
	Type      string
	Intensity Domain
	Seed      int64 // poisson only
}

// Stop is the request count rule: exactly one of the two is set (synthetic traffic; sessions
// for a synthetic-session source: stop.sessions / sessions_per_load_unit), or neither with an
// optional virtual-time limit (trace traffic).
type Stop struct {
	Requests            int
	RequestsPerLoadUnit float64
	// MaxVirtualSeconds > 0 ends a trace replay at that simulated time.
	MaxVirtualSeconds float64
}

// RequestCount resolves the number of requests for a load unit (the resolved
// concurrency or request rate).
func (s Stop) RequestCount(loadUnit float64) int {
	if s.Requests > 0 {
		return s.Requests
	}
	return max(1, int(math.Round(s.RequestsPerLoadUnit*loadUnit)))
}

// Engine is the deployment description.
type Engine struct {
	Modes         []string // one or both modes
	Model         string
	Hardware      string // concrete SKU (auto resolved)
	Backends      []string
	ContextLength int // 0 means the model maximum
	Workers       map[string]*Worker
	// BackendVersion is engine.backend_version as given ("" = current). aisim records it in
	// provenance and replay documents but does not model differences between versions.
	BackendVersion string
	// Precision holds the engine.*_quant_mode overrides ("" = from the checkpoint).
	Precision Precision
	// KVTransfer is engine.kv_transfer (nil: aisim charges the hardware link).
	KVTransfer *KVTransfer
}

// KVTransfer is the P/D KV handoff setting. BytesPerToken 0 means auto (the model's KV bytes per
// token at the checkpoint's KV precision); BandwidthGBps 0 means no transfer delay, as in
// AISimulate. With synthetic prompts nothing is on the decode worker beforehand, so both timing
// modes charge the whole prompt.
type KVTransfer struct {
	BytesPerToken int
	BandwidthGBps float64
	TimingMode    string
}

// Precision overrides of the checkpoint's numeric formats (engine.gemm_quant_mode,
// moe_quant_mode, fmha_quant_mode, kvcache_quant_mode, comm_quant_mode). Empty means
// "from the checkpoint". Values are normalized: "float16" for 16-bit, "fp8" for FP8
// (per-tensor and block-scaled FP8 cost the same in aisim's model).
type Precision struct {
	GEMM, MoE, FMHA, KVCache, Comm string
}

// Quantization mode spellings.
const (
	QuantFloat16 = "float16"
	QuantFP8     = "fp8"
)

// Any reports whether any override is set.
func (p Precision) Any() bool { return p != Precision{} }

// Worker holds per-role settings. Nil slices mean "backend/role default".
type Worker struct {
	Parallelism      Parallelism
	MaxBatchedTokens []int
	MaxSequences     []int
	BlockSize        int // 0 = backend default
	PrefixCaching    bool
	MemoryFraction   []float64
	FixedBlocks      int // >0 when kv_cache.capacity.type is fixed
	// FixedTiming is timing: {type: fixed} (nil: the performance model prices steps).
	FixedTiming *FixedTiming
	// Hardware is the role's hardware override (prefill and decode only; "" = engine.hardware).
	Hardware string
	// StartupSeconds is startup_seconds (-1 when absent): AISimulate's delay before a worker
	// the Planner adds at runtime serves. aisim never adds workers, so it has no effect.
	StartupSeconds float64
}

// FixedTiming replaces the step model: every step that computes prompt tokens takes PrefillMs,
// every decode-only step DecodeMs.
type FixedTiming struct {
	PrefillMs, DecodeMs float64
}

// Preset kinds for parallelism.
const (
	PresetDefault = "default"
	PresetCustom  = "custom"
	PresetNone    = "none"
)

// Parallelism is a preset-capable parallelism object.
type Parallelism struct {
	Preset string
	Custom []Shape
	// Knobs (PresetNone only): allowed values per knob; a missing knob uses
	// its default range.
	Knobs map[string][]int
}

// Parallelism knob names.
const (
	KnobReplicas      = "replicas"
	KnobTensor        = "tensor"
	KnobPipeline      = "pipeline"
	KnobAttentionData = "attention_data"
	KnobMoETensor     = "moe_tensor"
	KnobMoEExpert     = "moe_expert"
)

// KnobNames lists the six parallelism knobs in canonical order.
var KnobNames = []string{KnobReplicas, KnobTensor, KnobPipeline, KnobAttentionData, KnobMoETensor, KnobMoEExpert}

// Shape is one complete parallelism mapping of a role.
type Shape struct {
	Replicas      int `json:"replicas"`
	Tensor        int `json:"tensor"`
	Pipeline      int `json:"pipeline"`
	AttentionData int `json:"attention_data"`
	MoETensor     int `json:"moe_tensor"`
	MoEExpert     int `json:"moe_expert"`
}

// GPUsPerWorker is tensor × pipeline × attention_data.
func (s Shape) GPUsPerWorker() int { return s.Tensor * s.Pipeline * s.AttentionData }

// GPUs is the role's GPU count.
func (s Shape) GPUs() int { return s.Replicas * s.GPUsPerWorker() }

// SLA bounds in milliseconds; zero means unset.
type SLA struct {
	TTFTms float64
	ITLms  float64
	E2Ems  float64
}

// Any reports whether any bound is set.
func (s SLA) Any() bool { return s.TTFTms > 0 || s.ITLms > 0 || s.E2Ems > 0 }

// Evaluation holds the SLA.
type Evaluation struct {
	SLA SLA
}

// Optimization is the recommend objective and GPU constraints.
type Optimization struct {
	Target    string
	StrictSLA bool
	MinGPUs   int // 0 = unset
	MaxGPUs   int
	// MinGoodputRPS is the min_gpus goodput floor (constraints.min_goodput_rps; 0 = unset).
	MinGoodputRPS float64
	Hardware      string
}

// Optimizer is the search control block.
type Optimizer struct {
	Algorithm               string
	MaxTrials               int
	Parallelism             int
	CandidateTimeoutSeconds float64
	Seed                    int64
}

// Domain is a set of values for a sweepable field: a fixed value, explicit
// choices, or a range (materialized lazily by Points).
type Domain struct {
	Choices []float64
	Range   *Range
	Int     bool
}

// Range is a {range: {min, max, step?, scale?}} domain.
type Range struct {
	Min, Max, Step float64
	Log            bool
}

// Fixed returns a one-point domain.
func Fixed(v float64, isInt bool) Domain { return Domain{Choices: []float64{v}, Int: isInt} }

// IsFixed reports whether the domain has exactly one value.
func (d Domain) IsFixed() bool { return d.Range == nil && len(d.Choices) == 1 }

// ContinuousPoints is how many points aisim evaluates on a continuous range
// (AISimulate samples it with a Bayesian optimizer instead).
const ContinuousPoints = 10

// Points materializes the domain in ascending order (choices keep their
// order): a stepped range expands from min by step; a continuous range is
// sampled at ContinuousPoints evenly spaced (or log-spaced) points.
func (d Domain) Points() []float64 {
	if d.Range == nil {
		return d.Choices
	}
	r := d.Range
	var pts []float64
	switch {
	case r.Step > 0:
		for i := 0; ; i++ {
			v := r.Min + float64(i)*r.Step
			if v > r.Max*(1+1e-12)+1e-12 || i > 100000 {
				break
			}
			pts = append(pts, v)
		}
	case r.Min == r.Max:
		pts = []float64{r.Min}
	default:
		for i := 0; i < ContinuousPoints; i++ {
			t := float64(i) / float64(ContinuousPoints-1)
			if r.Log {
				pts = append(pts, math.Exp(math.Log(r.Min)+t*(math.Log(r.Max)-math.Log(r.Min))))
			} else {
				pts = append(pts, r.Min+t*(r.Max-r.Min))
			}
		}
	}
	if d.Int {
		seen := map[float64]bool{}
		out := pts[:0]
		for _, p := range pts {
			p = math.Round(p)
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
		pts = out
	} else {
		for i, p := range pts {
			// Trim float noise from min+i*step so saved YAMLs show 0.3, not 0.30000000000000004.
			pts[i] = roundSig(p)
		}
	}
	return pts
}

func roundSig(v float64) float64 {
	if v == 0 {
		return 0
	}
	// FormatFloat's output always parses back.
	out, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 12, 64), 64)
	return out
}

// IntPoints is Points for integer domains.
func IntPoints(vals []int) []int {
	out := append([]int(nil), vals...)
	slices.Sort(out)
	return out
}
