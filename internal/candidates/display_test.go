package candidates_test

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/candidates"
)

func TestDisplay(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	i := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		name    string
		metrics *v1beta2.CandidateMetrics
		want    *v1beta2.CandidateDisplay
	}{
		{"rounded", &v1beta2.CandidateMetrics{ThroughputPerGPU: f(2607.8928098201027), ThroughputPerUser: f(22.5),
			TTFTMs: f(1934.06), ITLMs: f(11.249), Cost: &v1beta2.CandidateCost{Currency: "USD", PerHour: "28.00", PerMillionOutputTokens: "0.7778"}},
			&v1beta2.CandidateDisplay{ThroughputPerGPU: i(2608), ThroughputPerUser: i(23), TTFTMs: "1934.1", ITLMs: "11.2", CostPerHour: "28.00 USD"}},
		{"whole values keep their decimal", &v1beta2.CandidateMetrics{TTFTMs: f(250)}, &v1beta2.CandidateDisplay{TTFTMs: "250.0"}},
		{"nothing modeled", &v1beta2.CandidateMetrics{}, &v1beta2.CandidateDisplay{}},
		{"not finite", &v1beta2.CandidateMetrics{ThroughputPerGPU: f(math.Inf(1)), TTFTMs: f(math.NaN())}, &v1beta2.CandidateDisplay{}},
		{"no metrics", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, candidates.Display(tc.metrics)); diff != "" {
				t.Errorf("display (-want +got):\n%s", diff)
			}
		})
	}
}
