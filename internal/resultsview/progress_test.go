package resultsview_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/resultsview"
)

// TestRunProgress: a search that succeeded after 8 of its budget of 320 trials (the demo's
// exhaustive space, issue 42) reads as complete; a running, failed or partial one reads as far as
// it got.
func TestRunProgress(t *testing.T) {
	run := func(p *v1beta2.RunProgress, reason string, provisional bool) *v1beta2.DynamoGraphDeploymentRun {
		r := &v1beta2.DynamoGraphDeploymentRun{}
		r.Status.Progress = p
		if reason != "" {
			r.Status.Conditions = []metav1.Condition{{Type: v1beta2.ConditionCompleted, Status: metav1.ConditionTrue, Reason: reason}}
			r.Status.Recommendation = &v1beta2.RecommendationSummary{Provisional: provisional}
		}
		return r
	}
	eight := &v1beta2.RunProgress{Budget: 320, Settled: 8, Feasible: 6}
	type view struct {
		Total     int64
		Percent   int
		Exhausted bool
		Text      string
	}
	cases := []struct {
		name string
		run  *v1beta2.DynamoGraphDeploymentRun
		want view
	}{
		{"succeeded before the budget: the space is exhausted", run(eight, v1beta2.ReasonSucceeded, false), view{8, 100, true, "8/8 (100%), space exhausted (budget 320)"}},
		{"running", run(eight, "", false), view{320, 2, false, "8/320 (2%)"}},
		{"failed", run(eight, v1beta2.ReasonSearchFailed, false), view{320, 2, false, "8/320 (2%)"}},
		{"a partial result is not complete", run(eight, v1beta2.ReasonSucceeded, true), view{320, 2, false, "8/320 (2%)"}},
		{"succeeded with the whole budget", run(&v1beta2.RunProgress{Budget: 40, Settled: 40}, v1beta2.ReasonSucceeded, false), view{40, 100, false, "40/40 (100%)"}},
		{"no budget known", run(&v1beta2.RunProgress{Settled: 12}, "", false), view{0, 0, false, "12"}},
		{"nothing yet", run(nil, "", false), view{0, 0, false, "-"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := resultsview.RunProgress(tc.run)
			if diff := cmp.Diff(tc.want, view{p.Total, p.Percent, p.Exhausted, p.Text()}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
