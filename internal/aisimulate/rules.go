package aisimulate

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
)

// This file mirrors what the real AISimulate checks in Python and the bundled JSON Schema cannot
// express: the model validators of aisimulate.config.cli.CoreRecommendationConfig and of the
// models it holds (aisimulate/config/{common,traffic,engine,cli}.py), and the checks of the CLI's
// compile step (aisimulate/recommend.py recommendation_to_sweeper and the Sweeper models it
// validates, aisimulate/sweeper/config.py), which `aisimulate recommend` runs before the search:
// a ValueError anywhere there is an exit 2, like a model error. One function per real validator
// (family); each comment names the file and function that enforce it, and each problem names the
// field path the user has to change.
//
// The rules run the way Pydantic runs the validators they mirror:
//   - bottom-up: a model's validators see only values its fields validated, so a rule runs only
//     when no problem (of the schema or of a rule) was found at or under the path of the model
//     it belongs to. That is also how rules only ever look at well-typed values and never repeat
//     what the schema reports;
//   - a model's after-validators run in order and the first that raises ends the model's
//     validation: a model contributes at most one problem (runChain);
//   - defaults and before-validators apply as in the real models (beforeValidators, and the
//     defaults the rules read: DefaultModes, DefaultBackends, concurrency 10, ...);
//   - the root validator (cli.py _validate_cross_component) runs only when everything else
//     validated, and the compile step only when the whole model did.
//
// Not mirrored: the internal validators of engine.fpm_profile (aisimulate_core/fpm_profile.py:
// FpmModelProfile, FpmDeploymentProfile, FpmResourceProfile, FpmCacheGroup) and the grouped-cache
// check of the compile step (sweeper/config.py SearchSpace._validate_grouped_cache); the schema
// checks the profile's shape only (docs/design/effective-input-validation.md).

// languageRoles are the worker roles that run the language model (the encoder pool is not one).
var languageRoles = []string{"aggregated", "prefill", "decode"}

// timingIdentityFields are TimingConfig's quantization and backend identity overrides.
var timingIdentityFields = []string{"gemm_quant_mode", "moe_quant_mode", "fmha_quant_mode", "kvcache_quant_mode", "comm_quant_mode", "attention_backend"}

// parallelKnobs are ParallelismRecommendationConfig's independent knobs (recommend.py _PARALLEL_KEYS).
var parallelKnobs = []string{"replicas", "tensor", "pipeline", "attention_data", "moe_tensor", "moe_expert"}

// engineModelControls are common.py ENGINE_MODEL_CONTROL_FIELDS.
var engineModelControls = []string{"enable_eplb", "wideep_num_slots", "moe_backend", "moe_kernel_source", "attention_backend", "gemm_quant_mode", "moe_quant_mode", "kvcache_quant_mode", "fmha_quant_mode", "comm_quant_mode"}

// beforeValidators applies the real models' mode="before" validators that change what a value
// means before it is validated, on a copy where it changes anything: TimingConfig and
// EstimatorPolicyConfig._normalize_database_mode upper-case database_mode (engine.py), so
// "hybrid" is HYBRID. (The other before-validators only add defaults or refuse; the rules read
// those where they matter.)
func beforeValidators(doc map[string]any) map[string]any {
	// upper returns m with database_mode upper-cased, a copy when that changes it.
	upper := func(m map[string]any) (map[string]any, bool) {
		s, ok := m["database_mode"].(string)
		if !ok || s == strings.ToUpper(s) {
			return m, false
		}
		out := shallowCopy(m)
		out["database_mode"] = strings.ToUpper(s)
		return out, true
	}
	engine, ok := doc["engine"].(map[string]any)
	if !ok {
		return doc
	}
	newEngine, changed := upper(engine)
	workers, _ := engine["workers"].(map[string]any)
	var newWorkers map[string]any
	for _, role := range languageRoles {
		w, _ := workers[role].(map[string]any)
		t, ok := w["timing"].(map[string]any)
		if !ok {
			continue
		}
		nt, changedTiming := upper(t)
		if !changedTiming {
			continue
		}
		if !changed {
			newEngine, changed = shallowCopy(engine), true
		}
		if newWorkers == nil {
			newWorkers = shallowCopy(workers)
			newEngine["workers"] = newWorkers
		}
		nw := shallowCopy(w)
		nw["timing"] = nt
		newWorkers[role] = nw
	}
	if !changed {
		return doc
	}
	out := shallowCopy(doc)
	out["engine"] = newEngine
	return out
}

func shallowCopy(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// checker runs the rules over one document, gating each on the validity of its model.
type checker struct {
	v  *inputView
	ps []Problem
}

// bad reports whether a problem was found at or under path.
func (c *checker) bad(path ...string) bool {
	return slices.ContainsFunc(c.ps, func(p Problem) bool {
		return len(p.Path) >= len(path) && slices.Equal(p.Path[:len(path)], path)
	})
}

// run runs one validator of the model at path when that model's fields validated.
func (c *checker) run(path []string, rule func() *Problem) {
	if c.bad(path...) {
		return
	}
	if p := rule(); p != nil {
		c.ps = append(c.ps, *p)
	}
}

// coreSections are the top-level sections of CoreRecommendationConfig; every other top-level key
// is an adapter section, which aisimulate/config/common.py split_config_sections takes out of the
// document before the model validates it (and the stack's adapters judge after it).
var coreSections = []string{"traffic", "engine", "evaluation", "execution", "optimization", "optimizer"}

// modelBad reports whether a problem was found in the part of the document the model validates
// (its core sections, or the document as a whole).
func (c *checker) modelBad() bool {
	return slices.ContainsFunc(c.ps, func(p Problem) bool { return len(p.Path) == 0 || slices.Contains(coreSections, p.Path[0]) })
}

// runChain runs the after-validators of the model at path in order, until one refuses. The root
// model (path nil) is judged on its core sections only.
func (c *checker) runChain(path []string, rules ...func() *Problem) {
	for _, rule := range rules {
		if (path == nil && c.modelBad()) || (path != nil && c.bad(path...)) {
			return
		}
		if p := rule(); p != nil {
			c.ps = append(c.ps, *p)
			return
		}
	}
}

func problem(msg string, path ...string) *Problem {
	return &Problem{Path: path, Message: msg}
}

func problemf(path []string, format string, args ...any) *Problem {
	return &Problem{Path: path, Message: fmt.Sprintf(format, args...)}
}

// crossFieldProblems returns the problems of the rules, given the schema's problems (which gate
// the rules as failed fields gate Pydantic's validators).
func crossFieldProblems(doc map[string]any, schema []Problem) []Problem {
	c := &checker{v: newInputView(doc), ps: append([]Problem(nil), schema...)}
	c.fieldModels()
	c.trafficModels()
	c.evaluationAndOptimization()
	c.engineModels()
	// aisimulate/config/cli.py CoreRecommendationConfig._validate_cross_component: the root
	// model's validator, run when every section validated.
	c.runChain(nil, c.epdRule, c.contextLengthRule, c.hardwareAutoRule, c.afdTrafficRule, c.mooncakeDeltaRule,
		c.strictSLARule, c.goodputTargetRule, c.minGPUsRule)
	// aisimulate/recommend.py recommendation_to_sweeper, run by the CLI on the validated model
	// before the search (recommend._run_recommendation).
	c.runChain(nil, c.compileAdaptersRule, c.compileAFDDomainsRule, c.compileCompanionParallelismRule, c.compilePresetContextRule,
		c.compileFpmTimingRule, c.compileParquetRule, c.compileMoeKernelSourceRule, c.compileTransferPolicyRule,
		c.compileBackendVersionRule, c.compileMinGPUsEPDRule, c.compileEPDRule)
	return c.ps[len(schema):]
}

// inputView is a recommend document with the sections the rules read.
type inputView struct {
	doc          map[string]any
	traffic      map[string]any
	source       map[string]any
	load         map[string]any
	stop         map[string]any
	engine       map[string]any
	workers      map[string]any
	optimization map[string]any
	constraints  map[string]any
	sla          map[string]any
}

func newInputView(doc map[string]any) *inputView {
	v := &inputView{doc: doc}
	v.traffic = mapOf(doc["traffic"])
	v.source = mapOf(v.traffic["source"])
	v.load = mapOf(v.traffic["load"])
	v.stop = mapOf(v.traffic["stop"])
	v.engine = mapOf(doc["engine"])
	v.workers = mapOf(v.engine["workers"])
	v.optimization = mapOf(doc["optimization"])
	v.constraints = mapOf(v.optimization["constraints"])
	v.sla = mapOf(mapOf(doc["evaluation"])["sla"])
	return v
}

// worker returns engine.workers.<role> (nil when absent or null).
func (v *inputView) worker(role string) map[string]any { return mapOf(v.workers[role]) }

// roles returns the language roles configured (present and not null), in order.
func (v *inputView) roles() []string {
	var out []string
	for _, role := range languageRoles {
		if set(v.workers, role) {
			out = append(out, role)
		}
	}
	return out
}

// modes is engine.mode as a set of modes (its default when absent).
func (v *inputView) modes() []string { return modesOf(v.engine["mode"]) }

// backends is engine.backend as a set of backends (its default when absent).
func (v *inputView) backends() []string { return backendsOf(v.engine["backend"]) }

// sourceType is traffic.source.type ("" without traffic).
func (v *inputView) sourceType() string {
	t, _ := v.source["type"].(string)
	return t
}

// loadType is traffic.load.type, default concurrency.
func (v *inputView) loadType() string {
	if t, ok := v.load["type"].(string); ok {
		return t
	}
	return "concurrency"
}

// loadField is a field of traffic.load after TrafficRecommendationLoad._default_concurrency (a
// concurrency load without the key gets concurrency 10).
func (v *inputView) loadField(name string) any {
	if name == "concurrency" && v.loadType() == "concurrency" {
		if _, ok := v.load["concurrency"]; !ok {
			return json.Number(strconv.Itoa(DefaultConcurrency))
		}
	}
	return v.load[name]
}

func (v *inputView) target() string {
	if t, ok := v.optimization["target"].(string); ok {
		return t
	}
	return DefaultTarget
}

func (v *inputView) hasSLABound() bool {
	return set(v.sla, "ttft_ms") || set(v.sla, "itl_ms") || set(v.sla, "e2e_ms")
}

// timing is a worker's TimingConfig after its validators (engine.py TimingConfig).
type timing struct {
	raw            map[string]any
	typ            string // default, fixed, polynomial
	forwardModel   string // op_level, fpm: after _validate_timing
	estimationMode string // "" for None; after _preserve_legacy_estimator_selection
	fallbackPolicy string // "" for None
}

func timingOf(worker map[string]any) timing {
	raw := mapOf(worker["timing"])
	t := timing{raw: raw, typ: "default", forwardModel: "op_level"}
	if s, ok := raw["type"].(string); ok {
		t.typ = s
	}
	if s, ok := raw["forward_model"].(string); ok {
		t.forwardModel = s
	}
	t.estimationMode, _ = raw["estimation_mode"].(string)
	t.fallbackPolicy, _ = raw["fallback_policy"].(string)
	// _preserve_legacy_estimator_selection (mode="before"): default timing that names a
	// forward_model and no estimation_mode selects the matching estimator, fallback deny.
	_, hasEstimation := raw["estimation_mode"]
	if _, hasForward := raw["forward_model"]; t.typ == "default" && hasForward && !hasEstimation {
		if legacy := map[string]string{"op_level": "op_level", "fpm": "fpm_interpolation"}[t.forwardModel]; legacy != "" {
			t.estimationMode = legacy
			if !set(raw, "fallback_policy") {
				t.fallbackPolicy = "deny"
			}
		}
	}
	// _validate_timing: the estimation mode decides the forward model.
	switch t.estimationMode {
	case "fpm_interpolation":
		t.forwardModel = "fpm"
	case "op_level":
		t.forwardModel = "op_level"
	}
	return t
}

// estimatorSettingSet reports whether a timing block sets one of the estimator settings
// (estimation_mode, fallback_policy, estimator_config, systems_paths, database_mode,
// transfer_policy) after its validators.
func (t timing) estimatorSettingSet() bool {
	return t.estimationMode != "" || t.fallbackPolicy != "" || set(t.raw, "estimator_config") ||
		set(t.raw, "systems_paths") || set(t.raw, "database_mode") || set(t.raw, "transfer_policy")
}

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

// ---- traffic: aisimulate/config/traffic.py ----

func (c *checker) trafficModels() {
	if c.v.traffic == nil {
		return
	}
	src := []string{"traffic", "source"}
	switch c.v.sourceType() {
	case "synthetic":
		c.run(src, c.syntheticSourceRule)
	case "synthetic-session":
		c.run(childPath(src, "session"), c.sessionShapeRule)
	case "trace":
		c.run(childPath(src, "paths"), c.tracePathsRule)
		c.run(src, c.tracePathCountRule)
	}
	load := []string{"traffic", "load"}
	if set(c.v.load, "agentic_profile") {
		c.run(childPath(load, "agentic_profile"), c.agenticProfileRule)
	}
	c.runChain(load, c.loadFieldsRule, c.loadRangeRule)
	c.run([]string{"traffic"}, c.sourceLoadStopRule)
}

// syntheticSourceRule: traffic.py SyntheticSource._validate_cached_prefix.
func (c *checker) syntheticSourceRule() *Problem {
	cached, ok := intOf(c.v.source["cached_prefix_tokens"])
	if !ok {
		return nil
	}
	input := int64(DefaultInputTokens)
	if n, ok := intOf(c.v.source["input_tokens"]); ok {
		input = n
	}
	if cached > input {
		return problemf([]string{"traffic", "source", "cached_prefix_tokens"}, "cached_prefix_tokens (%d) cannot exceed input_tokens (%d)", cached, input)
	}
	return nil
}

// sessionShapeRule: traffic.py SessionShape._validate_prefix_groups.
func (c *checker) sessionShapeRule() *Problem {
	session := mapOf(c.v.source["session"])
	ratio, _ := numberOf(session["shared_prefix_ratio"])
	groups, _ := intOf(session["prefix_groups"])
	if ratio > 0 && groups == 0 {
		return problem("prefix_groups must be positive when shared_prefix_ratio is positive", "traffic", "source", "session", "prefix_groups")
	}
	return nil
}

// tracePathsRule: traffic.py TraceSource._validate_paths (a field validator).
func (c *checker) tracePathsRule() *Problem {
	paths, _ := c.v.source["paths"].([]any)
	if len(paths) == 0 || slices.Contains(paths, any("")) {
		return problem("trace paths must contain at least one nonempty path", "traffic", "source", "paths")
	}
	return nil
}

// tracePathCountRule: traffic.py TraceSource._validate_path_count.
func (c *checker) tracePathCountRule() *Problem {
	format := c.traceFormat()
	paths, _ := c.v.source["paths"].([]any)
	if format != "dynamo" && len(paths) != 1 {
		return problemf([]string{"traffic", "source", "paths"}, "trace format %s requires exactly one path, got %d", format, len(paths))
	}
	if set(c.v.source, "nested_timestamp_basis") && format != "weka" {
		return problem("nested_timestamp_basis is only valid for trace format weka", "traffic", "source", "nested_timestamp_basis")
	}
	return nil
}

func (c *checker) traceFormat() string {
	if f, ok := c.v.source["format"].(string); ok {
		return f
	}
	return "mooncake"
}

// agenticProfileRule: traffic.py AgenticProfileOptions._validate_millisecond_deadlines.
func (c *checker) agenticProfileRule() *Problem {
	profile := mapOf(c.v.load["agentic_profile"])
	value := func(name string, def float64) float64 {
		if f, ok := numberOf(profile[name]); ok {
			return f
		}
		return def
	}
	duration, grace, drain := value("duration_seconds", 3600), value("response_grace_seconds", 30), value("cancel_drain_seconds", 10)
	values := []float64{duration, grace, drain, value("tree_idle_cap_seconds", 300), value("global_idle_cap_seconds", 10)}
	overflow := math.IsInf((duration+grace+drain)*1000, 0)
	for _, x := range values {
		overflow = overflow || math.IsInf(x*1000, 0)
	}
	if overflow {
		return problem("agentic_profile deadlines overflow in milliseconds", "traffic", "load", "agentic_profile")
	}
	return nil
}

// loadFieldsRule: traffic.py TrafficRecommendationLoad._default_concurrency (mode="before": a
// concurrency load without the key has concurrency 10) and _validate_fields_for_type, which calls
// _validate_load_fields: a load type accepts only its own fields and requires concurrency
// (concurrency) or fraction (kv_capacity_fraction).
func (c *checker) loadFieldsRule() *Problem {
	typ := c.v.loadType()
	var used []string
	for _, name := range []string{"concurrency", "requests_per_second", "sessions_per_second", "seed", "fraction", "speedup", "agentic_lanes", "agentic_snapshot", "agentic_profile"} {
		if c.v.loadField(name) != nil {
			used = append(used, name)
		}
	}
	if b, _ := c.v.load["agentic_warmup"].(bool); b {
		used = append(used, "agentic_warmup")
	}
	allowed := map[string][]string{
		"concurrency":          {"concurrency"},
		"poisson":              {"requests_per_second", "sessions_per_second", "seed"},
		"constant_rate":        {"requests_per_second", "sessions_per_second"},
		"kv_capacity_fraction": {"fraction"},
		"trace_timestamps":     {"speedup", "agentic_lanes", "agentic_snapshot", "agentic_warmup", "agentic_profile"},
	}[typ]
	var unexpected []string
	for _, name := range used {
		if !slices.Contains(allowed, name) {
			unexpected = append(unexpected, name)
		}
	}
	slices.Sort(unexpected)
	if len(unexpected) > 0 {
		return problemf([]string{"traffic", "load", unexpected[0]}, "%s belongs to another type of load: traffic.load.type %s takes only %s", strings.Join(unexpected, ", "), typ, strings.Join(allowed, ", "))
	}
	required := map[string]string{"concurrency": "concurrency", "kv_capacity_fraction": "fraction"}[typ]
	if required != "" && c.v.loadField(required) == nil {
		return problemf([]string{"traffic", "load", required}, "traffic.load.type %s requires %s", typ, required)
	}
	return nil
}

// loadRangeRule: traffic.py TrafficRecommendationLoad._validate_fields_for_type: a load range
// needs min > 0.
func (c *checker) loadRangeRule() *Problem {
	for _, name := range []string{"concurrency", "requests_per_second", "sessions_per_second", "fraction", "speedup"} {
		rng, ok := rangeOf(c.v.load[name])
		if !ok {
			continue
		}
		if lo, ok := ratOf(rng["min"]); ok && lo.Sign() <= 0 {
			return problemf([]string{"traffic", "load", name, "range", "min"}, "traffic.load.%s range requires min > 0", name)
		}
	}
	return nil
}

// sourceLoadStopRule: traffic.py _TrafficConfigBase._validate_source_load_stop (called by
// TrafficRecommendationConfig._validate_traffic): the agentic load options, the loads and stops a
// trace takes, and for synthetic sources the rate unit of the source and exactly one stop count
// of its unit.
func (c *checker) sourceLoadStopRule() *Problem {
	load, stop := c.v.load, c.v.stop
	typ := c.v.loadType()
	hasStop := set(c.v.traffic, "stop")
	stopSet := func(name string) bool { return hasStop && set(stop, name) }
	if set(load, "agentic_profile") {
		if !set(load, "agentic_snapshot") {
			return problem("agentic_profile requires agentic_snapshot", "traffic", "load", "agentic_snapshot")
		}
		if stopSet("max_virtual_time_seconds") {
			return problem("agentic_profile cannot be combined with max_virtual_time_seconds", "traffic", "stop", "max_virtual_time_seconds")
		}
	}
	if b, _ := load["agentic_warmup"].(bool); b && !set(load, "agentic_snapshot") {
		return problem("agentic_warmup requires agentic_snapshot", "traffic", "load", "agentic_snapshot")
	}
	if set(load, "agentic_snapshot") && !set(load, "agentic_lanes") {
		return problem("agentic_snapshot requires positive agentic_lanes", "traffic", "load", "agentic_lanes")
	}
	counts := []string{"requests", "requests_per_load_unit", "sessions", "sessions_per_load_unit"}
	if c.v.sourceType() == "trace" {
		format := c.traceFormat()
		if typ != "trace_timestamps" && typ != "concurrency" {
			return problemf([]string{"traffic", "load", "type"}, "trace traffic requires a trace_timestamps or concurrency load, not %s", typ)
		}
		for _, name := range counts {
			if stopSet(name) {
				return problemf([]string{"traffic", "stop", name}, "trace traffic only accepts the stop max_virtual_time_seconds, not %s", name)
			}
		}
		agentic := format == "agentic_mooncake" || format == "weka"
		if agentic && typ != "trace_timestamps" {
			return problemf([]string{"traffic", "load", "type"}, "trace format %s requires a trace_timestamps load", format)
		}
		if format == "applied_compute_agentic" && typ != "concurrency" {
			return problem("trace format applied_compute_agentic requires a concurrency load", "traffic", "load", "type")
		}
		if agentic && stopSet("max_virtual_time_seconds") {
			return problemf([]string{"traffic", "stop", "max_virtual_time_seconds"}, "trace format %s does not support max_virtual_time_seconds", format)
		}
		if set(load, "agentic_lanes") && !agentic && format != "dynamo" {
			return problem("agentic_lanes requires a weka, agentic_mooncake or agentic dynamo trace", "traffic", "load", "agentic_lanes")
		}
		return nil
	}
	if typ == "trace_timestamps" {
		return problem("synthetic traffic does not accept a trace_timestamps load", "traffic", "load", "type")
	}
	if set(load, "agentic_lanes") {
		return problem("synthetic traffic does not accept agentic_lanes", "traffic", "load", "agentic_lanes")
	}
	requests := c.v.sourceType() == "synthetic"
	unit, wrong, stopUnit := "requests_per_second", "sessions_per_second", "requests"
	if !requests {
		unit, wrong, stopUnit = "sessions_per_second", "requests_per_second", "sessions"
	}
	if (typ == "poisson" || typ == "constant_rate") && !set(load, unit) {
		return problemf([]string{"traffic", "load", unit}, "%s %s traffic requires %s", typ, c.v.sourceType(), unit)
	}
	if set(load, wrong) {
		return problemf([]string{"traffic", "load", wrong}, "%s traffic gives its rate as %s, not %s", c.v.sourceType(), unit, wrong)
	}
	if !hasStop {
		return problemf([]string{"traffic", "stop"}, "synthetic traffic requires a stop condition: %s or %s_per_load_unit", stopUnit, stopUnit)
	}
	if stopSet("max_virtual_time_seconds") {
		return problem("max_virtual_time_seconds is trace-only", "traffic", "stop", "max_virtual_time_seconds")
	}
	for _, name := range counts {
		if stopSet(name) && !strings.HasPrefix(name, stopUnit) {
			return problemf([]string{"traffic", "stop", name}, "%s traffic stops by %s or %s_per_load_unit, not %s", c.v.sourceType(), stopUnit, stopUnit, name)
		}
	}
	var given []string
	for _, name := range counts {
		if stopSet(name) {
			given = append(given, name)
		}
	}
	switch len(given) {
	case 0:
		return problemf([]string{"traffic", "stop"}, "%s traffic requires a stop count: %s or %s_per_load_unit", c.v.sourceType(), stopUnit, stopUnit)
	case 1:
		return nil
	}
	return problemf([]string{"traffic", "stop"}, "exactly one stop count is required, got %s", strings.Join(given, " and "))
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

// ---- engine: aisimulate/config/engine.py ----

func (c *checker) engineModels() {
	if c.v.engine == nil {
		return
	}
	for _, role := range languageRoles {
		w := c.v.worker(role)
		if w == nil {
			continue
		}
		wp := []string{"engine", "workers", role}
		if set(w, "kv_cache") && set(mapOf(w["kv_cache"]), "capacity") {
			c.run(append(childPath(wp, "kv_cache"), "capacity"), func() *Problem { return c.kvCapacityRule(role) })
		}
		if set(w, "timing") {
			c.run(childPath(wp, "timing"), func() *Problem { return c.timingRule(role) })
		}
		if par, ok := w["parallelism"].(map[string]any); ok {
			// mode="before": runs on the raw mapping, before its fields are validated.
			if p := presetEntriesRule(role, par); p != nil {
				c.ps = append(c.ps, *p)
			}
			c.run(childPath(wp, "parallelism"), func() *Problem { return presetRule(role, par) })
		}
		c.run(wp, func() *Problem { return c.timingIdentityRule(role) })
	}
	if set(c.v.engine, "speculation") {
		c.run([]string{"engine", "speculation"}, c.speculationRatesRule)
	}
	for _, name := range []string{"model", "hardware"} {
		if s, ok := c.v.engine[name].(string); ok {
			p := []string{"engine", name}
			c.run(p, func() *Problem {
				// EngineRecommendationConfig._validate_nonempty (a field validator).
				if s == "" {
					return problem("value must be nonempty", p...)
				}
				return nil
			})
		}
	}
	// The after-validators of EngineRecommendationConfig, its base EstimatorPolicyConfig's first.
	c.runChain([]string{"engine"},
		c.engineControlsRule, c.migrateSystemsPathRule, c.estimatorPoliciesRule,
		// EngineRecommendationConfig._validate_roles, in its order:
		c.fpmProfileRule, c.aggregatedContextLengthRule, c.workerHardwareRule, c.afdModeRule,
		c.recommendationAFDRule, c.afdSectionRule, c.workerRolesRule, c.backendVersionKeysRule,
		c.hostOffloadRule, c.speculationRule, c.blockSizeRule)
}

// kvCapacityRule: engine.py KvCapacityRecommendationConfig._validate_capacity.
func (c *checker) kvCapacityRule(role string) *Problem {
	capacity := mapOf(mapOf(c.v.worker(role)["kv_cache"])["capacity"])
	p := []string{"engine", "workers", role, "kv_cache", "capacity"}
	if rng, ok := rangeOf(capacity["memory_fraction"]); ok {
		lo, _ := ratOf(rng["min"])
		hi, _ := ratOf(rng["max"])
		if lo != nil && hi != nil && (lo.Sign() <= 0 || hi.Cmp(big.NewRat(1, 1)) > 0) {
			return problem("memory_fraction range must stay within (0, 1]", append(p, "memory_fraction", "range")...)
		}
	}
	typ, _ := capacity["type"].(string)
	if typ == "fixed" {
		if !set(capacity, "blocks") {
			return problem("fixed KV capacity requires blocks", childPath(p, "blocks")...)
		}
		if set(capacity, "memory_fraction") {
			return problem("fixed KV capacity rejects memory_fraction", childPath(p, "memory_fraction")...)
		}
	} else if set(capacity, "blocks") {
		return problem("default KV capacity rejects blocks (blocks needs type: fixed)", childPath(p, "blocks")...)
	}
	return nil
}

// timingRule: engine.py TimingConfig._preserve_legacy_estimator_selection (mode="before") and
// TimingConfig._validate_timing.
func (c *checker) timingRule(role string) *Problem {
	t := timingOf(c.v.worker(role))
	p := []string{"engine", "workers", role, "timing"}
	if t.typ != "default" {
		for _, name := range timingIdentityFields {
			if set(t.raw, name) {
				return problemf(childPath(p, name), "quantization and backend identity require default timing, not %s", t.typ)
			}
		}
	}
	if t.typ == "fixed" {
		for _, name := range []string{"prefill_ms", "decode_ms"} {
			if !set(t.raw, name) {
				return problem("fixed timing requires prefill_ms and decode_ms", childPath(p, name)...)
			}
		}
	} else {
		for _, name := range []string{"prefill_ms", "decode_ms"} {
			if set(t.raw, name) {
				return problemf(childPath(p, name), "%s timing rejects fixed timing values (%s needs type: fixed)", t.typ, name)
			}
		}
	}
	if t.typ != "default" && t.forwardModel != "op_level" {
		field := "estimation_mode"
		if set(t.raw, "forward_model") && !set(t.raw, "estimation_mode") {
			field = "forward_model"
		}
		return problemf(childPath(p, field), "%s timing rejects forward_model %s: the forward model applies to default timing only", t.typ, t.forwardModel)
	}
	if path, ok := t.raw["fpm_parquet_path"].(string); ok {
		if path == "" {
			return problem("fpm_parquet_path cannot be empty", childPath(p, "fpm_parquet_path")...)
		}
		if t.typ != "default" || t.forwardModel != "fpm" {
			return problem("fpm_parquet_path requires default timing with forward_model fpm (estimation_mode fpm_interpolation)", childPath(p, "fpm_parquet_path")...)
		}
	}
	return nil
}

// timingIdentityRule: engine.py WorkerRecommendationConfig._reject_timing_identity_overrides.
func (c *checker) timingIdentityRule(role string) *Problem {
	t := mapOf(c.v.worker(role)["timing"])
	for _, name := range timingIdentityFields {
		if set(t, name) {
			return problem("explicit timing quantization/backend identity is prediction-only; recommend does not take it (set it on engine instead)", "engine", "workers", role, "timing", name)
		}
	}
	return nil
}

// presetEntriesRule: engine.py ParallelismRecommendationConfig._validate_custom_preset_entries
// (mode="before"): a preset list is nonempty and every entry names all six knobs. Entries that are
// not mappings and unknown knobs are the schema's to report.
func presetEntriesRule(role string, par map[string]any) *Problem {
	preset, ok := par["preset"].([]any)
	if !ok {
		return nil
	}
	p := []string{"engine", "workers", role, "parallelism", "preset"}
	if len(preset) == 0 {
		return problem("parallelism preset list must be nonempty", p...)
	}
	for i, e := range preset {
		entry, ok := e.(map[string]any)
		if !ok {
			continue
		}
		var missing []string
		for _, knob := range parallelKnobs {
			if _, ok := entry[knob]; !ok {
				missing = append(missing, knob)
			}
		}
		slices.Sort(missing)
		if len(missing) > 0 {
			return problemf(childPath(p, strconv.Itoa(i)), "parallelism preset entries must cover exactly all knobs (%s); missing %s", strings.Join(parallelKnobs, ", "), strings.Join(missing, ", "))
		}
	}
	return nil
}

// presetRule: engine.py ParallelismRecommendationConfig._validate_preset: a preset mapping must be
// empty (it disables the preset like false), and a preset (default when omitted) cannot be
// combined with the independent knobs.
func presetRule(role string, par map[string]any) *Problem {
	p := []string{"engine", "workers", role, "parallelism", "preset"}
	if m, ok := par["preset"].(map[string]any); ok && len(m) > 0 {
		return problem("a parallelism preset mapping must be empty ({} disables the preset, like false)", p...)
	}
	var knobs []string
	for _, knob := range parallelKnobs {
		if set(par, knob) {
			knobs = append(knobs, knob)
		}
	}
	if len(knobs) > 0 && !presetDisabled(par) {
		return problemf(p, "parallelism cannot combine a preset (%s) with the independent knobs %s: set preset: false to search the knobs", presetName(par), strings.Join(knobs, ", "))
	}
	return nil
}

func presetName(par map[string]any) string {
	switch p := par["preset"].(type) {
	case nil:
		return "default, when omitted"
	case string:
		return p
	case []any:
		return "a list"
	}
	return render(par["preset"])
}

// speculationRatesRule: engine.py NgramSpeculationConfig._validate_rates.
func (c *checker) speculationRatesRule() *Problem {
	spec := mapOf(c.v.engine["speculation"])
	rates, _ := spec["acceptance_rates"].([]any)
	n, ok := intOf(spec["num_speculative_tokens"])
	if ok && int64(len(rates)) != n {
		return problemf([]string{"engine", "speculation", "acceptance_rates"}, "acceptance_rates must contain one conditional probability per speculative token: %d, got %d", n, len(rates))
	}
	return nil
}

// engineControlsRule: engine.py EstimatorPolicyConfig._validate_engine_controls: nextn needs
// nextn_accepted within [0, nextn]; AFD takes no enable_chunked_prefill; engine model controls
// (nextn, enable_eplb, wideep_num_slots, moe_backend, the quantization and kernel overrides) need
// default timing in every regular language role, no AFD and no encoder pool.
func (c *checker) engineControlsRule() *Problem {
	e := c.v.engine
	nextn, _ := intOf(e["nextn"])
	accepted, hasAccepted := numberOf(e["nextn_accepted"])
	if nextn != 0 && !hasAccepted {
		return problem("nextn requires an explicit nextn_accepted", "engine", "nextn_accepted")
	}
	if hasAccepted && (nextn == 0 || accepted > float64(nextn)) {
		return problemf([]string{"engine", "nextn_accepted"}, "nextn_accepted requires nextn > 0 and must be within [0, nextn] (nextn is %d)", nextn)
	}
	modes := c.v.modes()
	if slices.Contains(modes, "afd") && set(e, "enable_chunked_prefill") {
		return problem("enable_chunked_prefill is unsupported for AFD", "engine", "enable_chunked_prefill")
	}
	active := ""
	if nextn != 0 {
		active = "nextn"
	}
	for _, name := range engineModelControls {
		if active == "" && activeEngineModelControl(name, e[name]) {
			active = name
		}
	}
	if active == "" {
		return nil
	}
	if slices.Contains(modes, "afd") || set(c.v.workers, "encoder") {
		return problemf([]string{"engine", active}, "engine model controls (%s) are not supported with AFD or an analytical encoder pool", active)
	}
	for _, role := range c.v.roles() {
		if t := timingOf(c.v.worker(role)); t.typ != "default" {
			return problemf([]string{"engine", "workers", role, "timing", "type"}, "engine model controls (engine.%s) require default timing in every regular language role", active)
		}
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

// migrateSystemsPathRule: engine.py EstimatorPolicyConfig._migrate_systems_path: the legacy
// systems_path and systems_paths must name the same one root.
func (c *checker) migrateSystemsPathRule() *Problem {
	single, ok := c.v.engine["systems_path"].(string)
	if !ok {
		return nil
	}
	list, ok := c.v.engine["systems_paths"].([]any)
	if !ok {
		return nil
	}
	if len(list) != 1 || systemsRoot(list[0]) != absoluteSystemsPath(single) {
		return problem("systems_path conflicts with systems_paths: give only systems_paths", "engine", "systems_path")
	}
	return nil
}

// absoluteSystemsPath and systemsRoot normalize like common.py _absolute_systems_path and
// _normalize_systems_root, relative to one working directory.
func absoluteSystemsPath(s string) string {
	if !strings.HasPrefix(s, "/") && !strings.HasPrefix(s, "~") {
		s = "/cwd/" + s
	}
	return path.Clean(s)
}

func systemsRoot(x any) string {
	s, _ := x.(string)
	if strings.EqualFold(s, "default") {
		return "default"
	}
	return absoluteSystemsPath(s)
}

// estimatorPoliciesRule: engine.py EstimatorPolicyConfig._supported_estimator_policies: AFD and
// the analytical encoder pool take no systems_paths and no per-role estimator settings; a
// custom estimator policy on engine (database_mode, transfer_policy, estimation_mode,
// fallback_policy, estimator_config) needs regular language workers with default timing; and
// per-role estimator settings need default timing.
func (c *checker) estimatorPoliciesRule() *Problem {
	e := c.v.engine
	modes := c.v.modes()
	afd := slices.Contains(modes, "afd")
	encoder := set(c.v.workers, "encoder")
	unsupported := "analytical encoder pools"
	if afd {
		unsupported = "AFD"
	}
	// After _migrate_systems_path, systems_path is the one entry of systems_paths.
	if afd || encoder {
		if set(e, "systems_path") {
			return problemf([]string{"engine", "systems_path"}, "engine.systems_path does not support %s", unsupported)
		}
		if list, ok := e["systems_paths"].([]any); ok && !(len(list) == 1 && systemsRoot(list[0]) == "default") {
			return problemf([]string{"engine", "systems_paths"}, "engine.systems_paths does not support %s", unsupported)
		}
	}
	roles := c.v.roles()
	if afd || encoder {
		for _, role := range roles {
			t := timingOf(c.v.worker(role))
			if set(t.raw, "estimator_config") && len(mapOf(t.raw["estimator_config"])) > 0 || set(t.raw, "systems_paths") ||
				set(t.raw, "database_mode") || set(t.raw, "transfer_policy") || t.fallbackPolicy == "allow" ||
				(t.estimationMode != "" && t.estimationMode != "op_level" && t.estimationMode != "fpm_interpolation") {
				return problemf([]string{"engine", "workers", role, "timing"}, "estimator policies are not supported with %s: they need regular language workers with default timing", unsupported)
			}
		}
	}
	custom := ""
	for _, f := range []struct {
		name   string
		custom bool
	}{
		{"database_mode", e["database_mode"] != nil && e["database_mode"] != "SILICON"},
		{"transfer_policy", set(e, "transfer_policy")},
		{"estimation_mode", e["estimation_mode"] != nil && e["estimation_mode"] != "auto"},
		{"fallback_policy", e["fallback_policy"] != nil && e["fallback_policy"] != "deny"},
		{"estimator_config", len(mapOf(e["estimator_config"])) > 0},
	} {
		if f.custom && custom == "" {
			custom = f.name
		}
	}
	if custom != "" {
		if afd || encoder {
			return problemf([]string{"engine", custom}, "estimator policies (engine.%s) are not supported with %s", custom, unsupported)
		}
		for _, role := range roles {
			if timingOf(c.v.worker(role)).typ != "default" {
				return problemf([]string{"engine", "workers", role, "timing", "type"}, "estimator policies (engine.%s) require default timing in every role", custom)
			}
		}
	}
	for _, role := range roles {
		if t := timingOf(c.v.worker(role)); t.typ != "default" && t.estimatorSettingSet() {
			return problemf([]string{"engine", "workers", role, "timing", "type"}, "estimator settings of a worker's timing require default timing, not %s", t.typ)
		}
	}
	return nil
}

// fpmProfileRule: engine.py _validate_fpm_profile: an FPM profile is for engine.model, vLLM
// only, aggregated/disaggregated decoder workers without AFD or encoder, a literal
// backend_version for vllm that one of its deployments has, and a context length within its own.
func (c *checker) fpmProfileRule() *Problem {
	profile, ok := c.v.engine["fpm_profile"].(map[string]any)
	if !ok {
		return nil
	}
	if profile["model"] != c.v.engine["model"] {
		return problem("engine.model must match engine.fpm_profile.model", "engine", "fpm_profile", "model")
	}
	if b := c.v.backends(); len(b) != 1 || b[0] != output.BackendVLLM {
		return problem("FPM profiles support only the backend vllm", "engine", "backend")
	}
	if slices.Contains(c.v.modes(), "afd") {
		return problem("FPM profiles do not support AFD", "engine", "mode")
	}
	if set(c.v.workers, "encoder") {
		return problem("FPM profiles do not support an analytical encoder pool", "engine", "workers", "encoder")
	}
	version := requestedBackendVersion(c.v.engine["backend_version"], output.BackendVLLM)
	switch strings.TrimSpace(version) {
	case "", "current", "previous", "next":
		return problem("engine.fpm_profile requires a literal engine.backend_version for vllm", "engine", "backend_version")
	}
	version = strings.TrimSpace(version)
	deployments, _ := profile["deployments"].([]any)
	if !slices.ContainsFunc(deployments, func(d any) bool { return mapOf(d)["backend_version"] == version }) {
		return problemf([]string{"engine", "backend_version"}, "engine.backend_version %s does not match any FPM profile deployment", version)
	}
	if n, ok := intOf(c.v.engine["context_length"]); ok {
		if limit, ok := intOf(profile["context_length"]); ok && n > limit {
			return problemf([]string{"engine", "context_length"}, "engine.context_length (%d) exceeds the FPM profile context_length (%d)", n, limit)
		}
	}
	return nil
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

// aggregatedContextLengthRule: engine.py EngineRecommendationConfig._validate_roles: the
// aggregated worker's context length is engine.context_length.
func (c *checker) aggregatedContextLengthRule() *Problem {
	if set(c.v.worker("aggregated"), "context_length") {
		return problem("workers.aggregated.context_length must be set as engine.context_length", "engine", "workers", "aggregated", "context_length")
	}
	return nil
}

// workerHardwareRule: engine.py _validate_worker_hardware: only prefill and decode workers of a
// mode domain with disaggregated (and without AFD) override engine.hardware, with one concrete
// hardware id (not auto, no surrounding whitespace).
func (c *checker) workerHardwareRule() *Problem {
	modes := c.v.modes()
	for _, role := range languageRoles {
		h, ok := c.v.worker(role)["hardware"].(string)
		if !ok {
			continue
		}
		p := []string{"engine", "workers", role, "hardware"}
		if role == "aggregated" || !slices.Contains(modes, "disaggregated") || slices.Contains(modes, "afd") {
			return problem("worker hardware overrides require prefill/decode workers in disaggregated mode", p...)
		}
		if s := strings.TrimSpace(h); s == "" || s == "auto" || s != h {
			return problemf(p, "workers.%s.hardware must be one concrete nonempty hardware id without surrounding whitespace, got %q", role, h)
		}
	}
	return nil
}

// afdModeRule: engine.py EngineRecommendationConfig._validate_roles: afd is a mode of its own.
func (c *checker) afdModeRule() *Problem {
	modes := c.v.modes()
	if slices.Contains(modes, "afd") && len(modes) != 1 {
		return problem("AFD recommendation mode cannot be mixed with aggregated/disaggregated modes", "engine", "mode")
	}
	return nil
}

// recommendationAFDRule: engine.py _validate_recommendation_afd (mode afd): no encoder pool,
// engine.afd required, no kv_transfer; AFD combined with P/D is phase prefill or decode with at
// most the opposite companion worker; pure AFD is phase both without regular workers.
func (c *checker) recommendationAFDRule() *Problem {
	if !slices.Equal(c.v.modes(), []string{"afd"}) {
		return nil
	}
	if set(c.v.workers, "encoder") {
		return problem("AFD does not support an analytical EPD encoder pool", "engine", "workers", "encoder")
	}
	afd, ok := c.v.engine["afd"].(map[string]any)
	if !ok {
		return problem("engine.mode afd requires engine.afd", "engine", "afd")
	}
	if set(c.v.engine, "kv_transfer") {
		return problem("AFD mode rejects kv_transfer; A/F transfers are modeled by engine.afd", "engine", "kv_transfer")
	}
	phase, _ := afd["phase"].(string)
	roles := c.v.roles()
	if combined, _ := afd["combined_with_pd"].(bool); combined {
		if phase == "both" {
			return problem("AFD+P/D (combined_with_pd: true) requires phase prefill or decode", "engine", "afd", "phase")
		}
		companion := "prefill"
		if phase == "prefill" {
			companion = "decode"
		}
		for _, role := range roles {
			if role != companion {
				return problemf([]string{"engine", "workers", role}, "AFD phase %s with combined_with_pd accepts only an optional workers.%s", phase, companion)
			}
		}
		return nil
	}
	if phase != "both" {
		return problem("pure AFD recommendation requires phase both; use combined_with_pd: true for one phase", "engine", "afd", "phase")
	}
	if len(roles) > 0 {
		return problem("pure AFD recommendation rejects regular aggregated/prefill/decode workers", "engine", "workers", roles[0])
	}
	return nil
}

// afdSectionRule: engine.py EngineRecommendationConfig._validate_roles: engine.afd needs mode afd.
func (c *checker) afdSectionRule() *Problem {
	if !slices.Contains(c.v.modes(), "afd") && set(c.v.engine, "afd") {
		return problem("engine.afd requires engine.mode: afd", "engine", "afd")
	}
	return nil
}

// workerRolesRule: engine.py _validate_worker_roles: every mode of the engine.mode domain has its
// workers (aggregated: workers.aggregated; disaggregated: workers.prefill and workers.decode; the
// default domain is both), and a single mode rejects the other's workers and, aggregated,
// kv_transfer.
func (c *checker) workerRolesRule() *Problem {
	modes := c.v.modes()
	if slices.Contains(modes, "afd") {
		return nil
	}
	domain := "engine.mode"
	if !set(c.v.engine, "mode") {
		domain = "the default engine.mode domain (aggregated, disaggregated)"
	}
	if slices.Contains(modes, "aggregated") && !set(c.v.workers, "aggregated") {
		return problemf([]string{"engine", "workers", "aggregated"}, "%s includes aggregated mode, which needs workers.aggregated ({} takes the defaults)", domain)
	}
	if slices.Contains(modes, "disaggregated") {
		for _, role := range []string{"prefill", "decode"} {
			if !set(c.v.workers, role) {
				return problemf([]string{"engine", "workers", role}, "%s includes disaggregated mode, which needs workers.prefill and workers.decode ({} takes the defaults)", domain)
			}
		}
	}
	if slices.Equal(modes, []string{"aggregated"}) {
		for _, role := range []string{"prefill", "decode"} {
			if set(c.v.workers, role) {
				return problem("aggregated mode rejects prefill/decode workers", "engine", "workers", role)
			}
		}
		if set(c.v.engine, "kv_transfer") {
			return problem("aggregated mode rejects kv_transfer", "engine", "kv_transfer")
		}
	}
	if slices.Equal(modes, []string{"disaggregated"}) && set(c.v.workers, "aggregated") {
		return problem("disaggregated mode rejects aggregated workers", "engine", "workers", "aggregated")
	}
	return nil
}

// backendVersionKeysRule: engine.py EngineRecommendationConfig._validate_roles: a backend_version
// mapping names only backends of engine.backend.
func (c *checker) backendVersionKeysRule() *Problem {
	versions, ok := c.v.engine["backend_version"].(map[string]any)
	if !ok {
		return nil
	}
	var unknown []string
	for b := range versions {
		if !slices.Contains(c.v.backends(), b) {
			unknown = append(unknown, b)
		}
	}
	slices.Sort(unknown)
	if len(unknown) > 0 {
		return problemf([]string{"engine", "backend_version", unknown[0]}, "backend_version names backends engine.backend does not search: %s", strings.Join(unknown, ", "))
	}
	return nil
}

// hostOffloadRule: engine.py _validate_recommendation_host_offload: host_offload (on any
// language worker) needs the concrete mode aggregated or disaggregated, the concrete backend vllm
// and prefix caching; cluster_shared host_offload on both prefill and decode is one pool whose
// layout (explicit integer tensor and pipeline with preset false, fixed KV block geometry, the
// same on both roles), timing kind and pool values must agree.
func (c *checker) hostOffloadRule() *Problem {
	var configured []string
	for _, role := range languageRoles {
		if set(mapOf(c.v.worker(role)["kv_cache"]), "host_offload") {
			configured = append(configured, role)
		}
	}
	if len(configured) == 0 {
		return nil
	}
	if mode, _ := c.v.engine["mode"].(string); mode != "aggregated" && mode != "disaggregated" {
		return problem("host_offload recommendation requires the concrete mode aggregated or disaggregated (not a domain, not omitted)", "engine", "mode")
	}
	if backend, _ := c.v.engine["backend"].(string); backend != output.BackendVLLM {
		return problem("host_offload recommendation requires the concrete backend vllm (not a domain, not omitted)", "engine", "backend")
	}
	for _, role := range configured {
		if pc, ok := mapOf(c.v.worker(role)["kv_cache"])["prefix_caching"].(bool); ok && !pc {
			return problem("host_offload requires prefix_caching: true", "engine", "workers", role, "kv_cache", "prefix_caching")
		}
	}
	var shared []string
	for _, role := range configured {
		if mapOf(mapOf(c.v.worker(role)["kv_cache"])["host_offload"])["scope"] == "cluster_shared" {
			shared = append(shared, role)
		}
	}
	if len(shared) != 2 {
		return nil
	}
	for _, role := range shared {
		par := mapOf(c.v.worker(role)["parallelism"])
		_, tensorInt := intOf(par["tensor"])
		_, pipelineInt := intOf(par["pipeline"])
		if !presetDisabled(par) || !tensorInt || !pipelineInt {
			return problem("cluster_shared host_offload on both roles requires explicit integer tensor and pipeline with parallelism.preset: false", "engine", "workers", role, "parallelism")
		}
	}
	for _, role := range shared {
		kv := mapOf(c.v.worker(role)["kv_cache"])
		if _, isDomain := kv["block_size"].(map[string]any); isDomain {
			return problem("cluster_shared host_offload on both roles requires a fixed KV block_size", "engine", "workers", role, "kv_cache", "block_size")
		}
	}
	prefill, decode := c.v.worker(shared[0]), c.v.worker(shared[1])
	layout := func(w map[string]any) string {
		par, kv := mapOf(w["parallelism"]), mapOf(w["kv_cache"])
		bpt := kv["bytes_per_token"]
		if bpt == nil {
			bpt = "auto"
		}
		return fmt.Sprint(par["tensor"], "/", par["pipeline"], "/", kv["block_size"], "/", bpt)
	}
	if layout(prefill) != layout(decode) {
		return problem("cluster_shared host_offload roles require matching tensor, pipeline and KV block geometry (block_size, bytes_per_token)", "engine", "workers", "decode")
	}
	tp, td := timingOf(prefill).typ, timingOf(decode).typ
	if (tp == "default") != (td == "default") {
		return problemf([]string{"engine", "workers", "decode", "timing", "type"}, "cluster_shared host_offload roles require default timing on both roles or neither: prefill %s, decode %s", tp, td)
	}
	for _, field := range []struct {
		name string
		def  float64
	}{{"num_host_blocks", 0}, {"shared_d2h_bandwidth_gbps", 80}, {"shared_h2d_bandwidth_gbps", 80}} {
		value := func(w map[string]any) float64 {
			if f, ok := numberOf(mapOf(mapOf(w["kv_cache"])["host_offload"])[field.name]); ok {
				return f
			}
			return field.def
		}
		if value(prefill) != value(decode) {
			return problemf([]string{"engine", "workers", "decode", "kv_cache", "host_offload", field.name}, "cluster_shared host_offload roles require matching host_offload.%s: prefill %g, decode %g", field.name, value(prefill), value(decode))
		}
	}
	return nil
}

// speculationRule: engine.py _validate_speculation: ngram speculation excludes nextn, needs the
// backend vllm only, aggregated/disaggregated language workers (no AFD, no encoder pool), no
// host_offload and op-level timing on every worker.
func (c *checker) speculationRule() *Problem {
	if !set(c.v.engine, "speculation") {
		return nil
	}
	at := []string{"engine", "speculation"}
	if n, _ := intOf(c.v.engine["nextn"]); n != 0 || set(c.v.engine, "nextn_accepted") {
		return problem("speculation cannot be combined with nextn or nextn_accepted", at...)
	}
	backends := c.v.backends()
	if slices.ContainsFunc(backends, func(b string) bool { return b != output.BackendVLLM }) {
		return problemf(at, "ngram speculation requires the backend vllm only, not %s", strings.Join(backends, ", "))
	}
	if slices.Contains(c.v.modes(), "afd") {
		return problem("ngram speculation requires aggregated/disaggregated language workers, not AFD", at...)
	}
	if set(c.v.workers, "encoder") {
		return problem("ngram speculation does not support an analytical encoder pool", at...)
	}
	for _, role := range c.v.roles() {
		w := c.v.worker(role)
		if set(mapOf(w["kv_cache"]), "host_offload") {
			return problemf(at, "ngram speculation does not support host_offload (engine.workers.%s.kv_cache.host_offload)", role)
		}
		if t := timingOf(w); t.forwardModel != "op_level" {
			return problemf(at, "ngram speculation requires op-level timing (engine.workers.%s.timing selects the FPM forward model)", role)
		}
	}
	return nil
}

// blockSizeRule: engine.py _validate_backend_block_sizes: unless the backend domain has sglang,
// the KV block size domain of every worker a mode uses has a value >= 2 (vLLM and TensorRT-LLM).
func (c *checker) blockSizeRule() *Problem {
	if slices.Contains(c.v.backends(), output.BackendSGLang) {
		return nil
	}
	modes := c.v.modes()
	var roles []string
	if slices.Contains(modes, "aggregated") {
		roles = append(roles, "aggregated")
	}
	if slices.Contains(modes, "disaggregated") {
		roles = append(roles, "prefill", "decode")
	}
	for _, role := range roles {
		value := mapOf(c.v.worker(role)["kv_cache"])["block_size"]
		var maximum int64
		switch {
		case value == nil:
			continue
		case isChoicesValue(value):
			choices, _ := choicesOf(value)
			for _, x := range choices {
				if n, ok := intOf(x); ok && n > maximum {
					maximum = n
				}
			}
		default:
			if rng, ok := rangeOf(value); ok {
				maximum, _ = intOf(rng["max"])
			} else {
				maximum, _ = intOf(value)
			}
		}
		if maximum < 2 {
			return problem("the backends vllm and trtllm require a KV block_size >= 2 (the domain has no such value; sglang would take 1)", "engine", "workers", role, "kv_cache", "block_size")
		}
	}
	return nil
}

// ---- the root: aisimulate/config/cli.py CoreRecommendationConfig._validate_cross_component ----

// epdRule: cli.py _validate_epd: an analytical encoder pool and traffic.source.images come
// together; the pool needs a fixed integer concurrency load, default op-level timing and static
// (startup_seconds 0) language workers.
func (c *checker) epdRule() *Problem {
	encoder := set(c.v.workers, "encoder")
	images := c.v.sourceType() == "synthetic" && set(c.v.source, "images")
	if encoder && !images {
		return problem("the analytical encoder pool (engine.workers.encoder) requires synthetic traffic with traffic.source.images", "traffic", "source", "images")
	}
	if images && !encoder {
		return problem("traffic.source.images requires an analytical encoder pool (engine.workers.encoder)", "traffic", "source", "images")
	}
	if !encoder {
		return nil
	}
	if c.v.loadType() != "concurrency" {
		return problemf([]string{"traffic", "load", "type"}, "analytical EPD requires a fixed synthetic concurrency load, not %s", c.v.loadType())
	}
	if _, ok := intOf(c.v.loadField("concurrency")); !ok {
		return problem("analytical EPD requires one fixed concurrency, not a domain", "traffic", "load", "concurrency")
	}
	for _, role := range c.v.roles() {
		w := c.v.worker(role)
		if t := timingOf(w); t.typ != "default" || t.forwardModel != "op_level" {
			return problem("analytical EPD requires default op-level language timing", "engine", "workers", role, "timing")
		}
		if s, ok := numberOf(w["startup_seconds"]); ok && s != 0 {
			return problem("analytical EPD requires static worker pools (startup_seconds 0)", "engine", "workers", role, "startup_seconds")
		}
	}
	return nil
}

// contextLengthRule: cli.py _validate_recommendation_context_lengths: with synthetic traffic
// (the default one too), prefill workers hold input_tokens + 1 and decode workers input_tokens +
// output_tokens.
func (c *checker) contextLengthRule() *Problem {
	if c.v.traffic != nil && c.v.sourceType() != "synthetic" {
		return nil
	}
	isl, osl := int64(DefaultInputTokens), int64(DefaultOutputTokens)
	if n, ok := intOf(c.v.source["input_tokens"]); ok {
		isl = n
	}
	if n, ok := intOf(c.v.source["output_tokens"]); ok {
		osl = n
	}
	for _, r := range []struct {
		role    string
		minimum int64
	}{{"prefill", isl + 1}, {"decode", isl + osl}} {
		if n, ok := intOf(c.v.worker(r.role)["context_length"]); ok && n < r.minimum {
			return problemf([]string{"engine", "workers", r.role, "context_length"}, "engine.workers.%s.context_length must be at least %d for the configured workload", r.role, r.minimum)
		}
	}
	return nil
}

// hardwareAutoRule: cli.py _validate_cross_component: engine.hardware auto needs one
// optimization.hardware.
func (c *checker) hardwareAutoRule() *Problem {
	if c.v.engine["hardware"] == "auto" && !set(c.v.optimization, "hardware") {
		return problem("engine.hardware auto requires one optimization.hardware (a concrete system id)", "optimization", "hardware")
	}
	return nil
}

// afdTrafficRule: cli.py _validate_cross_component: AFD takes fixed-length synthetic request
// traffic without cached_prefix_tokens, at an absolute load (not kv_capacity_fraction).
func (c *checker) afdTrafficRule() *Problem {
	if !slices.Contains(c.v.modes(), "afd") || c.v.traffic == nil {
		return nil
	}
	if n, _ := intOf(c.v.source["cached_prefix_tokens"]); c.v.sourceType() == "synthetic" && n != 0 {
		return problem("cached_prefix_tokens is unsupported for AFD", "traffic", "source", "cached_prefix_tokens")
	}
	if c.v.sourceType() != "synthetic" {
		return problem("AFD recommendation requires fixed-length synthetic request traffic", "traffic", "source", "type")
	}
	if c.v.loadType() == "kv_capacity_fraction" {
		return problem("AFD recommendation requires an absolute traffic load, not kv_capacity_fraction", "traffic", "load", "type")
	}
	return nil
}

// mooncakeDeltaRule: cli.py _validate_cross_component: a mooncake-delta trace needs the mode
// aggregated (no disaggregated in the domain).
func (c *checker) mooncakeDeltaRule() *Problem {
	if c.v.sourceType() == "trace" && c.traceFormat() == "mooncake-delta" && slices.Contains(c.v.modes(), "disaggregated") {
		return problem("the trace format mooncake-delta requires the mode aggregated (disaggregated is in the engine.mode domain)", "engine", "mode")
	}
	return nil
}

// strictSLARule: cli.py _validate_cross_component: strict_sla needs an SLA bound.
func (c *checker) strictSLARule() *Problem {
	if strict, _ := c.v.optimization["strict_sla"].(bool); strict && !c.v.hasSLABound() {
		return problem("optimization.strict_sla needs at least one SLA bound in evaluation.sla", "optimization", "strict_sla")
	}
	return nil
}

// goodputTargetRule: cli.py _validate_cross_component: the targets goodput, goodput_per_gpu and
// min_gpus need an SLA bound.
func (c *checker) goodputTargetRule() *Problem {
	switch c.v.target() {
	case output.TargetGoodput, output.TargetGoodputPerGPU, output.TargetMinGPUs:
		if !c.v.hasSLABound() {
			return problemf([]string{"optimization", "target"}, "optimization target %s needs at least one SLA bound in evaluation.sla", c.v.target())
		}
	}
	return nil
}

// minGPUsRule: cli.py _validate_cross_component: min_gpus needs fixed synthetic request traffic
// at one concurrency or one request rate (constant_rate, poisson); with a request rate it needs
// min_goodput_rps, at most that rate.
func (c *checker) minGPUsRule() *Problem {
	if c.v.target() != output.TargetMinGPUs {
		return nil
	}
	if c.v.traffic == nil {
		return problem("min_gpus requires fixed synthetic request-rate or concurrency traffic: set traffic", "traffic")
	}
	if c.v.sourceType() != "synthetic" {
		return problemf([]string{"traffic", "source", "type"}, "min_gpus requires fixed synthetic request traffic, not %s", c.v.sourceType())
	}
	typ := c.v.loadType()
	field := "requests_per_second"
	if typ == "concurrency" {
		field = "concurrency"
	}
	switch typ {
	case "concurrency", "constant_rate", "poisson":
	default:
		return problemf([]string{"traffic", "load", "type"}, "min_gpus requires a concurrency, constant_rate or poisson load, not %s", typ)
	}
	value, ok := numberOf(c.v.loadField(field))
	if !ok {
		return problemf([]string{"traffic", "load", field}, "min_gpus requires one fixed %s, not a domain", field)
	}
	if typ == "concurrency" {
		return nil
	}
	minimum, ok := numberOf(c.v.constraints["min_goodput_rps"])
	if !ok {
		return problem("min_gpus with request-rate traffic requires optimization.constraints.min_goodput_rps", "optimization", "constraints", "min_goodput_rps")
	}
	if minimum > value {
		return problemf([]string{"optimization", "constraints", "min_goodput_rps"}, "min_goodput_rps (%g) cannot exceed the offered request rate (%g)", minimum, value)
	}
	return nil
}

// ---- the compile step: aisimulate/recommend.py recommendation_to_sweeper ----

// adapterSections are the document's adapter sections (top-level mappings outside the core).
func (c *checker) adapterSections() []string {
	var out []string
	for k, v := range c.v.doc {
		if _, ok := v.(map[string]any); ok && !slices.Contains(coreSections, k) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// compileAdaptersRule: the analytical encoder pool and ngram speculation need --stack engine
// without adapters (recommend.py _run_recommendation), and min_gpus static engine pools without
// adapters (sweeper/config.py SmartSearchConfig._validate_min_gpus). The engine stack the operator
// runs has no adapters at all (the schema reports the section as unknown); this rule names why
// the section cannot stay with the Dynamo stack either (aisim accepts router and planner).
func (c *checker) compileAdaptersRule() *Problem {
	adapters := c.adapterSections()
	if len(adapters) == 0 {
		return nil
	}
	switch {
	case set(c.v.workers, "encoder"):
		return problem("analytical EPD (engine.workers.encoder) requires --stack engine without adapter sections", adapters[0])
	case set(c.v.engine, "speculation"):
		return problem("ngram speculation (engine.speculation) requires --stack engine without adapter sections", adapters[0])
	case c.v.target() == output.TargetMinGPUs:
		return problem("min_gpus requires static engine pools without adapter sections", adapters[0])
	}
	return nil
}

// compileAFDDomainsRule: recommend.py _afd_search_space lowers a_batch_size, num_microbatches and
// tp_a with _choices, which refuses an integer log range ("integer log ranges must be lowered as
// compact bounds").
func (c *checker) compileAFDDomainsRule() *Problem {
	if !slices.Equal(c.v.modes(), []string{"afd"}) {
		return nil
	}
	afd := mapOf(c.v.engine["afd"])
	for _, name := range []string{"a_batch_size", "num_microbatches", "tp_a"} {
		if rng, ok := rangeOf(afd[name]); ok && rng["scale"] == "log" {
			return problemf([]string{"engine", "afd", name, "range", "scale"}, "recommend cannot search engine.afd.%s over a log range: give choices or a linear range with a step", name)
		}
	}
	return nil
}

// afdCompanion returns the companion role of AFD combined with P/D ("" otherwise).
func (c *checker) afdCompanion() string {
	afd := mapOf(c.v.engine["afd"])
	if combined, _ := afd["combined_with_pd"].(bool); !combined || !slices.Equal(c.v.modes(), []string{"afd"}) {
		return ""
	}
	if afd["phase"] == "prefill" {
		return "decode"
	}
	return "prefill"
}

// compileCompanionParallelismRule: recommend.py recommendation_to_sweeper: the companion worker of
// AFD+P/D takes the default preset or a preset list, not independent knobs (preset false or {}).
func (c *checker) compileCompanionParallelismRule() *Problem {
	companion := c.afdCompanion()
	if companion == "" {
		return nil
	}
	par := mapOf(c.v.worker(companion)["parallelism"])
	if presetDisabled(par) {
		return problemf([]string{"engine", "workers", companion, "parallelism", "preset"}, "engine.workers.%s.parallelism supports preset default or a concrete preset list for AFD recommendations, not independent knobs", companion)
	}
	return nil
}

// compilePresetContextRule: recommend.py _parallel_mapping (through _parallel_entries for every
// worker the search uses, the AFD companion too): a preset entry's prefill_context is 1 or unset;
// context parallelism is predict-only.
func (c *checker) compilePresetContextRule() *Problem {
	for _, role := range c.v.roles() {
		preset, _ := mapOf(c.v.worker(role)["parallelism"])["preset"].([]any)
		for i, e := range preset {
			if n, ok := intOf(mapOf(e)["prefill_context"]); ok && n != 1 {
				return problemf([]string{"engine", "workers", role, "parallelism", "preset", strconv.Itoa(i), "prefill_context"}, "prefill_context %d is not supported by recommend: context parallelism is a predict-only knob (1 or unset here)", n)
			}
		}
	}
	return nil
}

// searchedRoles are the workers recommend.py _role_search_space lowers: those of the modes of
// the domain and the AFD companion.
func (c *checker) searchedRoles() []string {
	modes := c.v.modes()
	var out []string
	if slices.Contains(modes, "aggregated") {
		out = append(out, "aggregated")
	}
	if slices.Contains(modes, "disaggregated") {
		out = append(out, "prefill", "decode")
	}
	if companion := c.afdCompanion(); companion != "" {
		out = append(out, companion)
	}
	return out
}

// legacyEstimatorProvider: sweeper/config.py SearchSpace._uses_legacy_estimator_provider (AFD or an
// encoder pool).
func (c *checker) legacyEstimatorProvider() bool {
	return slices.Contains(c.v.modes(), "afd") || set(c.v.workers, "encoder")
}

// compileFpmTimingRule: sweeper/config.py SearchSpace._validate_search_choices: an FPM profile
// needs default timing on every worker the search uses.
func (c *checker) compileFpmTimingRule() *Problem {
	if !set(c.v.engine, "fpm_profile") {
		return nil
	}
	for _, role := range c.searchedRoles() {
		if t := timingOf(c.v.worker(role)); t.typ != "default" {
			return problem("engine.fpm_profile requires default timing for every worker", "engine", "workers", role, "timing", "type")
		}
	}
	return nil
}

// compileParquetRule: sweeper/config.py SearchSpace._validate_search_choices: a worker's
// fpm_parquet_path needs the FPM forward model, which the search derives from the worker's
// timing.estimation_mode, else engine.estimation_mode (op_level for AFD and encoder pools).
func (c *checker) compileParquetRule() *Problem {
	for _, role := range c.searchedRoles() {
		t := timingOf(c.v.worker(role))
		if !set(t.raw, "fpm_parquet_path") {
			continue
		}
		mode := t.estimationMode
		if mode == "" && !c.legacyEstimatorProvider() {
			mode, _ = c.v.engine["estimation_mode"].(string)
		}
		if mode != "fpm_interpolation" {
			return problem("fpm_parquet_path requires the FPM forward model: set timing.estimation_mode: fpm_interpolation", "engine", "workers", role, "timing", "fpm_parquet_path")
		}
	}
	return nil
}

// compileMoeKernelSourceRule: sweeper/config.py SearchSpace._validate_moe_kernel_source
// (aisimulate_core/sdk/config.py normalize_kernel_source): a nonblank string.
func (c *checker) compileMoeKernelSourceRule() *Problem {
	if s, ok := c.v.engine["moe_kernel_source"].(string); ok && strings.TrimSpace(s) == "" {
		return problem("moe_kernel_source must be a nonempty string", "engine", "moe_kernel_source")
	}
	return nil
}

// transferKinds and transferPresets are aisimulate_core/sdk/common.py TransferKind and
// TRANSFER_PRESETS.
var (
	transferKinds   = []string{"xshape", "xquant", "xprofile", "xop"}
	transferPresets = []string{"off", "conservative", "balanced", "aggressive"}
)

// compileTransferPolicyRule: sweeper/config.py SearchSpace._validate_estimator_controls resolves a
// worker's timing.transfer_policy (aisimulate_core/sdk/common.py resolve_transfer_policy): a
// preset, a transfer kind, a comma-separated string or a list of those. (engine.transfer_policy
// is resolved only at run time.)
func (c *checker) compileTransferPolicyRule() *Problem {
	if c.legacyEstimatorProvider() {
		return nil
	}
	known := func(token string) bool {
		return slices.Contains(transferKinds, token) || slices.Contains(transferPresets, token)
	}
	for _, role := range c.v.roles() {
		p := []string{"engine", "workers", role, "timing", "transfer_policy"}
		var unknown []string
		var at []string
		switch policy := mapOf(c.v.worker(role)["timing"])["transfer_policy"].(type) {
		case string:
			key := strings.ToLower(strings.TrimSpace(policy))
			if strings.Contains(key, ",") {
				for _, t := range strings.Split(key, ",") {
					if t = strings.TrimSpace(t); t != "" && !known(t) {
						unknown, at = append(unknown, t), p
					}
				}
			} else if !known(key) {
				unknown, at = append(unknown, key), p
			}
		case []any:
			for i, x := range policy {
				s, _ := x.(string)
				if t := strings.ToLower(strings.TrimSpace(s)); !known(t) {
					unknown = append(unknown, t)
					if at == nil {
						at = childPath(p, strconv.Itoa(i))
					}
				}
			}
		}
		if len(unknown) > 0 {
			return problemf(at, "unknown transfer kind or preset %q; kinds: %s; presets: %s", unknown[0], strings.Join(transferKinds, ", "), strings.Join(transferPresets, ", "))
		}
	}
	return nil
}

// compileBackendVersionRule: sweeper/config.py SearchSpace._validate_backend_versions: a version
// string is nonblank and needs exactly one backend in engine.backend (several take a mapping
// {backend: version}); a mapping's versions are nonblank.
func (c *checker) compileBackendVersionRule() *Problem {
	switch v := c.v.engine["backend_version"].(type) {
	case string:
		if strings.TrimSpace(v) == "" {
			return problem("backend_version must be a nonempty version", "engine", "backend_version")
		}
		if b := c.v.backends(); len(slices.Compact(slices.Clone(b))) != 1 {
			return problemf([]string{"engine", "backend_version"}, "a backend_version string requires exactly one backend in engine.backend (got %s); use a mapping {backend: version} for several", strings.Join(b, ", "))
		}
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if s, _ := v[k].(string); strings.TrimSpace(s) == "" {
				return problemf([]string{"engine", "backend_version", k}, "backend_version needs a nonempty version for %s", k)
			}
		}
	}
	return nil
}

// compileMinGPUsEPDRule: sweeper/config.py SmartSearchConfig._validate_min_gpus: an analytical
// encoder pool cannot enforce min_goodput_rps.
func (c *checker) compileMinGPUsEPDRule() *Problem {
	if c.v.target() == output.TargetMinGPUs && set(c.v.workers, "encoder") && set(c.v.constraints, "min_goodput_rps") {
		return problem("analytical EPD cannot enforce min_goodput_rps", "optimization", "constraints", "min_goodput_rps")
	}
	return nil
}

// compileEPDRule: sweeper/config.py SmartSearchConfig._validate_epd: an analytical encoder pool
// takes no min_candidate_gpus, an encoder backend_version only with one language backend, and
// scores an SLA only in aggregate (strict_sla or min_gpus), never as per-request goodput.
func (c *checker) compileEPDRule() *Problem {
	if !set(c.v.workers, "encoder") {
		return nil
	}
	if set(c.v.constraints, "min_candidate_gpus") {
		return problem("analytical EPD supports max_candidate_gpus only, not min_candidate_gpus", "optimization", "constraints", "min_candidate_gpus")
	}
	if set(mapOf(c.v.workers["encoder"]), "backend_version") && len(c.v.backends()) != 1 {
		return problem("the encoder backend_version requires a single backend in engine.backend", "engine", "workers", "encoder", "backend_version")
	}
	switch c.v.target() {
	case output.TargetGoodput, output.TargetGoodputPerGPU:
		return problemf([]string{"optimization", "target"}, "analytical EPD supports aggregate strict_sla, not per-request goodput (target %s)", c.v.target())
	}
	strict, _ := c.v.optimization["strict_sla"].(bool)
	if set(mapOf(c.v.doc["evaluation"]), "sla") && !strict && c.v.target() != output.TargetMinGPUs {
		return problem("analytical EPD scores an SLA only in aggregate: set optimization.strict_sla: true (or drop evaluation.sla)", "optimization", "strict_sla")
	}
	return nil
}

// ---- values ----

// presetDisabled reports whether parallelism.preset is false or {} (an omitted preset is default).
func presetDisabled(parallelism map[string]any) bool {
	switch p := parallelism["preset"].(type) {
	case bool:
		return !p
	case map[string]any:
		return len(p) == 0
	}
	return false
}

// choicesOf returns the choices of a {choices: [...]} domain.
func choicesOf(v any) ([]any, bool) {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return nil, false
	}
	list, ok := m["choices"].([]any)
	return list, ok
}

func isChoicesValue(v any) bool {
	_, ok := choicesOf(v)
	return ok
}

// rangeOf returns the bounds of a {range: {...}} domain.
func rangeOf(v any) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return nil, false
	}
	r, ok := m["range"].(map[string]any)
	return r, ok
}

// at returns the value at path (present and not null).
func at(doc map[string]any, path ...string) (any, bool) {
	v := atValue(doc, path...)
	return v, v != nil
}

func atValue(doc map[string]any, path ...string) any {
	var cur any = doc
	for _, k := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}

func render(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// set reports whether a key is present with a non-null value.
func set(m map[string]any, key string) bool {
	x, ok := m[key]
	return ok && x != nil
}

func mapOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// modesOf returns engine.mode as a list of modes: the default domain when absent, nil when it is
// not a mode or a domain of modes.
func modesOf(v any) []string {
	switch m := v.(type) {
	case nil:
		return DefaultModes
	case string:
		return []string{m}
	case map[string]any:
		return stringsOf(m["choices"])
	}
	return nil
}

// backendsOf returns engine.backend as a list of backends (the default domain when absent).
func backendsOf(v any) []string {
	switch b := v.(type) {
	case nil:
		return DefaultBackends
	case string:
		return []string{b}
	case map[string]any:
		return stringsOf(b["choices"])
	}
	return nil
}

func stringsOf(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, x := range list {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func intOf(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok || strings.ContainsAny(string(n), ".eE") {
		return 0, false
	}
	i, err := n.Int64()
	return i, err == nil
}

func numberOf(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	return f, err == nil
}

// ratOf returns a number exactly.
func ratOf(v any) (*big.Rat, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return nil, false
	}
	r, ok := new(big.Rat).SetString(string(n))
	return r, ok
}
