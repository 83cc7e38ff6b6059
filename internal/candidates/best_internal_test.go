package candidates

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
)

// settledAt is a feasible candidate with the given throughput per GPU and per user; config tells
// identical configurations apart.
func settledAt(id, config string, perGPU, perUser float64) Settled {
	score := perGPU
	return Settled{ID: id, Config: config, Record: &output.Candidate{CandidateID: id, Status: output.StatusFeasible, UsedGPUs: 1, Score: &score,
		Metrics: map[string]float64{"output_throughput_tok_s_per_gpu": perGPU, "mean_output_token_throughput_per_user": perUser}}}
}

// TestBestSoFarPareto: with a Pareto target the best so far is the spread of the front of what
// settled, in front order, each with its role.
func TestBestSoFarPareto(t *testing.T) {
	tests := []struct {
		name    string
		offered []Settled
		want    []string
	}{
		{name: "one point", offered: []Settled{settledAt("a", "1", 100, 10)}, want: []string{"a=max-throughput-per-gpu"}},
		{
			name:    "dominated points never enter",
			offered: []Settled{settledAt("a", "1", 100, 10), settledAt("b", "2", 90, 9), settledAt("c", "3", 10, 100)},
			want:    []string{"a=max-throughput-per-gpu", "c=max-throughput-per-user"},
		},
		{
			name:    "the first of identical configurations stays",
			offered: []Settled{settledAt("a", "1", 100, 10), settledAt("b", "1", 100, 10), settledAt("c", "3", 10, 100)},
			want:    []string{"a=max-throughput-per-gpu", "c=max-throughput-per-user"},
		},
		{
			name: "a front larger than the limit: the ends and the knee",
			offered: []Settled{settledAt("a", "1", 100, 10), settledAt("b", "2", 95, 30), settledAt("c", "3", 80, 70),
				settledAt("d", "4", 40, 90), settledAt("e", "5", 10, 100)},
			want: []string{"a=max-throughput-per-gpu", "c=knee", "e=max-throughput-per-user"},
		},
		{
			name: "a point that dominates takes the place of those it dominates",
			offered: []Settled{settledAt("a", "1", 100, 10), settledAt("b", "2", 95, 30), settledAt("c", "3", 80, 70),
				settledAt("d", "4", 40, 90), settledAt("e", "5", 10, 100), settledAt("f", "6", 200, 200)},
			want: []string{"f=max-throughput-per-gpu"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &BestSoFar{Limit: 3, Pareto: true}
			for _, s := range tt.offered {
				b.offer(s)
			}
			var got []string
			for _, s := range b.List() {
				got = append(got, fmt.Sprintf("%s=%s", s.ID, s.Role))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("List (-want +got):\n%s", diff)
			}
		})
	}
}
