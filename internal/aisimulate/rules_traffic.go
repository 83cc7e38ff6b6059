package aisimulate

import (
	"math"
	"slices"
	"strings"
)

// The validators of aisimulate/config/traffic.py: the traffic section's models.

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
