package main

import (
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/dgdr-operator/dgdr-operator/tools/aisim/input"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/search"
)

// budgetSearch is one request's lowered input, ready to be searched at either budget.
type budgetSearch struct {
	name  string
	input []byte
}

// exampleRequests lists every request under examples/ (the operator's configuration excluded),
// relative to root, in a stable order.
func exampleRequests(root string) ([]string, error) {
	var out []string
	dir := filepath.Join(root, "examples")
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path == filepath.Join(dir, "config") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".yaml") {
			out = append(out, path)
		}
		return nil
	})
	slices.Sort(out)
	return out, err
}

// searchCost runs aisim's search of a lowered input at a GPU budget (decode the input with
// optimization.constraints.max_candidate_gpus set, resolve model and hardware, enumerate, sample,
// simulate, rank) and returns the CPU seconds and the wall seconds it took and the candidates it
// evaluated. The search spreads its simulations over every core; the CPU time is what stays
// comparable when other work shares the cores, the wall time what a user waits.
func searchCost(in []byte, budget int) (cpu, wall float64, candidates int, err error) {
	runtime.GC()
	cpu0, wall0 := cpuSeconds(), time.Now()
	doc, err := input.Decode(input.Recommend, in, []string{fmt.Sprintf("optimization.constraints.max_candidate_gpus=%d", budget)})
	if err != nil {
		return 0, 0, 0, err
	}
	env, err := search.NewEnv(doc)
	if err != nil {
		return 0, 0, 0, err
	}
	run, err := env.Recommend(context.Background(), search.Options{})
	if err != nil {
		return 0, 0, 0, err
	}
	if len(run.Candidates) == 0 {
		return 0, 0, 0, fmt.Errorf("budget %d: no candidate", budget)
	}
	return cpuSeconds() - cpu0, time.Since(wall0).Seconds(), len(run.Candidates), nil
}

// budgetCost is one request's median costs at both budgets.
type budgetCost struct {
	name                      string
	cpu8, cpu64, wall64       float64
	candidates8, candidates64 int
}

// perCandidate is the CPU cost of one evaluated candidate at 64 GPUs over that at 8.
func (c budgetCost) perCandidate() float64 {
	return (c.cpu64 / float64(c.candidates64)) / (c.cpu8 / float64(c.candidates8))
}

// benchBudgetScaling (P10): for every request under examples/, lowered as admission and the
// operator lower it, aisim's search at a 64-GPU budget against the same search at 8 GPUs, in the
// same process. Each request is searched rounds times at each budget, alternating, after one
// warm-up of each, and its median costs are compared. The goal has two parts: the CPU cost per
// evaluated candidate at 64 GPUs at most perCandidateGoal times that at 8, for the worst request
// (a budget-64 search evaluates up to optimizer.max_trials candidates where a budget-8 space is
// often smaller and searched exhaustively, so whole-search times are not comparable), and every
// request's whole budget-64 search within wallGoal seconds of wall time.
func benchBudgetScaling(root string, rounds int) (figure, error) {
	const perCandidateGoal, wallGoal = 1.5, 2.0
	rounds = max(1, rounds)
	files, err := exampleRequests(root)
	if err != nil {
		return figure{}, err
	}
	var reqs []budgetSearch
	for _, f := range files {
		in, err := loweredInput(root, f, 0)
		if err != nil {
			return figure{}, fmt.Errorf("%s: %w", f, err)
		}
		rel, _ := filepath.Rel(filepath.Join(root, "examples"), f)
		reqs = append(reqs, budgetSearch{name: strings.TrimSuffix(rel, ".yaml"), input: in})
	}
	var costs []budgetCost
	for _, r := range reqs {
		var cpu8, cpu64, wall64 []float64
		c := budgetCost{name: r.name}
		for i := -1; i < rounds; i++ {
			a, _, n, err := searchCost(r.input, 8)
			if err != nil {
				return figure{}, fmt.Errorf("%s: %w", r.name, err)
			}
			c.candidates8 = n
			b, w, n, err := searchCost(r.input, 64)
			if err != nil {
				return figure{}, fmt.Errorf("%s: %w", r.name, err)
			}
			c.candidates64 = n
			if i >= 0 {
				cpu8, cpu64, wall64 = append(cpu8, a), append(cpu64, b), append(wall64, w)
			}
		}
		c.cpu8, c.cpu64, c.wall64 = median(cpu8), median(cpu64), median(wall64)
		costs = append(costs, c)
	}
	worst := slices.MaxFunc(costs, func(a, b budgetCost) int { return cmp.Compare(a.perCandidate(), b.perCandidate()) })
	slowest := slices.MaxFunc(costs, func(a, b budgetCost) int { return cmp.Compare(a.wall64, b.wall64) })
	var per []string
	for _, c := range costs {
		per = append(per, fmt.Sprintf("%s %.2f (%.0f/%.0f ms CPU, %d/%d candidates, %.0f ms wall at 64)",
			c.name, c.perCandidate(), c.cpu64*1e3, c.cpu8*1e3, c.candidates64, c.candidates8, c.wall64*1e3))
	}
	ratio := worst.perCandidate()
	return figure{
		id: "P10", name: "aisim_per_candidate_budget64_vs_budget8", isRatio: true, ratio: ratio,
		goal: perCandidateGoal, goalAlso: fmt.Sprintf("budget64_wall_s<=%g", wallGoal),
		ok: ratio <= perCandidateGoal && slowest.wall64 <= wallGoal,
		extra: fmt.Sprintf("worst=%s budget64_cpu_ms=%.0f budget8_cpu_ms=%.0f candidates=%d/%d budget64_wall_s=%.2f slowest=%s slowest_cpu_s=%.2f requests=%d",
			worst.name, worst.cpu64*1e3, worst.cpu8*1e3, worst.candidates64, worst.candidates8,
			slowest.wall64, slowest.name, slowest.cpu64, len(costs)),
		note: fmt.Sprintf("aisim's search of each request under examples/ (lowered; traces: examples/traces/mooncake-sample.jsonl) at max_candidate_gpus 64 and 8, median of %d alternating runs each; per request the CPU cost per candidate at 64 over that at 8 (CPU ms and candidates at 64/8, wall ms at 64): %s",
			rounds, strings.Join(per, "; ")),
	}, nil
}

// median of xs; of an even count, the mean of the two middle values.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[n/2]
}
