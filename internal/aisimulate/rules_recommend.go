package aisimulate

import (
	"slices"
	"strconv"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
)

// The CLI's compile step: aisimulate/recommend.py recommendation_to_sweeper (the Sweeper models it
// validates are in rules_sweeper.go).

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
