package render

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
)

// Disposition is what the renderer does with a field of the prediction document.
type Disposition string

// Dispositions of Fields.
const (
	// Rendered: the field is lowered into the DynamoGraphDeployment (where a value cannot be
	// lowered for the document's backend or mode, that value is refused: refusals).
	Rendered Disposition = "rendered"
	// Refused: a document that sets the field is not renderable; its Candidate is not deployable
	// (Deployable=False, reason NotRenderable, naming the field).
	Refused Disposition = "refused"
	// Modelled: the field describes the prediction, not the deployment (the workload, the SLA,
	// the simulator's step-time and transfer models, its own resources, the performance data
	// and assumptions about the workload such as acceptance rates). No deployment setting
	// corresponds to it.
	Modelled Disposition = "modelled"
)

// Fields is the disposition of every field of the typed prediction document
// (output.PredictionConfig), by JSON path; engine.workers.* stands for each language role
// (aggregated, prefill, decode). An entry for a section covers the section's fields. A field of
// the document that output.PredictionConfig does not name is refused. TestEveryPredictionField
// fails when a field of the typed document has no entry, so that a new field is never dropped
// silently.
var Fields = map[string]Disposition{
	"traffic":    Modelled,
	"evaluation": Modelled, // the Planner's SLA comes from the request's spec.sla
	"execution":  Modelled, // the simulator's own resources
	// AISimulate's simulated Planner and router (predict inputs; recommend writes neither): a
	// deployment's Planner and router are the request's spec.deployment.
	"planner": Refused,
	"router":  Refused,

	"engine.mode":     Rendered,
	"engine.model":    Rendered,
	"engine.hardware": Rendered, // every role's GPU product (placement.go) and node size
	"engine.backend":  Rendered,
	// The engine version of the performance data, recorded on the Candidate
	// (status.engineVersions.performanceData); the deployed version is the runtime image's.
	"engine.backend_version": Modelled,
	"engine.context_length":  Rendered,
	"engine.kv_transfer":     Modelled, // the P/D handoff's cost model; the workers transfer over NIXL
	// Precision: the engines run the checkpoint's own precision; another is not rendered.
	"engine.gemm_quant_mode":    Refused,
	"engine.moe_quant_mode":     Refused,
	"engine.fmha_quant_mode":    Refused,
	"engine.kvcache_quant_mode": Refused,
	"engine.comm_quant_mode":    Refused,
	"engine.attention_backend":  Refused,
	"engine.moe_backend":        Refused,
	"engine.moe_kernel_source":  Refused,
	// true is what every rendering does (chunked prefill on); false is refused.
	"engine.enable_chunked_prefill": Rendered,
	// false is the engines' default; true is refused.
	"engine.enable_eplb": Rendered,
	// 0 is no MTP; MTP speculation is refused.
	"engine.nextn":            Rendered,
	"engine.nextn_accepted":   Modelled,
	"engine.wideep_num_slots": Refused,
	"engine.decoder_replay":   Modelled,
	"engine.database_mode":    Modelled,
	"engine.estimation_mode":  Modelled,
	"engine.fallback_policy":  Modelled,
	"engine.estimator_config": Modelled,
	"engine.fpm_profile":      Modelled,
	"engine.systems_path":     Modelled,
	"engine.systems_paths":    Modelled,
	"engine.transfer_policy":  Modelled,
	"engine.afd":              Refused,
	// ngram on vLLM is rendered (--speculative-config); every other kind and backend is refused.
	"engine.speculation": Rendered,
	"engine.placement":   Refused,
	// The multimodal encoder pool has no rendered component.
	"engine.workers.encoder": Refused,

	"engine.workers.*.parallelism.replicas":       Rendered,
	"engine.workers.*.parallelism.tensor":         Rendered,
	"engine.workers.*.parallelism.pipeline":       Rendered,
	"engine.workers.*.parallelism.attention_data": Rendered,
	"engine.workers.*.parallelism.moe_expert":     Rendered,
	// Implied by the engine's width and moe_expert: the rendered engines shard experts over
	// tensor × attention_data ranks.
	"engine.workers.*.parallelism.moe_tensor":       Rendered,
	"engine.workers.*.scheduler.max_batched_tokens": Rendered,
	"engine.workers.*.scheduler.max_sequences":      Rendered,
	// The engines' defaults (1 for vLLM, 0 for SGLang) are rendered; another value is refused.
	"engine.workers.*.scheduler.prefill_schedule_interval": Rendered,
	"engine.workers.*.scheduler.prefill_decode_interval":   Rendered,
	"engine.workers.*.kv_cache.block_size":                 Rendered,
	"engine.workers.*.kv_cache.prefix_caching":             Rendered,
	"engine.workers.*.kv_cache.bytes_per_token":            Modelled, // the KV size model
	"engine.workers.*.kv_cache.capacity.type":              Rendered,
	"engine.workers.*.kv_cache.capacity.memory_fraction":   Rendered,
	// vLLM's --num-gpu-blocks-override; refused for SGLang and TRT-LLM.
	"engine.workers.*.kv_cache.capacity.blocks":                    Rendered,
	"engine.workers.*.kv_cache.capacity.cuda_graph_reserved_bytes": Modelled,
	// vLLM's native CPU offload of an aggregated worker (--kv-offloading-size); refused
	// elsewhere.
	"engine.workers.*.kv_cache.host_offload": Rendered,
	"engine.workers.*.timing":                Modelled, // the step-time model
	"engine.workers.*.hardware":              Rendered, // the role's GPU product and node size
	"engine.workers.*.context_length":        Rendered,
	"engine.workers.*.startup_seconds":       Modelled,
	// The encoder pool's own settings, meaningless on a language role.
	"engine.workers.*.mode":               Refused,
	"engine.workers.*.replicas":           Refused,
	"engine.workers.*.tensor":             Refused,
	"engine.workers.*.batch_size":         Refused,
	"engine.workers.*.backend_version":    Refused,
	"engine.workers.*.host_loop":          Refused,
	"engine.workers.*.host_profile":       Refused,
	"engine.workers.*.transfer":           Refused,
	"engine.workers.*.vision":             Refused,
	"engine.workers.*.latency_correction": Refused,
	"engine.workers.*.rate_degradation":   Refused,
}

// Refusal is a field of the prediction document the renderer cannot lower.
type Refusal struct {
	// Path is the field's JSON path in the document (engine.speculation).
	Path string
	// Why says why it is not rendered.
	Why string
}

func (r Refusal) String() string { return r.Path + ": " + r.Why }

// NotRenderableError is returned for a document with fields the renderer cannot lower:
// deploying the rest would deploy something else than what was predicted.
type NotRenderableError struct {
	Refusals []Refusal
}

func (e *NotRenderableError) Error() string {
	parts := make([]string, len(e.Refusals))
	for i, r := range e.Refusals {
		parts[i] = r.String()
	}
	return "not renderable: " + strings.Join(parts, "; ")
}

// Paths lists the refused fields' paths.
func (e *NotRenderableError) Paths() []string {
	out := make([]string, len(e.Refusals))
	for i, r := range e.Refusals {
		out[i] = r.Path
	}
	return out
}

// NgramPromptLookup is the ngram window rendered into vLLM's --speculative-config: vLLM 0.31's
// own default when neither bound is given (vllm/config/speculative.py), written out so that a
// runtime with another default drafts as the prediction assumed. AISimulate does not model the
// lookup (its acceptance rates are an input).
const NgramPromptLookup = 5

// speculation is engine.speculation as the renderer reads it.
type speculation struct {
	Kind                 string `json:"kind"`
	NumSpeculativeTokens int    `json:"num_speculative_tokens"`
}

// hostOffload is kv_cache.host_offload as the renderer reads it (the bandwidths and latency
// are the hardware's, modelled).
type hostOffload struct {
	Scope         string `json:"scope"`
	NumHostBlocks int64  `json:"num_host_blocks"`
}

// setField is a field path and whether the document sets it.
type setField struct {
	path string
	set  bool
}

// refusals lists the fields of p that cannot be rendered for its backend and mode (unknown
// lists the fields output.PredictionConfig does not name), in document order.
func refusals(p *output.PredictionConfig, backend, mode string, unknown []string) []Refusal {
	var out []Refusal
	refuse := func(path, format string, args ...any) {
		out = append(out, Refusal{Path: path, Why: fmt.Sprintf(format, args...)})
	}
	for _, path := range unknown {
		refuse(path, "a field the renderer does not know")
	}
	if len(p.Planner) > 0 {
		refuse("planner", "a simulated Planner is not deployed; the deployment's Planner is spec.deployment.planner")
	}
	if len(p.Router) > 0 {
		refuse("router", "a simulated router is not deployed; the deployment's router is spec.deployment.router")
	}
	e := &p.Engine
	for _, f := range []setField{
		{"engine.gemm_quant_mode", e.GEMMQuantMode != ""}, {"engine.moe_quant_mode", e.MoEQuantMode != ""},
		{"engine.fmha_quant_mode", e.FMHAQuantMode != ""}, {"engine.kvcache_quant_mode", e.KVCacheQuantMode != ""},
		{"engine.comm_quant_mode", e.CommQuantMode != ""},
	} {
		if f.set {
			refuse(f.path, "the engines run the checkpoint's own precision; another precision is not rendered")
		}
	}
	for _, f := range []setField{
		{"engine.attention_backend", e.AttentionBackend != ""}, {"engine.moe_backend", e.MoEBackend != ""},
		{"engine.moe_kernel_source", e.MoEKernelSource != ""}, {"engine.wideep_num_slots", e.WideEPNumSlots != nil},
		{"engine.afd", len(e.AFD) > 0}, {"engine.placement", len(e.Placement) > 0},
	} {
		if f.set {
			refuse(f.path, "not rendered: the engines run their own default")
		}
	}
	if v := e.EnableChunkedPrefill; v != nil && !*v {
		refuse("engine.enable_chunked_prefill", "false is not rendered: every rendered engine chunks prefills")
	}
	if v := e.EnableEPLB; v != nil && *v {
		refuse("engine.enable_eplb", "true is not rendered: expert load balancing is off in every rendered engine")
	}
	if v := e.NextN; v != nil && *v > 0 {
		refuse("engine.nextn", "MTP speculation is not rendered")
	}
	if len(e.Speculation) > 0 && string(e.Speculation) != "null" {
		var s speculation
		switch err := json.Unmarshal(e.Speculation, &s); {
		case err != nil:
			refuse("engine.speculation", "not a speculation section: %v", err)
		case s.Kind != "ngram":
			refuse("engine.speculation", "%s speculation is not rendered (ngram on vLLM only)", strconv.Quote(s.Kind))
		case backend != output.BackendVLLM:
			refuse("engine.speculation", "ngram speculation is rendered for vLLM only, not %s", backend)
		case s.NumSpeculativeTokens < 1:
			refuse("engine.speculation.num_speculative_tokens", "must be at least 1")
		}
	}
	if e.Workers.Encoder != nil {
		refuse("engine.workers.encoder", "the multimodal encoder pool is not rendered")
	}
	roles := []string{output.RoleAggregated}
	if mode == ModeDisaggregated {
		roles = []string{output.RolePrefill, output.RoleDecode}
	}
	for role, w := range e.Workers.All() {
		if role == output.RoleEncoder {
			continue
		}
		base := "engine.workers." + role
		if !slices.Contains(roles, role) {
			refuse(base, "not a role of a %s deployment", mode)
			continue
		}
		out = append(out, workerRefusals(base, w, backend, mode)...)
	}
	return out
}

// workerRefusals are the refused fields of the language role w at base.
func workerRefusals(base string, w *output.Worker, backend, mode string) []Refusal {
	var out []Refusal
	refuse := func(path, format string, args ...any) {
		out = append(out, Refusal{Path: base + "." + path, Why: fmt.Sprintf(format, args...)})
	}
	encoderOnly := []setField{
		{"mode", w.Mode != ""}, {"replicas", w.Replicas != nil}, {"tensor", w.Tensor != nil},
		{"batch_size", w.BatchSize != nil}, {"backend_version", w.BackendVersion != ""}, {"host_loop", w.HostLoop != nil},
		{"host_profile", len(w.HostProfile) > 0}, {"transfer", len(w.Transfer) > 0}, {"vision", len(w.Vision) > 0},
		{"latency_correction", len(w.LatencyCorrection) > 0}, {"rate_degradation", len(w.RateDegradation) > 0},
	}
	for _, f := range encoderOnly {
		if f.set {
			refuse(f.path, "an encoder pool's setting, not rendered for a language role")
		}
	}
	if v := w.Scheduler.PrefillScheduleInterval; v != nil && *v != 1 {
		refuse("scheduler.prefill_schedule_interval", "%d is not rendered (the engines admit prefills on every pass)", *v)
	}
	if v := w.Scheduler.PrefillDecodeInterval; v != nil && *v != 0 {
		refuse("scheduler.prefill_decode_interval", "%d is not rendered (the engines do not hold prefills back)", *v)
	}
	if w.KVCache.Capacity.Blocks != nil && backend != output.BackendVLLM {
		refuse("kv_cache.capacity.blocks", "a fixed KV block count is rendered for vLLM only (--num-gpu-blocks-override), not %s", backend)
	}
	if len(w.KVCache.HostOffload) > 0 && string(w.KVCache.HostOffload) != "null" {
		if _, why := hostOffloadGiB(w, backend, mode); why != "" {
			refuse("kv_cache.host_offload", "%s", why)
		}
	}
	return out
}

// hostOffloadGiB is the --kv-offloading-size (GiB, summed over the engine's tensor-parallel
// ranks) of w's host offload, or why it cannot be rendered. vLLM's native CPU offload
// (--kv-offloading-backend native) gives each engine, that is each data-parallel rank, its own
// buffer, as AISimulate's dp_rank_local scope does; AISimulate counts num_host_blocks blocks of
// block_size tokens of bytes_per_token bytes on each rank.
func hostOffloadGiB(w *output.Worker, backend, mode string) (float64, string) {
	var h hostOffload
	if err := json.Unmarshal(w.KVCache.HostOffload, &h); err != nil {
		return 0, fmt.Sprintf("not a host offload section: %v", err)
	}
	switch {
	case backend != output.BackendVLLM:
		return 0, fmt.Sprintf("host KV offload is rendered for vLLM only (--kv-offloading-size), not %s", backend)
	case mode != ModeAggregated:
		return 0, "vLLM's --kv-offloading-size replaces the NIXL connector of a disaggregated worker; host KV offload is rendered for aggregated workers only"
	case h.Scope != "" && h.Scope != "dp_rank_local":
		return 0, fmt.Sprintf("scope %s is not rendered: vLLM's native offload gives each engine its own buffer (dp_rank_local)", h.Scope)
	case h.NumHostBlocks < 1:
		return 0, "num_host_blocks must be at least 1"
	case max(w.Parallelism.Pipeline, 1) > 1:
		return 0, "not rendered with pipeline parallelism: vLLM sizes the offload buffer over tensor-parallel ranks"
	case w.KVCache.BlockSize < 1:
		return 0, "needs kv_cache.block_size: --kv-offloading-size is in GiB"
	}
	bpt := w.KVCache.BytesPerToken
	if bpt == nil || bpt.Type != intstr.Int || bpt.IntVal < 1 {
		return 0, "needs an integer kv_cache.bytes_per_token (not auto): --kv-offloading-size is in GiB"
	}
	bytes := float64(h.NumHostBlocks) * float64(w.KVCache.BlockSize) * float64(bpt.IntVal) * float64(max(w.Parallelism.Tensor, 1))
	return bytes / (1 << 30), ""
}
