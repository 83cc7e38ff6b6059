package output

import (
	"encoding/json"
	"fmt"
	"iter"

	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/document"
)

// PredictionConfig is a concrete `predict` input document: one deployment (mode, backend, every
// role's parallelism, scheduler and KV cache), its traffic and its SLA. It is a candidate's
// prediction_config, a recommendations/NNNN.yaml and prediction.json's config. aisim writes it,
// the renderer and the UI read it.
//
// This struct is the field set: documents are encoded from it with encoding/json (and
// sigs.k8s.io/yaml), and DecodePredictionConfig refuses a field it does not name. An optional
// field is a pointer (or omitted when empty) so that a decoded document encodes back to the
// same fields. Sections the operator and aisim never interpret (estimator tuning, the simulator's
// own resources, AFD, speculation, planner and router models, host offload, images) are kept
// as written (json.RawMessage); AISimulate validates them.
type PredictionConfig struct {
	Engine     Engine          `json:"engine"`
	Traffic    *Traffic        `json:"traffic,omitempty"`
	Evaluation *Evaluation     `json:"evaluation,omitempty"`
	Execution  json.RawMessage `json:"execution,omitempty"`
	Planner    json.RawMessage `json:"planner,omitempty"`
	Router     json.RawMessage `json:"router,omitempty"`
}

// Deployment modes of Engine.Mode.
const (
	ModeAggregated    = "aggregated"
	ModeDisaggregated = "disaggregated"
)

// Roles of Engine.Workers.
const (
	RoleAggregated = "aggregated"
	RolePrefill    = "prefill"
	RoleDecode     = "decode"
	RoleEncoder    = "encoder"
)

// Engine is prediction.engine.
type Engine struct {
	Mode           string `json:"mode,omitempty"`
	Model          string `json:"model,omitempty"`
	Hardware       string `json:"hardware,omitempty"`
	Backend        string `json:"backend,omitempty"`
	BackendVersion string `json:"backend_version,omitempty"`
	// ContextLength is a token count or "max".
	ContextLength *intstr.IntOrString `json:"context_length,omitempty"`
	Workers       Workers             `json:"workers,omitzero"`
	KVTransfer    *KVTransfer         `json:"kv_transfer,omitempty"`

	GEMMQuantMode    string `json:"gemm_quant_mode,omitempty"`
	MoEQuantMode     string `json:"moe_quant_mode,omitempty"`
	FMHAQuantMode    string `json:"fmha_quant_mode,omitempty"`
	KVCacheQuantMode string `json:"kvcache_quant_mode,omitempty"`
	CommQuantMode    string `json:"comm_quant_mode,omitempty"`

	AttentionBackend     string   `json:"attention_backend,omitempty"`
	MoEBackend           string   `json:"moe_backend,omitempty"`
	MoEKernelSource      string   `json:"moe_kernel_source,omitempty"`
	EnableChunkedPrefill *bool    `json:"enable_chunked_prefill,omitempty"`
	EnableEPLB           *bool    `json:"enable_eplb,omitempty"`
	NextN                *int     `json:"nextn,omitempty"`
	NextNAccepted        *float64 `json:"nextn_accepted,omitempty"`
	WideEPNumSlots       *int     `json:"wideep_num_slots,omitempty"`
	DecoderReplay        *bool    `json:"decoder_replay,omitempty"`

	DatabaseMode    string          `json:"database_mode,omitempty"`
	EstimationMode  string          `json:"estimation_mode,omitempty"`
	FallbackPolicy  string          `json:"fallback_policy,omitempty"`
	EstimatorConfig json.RawMessage `json:"estimator_config,omitempty"`
	FPMProfile      json.RawMessage `json:"fpm_profile,omitempty"`
	SystemsPath     string          `json:"systems_path,omitempty"`
	SystemsPaths    []string        `json:"systems_paths,omitempty"`
	TransferPolicy  []string        `json:"transfer_policy,omitempty"`

	AFD         json.RawMessage `json:"afd,omitempty"`
	Speculation json.RawMessage `json:"speculation,omitempty"`
	Placement   json.RawMessage `json:"placement,omitempty"`
}

// Workers is engine.workers: one entry per role of the mode (aggregated; or prefill and
// decode), and the encoder of a multimodal deployment.
type Workers struct {
	Aggregated *Worker `json:"aggregated,omitempty"`
	Prefill    *Worker `json:"prefill,omitempty"`
	Decode     *Worker `json:"decode,omitempty"`
	Encoder    *Worker `json:"encoder,omitempty"`
}

// Role returns the worker of role (nil when the document has none).
func (w *Workers) Role(role string) *Worker {
	switch role {
	case RoleAggregated:
		return w.Aggregated
	case RolePrefill:
		return w.Prefill
	case RoleDecode:
		return w.Decode
	case RoleEncoder:
		return w.Encoder
	}
	return nil
}

// All yields the roles the document has, in the order aggregated, prefill, decode, encoder.
func (w *Workers) All() iter.Seq2[string, *Worker] {
	return func(yield func(string, *Worker) bool) {
		for _, role := range []string{RoleAggregated, RolePrefill, RoleDecode, RoleEncoder} {
			if worker := w.Role(role); worker != nil && !yield(role, worker) {
				return
			}
		}
	}
}

// SetRole sets the worker of role; it panics on a role Workers has no field for.
func (w *Workers) SetRole(role string, worker *Worker) {
	switch role {
	case RoleAggregated:
		w.Aggregated = worker
	case RolePrefill:
		w.Prefill = worker
	case RoleDecode:
		w.Decode = worker
	case RoleEncoder:
		w.Encoder = worker
	default:
		panic(fmt.Sprintf("no worker role %q", role))
	}
}

// Worker is one role of engine.workers.
type Worker struct {
	Parallelism Parallelism `json:"parallelism,omitzero"`
	Scheduler   Scheduler   `json:"scheduler,omitzero"`
	KVCache     KVCache     `json:"kv_cache,omitzero"`
	Timing      *Timing     `json:"timing,omitempty"`
	// Hardware is the role's GPU when it differs from engine.hardware.
	Hardware string `json:"hardware,omitempty"`
	// ContextLength overrides engine.context_length for the role.
	ContextLength  *intstr.IntOrString `json:"context_length,omitempty"`
	StartupSeconds *float64            `json:"startup_seconds,omitempty"`

	// The encoder role's own settings.
	Mode              string          `json:"mode,omitempty"`
	Replicas          *int            `json:"replicas,omitempty"`
	Tensor            *int            `json:"tensor,omitempty"`
	BatchSize         *int            `json:"batch_size,omitempty"`
	BackendVersion    string          `json:"backend_version,omitempty"`
	HostLoop          *bool           `json:"host_loop,omitempty"`
	HostProfile       json.RawMessage `json:"host_profile,omitempty"`
	Transfer          json.RawMessage `json:"transfer,omitempty"`
	Vision            json.RawMessage `json:"vision,omitempty"`
	LatencyCorrection json.RawMessage `json:"latency_correction,omitempty"`
	RateDegradation   json.RawMessage `json:"rate_degradation,omitempty"`
}

// Parallelism of a role: replicas of an engine of tensor × pipeline × attention_data GPUs.
type Parallelism struct {
	Replicas      int `json:"replicas,omitempty"`
	Tensor        int `json:"tensor,omitempty"`
	Pipeline      int `json:"pipeline,omitempty"`
	AttentionData int `json:"attention_data,omitempty"`
	MoETensor     int `json:"moe_tensor,omitempty"`
	MoEExpert     int `json:"moe_expert,omitempty"`
}

// Scheduler limits of a role (per attention-DP rank).
type Scheduler struct {
	MaxBatchedTokens        int  `json:"max_batched_tokens,omitempty"`
	MaxSequences            int  `json:"max_sequences,omitempty"`
	PrefillScheduleInterval *int `json:"prefill_schedule_interval,omitempty"`
	PrefillDecodeInterval   *int `json:"prefill_decode_interval,omitempty"`
}

// KVCache settings of a role.
type KVCache struct {
	BlockSize     int   `json:"block_size,omitempty"`
	PrefixCaching *bool `json:"prefix_caching,omitempty"`
	// BytesPerToken is a byte count or "auto".
	BytesPerToken *intstr.IntOrString `json:"bytes_per_token,omitempty"`
	Capacity      Capacity            `json:"capacity,omitzero"`
	HostOffload   json.RawMessage     `json:"host_offload,omitempty"`
}

// KV capacity types.
const (
	CapacityDefault = "default"
	CapacityFixed   = "fixed"
)

// Capacity of the KV cache: a fraction of the GPU memory (default) or a number of blocks
// (fixed).
type Capacity struct {
	Type                   string   `json:"type,omitempty"`
	MemoryFraction         *float64 `json:"memory_fraction,omitempty"`
	Blocks                 *int     `json:"blocks,omitempty"`
	CUDAGraphReservedBytes *int64   `json:"cuda_graph_reserved_bytes,omitempty"`
}

// TimingFixed is the Timing type whose every prefill step takes PrefillMs and every decode step
// DecodeMs.
const TimingFixed = "fixed"

// Timing is a role's step-time model.
type Timing struct {
	Type             string          `json:"type,omitempty"`
	PrefillMs        *float64        `json:"prefill_ms,omitempty"`
	DecodeMs         *float64        `json:"decode_ms,omitempty"`
	ForwardModel     string          `json:"forward_model,omitempty"`
	FPMParquetPath   string          `json:"fpm_parquet_path,omitempty"`
	EstimationMode   string          `json:"estimation_mode,omitempty"`
	FallbackPolicy   string          `json:"fallback_policy,omitempty"`
	DatabaseMode     string          `json:"database_mode,omitempty"`
	EstimatorConfig  json.RawMessage `json:"estimator_config,omitempty"`
	SystemsPaths     []string        `json:"systems_paths,omitempty"`
	TransferPolicy   []string        `json:"transfer_policy,omitempty"`
	AttentionBackend string          `json:"attention_backend,omitempty"`
	GEMMQuantMode    string          `json:"gemm_quant_mode,omitempty"`
	MoEQuantMode     string          `json:"moe_quant_mode,omitempty"`
	FMHAQuantMode    string          `json:"fmha_quant_mode,omitempty"`
	KVCacheQuantMode string          `json:"kvcache_quant_mode,omitempty"`
	CommQuantMode    string          `json:"comm_quant_mode,omitempty"`
}

// KVTransfer is the prefill-to-decode KV handoff of a disaggregated deployment.
type KVTransfer struct {
	// BytesPerToken is a byte count or "auto".
	BytesPerToken *intstr.IntOrString `json:"bytes_per_token,omitempty"`
	TimingMode    string              `json:"timing_mode,omitempty"`
	BandwidthGBps *float64            `json:"bandwidth_gb_per_second,omitempty"`
}

// Traffic is prediction.traffic.
type Traffic struct {
	Source Source `json:"source,omitzero"`
	Load   Load   `json:"load,omitzero"`
	Stop   Stop   `json:"stop,omitzero"`
}

// Source types.
const (
	SourceSynthetic        = "synthetic"
	SourceSyntheticSession = "synthetic-session"
	SourceTrace            = "trace"
)

// Source is traffic.source: synthetic (input and output tokens), synthetic-session (tokens per
// turn and the session's shape) or trace (files).
type Source struct {
	Type               string          `json:"type,omitempty"`
	InputTokens        int             `json:"input_tokens,omitempty"`
	OutputTokens       int             `json:"output_tokens,omitempty"`
	CachedPrefixTokens *int            `json:"cached_prefix_tokens,omitempty"`
	Images             json.RawMessage `json:"images,omitempty"`

	NewInputTokensPerTurn int      `json:"new_input_tokens_per_turn,omitempty"`
	OutputTokensPerTurn   int      `json:"output_tokens_per_turn,omitempty"`
	Session               *Session `json:"session,omitempty"`

	Paths                []string `json:"paths,omitempty"`
	Format               string   `json:"format,omitempty"`
	BlockSize            int      `json:"block_size,omitempty"`
	NestedTimestampBasis string   `json:"nested_timestamp_basis,omitempty"`
}

// Session is the shape of a synthetic session.
type Session struct {
	Turns             int      `json:"turns,omitempty"`
	SharedPrefixRatio *float64 `json:"shared_prefix_ratio,omitempty"`
	PrefixGroups      *int     `json:"prefix_groups,omitempty"`
	InterTurnDelayMs  *float64 `json:"inter_turn_delay_ms,omitempty"`
}

// Load is traffic.load: a closed loop of concurrency requests (or sessions), an open-loop rate,
// or a trace's own timestamps sped up.
type Load struct {
	Type              string          `json:"type,omitempty"`
	Concurrency       int             `json:"concurrency,omitempty"`
	RequestsPerSecond *float64        `json:"requests_per_second,omitempty"`
	SessionsPerSecond *float64        `json:"sessions_per_second,omitempty"`
	Seed              *int64          `json:"seed,omitempty"`
	Speedup           *float64        `json:"speedup,omitempty"`
	Fraction          *float64        `json:"fraction,omitempty"`
	AgenticWarmup     *bool           `json:"agentic_warmup,omitempty"`
	AgenticLanes      *int            `json:"agentic_lanes,omitempty"`
	AgenticProfile    json.RawMessage `json:"agentic_profile,omitempty"`
	AgenticSnapshot   json.RawMessage `json:"agentic_snapshot,omitempty"`
}

// Types of Load.
const (
	LoadConcurrency  = "concurrency"
	LoadPoisson      = "poisson"
	LoadConstantRate = "constant_rate"
	// LoadKVCapacityFraction sizes a concurrency per candidate; a candidate's document holds the
	// concurrency it resolved to.
	LoadKVCapacityFraction = "kv_capacity_fraction"
	// LoadTraceTimestamps replays a trace at its recorded arrival times divided by Speedup.
	LoadTraceTimestamps = "trace_timestamps"
)

// Stop is traffic.stop.
type Stop struct {
	Requests              int      `json:"requests,omitempty"`
	RequestsPerLoadUnit   *float64 `json:"requests_per_load_unit,omitempty"`
	Sessions              int      `json:"sessions,omitempty"`
	SessionsPerLoadUnit   *float64 `json:"sessions_per_load_unit,omitempty"`
	MaxVirtualTimeSeconds *float64 `json:"max_virtual_time_seconds,omitempty"`
}

// Evaluation is prediction.evaluation.
type Evaluation struct {
	SLA *SLA `json:"sla,omitempty"`
}

// SLA bounds, in milliseconds.
type SLA struct {
	TTFTMs *float64 `json:"ttft_ms,omitempty"`
	ITLMs  *float64 `json:"itl_ms,omitempty"`
	E2EMs  *float64 `json:"e2e_ms,omitempty"`
}

// DecodePredictionConfig decodes a prediction document (YAML or JSON) strictly: it is parsed
// by the contract's document reader (YAML's own typing, so 1024.0 is no integer; duplicate keys
// refused), then a field PredictionConfig does not name, or a value of the wrong type, is an
// error naming its path.
func DecodePredictionConfig(data []byte) (*PredictionConfig, error) {
	v, err := document.ParseMapping(data)
	if err != nil {
		return nil, err
	}
	raw, err := document.Canonical(v.JSON())
	if err != nil {
		return nil, err
	}
	var pc PredictionConfig
	if err := strictUnmarshal(raw, &pc); err != nil {
		return nil, err
	}
	return &pc, nil
}

// YAML encodes the document as recommendations/NNNN.yaml holds it (keys sorted).
func (c *PredictionConfig) YAML() ([]byte, error) { return yaml.Marshal(c) }
