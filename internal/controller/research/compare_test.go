package research

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

func TestCompare(t *testing.T) {
	metrics := func(perGPU float64, score float64) *v1beta2.CandidateMetrics {
		return &v1beta2.CandidateMetrics{Score: ptr.To(score), Throughput: ptr.To(perGPU * 4), ThroughputPerGPU: ptr.To(perGPU),
			TTFTMs: ptr.To(80.0), ITLMs: ptr.To(6.0), E2EMs: ptr.To(900.0)}
	}
	cand := func(m *v1beta2.CandidateMetrics) *v1beta2.DynamoGraphDeploymentCandidate {
		c := &v1beta2.DynamoGraphDeploymentCandidate{}
		c.Name, c.Spec.GPUs, c.Status.Metrics = "new", 4, m
		return c
	}
	base := func(m *v1beta2.CandidateMetrics, tpot float64) *v1beta2.BaselineStatus {
		return &v1beta2.BaselineStatus{Candidate: "old", Metrics: m, MeanTPOTMs: ptr.To(tpot), GPUs: ptr.To(4.0), CompletedRequests: 30}
	}
	spec := func(target v1beta2.ObjectiveTarget, sla *v1beta2.SLASpec) *v1beta2.DynamoGraphDeploymentRequestSpec {
		return &v1beta2.DynamoGraphDeploymentRequestSpec{Objective: &v1beta2.ObjectiveSpec{Target: target}, SLA: sla}
	}
	cases := []struct {
		name       string
		spec       *v1beta2.DynamoGraphDeploymentRequestSpec
		baseline   *v1beta2.BaselineStatus
		cand       *v1beta2.DynamoGraphDeploymentCandidate
		wantReason string
		wantMsg    string
	}{
		{"clearly better per GPU", spec(v1beta2.TargetThroughputPerGPU, nil), base(metrics(1000, 1000), 6), cand(metrics(1500, 1500)), v1beta2.ReasonBetterCandidate,
			"candidate new 1,500 tok/s/GPU vs deployed old 1,000 (+50.0%, margin 10%)"},
		{"within the margin", spec(v1beta2.TargetThroughputPerGPU, nil), base(metrics(1000, 1000), 6), cand(metrics(1050, 1050)), v1beta2.ReasonBaselineStillBest,
			"candidate new 1,050 tok/s/GPU vs deployed old 1,000 (+5.0%, margin 10%)"},
		{"the baseline misses the SLA under the window", spec("", &v1beta2.SLASpec{ITLMs: ptr.To(10.0)}), base(metrics(1000, 1000), 12), cand(metrics(900, 900)),
			v1beta2.ReasonBaselineMissesSLA, ""},
		{"goodput comes from the score", spec(v1beta2.TargetGoodput, &v1beta2.SLASpec{TTFTMs: ptr.To(200.0)}), base(metrics(1000, 2000), 6), cand(metrics(1000, 2600)),
			v1beta2.ReasonBetterCandidate, "candidate new 2,600 tok/s goodput vs deployed old 2,000 (+30.0%, margin 10%)"},
		{"a baseline that failed", spec("", nil), &v1beta2.BaselineStatus{Candidate: "old", Error: "the baseline container exited with code 1"}, cand(metrics(1500, 1500)),
			v1beta2.ReasonBaselineUnavailable, "the baseline was not evaluated: the baseline container exited with code 1"},
		{"no baseline at all", spec("", nil), nil, cand(metrics(1500, 1500)), v1beta2.ReasonBaselineUnavailable, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := compare(tc.spec, 0.10, tc.baseline, tc.cand)
			if got.Reason != tc.wantReason {
				t.Errorf("reason = %s (%s), want %s", got.Reason, got.Message, tc.wantReason)
			}
			if tc.wantMsg != "" {
				if diff := cmp.Diff(tc.wantMsg, got.Message); diff != "" {
					t.Errorf("message (-want +got):\n%s", diff)
				}
			}
		})
	}
}
