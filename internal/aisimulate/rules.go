package aisimulate

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// This file holds AISimulate's cross-field rules that JSON Schema cannot express, one function per
// rule family of the contract (/work/shared/reference/aisimulate-contract.md §11, which cites
// §3–§8). Each rule reports the field path that has to change. Rules only look at well-typed
// values: type errors are the schema's job, and a rule never reports what the schema reports.

// languageRoles are the worker roles that run the language model (the encoder pool is not one).
var languageRoles = []string{"aggregated", "prefill", "decode"}

// inputView is a recommend document with the sections the rules read, decoded once.
type inputView struct {
	doc          map[string]any
	engine       map[string]any
	workers      map[string]any
	optimization map[string]any
	constraints  map[string]any
	optimizer    map[string]any
	sla          map[string]any
	target       string
	modes        []string
	backends     []string

	hasTraffic bool
	source     map[string]any
	load       map[string]any
	stop       map[string]any
	sourceType string // defaulted: synthetic
	loadType   string // defaulted: concurrency
}

func newInputView(doc map[string]any) *inputView {
	v := &inputView{doc: doc}
	v.engine = mapOf(doc["engine"])
	v.workers = mapOf(v.engine["workers"])
	v.optimization = mapOf(doc["optimization"])
	v.constraints = mapOf(v.optimization["constraints"])
	v.optimizer = mapOf(doc["optimizer"])
	v.sla = mapOf(mapOf(doc["evaluation"])["sla"])
	v.target, _ = v.optimization["target"].(string)
	v.modes = modesOf(v.engine["mode"])
	v.backends = backendsOf(v.engine["backend"])

	traffic, ok := doc["traffic"].(map[string]any)
	v.hasTraffic = ok
	v.source = mapOf(traffic["source"])
	v.load = mapOf(traffic["load"])
	v.stop = mapOf(traffic["stop"])
	v.sourceType, _ = v.source["type"].(string)
	if v.sourceType == "" {
		v.sourceType = "synthetic"
	}
	v.loadType, _ = v.load["type"].(string)
	if v.loadType == "" {
		v.loadType = "concurrency"
	}
	return v
}

// worker returns engine.workers.<role> (nil when absent).
func (v *inputView) worker(role string) map[string]any { return mapOf(v.workers[role]) }

// kvCache returns engine.workers.<role>.kv_cache (nil when absent).
func (v *inputView) kvCache(role string) map[string]any { return mapOf(v.worker(role)["kv_cache"]) }

// set reports whether a key is present with a non-null value.
func set(m map[string]any, key string) bool {
	x, ok := m[key]
	return ok && x != nil
}

type problemList []Problem

func (ps *problemList) add(msg string, path ...string) {
	*ps = append(*ps, Problem{Path: path, Message: msg})
}

// crossFieldProblems checks AISimulate's rules across fields (contract §11) that JSON Schema
// cannot express.
func crossFieldProblems(doc map[string]any) []Problem {
	v := newInputView(doc)
	var ps problemList
	for _, rule := range []func(*inputView, *problemList){
		hardwareAutoRule,
		slaRules,
		gpuConstraintRules,
		minGPUsRules,
		roleRules,
		workerHardwareRules,
		trialBudgetRule,
		trafficRules,
		blockSizeRule,
		hostOffloadRules,
		speculationRules,
		afdRules,
		epdRules,
	} {
		rule(v, &ps)
	}
	return ps
}

// hardwareAutoRule: engine.hardware auto needs a concrete optimization.hardware (§4.1, §6; §11.1).
func hardwareAutoRule(v *inputView, ps *problemList) {
	if v.engine["hardware"] != "auto" {
		return
	}
	if h, _ := v.optimization["hardware"].(string); h == "" {
		ps.add("engine.hardware auto needs optimization.hardware (a concrete system id)", "optimization", "hardware")
	}
}

// slaRules: e2e_ms excludes ttft_ms/itl_ms; strict_sla, goodput targets and min_gpus need an SLA
// bound (§5, §6; §11.4).
func slaRules(v *inputView, ps *problemList) {
	if set(v.sla, "e2e_ms") && (set(v.sla, "ttft_ms") || set(v.sla, "itl_ms")) {
		ps.add("e2e_ms is mutually exclusive with ttft_ms and itl_ms", "evaluation", "sla")
	}
	anyBound := set(v.sla, "e2e_ms") || set(v.sla, "ttft_ms") || set(v.sla, "itl_ms")
	if strict, _ := v.optimization["strict_sla"].(bool); strict && !anyBound {
		ps.add("strict_sla needs at least one SLA bound in evaluation.sla", "optimization", "strict_sla")
	}
	switch v.target {
	case "goodput", "goodput_per_gpu", "min_gpus":
		if !anyBound {
			ps.add(fmt.Sprintf("target %s needs at least one SLA bound in evaluation.sla", v.target), "optimization", "target")
		}
	}
}

// gpuConstraintRules: min_candidate_gpus ≤ max_candidate_gpus (default 32) (§6).
func gpuConstraintRules(v *inputView, ps *problemList) {
	lo, ok := intOf(v.constraints["min_candidate_gpus"])
	if !ok {
		return
	}
	hi, set := intOf(v.constraints["max_candidate_gpus"])
	if !set {
		hi = DefaultMaxCandidateGPUs
	}
	if lo > hi {
		ps.add(fmt.Sprintf("min_candidate_gpus (%d) exceeds max_candidate_gpus (%d)", lo, hi), "optimization", "constraints", "min_candidate_gpus")
	}
}

// minGPUsRules: the min_gpus target and its goodput floor (§6; §11.5). min_gpus needs fixed
// synthetic request traffic at a concrete request rate (constant_rate or poisson) or a fixed
// concurrency: no load domains, no kv_capacity_fraction, no sessions or traces, no adapter
// sections. min_goodput_rps applies only to min_gpus, is required with request-rate traffic and
// may not exceed the offered rate.
func minGPUsRules(v *inputView, ps *problemList) {
	floor, hasFloor := numberOf(v.constraints["min_goodput_rps"])
	if v.target != "min_gpus" {
		if set(v.constraints, "min_goodput_rps") {
			ps.add("min_goodput_rps applies only to the min_gpus target", "optimization", "constraints", "min_goodput_rps")
		}
		return
	}
	if v.sourceType != "synthetic" {
		ps.add(fmt.Sprintf("target min_gpus needs synthetic request traffic, not %s", v.sourceType), "traffic", "source", "type")
	}
	rate := v.loadType == "poisson" || v.loadType == "constant_rate"
	switch {
	case v.loadType == "concurrency":
		if isDomain(v.load["concurrency"]) {
			ps.add("target min_gpus needs a fixed concurrency, not a domain", "traffic", "load", "concurrency")
		}
	case rate:
		if isDomain(v.load["requests_per_second"]) {
			ps.add("target min_gpus needs a fixed requests_per_second, not a domain", "traffic", "load", "requests_per_second")
		}
	default:
		ps.add(fmt.Sprintf("target min_gpus needs a concurrency, poisson or constant_rate load, not %s", v.loadType), "traffic", "load", "type")
	}
	for _, adapter := range []string{"router", "planner"} {
		if _, ok := v.doc[adapter]; ok {
			ps.add("target min_gpus does not support adapter sections (the Dynamo stack)", adapter)
		}
	}
	if rate && v.sourceType == "synthetic" && !hasFloor {
		ps.add("target min_gpus with request-rate traffic needs min_goodput_rps", "optimization", "constraints", "min_goodput_rps")
	}
	if rps, ok := numberOf(v.load["requests_per_second"]); ok && rate && hasFloor && floor > rps {
		ps.add(fmt.Sprintf("min_goodput_rps (%g) exceeds the offered requests_per_second (%g)", floor, rps), "optimization", "constraints", "min_goodput_rps")
	}
}

// roleRules: the worker roles must match a concrete mode; kv_transfer only when disaggregated is
// possible (§4.2; §11.2). AFD roles are afdRules' job.
func roleRules(v *inputView, ps *problemList) {
	if len(v.modes) != 1 {
		return
	}
	switch v.modes[0] {
	case "aggregated":
		for _, role := range []string{"prefill", "decode"} {
			if _, ok := v.workers[role]; ok {
				ps.add("role "+role+" is not allowed in aggregated mode", "engine", "workers", role)
			}
		}
		if set(v.engine, "kv_transfer") {
			ps.add("kv_transfer needs disaggregated mode", "engine", "kv_transfer")
		}
	case "disaggregated":
		if _, ok := v.workers["aggregated"]; ok {
			ps.add("role aggregated is not allowed in disaggregated mode", "engine", "workers", "aggregated")
		}
	}
}

// workerHardwareRules: only the prefill and decode roles of a mode that can be disaggregated may
// override engine.hardware, with one concrete SKU: no auto, no domain, no surrounding whitespace
// (§4.2, §4.3). The schema rejects auto and domains; this rule checks role, mode and spelling.
func workerHardwareRules(v *inputView, ps *problemList) {
	for _, role := range languageRoles {
		h, ok := v.worker(role)["hardware"].(string)
		if !ok {
			continue
		}
		path := []string{"engine", "workers", role, "hardware"}
		switch {
		case role == "aggregated":
			ps.add("only the prefill and decode roles may override engine.hardware", path...)
		case !contains(v.modes, "disaggregated"):
			ps.add("a prefill/decode hardware override needs disaggregated mode", path...)
		}
		if h != strings.TrimSpace(h) || strings.TrimSpace(h) == "" {
			ps.add(fmt.Sprintf("hardware must be one concrete system id without surrounding whitespace, got %q", h), path...)
		}
	}
}

// trialBudgetRule: optimizer.max_trials covers every mode branch (§7; §11.10).
func trialBudgetRule(v *inputView, ps *problemList) {
	if trials, ok := intOf(v.optimizer["max_trials"]); ok && trials < int64(len(v.modes)) {
		ps.add(fmt.Sprintf("max_trials (%d) must be at least the number of mode branches (%d)", trials, len(v.modes)), "optimizer", "max_trials")
	}
}

// trafficRules: exactly one stop count of the source's unit, the rate field of the source's unit,
// loads a trace accepts, and cached_prefix_tokens within the input length (§3; §11.6).
func trafficRules(v *inputView, ps *problemList) {
	if !v.hasTraffic {
		return
	}
	var counts []string
	for k := range v.stop {
		counts = append(counts, k)
	}
	slices.Sort(counts)
	allowed := map[string][]string{
		"synthetic":         {"requests", "requests_per_load_unit"},
		"synthetic-session": {"sessions", "sessions_per_load_unit"},
		"trace":             {"max_virtual_time_seconds"},
	}[v.sourceType]
	switch {
	case v.sourceType != "trace" && len(v.stop) == 0:
		ps.add(fmt.Sprintf("%s traffic needs exactly one stop count: %s", v.sourceType, strings.Join(allowed, " or ")), "traffic", "stop")
	case len(counts) > 1:
		ps.add(fmt.Sprintf("exactly one stop count is allowed, got %s", strings.Join(counts, " and ")), "traffic", "stop")
	case len(counts) == 1 && !contains(allowed, counts[0]):
		ps.add(fmt.Sprintf("%s is not a stop count for %s traffic (use %s)", counts[0], v.sourceType, strings.Join(allowed, " or ")), "traffic", "stop", counts[0])
	}

	switch v.sourceType {
	case "synthetic":
		if _, ok := v.load["sessions_per_second"]; ok {
			ps.add("synthetic request traffic uses requests_per_second", "traffic", "load", "sessions_per_second")
		}
		if v.loadType == "trace_timestamps" {
			ps.add("trace_timestamps needs a trace source", "traffic", "load", "type")
		}
		if cached, ok := intOf(v.source["cached_prefix_tokens"]); ok {
			input, set := intOf(v.source["input_tokens"])
			if !set {
				input = 1024
			}
			if cached > input {
				ps.add(fmt.Sprintf("cached_prefix_tokens (%d) exceeds input_tokens (%d)", cached, input), "traffic", "source", "cached_prefix_tokens")
			}
		}
	case "synthetic-session":
		if _, ok := v.load["requests_per_second"]; ok {
			ps.add("session traffic uses sessions_per_second", "traffic", "load", "requests_per_second")
		}
		if v.loadType == "trace_timestamps" {
			ps.add("trace_timestamps needs a trace source", "traffic", "load", "type")
		}
	case "trace":
		if v.loadType != "trace_timestamps" && v.loadType != "concurrency" {
			ps.add("trace traffic accepts only trace_timestamps or concurrency loads", "traffic", "load", "type")
		}
	}
}

// blockSizeRule: vLLM and TRT-LLM need KV block sizes of at least 2, unless the backend domain
// contains sglang (§4.3; §11.7).
func blockSizeRule(v *inputView, ps *problemList) {
	if contains(v.backends, "sglang") {
		return
	}
	for _, role := range languageRoles {
		if bs, ok := intOf(v.kvCache(role)["block_size"]); ok && bs < 2 {
			ps.add("vllm and trtllm need a KV block size of at least 2", "engine", "workers", role, "kv_cache", "block_size")
		}
	}
}

// hostOffloadRules: kv_cache.host_offload only on the aggregated vLLM role with prefix caching
// and attention_data 1; recommend also needs a concrete mode (aggregated), a concrete backend
// (vllm) and fixed parallelism (preset disabled). g3_offload requires host_offload, and
// g3_offload and state_cache are predict-only (§4.3, §8; §11.8).
func hostOffloadRules(v *inputView, ps *problemList) {
	for _, role := range languageRoles {
		kv := v.kvCache(role)
		base := []string{"engine", "workers", role}
		at := func(rest ...string) []string { return append(append([]string(nil), base...), rest...) }
		for _, field := range []string{"g3_offload", "state_cache"} {
			if set(kv, field) {
				ps.add(field+" is predict-only; recommend rejects it", at("kv_cache", field)...)
			}
		}
		if set(kv, "g3_offload") && !set(kv, "host_offload") {
			ps.add("g3_offload requires host_offload", at("kv_cache", "g3_offload")...)
		}
		if !set(kv, "host_offload") {
			continue
		}
		if role != "aggregated" {
			ps.add("host_offload is supported only on the aggregated role", at("kv_cache", "host_offload")...)
			continue
		}
		if mode, _ := v.engine["mode"].(string); mode != "aggregated" {
			ps.add("host_offload needs the concrete mode aggregated (not a domain, not omitted)", "engine", "mode")
		}
		if backend, _ := v.engine["backend"].(string); backend != "vllm" {
			ps.add("host_offload needs the concrete backend vllm (not a domain, not omitted)", "engine", "backend")
		}
		if pc, ok := kv["prefix_caching"].(bool); ok && !pc {
			ps.add("host_offload requires prefix_caching: true", at("kv_cache", "prefix_caching")...)
		}
		par := mapOf(v.worker(role)["parallelism"])
		// One problem for the parallelism: first the preset, then the knob.
		if !presetDisabled(par) {
			ps.add("host_offload in recommend needs fixed parallelism: set preset: false (or {}) and attention_data: 1", at("parallelism", "preset")...)
		} else if ad, ok := intOf(par["attention_data"]); !ok || ad != 1 {
			ps.add("host_offload needs an explicit attention_data: 1", at("parallelism", "attention_data")...)
		}
	}
}

// speculationRules: ngram speculation needs vLLM aggregated/disaggregated language workers with
// op-level timing, no host/G3 offload, no EPD encoder, no AFD, no nextn; one acceptance rate per
// draft token (§4.7; §11.8). Conflicts are reported at engine.speculation.
func speculationRules(v *inputView, ps *problemList) {
	spec, ok := v.engine["speculation"].(map[string]any)
	if !ok {
		return
	}
	at := []string{"engine", "speculation"}
	if n, ok := intOf(v.engine["nextn"]); ok && n > 0 {
		ps.add("speculation cannot be combined with nextn", at...)
	}
	if len(v.backends) != 1 || v.backends[0] != "vllm" {
		ps.add("ngram speculation needs the backend vllm only", at...)
	}
	if contains(v.modes, "afd") {
		ps.add("ngram speculation is not supported in AFD mode", at...)
	}
	if set(v.workers, "encoder") {
		ps.add("ngram speculation is not supported with an EPD encoder pool", at...)
	}
	for _, role := range languageRoles {
		kv := v.kvCache(role)
		if set(kv, "host_offload") || set(kv, "g3_offload") {
			ps.add("ngram speculation does not support host or G3 offload (engine.workers."+role+".kv_cache)", at...)
		}
		if !opLevelTiming(mapOf(v.worker(role)["timing"])) {
			ps.add("ngram speculation needs op-level timing (engine.workers."+role+".timing)", at...)
		}
	}
	rates, okRates := spec["acceptance_rates"].([]any)
	n, okN := intOf(spec["num_speculative_tokens"])
	if okRates && okN && int64(len(rates)) != n {
		ps.add(fmt.Sprintf("acceptance_rates needs one rate per speculative token: %d, got %d", n, len(rates)), "engine", "speculation", "acceptance_rates")
	}
}

// afdRules: attention–FFN disaggregation (§4.8, §4.2; §11.8). mode afd is explicit only (the
// schema keeps it out of mode domains) and needs engine.afd, whose a_batch_size is required;
// engine.afd needs mode afd. Pure AFD (combined_with_pd false) is phase both without regular
// workers; AFD+P/D is phase prefill or decode with at most the opposite companion role. AFD
// rejects kv_transfer, the EPD encoder and enable_chunked_prefill false.
func afdRules(v *inputView, ps *problemList) {
	afd, hasAFD := v.engine["afd"].(map[string]any)
	isAFD := v.engine["mode"] == "afd"
	if hasAFD && !isAFD {
		ps.add("engine.afd needs engine.mode: afd", "engine", "afd")
	}
	if !isAFD {
		return
	}
	if !hasAFD {
		ps.add("mode afd needs engine.afd", "engine", "afd")
	} else if _, ok := afd["a_batch_size"]; !ok {
		ps.add("AFD recommend needs a_batch_size (a value or a domain, qualified for the model and hardware)", "engine", "afd", "a_batch_size")
	}
	if set(v.engine, "kv_transfer") {
		ps.add("AFD rejects kv_transfer; attention/FFN transfers are modeled by engine.afd", "engine", "kv_transfer")
	}
	if set(v.workers, "encoder") {
		ps.add("AFD does not support an EPD encoder pool", "engine", "workers", "encoder")
	}
	if chunked, ok := v.engine["enable_chunked_prefill"].(bool); ok && !chunked {
		ps.add("enable_chunked_prefill false is not supported in AFD mode", "engine", "enable_chunked_prefill")
	}
	phase, _ := afd["phase"].(string)
	combined, _ := afd["combined_with_pd"].(bool)
	companion := ""
	if combined {
		switch phase {
		case "both":
			ps.add("AFD combined with P/D needs phase prefill or decode", "engine", "afd", "phase")
		case "prefill":
			companion = "decode"
		case "decode":
			companion = "prefill"
		}
	} else if phase != "" && phase != "both" {
		ps.add("pure AFD (combined_with_pd false) needs phase both", "engine", "afd", "phase")
	}
	for _, role := range languageRoles {
		if _, ok := v.workers[role]; !ok || role == companion {
			continue
		}
		if companion != "" {
			ps.add(fmt.Sprintf("AFD phase %s with P/D accepts only the %s companion role", phase, companion), "engine", "workers", role)
		} else {
			ps.add("pure AFD rejects regular aggregated/prefill/decode workers", "engine", "workers", role)
		}
	}
}

// epdRules: analytical EPD (§4.5; §11.8). engine.workers.encoder requires traffic.source.images;
// images require the encoder, unless a language worker hosts the vision tower (native VL path:
// vision or host_profile, newer upstream). An analytical pool needs fixed synthetic concurrency
// (no searched load, no rate loads), op-level timing and no adapter sections. batch_size ≤ 8 and
// rate_degradation ≤ 1 are schema bounds.
func epdRules(v *inputView, ps *problemList) {
	encoder, hasEncoder := v.workers["encoder"].(map[string]any)
	hasImages := set(v.source, "images")
	if hasImages && !hasEncoder && !v.nativeVL() {
		ps.add("images need engine.workers.encoder (analytical EPD) or a worker with vision/host_profile", "traffic", "source", "images")
	}
	if !hasEncoder {
		return
	}
	if !hasImages {
		ps.add("engine.workers.encoder needs traffic.source.images", "traffic", "source", "images")
	}
	if mode, _ := encoder["mode"].(string); mode == "native" {
		return
	}
	if v.hasTraffic && v.sourceType != "synthetic" {
		ps.add("analytical EPD needs synthetic request traffic", "traffic", "source", "type")
	}
	switch {
	case v.loadType != "concurrency":
		ps.add(fmt.Sprintf("analytical EPD needs a fixed concurrency load, not %s", v.loadType), "traffic", "load", "type")
	case isDomain(v.load["concurrency"]):
		ps.add("analytical EPD needs a fixed concurrency, not a domain", "traffic", "load", "concurrency")
	}
	for _, role := range languageRoles {
		if !opLevelTiming(mapOf(v.worker(role)["timing"])) {
			ps.add("analytical EPD needs op-level (default) timing", "engine", "workers", role, "timing")
		}
	}
	for _, adapter := range []string{"router", "planner"} {
		if _, ok := v.doc[adapter]; ok {
			ps.add("analytical EPD does not support adapter sections", adapter)
		}
	}
}

// nativeVL reports whether a language worker hosts the vision tower (vision or host_profile).
func (v *inputView) nativeVL() bool {
	for _, role := range languageRoles {
		w := v.worker(role)
		if set(w, "vision") || set(w, "host_profile") {
			return true
		}
	}
	return false
}

// opLevelTiming reports whether a timing block keeps default op-level timing: type default and
// no FPM estimator selected.
func opLevelTiming(timing map[string]any) bool {
	if t, _ := timing["type"].(string); t != "" && t != "default" {
		return false
	}
	if timing["forward_model"] == "fpm" {
		return false
	}
	switch timing["estimation_mode"] {
	case "fpm_interpolation", "fpm_regression":
		return false
	}
	return true
}

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

// isDomain reports whether v is a recommend domain object ({choices} or {range}).
func isDomain(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	_, choices := m["choices"]
	_, rng := m["range"]
	return choices || rng
}

func mapOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

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
	if !ok {
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

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
