package aisimulate

import (
	"slices"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
)

// The root model's validator: aisimulate/config/cli.py
// CoreRecommendationConfig._validate_cross_component.

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
