package input

import (
	"maps"
	"slices"
	"strings"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/document"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
)

// The engine section: modes, backends, the engine-wide precision, versions, KV transfer and
// estimator; the workers are decoded in decode_worker.go.

var engineUnsupported = []string{"speculation", "afd",
	"nextn", "nextn_accepted", "enable_eplb", "wideep_num_slots", "attention_backend", "moe_backend",
	"moe_kernel_source", "database_mode", "transfer_policy",
	"systems_paths", "estimator_config", "fpm_profile", "decoder_replay", "enable_shared_layer",
	"strict_provenance", "forward_model", "systems_path", "placement"}

func decodeEngine(cmd Command, root *object, optHardware string) (Engine, error) {
	var e Engine
	if !root.has("engine") {
		return e, errf("engine", "required")
	}
	eo, err := newObject("engine", root.get("engine"),
		append([]string{"mode", "model", "hardware", "backend", "context_length", "workers", "backend_version", "kv_transfer",
			"estimation_mode", "fallback_policy", "enable_chunked_prefill"}, quantFields...),
		engineUnsupported)
	if err != nil {
		return e, err
	}
	if err := estimatorSelection(eo); err != nil {
		return e, err
	}
	// aisim's scheduler always splits prompts into chunks within max_batched_tokens (what vLLM
	// and SGLang do by default); unchunked prefill is not modelled.
	if err := eo.defaultOnly("enable_chunked_prefill", true); err != nil {
		return e, err
	}
	if e.BackendVersion, err = decodeBackendVersion(cmd, eo); err != nil {
		return e, err
	}
	if e.Precision, err = decodePrecision(eo); err != nil {
		return e, err
	}
	if e.KVTransfer, err = decodeKVTransfer(eo); err != nil {
		return e, err
	}
	modes := []string{ModeAggregated, ModeDisaggregated}
	defModes := []string{ModeAggregated} // predict's defaults: one concrete deployment
	defBackends := []string{output.BackendVLLM}
	if cmd == Recommend {
		defModes = aisimulate.DefaultModes
		defBackends = aisimulate.DefaultBackends
	}
	if x := eo.get("mode"); x != nil && x.Kind == document.KindString && x.Str == "afd" {
		return e, errf(eo.p("mode"), "afd: %s", notSupported)
	}
	if e.Modes, err = eo.stringDomain(cmd, "mode", defModes, modes); err != nil {
		return e, err
	}
	if e.KVTransfer != nil && !slices.Contains(e.Modes, ModeDisaggregated) {
		return e, errf(eo.p("kv_transfer"), "only allowed when engine.mode can be disaggregated")
	}
	if !eo.has("model") {
		return e, errf(eo.p("model"), "required")
	}
	if e.Model, err = eo.str("model", ""); err != nil {
		return e, err
	}
	if !eo.has("hardware") {
		return e, errf(eo.p("hardware"), "required")
	}
	if e.Hardware, err = eo.str("hardware", ""); err != nil {
		return e, err
	}
	if e.Hardware == "auto" {
		if cmd == Predict {
			return e, errf(eo.p("hardware"), "auto is recommend-only; give a concrete hardware id")
		}
		if optHardware == "" {
			return e, errf(eo.p("hardware"), "auto requires optimization.hardware")
		}
		e.Hardware = optHardware
	}
	if e.Backends, err = eo.stringDomain(cmd, "backend", defBackends, output.BackendNames()); err != nil {
		return e, err
	}
	if x := eo.get("context_length"); x != nil && !(x.Kind == document.KindString && x.Str == "max") {
		if e.ContextLength, err = intValue(eo.p("context_length"), x, 1); err != nil {
			return e, errf(eo.p("context_length"), "expected a positive integer or \"max\"")
		}
	}
	e.Workers = map[string]*Worker{}
	roleOK := map[string]bool{}
	for _, m := range e.Modes {
		if m == ModeAggregated {
			roleOK[RoleAggregated] = true
		} else {
			roleOK[RolePrefill], roleOK[RoleDecode] = true, true
		}
	}
	if eo.has("workers") {
		wo, err := newObject("engine.workers", eo.get("workers"), []string{RoleAggregated, RolePrefill, RoleDecode}, []string{"encoder"})
		if err != nil {
			return e, err
		}
		for _, role := range wo.v.Keys {
			if !roleOK[role] {
				return e, errf(wo.p(role), "role %s is not allowed with engine.mode %v", role, e.Modes)
			}
			x := wo.v.Map[role]
			if x.Kind == document.KindNull {
				x = &document.Value{Kind: document.KindMap, Map: map[string]*document.Value{}}
			}
			w, err := decodeWorker(cmd, wo.p(role), x)
			if err != nil {
				return e, err
			}
			if w.Hardware != "" && role == RoleAggregated {
				return e, errf(wo.p(role)+".hardware", "only disaggregated prefill and decode workers may override engine.hardware")
			}
			e.Workers[role] = w
		}
	}
	for role := range roleOK {
		if e.Workers[role] == nil {
			e.Workers[role] = defaultWorker(cmd)
		}
	}
	// Block sizes below 2 are only legal when SGLang (block size 1) is a possible backend.
	for role, w := range e.Workers {
		if w.BlockSize == 1 && !slices.Contains(e.Backends, output.BackendSGLang) {
			return e, errf("engine.workers."+role+".kv_cache.block_size", "must be >= 2 for vllm and trtllm")
		}
	}
	return e, nil
}

// quantFields are the engine's precision overrides (contract §4.1).
var quantFields = []string{"gemm_quant_mode", "moe_quant_mode", "fmha_quant_mode", "kvcache_quant_mode", "comm_quant_mode"}

// quantSpellings maps the accepted AISimulate spellings to aisim's normalized modes; any other
// value (nvfp4, int8 weight-only, w4a8, ...) is refused as not supported.
var quantSpellings = map[string]map[string]string{
	"gemm_quant_mode":    {"float16": QuantFloat16, "bfloat16": QuantFloat16, "fp8": QuantFP8, "fp8_block": QuantFP8},
	"moe_quant_mode":     {"float16": QuantFloat16, "bfloat16": QuantFloat16, "fp8": QuantFP8, "fp8_block": QuantFP8},
	"fmha_quant_mode":    {"float16": QuantFloat16, "bfloat16": QuantFloat16, "fp8": QuantFP8},
	"kvcache_quant_mode": {"float16": QuantFloat16, "bfloat16": QuantFloat16, "fp8": QuantFP8},
	"comm_quant_mode":    {"half": QuantFloat16, "float16": QuantFloat16},
}

func decodePrecision(eo *object) (Precision, error) {
	var p Precision
	dst := map[string]*string{"gemm_quant_mode": &p.GEMM, "moe_quant_mode": &p.MoE, "fmha_quant_mode": &p.FMHA,
		"kvcache_quant_mode": &p.KVCache, "comm_quant_mode": &p.Comm}
	for _, k := range quantFields {
		if isDomain(eo.get(k)) {
			return p, errf(eo.p(k), "domains here are %s", notSupported)
		}
		v, err := eo.str(k, "")
		if err != nil || v == "" {
			if err != nil {
				return p, err
			}
			continue
		}
		norm, ok := quantSpellings[k][v]
		if !ok {
			return p, errf(eo.p(k), "%q: %s (supported: %v)", v, notSupported, slices.Sorted(maps.Keys(quantSpellings[k])))
		}
		*dst[k] = norm
	}
	return p, nil
}

// decodeBackendVersion accepts a version string, or in recommend a {backend: version} map
// (one version per searched backend); a map is recorded as "backend=version,..." sorted.
func decodeBackendVersion(cmd Command, eo *object) (string, error) {
	x := eo.get("backend_version")
	switch {
	case x == nil:
		return "", nil
	case x.Kind == document.KindMap && cmd == Recommend:
		var parts []string
		for _, k := range x.Keys {
			v := x.Map[k]
			if !slices.Contains(output.BackendNames(), k) {
				return "", errf(join(eo.p("backend_version"), k), "unknown backend")
			}
			if v.Kind != document.KindString || v.Str == "" {
				return "", errf(join(eo.p("backend_version"), k), "expected a non-empty string")
			}
			parts = append(parts, k+"="+v.Str)
		}
		slices.Sort(parts)
		return strings.Join(parts, ","), nil
	}
	return eo.str("backend_version", "")
}

// decodeKVTransfer reads engine.kv_transfer (contract §4.6): the P/D handoff's bytes per token
// (auto or an integer), bandwidth (absent: no transfer delay) and timing mode.
func decodeKVTransfer(eo *object) (*KVTransfer, error) {
	if !eo.has("kv_transfer") {
		return nil, nil
	}
	ko, err := newObject(eo.p("kv_transfer"), eo.get("kv_transfer"), []string{"bytes_per_token", "bandwidth_gb_per_second", "timing_mode"}, nil)
	if err != nil {
		return nil, err
	}
	kt := &KVTransfer{}
	if x := ko.get("bytes_per_token"); x != nil && !(x.Kind == document.KindString && x.Str == "auto") {
		if kt.BytesPerToken, err = intValue(ko.p("bytes_per_token"), x, 1); err != nil {
			return nil, errf(ko.p("bytes_per_token"), "expected a positive integer or \"auto\"")
		}
	}
	if kt.BandwidthGBps, err = ko.positive("bandwidth_gb_per_second", 0); err != nil {
		return nil, err
	}
	if kt.TimingMode, err = ko.enum("timing_mode", "destination_missing", "destination_missing", "full_prompt"); err != nil {
		return nil, err
	}
	return kt, nil
}

// estimatorSelection checks estimation_mode and fallback_policy (engine-wide or per role). aisim's
// performance model stands in for AISimulate's op-level estimator, which is what auto (the
// default) selects first and what op_level pins; with deny (the default) no other estimator is
// tried. Whole-forward FPM modes and allow are exit 2 naming the field.
func estimatorSelection(o *object) error {
	if x := o.get("estimation_mode"); x != nil && !(x.Kind == document.KindString && (x.Str == "auto" || x.Str == "op_level")) {
		return errf(o.p("estimation_mode"), "%s: %s (only auto or op_level: aisim models the op-level estimator)", describe(x), notSupported)
	}
	return o.defaultOnly("fallback_policy", "deny")
}
