package input

import (
	"slices"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/document"
)

// The traffic section: the synthetic or session source, or the trace, and its load.

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
