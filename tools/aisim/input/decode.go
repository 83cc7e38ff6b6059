package input

import (
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/document"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
)

// Decode parses YAML, applies --set overrides in order and decodes the
// document for cmd. Errors are *FieldError (path + reason).
//
// A recommend document is first checked by the contract package (internal/aisimulate: the
// bundled schema and every cross-field rule), exactly as the operator checks effective inputs;
// the typed decoding after it refuses, as "not supported by aisim", what AISimulate accepts but
// aisim does not simulate. Predict documents have no bundled schema yet, so their decoding still
// checks types and ranges itself.
func Decode(cmd Command, data []byte, sets []string) (*Document, error) {
	raw, err := document.Parse(data)
	if err != nil {
		var derr *document.Error
		if errors.As(err, &derr) {
			return nil, &FieldError{Path: strings.Join(derr.Path, "."), Reason: derr.Message}
		}
		return nil, &FieldError{Reason: err.Error()}
	}
	if raw.Kind == document.KindNull {
		raw = &document.Value{Kind: document.KindMap, Map: map[string]*document.Value{}}
	}
	if raw.Kind != document.KindMap {
		return nil, errf("", "the document must be a mapping, got %s", raw.Kind)
	}
	for _, s := range sets {
		if err := document.ApplySet(raw, s); err != nil {
			return nil, &FieldError{Reason: err.Error()}
		}
		if cmd == Predict {
			if p, _, _ := cutPath(s); p == "optimization" || p == "optimizer" {
				return nil, errf("", "--set %s: %s is not allowed in predict", s, p)
			}
		}
	}
	if cmd == Recommend {
		if problems := adapterSectionsAllowed(aisimulate.CheckInput(raw.JSON().(map[string]any))); len(problems) > 0 {
			return nil, contractError(problems)
		}
	}
	return DecodeValue(cmd, raw)
}

// adapterSectionsAllowed drops the shared check's "unknown field" problems of the top-level
// router and planner sections. The check mirrors AISimulate's engine stack, which the operator's
// search Job runs and which has no adapters; with the Dynamo stack AISimulate accepts both
// sections, and aisim accepts and ignores them in recommend as it does in predict (it routes
// round-robin and never scales its pools). Every other problem, including the contract rules
// that forbid these sections with min_gpus or analytical EPD, stays.
func adapterSectionsAllowed(problems []aisimulate.Problem) []aisimulate.Problem {
	return slices.DeleteFunc(problems, func(p aisimulate.Problem) bool {
		return len(p.Path) == 1 && (p.Path[0] == "router" || p.Path[0] == "planner") &&
			strings.HasPrefix(p.Message, "unknown field")
	})
}

// contractError reports the contract's problems: the first one's path, every one's reason.
func contractError(problems []aisimulate.Problem) *FieldError {
	e := &FieldError{Path: strings.Join(problems[0].Path, "."), Reason: problems[0].Message}
	for _, p := range problems[1:] {
		e.Reason += "; " + p.String()
	}
	return e
}

func cutPath(expr string) (string, string, bool) {
	for i := 0; i < len(expr); i++ {
		if expr[i] == '.' || expr[i] == '=' {
			return expr[:i], expr[i:], true
		}
	}
	return expr, "", false
}

// DecodeValue decodes an already parsed document.
func DecodeValue(cmd Command, raw *document.Value) (*Document, error) {
	known := []string{"traffic", "engine", "evaluation", "execution", "optimization", "optimizer", "router", "planner"}
	root, err := newObject("", raw, known, nil)
	if err != nil {
		return nil, err
	}
	for _, k := range raw.Keys {
		if k == "" || containsDot(k) {
			return nil, errf(k, "top-level keys must be non-empty and contain no dots")
		}
	}
	doc := &Document{Command: cmd, Raw: raw}
	// execution.resources budgets AISimulate's supervisor process (memory, CPUs, start and stop
	// timeouts): aisim runs in-process and has none, so the section (checked by the contract
	// above) is accepted and ignored.
	for _, k := range []string{"router", "planner", "execution"} {
		if x := root.get(k); x != nil {
			if x.Kind != document.KindMap {
				return nil, errf(k, "expected a mapping, got %s", x.Kind)
			}
			doc.Ignored = append(doc.Ignored, k)
		}
	}
	if cmd == Predict {
		for _, k := range []string{"optimization", "optimizer"} {
			if _, ok := raw.Map[k]; ok {
				return nil, errf(k, "not allowed in predict (recommend only)")
			}
		}
	} else if _, ok := raw.Map["optimization"]; !ok {
		return nil, errf("optimization", "required (use {} for all defaults)")
	}
	if doc.Traffic, err = decodeTraffic(cmd, root); err != nil {
		return nil, err
	}
	if doc.Evaluation, err = decodeEvaluation(root); err != nil {
		return nil, err
	}
	if cmd == Recommend {
		if doc.Optimization, err = decodeOptimization(root, doc.Evaluation.SLA); err != nil {
			return nil, err
		}
		if doc.Optimizer, err = decodeOptimizer(root); err != nil {
			return nil, err
		}
	}
	if doc.Engine, err = decodeEngine(cmd, root, doc.Optimization.Hardware); err != nil {
		return nil, err
	}
	for _, role := range slices.Sorted(maps.Keys(doc.Engine.Workers)) {
		if doc.Engine.Workers[role].StartupSeconds >= 0 {
			doc.Ignored = append(doc.Ignored, "engine.workers."+role+".startup_seconds")
		}
	}
	if err := crossChecks(doc); err != nil {
		return nil, err
	}
	return doc, nil
}

func containsDot(s string) bool { return slices.Contains([]byte(s), '.') }

func decodeTraffic(cmd Command, root *object) (Traffic, error) {
	t := Traffic{InputTokens: aisimulate.DefaultInputTokens, OutputTokens: aisimulate.DefaultOutputTokens}
	if !root.has("traffic") {
		// An omitted traffic section is replaced wholesale by the default.
		t.Load = Load{Type: LoadConcurrency, Intensity: Fixed(aisimulate.DefaultConcurrency, true)}
		t.Stop = Stop{Requests: aisimulate.DefaultTrafficRequests}
		return t, nil
	}
	to, err := newObject("traffic", root.get("traffic"), []string{"source", "load", "stop"}, nil)
	if err != nil {
		return t, err
	}
	if to.has("source") {
		// The source type decides which fields exist, so it is reported first.
		if x := to.get("source"); x.Kind == document.KindMap {
			if ty := x.Map["type"]; ty != nil && ty.Kind == document.KindString && ty.Str == "synthetic-session" {
				return decodeSessionTraffic(cmd, to)
			}
			if ty := x.Map["type"]; ty != nil && ty.Kind == document.KindString && ty.Str == "trace" {
				return decodeTraceTraffic(cmd, to)
			}
		}
		so, err := newObject("traffic.source", to.get("source"),
			[]string{"type", "input_tokens", "output_tokens", "cached_prefix_tokens"},
			[]string{"images", "new_input_tokens_per_turn", "output_tokens_per_turn", "session", "paths", "format", "block_size", "nested_timestamp_basis"})
		if err != nil {
			return t, err
		}
		typ, err := so.str("type", "synthetic")
		if err != nil {
			return t, err
		}
		switch typ {
		case "synthetic":
		default:
			return t, errf(so.p("type"), "must be one of [synthetic synthetic-session trace], got %q", typ)
		}
		if t.InputTokens, err = so.integer("input_tokens", aisimulate.DefaultInputTokens, 1); err != nil {
			return t, err
		}
		if t.OutputTokens, err = so.integer("output_tokens", aisimulate.DefaultOutputTokens, 1); err != nil {
			return t, err
		}
		if t.CachedPrefixTokens, err = so.integer("cached_prefix_tokens", 0, 0); err != nil {
			return t, err
		}
		if t.CachedPrefixTokens > t.InputTokens {
			return t, errf(so.p("cached_prefix_tokens"), "exceeds input_tokens (%d)", t.InputTokens)
		}
	}
	if t.Load, err = decodeLoad(cmd, to, false, false); err != nil {
		return t, err
	}
	if !to.has("stop") {
		return t, errf("traffic.stop", "required for synthetic traffic (requests or requests_per_load_unit)")
	}
	st, err := newObject("traffic.stop", to.get("stop"), []string{"requests", "requests_per_load_unit", "max_virtual_time_seconds"},
		[]string{"sessions", "sessions_per_load_unit"})
	if err != nil {
		return t, err
	}
	if st.has("max_virtual_time_seconds") {
		return t, errf(st.p("max_virtual_time_seconds"), "only allowed with a trace source")
	}
	if st.has("requests") == st.has("requests_per_load_unit") {
		return t, errf("traffic.stop", "exactly one of requests or requests_per_load_unit is required")
	}
	if t.Stop.Requests, err = st.integer("requests", 0, 1); err != nil {
		return t, err
	}
	if t.Stop.RequestsPerLoadUnit, err = st.positive("requests_per_load_unit", 0); err != nil {
		return t, err
	}
	return t, nil
}

// decodeSessionTraffic decodes a synthetic-session source (AISimulate contract §3.1–3.3): the
// session shape, a load whose open-loop rate is sessions_per_second and whose concurrency counts
// sessions, and a stop counting sessions.
func decodeSessionTraffic(cmd Command, to *object) (Traffic, error) {
	t := Traffic{Session: &SessionSource{}}
	so, err := newObject("traffic.source", to.get("source"),
		[]string{"type", "new_input_tokens_per_turn", "output_tokens_per_turn", "session"}, nil)
	if err != nil {
		return t, err
	}
	if t.InputTokens, err = so.integer("new_input_tokens_per_turn", aisimulate.DefaultInputTokens, 1); err != nil {
		return t, err
	}
	if t.OutputTokens, err = so.integer("output_tokens_per_turn", aisimulate.DefaultOutputTokens, 1); err != nil {
		return t, err
	}
	if !so.has("session") {
		return t, errf(so.p("session"), "required for a synthetic-session source")
	}
	ss, err := newObject(so.p("session"), so.get("session"), []string{"turns", "shared_prefix_ratio", "prefix_groups", "inter_turn_delay_ms"}, nil)
	if err != nil {
		return t, err
	}
	se := t.Session
	if se.Turns, err = ss.integer("turns", aisimulate.DefaultSessionTurns, 2); err != nil {
		return t, err
	}
	if se.SharedPrefixRatio, err = ss.nonNegative("shared_prefix_ratio", 0); err != nil {
		return t, err
	}
	if se.SharedPrefixRatio > 1 {
		return t, errf(ss.p("shared_prefix_ratio"), "must be <= 1")
	}
	if se.PrefixGroups, err = ss.integer("prefix_groups", 0, 0); err != nil {
		return t, err
	}
	if se.SharedPrefixRatio > 0 && se.PrefixGroups == 0 {
		return t, errf(ss.p("prefix_groups"), "must be > 0 when shared_prefix_ratio is > 0")
	}
	if se.InterTurnDelayMs, err = ss.nonNegative("inter_turn_delay_ms", 0); err != nil {
		return t, err
	}
	if t.Load, err = decodeLoad(cmd, to, false, true); err != nil {
		return t, err
	}
	if !to.has("stop") {
		return t, errf("traffic.stop", "required for synthetic-session traffic (sessions or sessions_per_load_unit)")
	}
	st, err := newObject("traffic.stop", to.get("stop"), []string{"sessions", "sessions_per_load_unit", "requests", "requests_per_load_unit", "max_virtual_time_seconds"}, nil)
	if err != nil {
		return t, err
	}
	for _, k := range []string{"requests", "requests_per_load_unit", "max_virtual_time_seconds"} {
		if st.has(k) {
			return t, errf(st.p(k), "not allowed with a synthetic-session source (use sessions or sessions_per_load_unit)")
		}
	}
	if st.has("sessions") == st.has("sessions_per_load_unit") {
		return t, errf("traffic.stop", "exactly one of sessions or sessions_per_load_unit is required")
	}
	if t.Stop.Requests, err = st.integer("sessions", 0, 1); err != nil {
		return t, err
	}
	if t.Stop.RequestsPerLoadUnit, err = st.positive("sessions_per_load_unit", 0); err != nil {
		return t, err
	}
	return t, nil
}

func decodeLoad(cmd Command, to *object, isTrace, sessions bool) (Load, error) {
	l := Load{Type: LoadConcurrency, Intensity: Fixed(aisimulate.DefaultConcurrency, true), Seed: aisimulate.DefaultLoadSeed}
	if !to.has("load") {
		return l, nil
	}
	rate := "requests_per_second"
	if sessions {
		rate = "sessions_per_second"
	}
	fields := []string{"type", "concurrency", "requests_per_second", "sessions_per_second", "seed", "fraction", "speedup"}
	lo, err := newObject("traffic.load", to.get("load"), fields,
		[]string{"agentic_lanes", "agentic_snapshot", "agentic_warmup", "agentic_profile"})
	if err != nil {
		return l, err
	}
	if l.Type, err = lo.str("type", LoadConcurrency); err != nil {
		return l, err
	}
	allowed := map[string][]string{
		LoadConcurrency:        {"type", "concurrency"},
		LoadPoisson:            {"type", rate, "seed"},
		LoadConstantRate:       {"type", rate},
		LoadKVCapacityFraction: {"type", "fraction"},
		LoadTraceTimestamps:    {"type", "speedup"},
	}
	switch {
	case l.Type == LoadTraceTimestamps && !isTrace:
		return l, errf(lo.p("type"), "trace_timestamps requires a trace source")
	case isTrace && l.Type != LoadTraceTimestamps && l.Type != LoadConcurrency && allowed[l.Type] != nil:
		return l, errf(lo.p("type"), "a trace source accepts only trace_timestamps or concurrency, got %s", l.Type)
	}
	switch l.Type {
	case LoadKVCapacityFraction:
		if sessions {
			return l, errf(lo.p("type"), "kv_capacity_fraction with a synthetic-session source: %s", notSupported)
		}
		if cmd == Predict {
			return l, errf(lo.p("type"), "kv_capacity_fraction is recommend-only")
		}
	}
	accepted, known := allowed[l.Type]
	if !known {
		return l, errf(lo.p("type"), "must be one of [concurrency poisson constant_rate kv_capacity_fraction trace_timestamps], got %q", l.Type)
	}
	for _, k := range lo.v.Keys {
		if !slices.Contains(accepted, k) {
			if k == "requests_per_second" || k == "sessions_per_second" {
				return l, errf(lo.p(k), "the open-loop rate of this source is %s", rate)
			}
			return l, errf(lo.p(k), "load type %s does not accept this field", l.Type)
		}
	}
	var (
		field string
		spec  domainSpec
	)
	switch l.Type {
	case LoadConcurrency:
		field, spec = "concurrency", domainSpec{isInt: true, allowRange: true}
	case LoadPoisson, LoadConstantRate:
		field, spec = rate, domainSpec{allowRange: true}
	case LoadKVCapacityFraction:
		field, spec = "fraction", domainSpec{allowRange: true}
	case LoadTraceTimestamps:
		field, spec = "speedup", domainSpec{allowRange: true}
	}
	d, present, err := lo.domain(cmd, field, spec)
	if err != nil {
		return l, err
	}
	switch {
	case present:
		l.Intensity = d
	case l.Type == LoadConcurrency:
		l.Intensity = Fixed(aisimulate.DefaultConcurrency, true)
	case l.Type == LoadTraceTimestamps:
		l.Intensity = Fixed(1, false)
	default:
		return l, errf(lo.p(field), "required for load type %s", l.Type)
	}
	if d.Range != nil && d.Range.Min <= 0 {
		return l, errf(lo.p(field)+".range.min", "must be > 0")
	}
	seed, err := lo.integer("seed", aisimulate.DefaultLoadSeed, 0)
	l.Seed = int64(seed)
	return l, err
}

func decodeEvaluation(root *object) (Evaluation, error) {
	var e Evaluation
	if !root.has("evaluation") {
		return e, nil
	}
	eo, err := newObject("evaluation", root.get("evaluation"), []string{"sla"}, nil)
	if err != nil || !eo.has("sla") {
		return e, err
	}
	so, err := newObject("evaluation.sla", eo.get("sla"), []string{"ttft_ms", "itl_ms", "e2e_ms"}, nil)
	if err != nil {
		return e, err
	}
	if e.SLA.TTFTms, err = so.positive("ttft_ms", 0); err != nil {
		return e, err
	}
	if e.SLA.ITLms, err = so.positive("itl_ms", 0); err != nil {
		return e, err
	}
	if e.SLA.E2Ems, err = so.positive("e2e_ms", 0); err != nil {
		return e, err
	}
	if e.SLA.E2Ems > 0 && (e.SLA.TTFTms > 0 || e.SLA.ITLms > 0) {
		return e, errf("evaluation.sla", "e2e_ms is mutually exclusive with ttft_ms and itl_ms")
	}
	return e, nil
}

func decodeOptimization(root *object, sla SLA) (Optimization, error) {
	o := Optimization{Target: aisimulate.DefaultTarget, MaxGPUs: aisimulate.DefaultMaxCandidateGPUs}
	x := root.get("optimization")
	if x == nil {
		// `optimization:` with a null value is the same as {}.
		return o, nil
	}
	oo, err := newObject("optimization", x, []string{"target", "hardware", "strict_sla", "constraints"}, nil)
	if err != nil {
		return o, err
	}
	if o.Target, err = oo.enum("target", aisimulate.DefaultTarget, output.TargetNames()...); err != nil {
		return o, err
	}
	if o.Hardware, err = oo.str("hardware", ""); err != nil {
		return o, err
	}
	if o.Hardware == "auto" {
		return o, errf(oo.p("hardware"), "must be a concrete hardware id, not auto")
	}
	if o.StrictSLA, err = oo.boolean("strict_sla", false); err != nil {
		return o, err
	}
	if oo.has("constraints") {
		co, err := newObject("optimization.constraints", oo.get("constraints"),
			[]string{"min_candidate_gpus", "max_candidate_gpus", "min_goodput_rps"}, nil)
		if err != nil {
			return o, err
		}
		if o.MinGPUs, err = co.integer("min_candidate_gpus", 0, 1); err != nil {
			return o, err
		}
		if o.MaxGPUs, err = co.integer("max_candidate_gpus", aisimulate.DefaultMaxCandidateGPUs, 1); err != nil {
			return o, err
		}
		if o.MinGoodputRPS, err = co.positive("min_goodput_rps", 0); err != nil {
			return o, err
		}
		if o.MinGoodputRPS > 0 && o.Target != output.TargetMinGPUs {
			return o, errf(co.p("min_goodput_rps"), "applies only to target min_gpus")
		}
		if o.MinGPUs > o.MaxGPUs {
			return o, errf(co.p("min_candidate_gpus"), "must be <= max_candidate_gpus (%d)", o.MaxGPUs)
		}
	}
	if o.StrictSLA && !sla.Any() {
		return o, errf(oo.p("strict_sla"), "requires at least one evaluation.sla bound")
	}
	switch o.Target {
	case output.TargetGoodput, output.TargetGoodputPerGPU, output.TargetMinGPUs:
		if !sla.Any() {
			return o, errf(oo.p("target"), "%s requires at least one evaluation.sla bound", o.Target)
		}
	}
	return o, nil
}

func decodeOptimizer(root *object) (Optimizer, error) {
	o := Optimizer{Algorithm: aisimulate.DefaultAlgorithm, MaxTrials: aisimulate.DefaultMaxTrials, Parallelism: aisimulate.DefaultParallelism,
		CandidateTimeoutSeconds: aisimulate.DefaultCandidateTimeoutSeconds, Seed: aisimulate.DefaultSeed}
	if !root.has("optimizer") {
		return o, nil
	}
	oo, err := newObject("optimizer", root.get("optimizer"),
		[]string{"algorithm", "max_trials", "parallelism", "candidate_timeout_seconds", "seed"}, nil)
	if err != nil {
		return o, err
	}
	if o.Algorithm, err = oo.enum("algorithm", aisimulate.DefaultAlgorithm, "bayesian", "random"); err != nil {
		return o, err
	}
	if o.MaxTrials, err = oo.integer("max_trials", aisimulate.DefaultMaxTrials, 1); err != nil {
		return o, err
	}
	if o.Parallelism, err = oo.integer("parallelism", aisimulate.DefaultParallelism, 1); err != nil {
		return o, err
	}
	if o.CandidateTimeoutSeconds, err = oo.positive("candidate_timeout_seconds", aisimulate.DefaultCandidateTimeoutSeconds); err != nil {
		return o, err
	}
	seed, err := oo.integer("seed", aisimulate.DefaultSeed, 0)
	o.Seed = int64(seed)
	return o, err
}

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

func defaultWorker(cmd Command) *Worker {
	w := &Worker{PrefixCaching: true, Parallelism: Parallelism{Preset: PresetDefault}, StartupSeconds: -1}
	if cmd == Predict {
		w.Parallelism = Parallelism{Preset: PresetNone, Knobs: map[string][]int{}}
		for _, k := range KnobNames {
			w.Parallelism.Knobs[k] = []int{1}
		}
	}
	return w
}

func decodeWorker(cmd Command, path string, x *document.Value) (*Worker, error) {
	wo, err := newObject(path, x, []string{"parallelism", "scheduler", "kv_cache", "timing", "startup_seconds", "hardware"},
		[]string{"context_length"})
	if err != nil {
		return nil, err
	}
	w := defaultWorker(cmd)
	if isDomain(wo.get("hardware")) {
		return nil, errf(wo.p("hardware"), "must be a concrete hardware id (domains are not allowed here)")
	}
	if w.Hardware, err = wo.str("hardware", ""); err != nil {
		return nil, err
	}
	if w.Hardware == "auto" {
		return nil, errf(wo.p("hardware"), "must be a concrete hardware id, not auto")
	}
	if w.StartupSeconds, err = decodeStartup(wo); err != nil {
		return nil, err
	}
	if wo.has("timing") {
		if w.FixedTiming, err = decodeTiming(wo.p("timing"), wo.get("timing")); err != nil {
			return nil, err
		}
	}
	if wo.has("parallelism") {
		if w.Parallelism, err = decodeParallelism(cmd, wo.p("parallelism"), wo.get("parallelism")); err != nil {
			return nil, err
		}
	}
	if wo.has("scheduler") {
		so, err := newObject(wo.p("scheduler"), wo.get("scheduler"),
			[]string{"max_batched_tokens", "max_sequences", "prefill_schedule_interval", "prefill_decode_interval"}, nil)
		if err != nil {
			return nil, err
		}
		// The backends' prefill cadences at their defaults (every pass may admit prefill, no
		// blocked rounds) are how aisim schedules; other values are not modelled.
		if err := so.defaultOnly("prefill_schedule_interval", 1); err != nil {
			return nil, err
		}
		if err := so.defaultOnly("prefill_decode_interval", 0); err != nil {
			return nil, err
		}
		spec := domainSpec{isInt: true, allowRange: true}
		if d, ok, err := so.domain(cmd, "max_batched_tokens", spec); err != nil {
			return nil, err
		} else if ok {
			w.MaxBatchedTokens = ints(d)
		}
		if d, ok, err := so.domain(cmd, "max_sequences", spec); err != nil {
			return nil, err
		} else if ok {
			w.MaxSequences = ints(d)
		}
	}
	if wo.has("kv_cache") {
		ko, err := newObject(wo.p("kv_cache"), wo.get("kv_cache"), []string{"block_size", "prefix_caching", "capacity", "bytes_per_token"},
			[]string{"host_offload", "g3_offload", "state_cache"})
		if err != nil {
			return nil, err
		}
		// bytes_per_token: auto is what aisim always does (the model's KV bytes per token at the
		// role's KV precision and parallelism); an explicit byte count is not modelled.
		if x := ko.get("bytes_per_token"); x != nil && !(x.Kind == document.KindString && x.Str == "auto") {
			return nil, errf(ko.p("bytes_per_token"), "explicit byte counts are %s (only auto, the model's KV bytes per token)", notSupported)
		}
		if isDomain(ko.get("block_size")) {
			return nil, errf(ko.p("block_size"), "domains here are %s", notSupported)
		}
		if w.BlockSize, err = ko.integer("block_size", 0, 1); err != nil {
			return nil, err
		}
		if w.PrefixCaching, err = ko.boolean("prefix_caching", true); err != nil {
			return nil, err
		}
		if ko.has("capacity") {
			co, err := newObject(ko.p("capacity"), ko.get("capacity"), []string{"type", "memory_fraction", "blocks", "cuda_graph_reserved_bytes"},
				[]string{"bytes"})
			if err != nil {
				return nil, err
			}
			// No memory held back for CUDA graphs is AISimulate's default and aisim's model.
			if err := co.defaultOnly("cuda_graph_reserved_bytes", 0); err != nil {
				return nil, err
			}
			typ, err := co.enum("type", "default", "default", "fixed")
			if err != nil {
				return nil, err
			}
			if typ == "default" {
				if co.has("blocks") {
					return nil, errf(co.p("blocks"), "only allowed with type: fixed")
				}
				d, ok, err := co.domain(cmd, "memory_fraction", domainSpec{minExcl: 0, maxIncl: 1, allowRange: true})
				if err != nil {
					return nil, err
				}
				if ok {
					w.MemoryFraction = d.Points()
				}
			} else {
				if co.has("memory_fraction") {
					return nil, errf(co.p("memory_fraction"), "only allowed with type: default")
				}
				if !co.has("blocks") {
					return nil, errf(co.p("blocks"), "required with type: fixed")
				}
				if w.FixedBlocks, err = co.integer("blocks", 0, 1); err != nil {
					return nil, err
				}
			}
		}
	}
	return w, nil
}

func decodeParallelism(cmd Command, path string, x *document.Value) (Parallelism, error) {
	known := append([]string{"preset"}, KnobNames...)
	po, err := newObject(path, x, known, []string{"prefill_context", "decode_context", "context"})
	if err != nil {
		return Parallelism{}, err
	}
	knobsGiven := false
	for _, k := range KnobNames {
		knobsGiven = knobsGiven || po.has(k)
	}
	p := Parallelism{Preset: PresetNone, Knobs: map[string][]int{}}
	if px := po.get("preset"); px != nil {
		if cmd == Predict {
			return p, errf(po.p("preset"), "presets are only allowed in recommend")
		}
		switch {
		case px.Kind == document.KindString && px.Str == "default":
			p.Preset = PresetDefault
		case px.Kind == document.KindBool && !px.Bool, px.Kind == document.KindMap && len(px.Keys) == 0:
			p.Preset = PresetNone
		case px.Kind == document.KindSeq:
			p.Preset = PresetCustom
			if len(px.Seq) == 0 {
				return p, errf(po.p("preset"), "a custom preset list must not be empty")
			}
			for i, e := range px.Seq {
				s, err := decodeShape(index(po.p("preset"), i), e)
				if err != nil {
					return p, err
				}
				p.Custom = append(p.Custom, s)
			}
		default:
			return p, errf(po.p("preset"), "expected default, false, {} or a list of complete mappings")
		}
		if p.Preset != PresetNone && knobsGiven {
			return p, errf(path, "a preset and independent knobs cannot be combined; set preset: false to use knobs")
		}
	} else if !knobsGiven && cmd == Recommend {
		p.Preset = PresetDefault
	}
	for _, k := range KnobNames {
		d, ok, err := po.domain(cmd, k, domainSpec{isInt: true, allowRange: true})
		if err != nil {
			return p, err
		}
		switch {
		case ok:
			p.Knobs[k] = ints(d)
		case cmd == Predict:
			p.Knobs[k] = []int{1}
		}
		if k == KnobPipeline && ok && (len(p.Knobs[k]) != 1 || p.Knobs[k][0] != 1) {
			return p, errf(po.p(k), "pipeline parallelism > 1 is %s", notSupported)
		}
	}
	return p, nil
}

func decodeShape(path string, x *document.Value) (Shape, error) {
	o, err := newObject(path, x, KnobNames, nil)
	if err != nil {
		return Shape{}, err
	}
	var s Shape
	dst := []*int{&s.Replicas, &s.Tensor, &s.Pipeline, &s.AttentionData, &s.MoETensor, &s.MoEExpert}
	for i, k := range KnobNames {
		if !o.has(k) {
			return s, errf(o.p(k), "required in a custom preset entry (entries must be complete)")
		}
		if isDomain(o.get(k)) {
			return s, errf(o.p(k), "domains are not allowed inside preset entries")
		}
		if *dst[i], err = o.integer(k, 0, 1); err != nil {
			return s, err
		}
	}
	if s.Pipeline != 1 {
		return s, errf(join(path, KnobPipeline), "pipeline parallelism > 1 is %s", notSupported)
	}
	return s, nil
}

func crossChecks(doc *Document) error {
	t := doc.Traffic
	if cl := doc.Engine.ContextLength; cl > 0 && t.InputTokens+t.OutputTokens > cl {
		return errf("traffic.source", "input_tokens + output_tokens (%d) exceeds engine.context_length (%d)", t.InputTokens+t.OutputTokens, cl)
	}
	if doc.Command == Recommend {
		branches := len(doc.Engine.Modes)
		if doc.Optimizer.MaxTrials < branches {
			return errf("optimizer.max_trials", "must be >= the number of mode branches (%d)", branches)
		}
		if doc.Optimization.Target == output.TargetMinGPUs {
			if !t.Load.Intensity.IsFixed() {
				return errf("traffic.load", "min_gpus requires a fixed load (no domains)")
			}
			if t.Load.Type == LoadKVCapacityFraction {
				return errf("traffic.load.type", "min_gpus does not support kv_capacity_fraction")
			}
		}
	}
	return nil
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

// decodeStartup reads workers.<role>.startup_seconds, a concrete number >= 0 (-1 when absent).
// It only delays workers the Planner adds at runtime; aisim's pools are fixed, so the value is
// accepted, validated and otherwise ignored.
func decodeStartup(wo *object) (float64, error) {
	x := wo.get("startup_seconds")
	if x == nil {
		return -1, nil
	}
	if isDomain(x) {
		return 0, errf(wo.p("startup_seconds"), "must be concrete (domains are not allowed here)")
	}
	f, err := numValue(wo.p("startup_seconds"), x)
	if err != nil {
		return 0, err
	}
	if f < 0 {
		return 0, errf(wo.p("startup_seconds"), "must be >= 0")
	}
	return f, nil
}

// decodeTiming reads workers.<role>.timing: type default (the performance model) or fixed
// (prefill_ms for a step that computes prompt tokens, decode_ms for a decode-only step).
func decodeTiming(path string, x *document.Value) (*FixedTiming, error) {
	to, err := newObject(path, x, []string{"type", "prefill_ms", "decode_ms", "forward_model", "estimation_mode", "fallback_policy"},
		append([]string{"fpm_parquet_path", "estimator_config", "systems_paths", "database_mode", "transfer_policy", "attention_backend"}, quantFields...))
	if err != nil {
		return nil, err
	}
	if err := estimatorSelection(to); err != nil {
		return nil, err
	}
	// forward_model: op_level is the default timing provider, which aisim's performance model
	// stands in for; whole-forward (fpm) profiles are not modelled.
	if err := to.defaultOnly("forward_model", "op_level"); err != nil {
		return nil, err
	}
	typ, err := to.str("type", "default")
	if err != nil {
		return nil, err
	}
	switch typ {
	case "default":
		for _, k := range []string{"prefill_ms", "decode_ms"} {
			if to.has(k) {
				return nil, errf(to.p(k), "only allowed with type: fixed")
			}
		}
		return nil, nil
	case "polynomial":
		return nil, errf(to.p("type"), "polynomial: %s", notSupported)
	case "fixed":
		for _, k := range []string{"forward_model", "estimation_mode", "fallback_policy"} {
			if to.has(k) {
				return nil, errf(to.p(k), "only allowed with type: default")
			}
		}
	default:
		return nil, errf(to.p("type"), "must be one of [default fixed polynomial], got %q", typ)
	}
	ft := &FixedTiming{}
	for k, dst := range map[string]*float64{"prefill_ms": &ft.PrefillMs, "decode_ms": &ft.DecodeMs} {
		if !to.has(k) {
			return nil, errf(to.p(k), "required with type: fixed")
		}
		if *dst, err = to.positive(k, 0); err != nil {
			return nil, err
		}
	}
	return ft, nil
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
