package output

import (
	"cmp"
	"math"
	"slices"
)

// CompareRank is the ranking rule of feasible candidates (negative when a ranks before b):
// higher score first, then fewer GPUs, then tieBreak. The recommender's final ranking breaks
// ties by its target's secondary metrics and the configuration, the provisional ranking by
// settle order, so the tie-break is the caller's. Scores must be set and finite.
func CompareRank(a, b *Candidate, tieBreak func(a, b *Candidate) int) int {
	if c := cmp.Compare(*b.Score, *a.Score); c != 0 {
		return c
	}
	if c := cmp.Compare(a.UsedGPUs, b.UsedGPUs); c != 0 {
		return c
	}
	return tieBreak(a, b)
}

// ParetoFront returns the items no other item dominates (at least as much throughput per GPU
// and per user, more of one; equal items do not dominate each other), by increasing throughput
// per user, ties by tieBreak and then input order. objectives reads an item's throughput per
// GPU and per user.
func ParetoFront[T any](items []T, objectives func(T) (perGPU, perUser float64), tieBreak func(a, b T) int) []T {
	type point struct{ gpu, user float64 }
	pts := make([]point, len(items))
	idx := make([]int, len(items))
	for i, it := range items {
		pts[i].gpu, pts[i].user = objectives(it)
		idx[i] = i
	}
	// Sweep by decreasing throughput per user (ties: decreasing throughput per GPU): an item is
	// dominated exactly when an item before it has more throughput per GPU, or the same with
	// more throughput per user.
	slices.SortStableFunc(idx, func(a, b int) int {
		return cmp.Or(cmp.Compare(pts[b].user, pts[a].user), cmp.Compare(pts[b].gpu, pts[a].gpu))
	})
	onFront := make([]bool, len(items))
	best := point{gpu: math.Inf(-1), user: math.Inf(-1)}
	for _, i := range idx {
		p := pts[i]
		if p.gpu > best.gpu || p == best {
			onFront[i] = true
			best = p
		}
	}
	var front []T
	for i, it := range items {
		if onFront[i] {
			front = append(front, it)
		}
	}
	slices.SortStableFunc(front, func(a, b T) int {
		_, ua := objectives(a)
		_, ub := objectives(b)
		return cmp.Or(cmp.Compare(ua, ub), tieBreak(a, b))
	})
	return front
}
