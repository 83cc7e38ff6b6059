package app

import (
	"bytes"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

// researchRequest is a request that re-searches every 6h over 24h of traffic, whose status holds
// history (newest first) and, unless cond is nil, ImprovementAvailable.
func researchRequest(next *time.Time, history []v1beta2.ResearchRecord, cond *metav1.Condition) *v1beta2.DynamoGraphDeploymentRequest {
	req := &v1beta2.DynamoGraphDeploymentRequest{}
	req.Spec.Research = &v1beta2.ResearchSpec{IntervalMinutes: 360,
		WindowMinutes: ptr.To[int32](1440), MinRequests: ptr.To[int32](100)}
	req.Spec.Deployment = &v1beta2.DeploymentSpec{ReplaceMargin: "10%"}
	req.Spec.Objective = &v1beta2.ObjectiveSpec{Target: v1beta2.TargetThroughputPerGPU}
	if next != nil || history != nil {
		req.Status.Research = &v1beta2.ResearchStatus{History: history}
		if next != nil {
			req.Status.Research.NextTime = &metav1.Time{Time: *next}
		}
	}
	if cond != nil {
		req.Status.Conditions = []metav1.Condition{{Type: v1beta2.ConditionAccepted, Status: metav1.ConditionTrue, Reason: "Accepted"}, *cond}
	}
	return req
}

// TestWriteResearch: the Re-searches section of dgdrctl status, as printed.
func TestWriteResearch(t *testing.T) {
	end := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	now := end.Add(2 * time.Hour)
	next := end.Add(6 * time.Hour)
	window := func(end time.Time) (metav1.Time, metav1.Time) {
		return metav1.Time{Time: end.Add(-24 * time.Hour)}, metav1.Time{Time: end}
	}
	record := func(run string, end time.Time) v1beta2.ResearchRecord {
		start, stop := window(end)
		return v1beta2.ResearchRecord{Run: run, WindowStart: &start, WindowEnd: &stop, DeployedCandidate: "llm-g1-c07"}
	}
	replaced := record("llm-g1-r1200", end)
	replaced.Requests, replaced.BaselineObjective, replaced.BestCandidate, replaced.BestObjective = 48210, ptr.To(1840.0), "llm-g1-r1200-c03", ptr.To(2243.0)
	replaced.Decision, replaced.Reason = v1beta2.ResearchReplaced, v1beta2.ReasonBetterCandidate
	replaced.Message = "candidate llm-g1-r1200-c03 2,243 tok/s/GPU vs deployed llm-g1-c07 1,840 (+21.9%, margin 10%)"
	kept := record("llm-g1-r0600", end.Add(-6*time.Hour))
	kept.Requests, kept.BaselineObjective, kept.BestCandidate, kept.BestObjective = 51002, ptr.To(1850.0), "llm-g1-r0600-c01", ptr.To(1900.0)
	kept.Decision, kept.Reason = v1beta2.ResearchKept, v1beta2.ReasonBaselineStillBest
	kept.Message = "candidate llm-g1-r0600-c01 1,900 tok/s/GPU vs deployed llm-g1-c07 1,850 (+2.7%, margin 10%)"
	skipped := record("llm-g1-r0000", end.Add(-12*time.Hour))
	skipped.Requests, skipped.Decision, skipped.Reason = 12, v1beta2.ResearchSkipped, v1beta2.ReasonInsufficientTraffic
	skipped.Message = "the window holds 12 captured requests,\nfewer than minRequests 100"
	undecided := record("llm-g1-r1800", end.Add(6*time.Hour))
	undecided.Requests, undecided.BestCandidate, undecided.BestObjective = 40000, "llm-g1-r1800-c02", ptr.To(2100.0)
	undecided.Decision, undecided.Reason = v1beta2.ResearchUndecided, v1beta2.ReasonBaselineUnavailable
	undecided.Message = "the baseline was not evaluated: aisimulate exited 1: no profile for llm-g1-c07"

	tests := []struct {
		name string
		req  *v1beta2.DynamoGraphDeploymentRequest
		want string
	}{
		{
			name: "no research: nothing",
			req:  &v1beta2.DynamoGraphDeploymentRequest{},
			want: "",
		},
		{
			name: "scheduled, no history yet",
			req: researchRequest(&next, nil, &metav1.Condition{Type: v1beta2.ConditionImprovementAvailable, Status: metav1.ConditionUnknown,
				Reason: v1beta2.ReasonAwaitingResearch, Message: "no re-search of this generation has compared a new candidate with the deployed one yet"}),
			want: `
Re-searches: every 6h over the last 24h of captured traffic, at least 100 requests, replace margin 10%
  next  2025-06-01 18:00 UTC (in 4h)
No re-searches yet.
ImprovementAvailable=Unknown (AwaitingResearch): no re-search of this generation has compared a new candidate with the deployed one yet
`,
		},
		{
			name: "a skipped tick: its reason, dashes for what it did not compare",
			req:  researchRequest(&next, []v1beta2.ResearchRecord{skipped}, nil),
			want: `
Re-searches: every 6h over the last 24h of captured traffic, at least 100 requests, replace margin 10%
  next  2025-06-01 18:00 UTC (in 4h)
RUN           WINDOW                                   REQUESTS  DEPLOYED    BASELINE  BEST  BEST OBJECTIVE  CHANGE  DECISION                       MESSAGE
llm-g1-r0000  2025-05-31 00:00 – 2025-06-01 00:00 UTC  12        llm-g1-c07  -         -     -               -       Skipped (InsufficientTraffic)  the window holds 12 captured requests, fewer than minRequests 100
`,
		},
		{
			name: "replaced after kept, newest first",
			req: researchRequest(&next, []v1beta2.ResearchRecord{replaced, kept}, &metav1.Condition{Type: v1beta2.ConditionImprovementAvailable,
				Status: metav1.ConditionTrue, Reason: v1beta2.ReasonBetterCandidate, Message: "llm-g1-r1200: " + replaced.Message}),
			want: `
Re-searches: every 6h over the last 24h of captured traffic, at least 100 requests, replace margin 10%
  next  2025-06-01 18:00 UTC (in 4h)
RUN           WINDOW                                   REQUESTS  DEPLOYED    BASELINE         BEST              BEST OBJECTIVE   CHANGE  DECISION                    MESSAGE
llm-g1-r1200  2025-05-31 12:00 – 2025-06-01 12:00 UTC  48,210    llm-g1-c07  1,840 tok/s/GPU  llm-g1-r1200-c03  2,243 tok/s/GPU  +21.9%  Replaced (BetterCandidate)  candidate llm-g1-r1200-c03 2,243 tok/s/GPU vs deployed llm-g1-c07 1,840 (+21.9%, margin 10%)
llm-g1-r0600  2025-05-31 06:00 – 2025-06-01 06:00 UTC  51,002    llm-g1-c07  1,850 tok/s/GPU  llm-g1-r0600-c01  1,900 tok/s/GPU  +2.7%   Kept (BaselineStillBest)    candidate llm-g1-r0600-c01 1,900 tok/s/GPU vs deployed llm-g1-c07 1,850 (+2.7%, margin 10%)
ImprovementAvailable=True (BetterCandidate): llm-g1-r1200: candidate llm-g1-r1200-c03 2,243 tok/s/GPU vs deployed llm-g1-c07 1,840 (+21.9%, margin 10%)
`,
		},
		{
			name: "undecided: the baseline's error, no baseline and no change",
			req: researchRequest(nil, []v1beta2.ResearchRecord{undecided}, &metav1.Condition{Type: v1beta2.ConditionImprovementAvailable,
				Status: metav1.ConditionUnknown, Reason: v1beta2.ReasonBaselineUnavailable, Message: "llm-g1-r1800: " + undecided.Message}),
			want: `
Re-searches: every 6h over the last 24h of captured traffic, at least 100 requests, replace margin 10%
RUN           WINDOW                                   REQUESTS  DEPLOYED    BASELINE  BEST              BEST OBJECTIVE   CHANGE  DECISION                         MESSAGE
llm-g1-r1800  2025-05-31 18:00 – 2025-06-01 18:00 UTC  40,000    llm-g1-c07  -         llm-g1-r1800-c02  2,100 tok/s/GPU  -       Undecided (BaselineUnavailable)  the baseline was not evaluated: aisimulate exited 1: no profile for llm-g1-c07
ImprovementAvailable=Unknown (BaselineUnavailable): llm-g1-r1800: the baseline was not evaluated: aisimulate exited 1: no profile for llm-g1-c07
`,
		},
		{
			name: "history of a request that no longer schedules re-searches, partially filled",
			req: func() *v1beta2.DynamoGraphDeploymentRequest {
				req := researchRequest(nil, []v1beta2.ResearchRecord{{Run: "llm-g1-r0000"}}, nil)
				req.Spec.Research = nil
				return req
			}(),
			want: `
Re-searches: not scheduled
RUN           WINDOW  REQUESTS  DEPLOYED  BASELINE  BEST  BEST OBJECTIVE  CHANGE  DECISION  MESSAGE
llm-g1-r0000  -       -         -         -         -     -               -       -         -
`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			writeResearch(&out, tc.req, now)
			if diff := cmp.Diff(tc.want, out.String()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
