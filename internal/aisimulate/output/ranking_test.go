package output_test

import (
	"cmp"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
)

type frontPoint struct {
	id        string
	gpu, user float64
}

func TestParetoFront(t *testing.T) {
	byID := func(a, b frontPoint) int { return strings.Compare(a.id, b.id) }
	objectives := func(p frontPoint) (float64, float64) { return p.gpu, p.user }
	tests := []struct {
		name   string
		points []frontPoint
		want   []string
	}{
		{name: "empty", want: nil},
		{name: "one point", points: []frontPoint{{"a", 1, 1}}, want: []string{"a"}},
		{
			name:   "dominated points are left out, the front reads by increasing throughput per user",
			points: []frontPoint{{"a", 10, 1}, {"b", 5, 5}, {"c", 4, 4}, {"d", 1, 10}, {"e", 10, 0.5}},
			want:   []string{"a", "b", "d"},
		},
		{
			name:   "more of one objective and the same of the other dominates",
			points: []frontPoint{{"a", 10, 5}, {"b", 10, 4}, {"c", 9, 5}},
			want:   []string{"a"},
		},
		{
			name:   "equal points do not dominate each other; ties by the tie-break",
			points: []frontPoint{{"b", 3, 3}, {"a", 3, 3}, {"c", 1, 1}},
			want:   []string{"a", "b"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, p := range output.ParetoFront(tt.points, objectives, byID) {
				got = append(got, p.id)
			}
			if diff := gocmp.Diff(tt.want, got); diff != "" {
				t.Errorf("front (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCompareRank(t *testing.T) {
	score := func(v float64) *float64 { return &v }
	byID := func(a, b *output.Candidate) int { return cmp.Compare(a.CandidateID, b.CandidateID) }
	tests := []struct {
		name string
		a, b output.Candidate
		want int
	}{
		{name: "higher score first", a: output.Candidate{CandidateID: "z", Score: score(2), UsedGPUs: 8}, b: output.Candidate{CandidateID: "a", Score: score(1), UsedGPUs: 1}, want: -1},
		{name: "then fewer GPUs", a: output.Candidate{CandidateID: "z", Score: score(1), UsedGPUs: 1}, b: output.Candidate{CandidateID: "a", Score: score(1), UsedGPUs: 2}, want: -1},
		{name: "then the tie-break", a: output.Candidate{CandidateID: "z", Score: score(1), UsedGPUs: 1}, b: output.Candidate{CandidateID: "a", Score: score(1), UsedGPUs: 1}, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := output.CompareRank(&tt.a, &tt.b, byID); got != tt.want {
				t.Errorf("CompareRank = %d, want %d", got, tt.want)
			}
			if got := output.CompareRank(&tt.b, &tt.a, byID); got != -tt.want {
				t.Errorf("CompareRank reversed = %d, want %d", got, -tt.want)
			}
		})
	}
}

func TestBackends(t *testing.T) {
	if diff := gocmp.Diff([]string{"vllm", "sglang", "trtllm"}, output.BackendNames()); diff != "" {
		t.Errorf("BackendNames (-want +got):\n%s", diff)
	}
	if got := output.BackendColor("sglang"); got != "#d55e00" {
		t.Errorf("BackendColor(sglang) = %q", got)
	}
	if got := output.BackendColor("tgi"); got != output.OtherBackendColor {
		t.Errorf("BackendColor(tgi) = %q, want the other colour", got)
	}
	if b, ok := output.LookupBackend("trtllm"); !ok || b.DisplayName != "TensorRT-LLM" {
		t.Errorf("LookupBackend(trtllm) = %+v, %v", b, ok)
	}
}
