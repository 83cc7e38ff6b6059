package output

import (
	"math"
	"slices"
)

// Why a point of the Pareto front was published (SpreadFront).
const (
	// RoleMaxThroughputPerGPU is the end of the front with the most throughput per GPU.
	RoleMaxThroughputPerGPU = "max-throughput-per-gpu"
	// RoleKnee is the point farthest from the line between the two ends (normalized axes):
	// where trading one objective for the other stops paying.
	RoleKnee = "knee"
	// RoleMaxThroughputPerUser is the end of the front with the most throughput per user.
	RoleMaxThroughputPerUser = "max-throughput-per-user"
	// RoleSpread is a point chosen to close the largest gap left between the points above.
	RoleSpread = "spread"
)

// Pick is one point SpreadFront chose: its index in the front and why it was chosen.
type Pick struct {
	Index int
	Role  string
}

// SpreadFront chooses at most n points of front, a Pareto front by increasing throughput per user
// (ParetoFront's order), so that they span the trade-off: the end with the most throughput per
// GPU, the end with the most throughput per user, the knee, then one by one the point that best
// halves the widest gap between two consecutive chosen points. Distances are Euclidean on axes
// normalized to the front's range, so neither objective's unit weighs more. The picks come back
// in front order; a front of at most n points is chosen whole. Ties go to the earlier point.
func SpreadFront[T any](front []T, n int, objectives func(T) (perGPU, perUser float64)) []Pick {
	if n <= 0 || len(front) == 0 {
		return nil
	}
	xs, ys := normalizedFront(front, objectives)
	last := len(front) - 1
	role := make([]string, len(front))
	role[0] = RoleMaxThroughputPerGPU
	chosen := 1
	if n >= 2 && last > 0 {
		role[last] = RoleMaxThroughputPerUser
		chosen++
	}
	if n >= 3 && last > 1 {
		knee, far := 1, -1.0
		for i := 1; i < last; i++ {
			// Distance to the line through the ends, (0, 1) and (1, 0) normalized, up to a constant.
			if d := math.Abs(xs[i] + ys[i] - 1); d > far {
				knee, far = i, d
			}
		}
		role[knee] = RoleKnee
		chosen++
	}
	dist := func(i, j int) float64 { return math.Hypot(xs[i]-xs[j], ys[i]-ys[j]) }
	for ; chosen < min(n, len(front)); chosen++ {
		// The widest gap between consecutive chosen points with a point left inside.
		from, to, widest := -1, -1, -1.0
		prev := 0
		for i := 1; i <= last; i++ {
			if role[i] == "" {
				continue
			}
			if i-prev > 1 && dist(prev, i) > widest {
				from, to, widest = prev, i, dist(prev, i)
			}
			prev = i
		}
		// The point inside that leaves the larger of the two new gaps smallest.
		best, bestGap := from+1, math.Inf(1)
		for i := from + 1; i < to; i++ {
			if g := max(dist(from, i), dist(i, to)); g < bestGap {
				best, bestGap = i, g
			}
		}
		role[best] = RoleSpread
	}
	picks := make([]Pick, 0, chosen)
	for i, r := range role {
		if r != "" {
			picks = append(picks, Pick{Index: i, Role: r})
		}
	}
	return picks
}

// normalizedFront maps each point to (throughput per user, throughput per GPU) scaled to [0, 1]
// over the front; an objective with no range maps to 0.
func normalizedFront[T any](front []T, objectives func(T) (perGPU, perUser float64)) (xs, ys []float64) {
	xs, ys = make([]float64, len(front)), make([]float64, len(front))
	for i, p := range front {
		ys[i], xs[i] = objectives(p)
	}
	scale := func(v []float64) {
		lo, hi := slices.Min(v), slices.Max(v)
		for i := range v {
			if hi > lo {
				v[i] = (v[i] - lo) / (hi - lo)
			} else {
				v[i] = 0
			}
		}
	}
	scale(xs)
	scale(ys)
	return xs, ys
}
