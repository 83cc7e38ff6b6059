package output_test

import (
	"fmt"
	"math"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
)

// syntheticFront is a Pareto front by increasing throughput per user. Normalized (per user over
// 10..210, per GPU over 100..3000), point 3 is the farthest from the line between the ends.
var syntheticFront = []frontPoint{
	{"p0", 3000, 10}, {"p1", 2950, 20}, {"p2", 2900, 30}, {"p3", 2700, 60},
	{"p4", 2000, 100}, {"p5", 1200, 150}, {"p6", 600, 200}, {"p7", 100, 210},
}

// ranked is a pick as a published candidate: rank by position along the front, id, role.
func ranked(front []frontPoint, picks []output.Pick) []string {
	var out []string
	for i, p := range picks {
		out = append(out, fmt.Sprintf("#%d %s %s", i+1, front[p.Index].id, p.Role))
	}
	return out
}

func TestSpreadFront(t *testing.T) {
	objectives := func(p frontPoint) (float64, float64) { return p.gpu, p.user }
	tests := []struct {
		name  string
		front []frontPoint
		n     int
		want  []string
	}{
		{name: "empty front", front: nil, n: 5, want: nil},
		{name: "no room", front: syntheticFront, n: 0, want: nil},
		{name: "one point is the throughput-per-GPU end", front: syntheticFront[:1], n: 5,
			want: []string{"#1 p0 max-throughput-per-gpu"}},
		{name: "one pick is the throughput-per-GPU end", front: syntheticFront, n: 1,
			want: []string{"#1 p0 max-throughput-per-gpu"}},
		{name: "two picks are the ends", front: syntheticFront, n: 2,
			want: []string{"#1 p0 max-throughput-per-gpu", "#2 p7 max-throughput-per-user"}},
		{name: "three picks: the ends and the knee", front: syntheticFront, n: 3,
			want: []string{"#1 p0 max-throughput-per-gpu", "#2 p3 knee", "#3 p7 max-throughput-per-user"}},
		{name: "the fourth halves the widest gap, knee to per-user end", front: syntheticFront, n: 4,
			want: []string{"#1 p0 max-throughput-per-gpu", "#2 p3 knee", "#3 p5 spread", "#4 p7 max-throughput-per-user"}},
		{name: "then knee to p5, then p5 to the end", front: syntheticFront, n: 6,
			want: []string{"#1 p0 max-throughput-per-gpu", "#2 p3 knee", "#3 p4 spread", "#4 p5 spread", "#5 p6 spread", "#6 p7 max-throughput-per-user"}},
		{name: "then the gap between the per-GPU end and the knee", front: syntheticFront, n: 7,
			want: []string{"#1 p0 max-throughput-per-gpu", "#2 p2 spread", "#3 p3 knee", "#4 p4 spread", "#5 p5 spread", "#6 p6 spread", "#7 p7 max-throughput-per-user"}},
		{name: "a front no larger than n is chosen whole", front: syntheticFront, n: 10,
			want: []string{"#1 p0 max-throughput-per-gpu", "#2 p1 spread", "#3 p2 spread", "#4 p3 knee", "#5 p4 spread", "#6 p5 spread", "#7 p6 spread", "#8 p7 max-throughput-per-user"}},
		{name: "two points have no knee", front: []frontPoint{{"a", 10, 1}, {"b", 1, 10}}, n: 5,
			want: []string{"#1 a max-throughput-per-gpu", "#2 b max-throughput-per-user"}},
		{name: "equal points: ties go to the earlier one", front: []frontPoint{{"a", 10, 1}, {"b", 5, 5}, {"c", 5, 5}, {"d", 1, 10}}, n: 3,
			want: []string{"#1 a max-throughput-per-gpu", "#2 b knee", "#3 d max-throughput-per-user"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ranked(tt.front, output.SpreadFront(tt.front, tt.n, objectives))
			if diff := gocmp.Diff(tt.want, got); diff != "" {
				t.Errorf("picks (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSpreadFrontSpacing: each further pick never widens the widest normalized gap between
// consecutive picks, and the picks always include both ends.
func TestSpreadFrontSpacing(t *testing.T) {
	objectives := func(p frontPoint) (float64, float64) { return p.gpu, p.user }
	norm := func(p frontPoint) (float64, float64) { return (p.user - 10) / 200, (p.gpu - 100) / 2900 }
	prev := math.Inf(1)
	for n := 2; n <= len(syntheticFront); n++ {
		picks := output.SpreadFront(syntheticFront, n, objectives)
		if len(picks) != n || picks[0].Index != 0 || picks[n-1].Index != len(syntheticFront)-1 {
			t.Fatalf("n=%d: picks %v do not span the front", n, picks)
		}
		widest := 0.0
		for i := 1; i < len(picks); i++ {
			x0, y0 := norm(syntheticFront[picks[i-1].Index])
			x1, y1 := norm(syntheticFront[picks[i].Index])
			widest = max(widest, math.Hypot(x1-x0, y1-y0))
		}
		if widest > prev+1e-12 {
			t.Errorf("n=%d: the widest gap grew from %.3f to %.3f", n, prev, widest)
		}
		prev = widest
	}
}
