package aisimulate

import (
	"fmt"
	"math/big"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
)

// The validators of aisimulate/config/engine.py: the engine section's models, their workers and
// timing.

// timingIdentityFields are TimingConfig's quantization and backend identity overrides.
var timingIdentityFields = []string{"gemm_quant_mode", "moe_quant_mode", "fmha_quant_mode", "kvcache_quant_mode", "comm_quant_mode", "attention_backend"}

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
