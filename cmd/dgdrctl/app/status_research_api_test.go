package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
)

// TestStatusShowsResearch: dgdrctl status reads spec.research and status.research as the API
// server stores them and prints the schedule, the history and ImprovementAvailable after the
// runs.
func TestStatusShowsResearch(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, env.Client, "ctl-research")
	req := builders.Request(ns, "llm").Obj()
	req.Spec.Research = &v1beta2.ResearchSpec{IntervalMinutes: 360,
		WindowMinutes: ptr.To[int32](1440), MinRequests: ptr.To[int32](100)}
	req.Spec.Deployment = &v1beta2.DeploymentSpec{ReplaceMargin: "15%"}
	req.Spec.Objective = &v1beta2.ObjectiveSpec{Target: v1beta2.TargetThroughputPerGPU}
	if err := env.Client.Create(ctx, req); err != nil {
		t.Fatal(err)
	}
	end := time.Now().Truncate(time.Hour).UTC()
	req.Status.Research = &v1beta2.ResearchStatus{
		NextTime: &metav1.Time{Time: end.Add(6 * time.Hour)},
		History: []v1beta2.ResearchRecord{{
			Run: "llm-g1-r1", WindowStart: &metav1.Time{Time: end.Add(-24 * time.Hour)}, WindowEnd: &metav1.Time{Time: end}, Requests: 48210,
			DeployedCandidate: "llm-c07", BaselineObjective: ptr.To(1850.0), BestCandidate: "llm-g1-r1-c01", BestObjective: ptr.To(1900.0),
			Decision: v1beta2.ResearchKept, Reason: v1beta2.ReasonBaselineStillBest, Message: "candidate llm-g1-r1-c01 1,900 tok/s/GPU vs deployed llm-c07 1,850 (+2.7%, margin 15%)",
		}},
	}
	meta.SetStatusCondition(&req.Status.Conditions, metav1.Condition{Type: v1beta2.ConditionImprovementAvailable, Status: metav1.ConditionFalse,
		Reason: v1beta2.ReasonBaselineStillBest, Message: "llm-g1-r1: candidate llm-g1-r1-c01 1,900 tok/s/GPU vs deployed llm-c07 1,850"})
	if err := env.Client.Status().Update(ctx, req); err != nil {
		t.Fatal(err)
	}
	stdout, err := dgdrctlRun(t, "status", "llm", "-n", ns)
	if err != nil {
		t.Fatal(err)
	}
	runs, section := strings.Index(stdout, "No runs yet."), strings.Index(stdout, "Re-searches: every 6h over the last 24h of captured traffic, at least 100 requests, replace margin 15%")
	if runs < 0 || section < runs {
		t.Fatalf("the re-searches are not printed after the runs:\n%s", stdout)
	}
	for _, want := range []string{"  next  " + end.Add(6*time.Hour).Format("2006-01-02 15:04 UTC"), "llm-g1-r1", "48,210", "1,850 tok/s/GPU", "1,900 tok/s/GPU",
		"+2.7%", "Kept (BaselineStillBest)", "ImprovementAvailable=False (BaselineStillBest): llm-g1-r1: "} {
		if !strings.Contains(stdout[section:], want) {
			t.Errorf("the re-searches section lacks %q:\n%s", want, stdout)
		}
	}
}
