package aisimulate

import (
	"slices"
	"strings"
)

// SystemProblems checks the systems an input document searches on (engine.hardware and the
// prefill and decode workers' hardware) against the pinned AISimulate's catalogue. These are
// not checks of the input model or of the compile step (CheckInput): `aisimulate recommend`
// accepts the document and fails when its search starts (exit 2, "no deployment_mode has a
// viable parallel config"):
//   - a system it has no spec of cannot be loaded;
//   - a system without performance data for a searched backend cannot have its KV cache
//     estimated (sweeper/kv_estimate.py resolve_backend_version raises NoPerfDatabase), and
//     sweeper/search_space.py drops the backend; with none left, the search has nothing to run.
//
// A document that brings its own performance data (systems_path, systems_paths) or an FPM
// profile, which sizes workers without the database, is only checked for known systems.
func SystemProblems(doc map[string]any) []Problem {
	v := newInputView(doc)
	ownData := set(v.engine, "systems_path") || set(v.engine, "systems_paths") || set(v.engine, "fpm_profile")
	for _, role := range languageRoles {
		ownData = ownData || set(mapOf(v.worker(role)["timing"]), "systems_paths")
	}
	backends := slices.Compact(slices.Sorted(slices.Values(v.backends())))
	var ps []Problem
	check := func(path []string, system string) {
		if system == "" || system == "auto" {
			return
		}
		s, ok := LookupSystem(system)
		if !ok {
			ps = append(ps, *problemf(path, "%q is not a system of the pinned AISimulate %s (%s)", system, SystemsAISimulateVersion, strings.Join(KnownSKUs(), ", ")))
			return
		}
		if ownData || len(backends) == 0 || slices.ContainsFunc(backends, func(b string) bool { return s.PerfData[b] != "" }) {
			return
		}
		bring := "or bring a performance database for it (engine.systems_paths)"
		if len(s.PerfData) == 0 {
			ps = append(ps, *problemf(path, "the pinned AISimulate %s has no performance data for %s (its spec is estimate-only), so its search cannot estimate a worker's KV cache: search a system with performance data (%s) %s",
				SystemsAISimulateVersion, system, strings.Join(systemsWithPerfData(backends), ", "), bring))
			return
		}
		have := make([]string, 0, len(s.PerfData))
		for b := range s.PerfData {
			have = append(have, b)
		}
		slices.Sort(have)
		ps = append(ps, *problemf([]string{"engine", "backend"}, "the pinned AISimulate %s has performance data for %s only with %s, not with %s: search one of those backends %s",
			SystemsAISimulateVersion, system, strings.Join(have, ", "), strings.Join(backends, ", "), bring))
	}
	h, _ := v.engine["hardware"].(string)
	check([]string{"engine", "hardware"}, h)
	for _, role := range []string{"prefill", "decode"} {
		h, _ := v.worker(role)["hardware"].(string)
		check([]string{"engine", "workers", role, "hardware"}, h)
	}
	return ps
}

// systemsWithPerfData lists the systems with performance data for one of backends.
func systemsWithPerfData(backends []string) []string {
	var out []string
	for _, s := range wheelSystems {
		if slices.ContainsFunc(backends, func(b string) bool { return s.PerfData[b] != "" }) {
			out = append(out, s.ID)
		}
	}
	return out
}
