package aisimulate

import (
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
)

// The validators of aisimulate/config/common.py: the domain models, the field validators of plain
// fields, the evaluation and optimization models, and the helpers the other modules import from it.

// engineModelControls are common.py ENGINE_MODEL_CONTROL_FIELDS.
var engineModelControls = []string{"enable_eplb", "wideep_num_slots", "moe_backend", "moe_kernel_source", "attention_backend", "gemm_quant_mode", "moe_quant_mode", "kvcache_quant_mode", "fmha_quant_mode", "comm_quant_mode"}

// ---- domains: aisimulate/config/common.py Choices, IntegerRange, NumericRange ----

// A domainField is a field that takes a recommend domain: Choices[T] and, where rangeKind is
// set, IntegerRange or NumericRange. TestDomainFieldsMatchTheSchema keeps the list equal to the
// schema's.
type domainField struct {
	path      []string
	elem      string // int, float, string, int|string: the type of a choice
	rangeKind string // "", integer, numeric
}

// domainFields lists the domain fields; the list is built once, as every check reads it.
func domainFields() []domainField { return domainFieldList }

var domainFieldList = buildDomainFields()

func buildDomainFields() []domainField {
	out := []domainField{
		{[]string{"engine", "mode"}, "string", ""},
		{[]string{"engine", "backend"}, "string", ""},
		{[]string{"engine", "afd", "a_batch_size"}, "int", "integer"},
		{[]string{"engine", "afd", "tp_a"}, "int", "integer"},
		{[]string{"engine", "afd", "f_moe_ep_size"}, "int|string", ""},
		{[]string{"engine", "afd", "num_microbatches"}, "int", "integer"},
		{[]string{"engine", "afd", "pipeline_model"}, "string", ""},
		{[]string{"engine", "workers", "encoder", "tensor"}, "int", ""},
		{[]string{"engine", "workers", "encoder", "replicas"}, "int", ""},
		{[]string{"engine", "workers", "encoder", "batch_size"}, "int", ""},
		{[]string{"traffic", "load", "concurrency"}, "int", "integer"},
		{[]string{"traffic", "load", "requests_per_second"}, "float", "numeric"},
		{[]string{"traffic", "load", "sessions_per_second"}, "float", "numeric"},
		{[]string{"traffic", "load", "fraction"}, "float", "numeric"},
		{[]string{"traffic", "load", "speedup"}, "float", "numeric"},
	}
	for _, role := range languageRoles {
		w := []string{"engine", "workers", role}
		for _, knob := range parallelKnobs {
			out = append(out, domainField{childPath(childPath(w, "parallelism"), knob), "int", "integer"})
		}
		out = append(out,
			domainField{childPath(childPath(w, "scheduler"), "max_batched_tokens"), "int", "integer"},
			domainField{childPath(childPath(w, "scheduler"), "max_sequences"), "int", "integer"},
			domainField{childPath(childPath(w, "kv_cache"), "block_size"), "int", "integer"},
			domainField{append(childPath(w, "kv_cache"), "capacity", "memory_fraction"), "float", "numeric"},
		)
	}
	// The paths are shared by every check: clipped, an append to one copies it.
	for i := range out {
		out[i].path = slices.Clip(out[i].path)
	}
	return out
}

// fieldModels runs the validators of the domain models (Choices, ranges) and the field
// validators of plain fields, the innermost validators of the document.
func (c *checker) fieldModels() {
	for _, f := range domainFields() {
		value, ok := at(c.v.doc, f.path...)
		if !ok {
			continue
		}
		if choices, ok := choicesOf(value); ok {
			c.run(f.path, func() *Problem { return choicesRule(f, choices) })
		}
		if rng, ok := rangeOf(value); ok && f.rangeKind != "" {
			c.run(f.path, func() *Problem { return rangeRule(f, rng) })
		}
	}
	c.systemsPathRules()
}

// choicesRule: aisimulate/config/common.py Choices._validate_choices: choices is a nonempty list
// of values that are unique by repr (after validation: 1 and 1.0 are the same float choice).
func choicesRule(f domainField, choices []any) *Problem {
	at := childPath(f.path, "choices")
	if len(choices) == 0 {
		return problem("choices must be a nonempty list", at...)
	}
	seen := map[string]bool{}
	for _, x := range choices {
		k := choiceKey(x, f.elem)
		if seen[k] {
			return problemf(at, "choices must contain unique values: %s appears more than once", render(x))
		}
		seen[k] = true
	}
	return nil
}

// choiceKey is what Python's repr of a validated choice compares equal on.
func choiceKey(x any, elem string) string {
	switch x := x.(type) {
	case string:
		return "s:" + x
	case json.Number:
		if elem == "float" {
			f, _ := strconv.ParseFloat(string(x), 64)
			return "f:" + strconv.FormatFloat(f, 'g', -1, 64)
		}
		if i, ok := new(big.Int).SetString(string(x), 10); ok {
			return "i:" + i.String()
		}
		return "n:" + string(x)
	}
	return fmt.Sprintf("?:%v", x)
}

// rangeRule: aisimulate/config/common.py IntegerRangeSpec._validate_bounds and
// NumericRangeSpec._validate_bounds: min <= max; an integer linear range needs a step; a log
// range needs min > 0 and takes no step.
func rangeRule(f domainField, rng map[string]any) *Problem {
	at := childPath(f.path, "range")
	lo, okLo := ratOf(rng["min"])
	hi, okHi := ratOf(rng["max"])
	if !okLo || !okHi {
		return nil
	}
	scale, _ := rng["scale"].(string)
	if scale == "" {
		scale = "linear"
	}
	hasStep := set(rng, "step")
	switch {
	case lo.Cmp(hi) > 0:
		return problemf(at, "range requires min <= max, got min %s and max %s", render(rng["min"]), render(rng["max"]))
	case f.rangeKind == "integer" && scale == "linear" && !hasStep:
		return problem("an integer linear range needs a step (or scale: log)", childPath(at, "step")...)
	case scale == "log" && lo.Sign() <= 0:
		return problemf(childPath(at, "min"), "a log range needs min > 0, got %s", render(rng["min"]))
	case scale == "log" && hasStep:
		return problem("a log range takes no step", childPath(at, "step")...)
	}
	return nil
}

// systemsPathRules: aisimulate/config/common.py _absolute_systems_path (engine.systems_path: one
// nonempty directory, not a comma-separated list) and _normalize_systems_root (every entry of
// engine.systems_paths and of a worker's timing.systems_paths is nonempty), AfterValidators of
// the field.
func (c *checker) systemsPathRules() {
	if s, ok := c.v.engine["systems_path"].(string); ok {
		p := []string{"engine", "systems_path"}
		c.run(p, func() *Problem {
			if strings.TrimSpace(s) == "" || strings.Contains(s, ",") {
				return problem("systems_path must name one nonempty local directory, not a comma-separated list", p...)
			}
			return nil
		})
	}
	roots := [][]string{{"engine", "systems_paths"}}
	for _, role := range languageRoles {
		roots = append(roots, []string{"engine", "workers", role, "timing", "systems_paths"})
	}
	for _, p := range roots {
		list, _ := atValue(c.v.doc, p...).([]any)
		for i, x := range list {
			s, ok := x.(string)
			if !ok {
				continue
			}
			ip := childPath(p, strconv.Itoa(i))
			c.run(ip, func() *Problem {
				if strings.TrimSpace(s) == "" {
					return problem("systems_paths entries must be nonempty", ip...)
				}
				return nil
			})
		}
	}
}

// ---- evaluation and optimization: aisimulate/config/common.py ----

func (c *checker) evaluationAndOptimization() {
	if set(mapOf(c.v.doc["evaluation"]), "sla") {
		c.run([]string{"evaluation", "sla"}, c.slaFormRule)
	}
	if set(c.v.optimization, "constraints") {
		c.run([]string{"optimization", "constraints"}, c.candidateConstraintsRule)
	}
	if set(c.v.optimization, "hardware") {
		c.run([]string{"optimization", "hardware"}, c.optimizationHardwareRule)
	}
	c.run([]string{"optimization"}, c.minGoodputTargetRule)
}

// slaFormRule: common.py SlaConfig._validate_form: e2e_ms excludes ttft_ms and itl_ms.
func (c *checker) slaFormRule() *Problem {
	if (set(c.v.sla, "ttft_ms") || set(c.v.sla, "itl_ms")) && set(c.v.sla, "e2e_ms") {
		return problem("e2e_ms is mutually exclusive with ttft_ms/itl_ms: bound either the whole request or its tokens", "evaluation", "sla", "e2e_ms")
	}
	return nil
}

// candidateConstraintsRule: common.py CandidateConstraints._validate_bounds.
func (c *checker) candidateConstraintsRule() *Problem {
	lo, ok := intOf(c.v.constraints["min_candidate_gpus"])
	if !ok {
		return nil
	}
	hi := int64(DefaultMaxCandidateGPUs)
	if n, ok := intOf(c.v.constraints["max_candidate_gpus"]); ok {
		hi = n
	}
	if lo > hi {
		return problemf([]string{"optimization", "constraints", "min_candidate_gpus"}, "min_candidate_gpus (%d) cannot exceed max_candidate_gpus (%d)", lo, hi)
	}
	return nil
}

// optimizationHardwareRule: common.py OptimizationConfig._validate_hardware (a field validator).
func (c *checker) optimizationHardwareRule() *Problem {
	h, _ := c.v.optimization["hardware"].(string)
	if s := strings.TrimSpace(h); s == "" || s == "auto" {
		return problemf([]string{"optimization", "hardware"}, "optimization.hardware must be a concrete nonempty system id, got %q", h)
	}
	return nil
}

// minGoodputTargetRule: common.py OptimizationConfig._validate_min_goodput.
func (c *checker) minGoodputTargetRule() *Problem {
	if set(c.v.constraints, "min_goodput_rps") && c.v.target() != output.TargetMinGPUs {
		return problemf([]string{"optimization", "constraints", "min_goodput_rps"}, "min_goodput_rps is only supported with the target min_gpus, not %s", c.v.target())
	}
	return nil
}

// activeEngineModelControl: common.py is_active_engine_model_control.
func activeEngineModelControl(name string, value any) bool {
	switch {
	case value == nil:
		return false
	case name == "enable_eplb":
		return value != false
	case name == "moe_backend":
		return value != "default"
	}
	return true
}

// requestedBackendVersion: common.py requested_backend_version.
func requestedBackendVersion(v any, backend string) string {
	switch v := v.(type) {
	case string:
		return v
	case map[string]any:
		s, _ := v[backend].(string)
		return s
	}
	return ""
}
