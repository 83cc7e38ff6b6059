package aisimulate

import (
	"slices"
	"strconv"
	"strings"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
)

// The compile step's Sweeper models: aisimulate/sweeper/config.py, validated by
// recommendation_to_sweeper (rules_recommend.go).

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
