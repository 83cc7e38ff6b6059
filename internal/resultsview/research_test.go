package resultsview_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/resultsview"
)

func TestResearchScheduleOf(t *testing.T) {
	next := time.Date(2025, 6, 1, 18, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		spec v1beta2.DynamoGraphDeploymentRequestSpec
		st   *v1beta2.ResearchStatus
		want *resultsview.ResearchSchedule
	}{
		{"no research", v1beta2.DynamoGraphDeploymentRequestSpec{}, &v1beta2.ResearchStatus{NextTime: &metav1.Time{Time: next}}, nil},
		{"as admission materializes it",
			v1beta2.DynamoGraphDeploymentRequestSpec{
				Research:   &v1beta2.ResearchSpec{IntervalMinutes: 360, WindowMinutes: ptr.To[int32](1440), MinRequests: ptr.To[int32](100)},
				Deployment: &v1beta2.DeploymentSpec{ReplaceMargin: "5%"},
			},
			&v1beta2.ResearchStatus{NextTime: &metav1.Time{Time: next}},
			&resultsview.ResearchSchedule{Interval: "6h", Window: "24h", MinRequests: 100, Margin: "5%", Next: &next}},
		{"only the interval: the operator's defaults, nothing scheduled yet",
			v1beta2.DynamoGraphDeploymentRequestSpec{Research: &v1beta2.ResearchSpec{IntervalMinutes: 90}},
			nil,
			&resultsview.ResearchSchedule{Interval: "1h30m", Window: "1h30m", MinRequests: 1, Margin: "10%"}},
	}
	for _, tc := range tests {
		req := &v1beta2.DynamoGraphDeploymentRequest{Spec: tc.spec}
		req.Status.Research = tc.st
		if diff := cmp.Diff(tc.want, resultsview.ResearchScheduleOf(req)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
	s := &resultsview.ResearchSchedule{Interval: "6h", Window: "24h", MinRequests: 100, Margin: "10%"}
	if got, want := resultsview.ResearchScheduleText(s), "every 6h over the last 24h of captured traffic, at least 100 requests, replace margin 10%"; got != want {
		t.Errorf("schedule text %q, want %q", got, want)
	}
}

func TestNextResearchText(t *testing.T) {
	next := time.Date(2025, 6, 1, 18, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		next *time.Time
		now  time.Time
		want string
	}{
		{"none scheduled", nil, next, ""},
		{"ahead", &next, next.Add(-3 * time.Hour), "2025-06-01 18:00 UTC (in 3h)"},
		{"due", &next, next.Add(time.Second), "2025-06-01 18:00 UTC (due)"},
	}
	for _, tc := range tests {
		if got := resultsview.NextResearchText(tc.next, tc.now); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestResearchRows(t *testing.T) {
	end := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	at := func(t time.Time) *metav1.Time { return &metav1.Time{Time: t} }
	req := &v1beta2.DynamoGraphDeploymentRequest{}
	if got := resultsview.ResearchRows(req); got != nil {
		t.Errorf("no history: %v", got)
	}
	req.Spec.Objective = &v1beta2.ObjectiveSpec{Target: v1beta2.TargetTTFT}
	req.Status.Research = &v1beta2.ResearchStatus{History: []v1beta2.ResearchRecord{
		{Run: "llm-r2", WindowStart: at(end.Add(-6 * time.Hour)), WindowEnd: at(end), Requests: 12345,
			DeployedCandidate: "llm-c1", BaselineObjective: ptr.To(180.0), BestCandidate: "llm-r2-c4", BestObjective: ptr.To(150.25),
			Decision: v1beta2.ResearchReplaced, Reason: v1beta2.ReasonBetterCandidate, Message: "candidate llm-r2-c4 150 ms TTFT vs deployed llm-c1 180"},
		{Run: "llm-r1", WindowStart: at(end.Add(-30 * time.Hour)), WindowEnd: at(end.Add(-6 * time.Hour)),
			Decision: v1beta2.ResearchSkipped, Reason: "RunActive"},
	}}
	want := []resultsview.ResearchRow{
		{Run: "llm-r2", Window: "2025-06-01 06:00–12:00 UTC", WindowStart: end.Add(-6 * time.Hour), WindowEnd: end, Requests: "12,345",
			DeployedCandidate: "llm-c1", BaselineObjective: "180 ms TTFT", BestCandidate: "llm-r2-c4", BestObjective: "150 ms TTFT",
			Change: "-16.5%", Decision: "Replaced", Reason: "BetterCandidate", Message: "candidate llm-r2-c4 150 ms TTFT vs deployed llm-c1 180"},
		{Run: "llm-r1", Window: "2025-05-31 06:00 – 2025-06-01 06:00 UTC", WindowStart: end.Add(-30 * time.Hour), WindowEnd: end.Add(-6 * time.Hour),
			Decision: "Skipped", Reason: "RunActive"},
	}
	if diff := cmp.Diff(want, resultsview.ResearchRows(req)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestResearchFormats(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{resultsview.DurationText(6 * time.Hour), "6h"},
		{resultsview.DurationText(90 * time.Second), "1m30s"},
		{resultsview.DurationText(30 * time.Minute), "30m"},
		{resultsview.ObjectiveText(nil, ""), ""},
		{resultsview.ObjectiveText(ptr.To(1840.4), ""), "1,840 tok/s"},
		{resultsview.ObjectiveText(ptr.To(1840.4), v1beta2.TargetThroughputPerGPU), "1,840 tok/s/GPU"},
		{resultsview.ObjectiveText(ptr.To(1840.4), v1beta2.TargetPareto), "1,840 tok/s/GPU"},
		{resultsview.ObjectiveText(ptr.To(6.1578), v1beta2.TargetThroughputPerUser), "6.16 tok/s/user"},
		{resultsview.ObjectiveText(ptr.To(3.0), "newTarget"), "3"},
		{resultsview.ChangeText(ptr.To(2243.0), ptr.To(1840.0)), "+21.9%"},
		{resultsview.ChangeText(ptr.To(1.0), ptr.To(0.0)), ""},
		{resultsview.ChangeText(ptr.To(1.0), nil), ""},
		{resultsview.WindowText(time.Time{}, time.Date(2025, 6, 1, 12, 0, 30, 0, time.UTC)), "until 2025-06-01 12:00:30 UTC"},
		{resultsview.WindowText(time.Time{}, time.Time{}), ""},
	} {
		if tc.got != tc.want {
			t.Errorf("%q, want %q", tc.got, tc.want)
		}
	}
}
