package app

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

// TestWriteTails: dgdrctl status prints each candidate's predicted latency percentiles and
// power per GPU when the search reported any, dashes where one is missing, and nothing when
// none did.
func TestWriteTails(t *testing.T) {
	cand := func(rank int32, m *v1beta2.CandidateMetrics) v1beta2.DynamoGraphDeploymentCandidate {
		c := v1beta2.DynamoGraphDeploymentCandidate{}
		c.Name, c.Status.Rank, c.Status.Metrics = "llm-run-1-c"+string(rune('0'+rank)), rank, m
		return c
	}
	full := &v1beta2.CandidateMetrics{TTFTMs: ptr.To(120.0), PowerW: ptr.To(612.4), Percentiles: &v1beta2.CandidatePercentiles{
		TTFTMs: &v1beta2.LatencyPercentiles{P50: ptr.To(95.0), P90: ptr.To(150.0), P99: ptr.To(300.0)},
		ITLMs:  &v1beta2.LatencyPercentiles{P50: ptr.To(8.5), P90: ptr.To(9.25), P99: ptr.To(14.0)},
		E2EMs:  &v1beta2.LatencyPercentiles{P50: ptr.To(1150.0), P90: ptr.To(1400.0), P99: ptr.To(2010.0)},
	}}
	partial := &v1beta2.CandidateMetrics{Percentiles: &v1beta2.CandidatePercentiles{TTFTMs: &v1beta2.LatencyPercentiles{P99: ptr.To(280.0)}}}
	tests := []struct {
		name  string
		cands []v1beta2.DynamoGraphDeploymentCandidate
		want  string
	}{
		{name: "means only: nothing", cands: []v1beta2.DynamoGraphDeploymentCandidate{cand(1, &v1beta2.CandidateMetrics{TTFTMs: ptr.To(120.0)}), cand(2, nil)}},
		{name: "percentiles and power", cands: []v1beta2.DynamoGraphDeploymentCandidate{cand(1, full), cand(2, partial), cand(3, nil)}, want: `
Predicted latency percentiles (p50/p90/p99, ms) and power:
RANK  NAME          TTFT              ITL             E2E             POWER/GPU
1     llm-run-1-c1  95.0/150.0/300.0  8.50/9.25/14.0  1150/1400/2010  612 W
2     llm-run-1-c2  -/-/280.0         -               -               -
3     llm-run-1-c3  -                 -               -               -
The request's SLA bounds the means only; verification compares p90 and p99 with the measured ones.
`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			writeTails(&out, tc.cands)
			if diff := cmp.Diff(tc.want, out.String()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
