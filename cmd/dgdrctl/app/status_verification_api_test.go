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

// TestStatusShowsVerification: dgdrctl status reads status.verification as the API server stores
// it and prints it after the runs, also when the request has no runs left to show.
func TestStatusShowsVerification(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, env.Client, "ctl-verify")
	req := builders.Request(ns, "llm").Obj()
	if err := env.Client.Create(ctx, req); err != nil {
		t.Fatal(err)
	}
	req.Status.Verification = &v1beta2.VerificationStatus{
		Phase: v1beta2.VerificationSucceeded, JobName: "llm-verify-3", Deployment: "llm-prod", DeploymentGeneration: 3,
		Run: "llm-run-1", Candidate: "llm-run-1-c000042", MeasuredAt: &metav1.Time{Time: time.Now().Add(-time.Minute)},
		Metrics: []v1beta2.VerifiedMetric{{Name: v1beta2.MetricITLMs, Predicted: ptr.To(9.0), Observed: ptr.To(12.5),
			RelativeErrorPct: ptr.To(38.9), TolerancePct: ptr.To(15.0), Held: ptr.To(false)}},
	}
	meta.SetStatusCondition(&req.Status.Conditions, metav1.Condition{Type: v1beta2.ConditionPredictionHeld, Status: metav1.ConditionFalse,
		Reason: v1beta2.ReasonOutsideErrorBand, Message: "itlMs observed 12.5, predicted 9"})
	if err := env.Client.Status().Update(ctx, req); err != nil {
		t.Fatal(err)
	}
	stdout, err := dgdrctlRun(t, "status", "llm", "-n", ns)
	if err != nil {
		t.Fatal(err)
	}
	runs, section := strings.Index(stdout, "No runs yet."), strings.Index(stdout, "Verification: Succeeded")
	if runs < 0 || section < runs {
		t.Fatalf("the verification is not printed after the runs:\n%s", stdout)
	}
	for _, want := range []string{"llm-prod generation 3", "9.00 ms", "12.5 ms", "±15%", "38.9%", "OUTSIDE BAND", "PredictionHeld=False (OutsideErrorBand)"} {
		if !strings.Contains(stdout[section:], want) {
			t.Errorf("the verification section lacks %q:\n%s", want, stdout)
		}
	}
}
