package aisimulate

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
)

// The rules_*.go files mirror what the real AISimulate checks in Python and the bundled JSON
// Schema cannot express, one file per Python module: the model validators of
// aisimulate.config.cli.CoreRecommendationConfig and of the models it holds
// (aisimulate/config/{common,traffic,engine,cli}.py), and the checks of the CLI's compile step
// (aisimulate/recommend.py recommendation_to_sweeper and the Sweeper models it validates,
// aisimulate/sweeper/config.py), which `aisimulate recommend` runs before the search: a
// ValueError anywhere there is an exit 2, like a model error. One function per real validator
// (family); each comment names the file and function that enforce it, and each problem names the
// field path the user has to change. This file runs them.
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

// parallelKnobs are ParallelismRecommendationConfig's independent knobs (recommend.py _PARALLEL_KEYS).
var parallelKnobs = []string{"replicas", "tensor", "pipeline", "attention_data", "moe_tensor", "moe_expert"}

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
