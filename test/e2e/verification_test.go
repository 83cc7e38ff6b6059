//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/naming"
)

// verifiedRequest is an autoApply request with verification at the modeled load (the static
// workload's defaults: concurrency 10, 1024 input and 128 output tokens), 30 requests.
const verifiedRequest = `
apiVersion: nvidia.com/v1beta2
kind: DynamoGraphDeploymentRequest
metadata:
  name: %s
spec:
  model:
    name: meta-llama/Llama-3.1-8B-Instruct
  hardware:
    gpu:
      budget: 8
  deployment:
    autoApply: true
    name: %s
    verification:
      enabled: true
      requests: 30
      maxDurationSeconds: 120
  aisimulate:
    inputOverrides:
      optimizer:
        max_trials: 32
`

// verifyTimeout bounds the verification once the deployment is ready: the pod's start, AIPerf's
// own start (a few seconds) and 30 requests against the mocker.
const verifyTimeout = 4 * time.Minute

// TestVerificationOnRealizedDeployment: the verification Job of an autoApply request runs the
// real AIPerf (bin/aiperf) against the real Dynamo frontend and mocker workers the sandbox
// realizes, with streaming requests; status.verification then holds non-zero observed TTFT,
// ITL and throughput, the three compared metrics, and PredictionHeld is True or False (the
// mocker is timed by AISimulate's estimator, so either may be the truth), with its event.
func TestVerificationOnRealizedDeployment(t *testing.T) {
	ctx := context.Background()
	ns := realizedNamespace(t)
	env.CreateRequest(t, ns, fmt.Sprintf(verifiedRequest, "verified", "llama-verified"))
	requireSucceededWithCandidates(t, waitRequestDone(t, ns, "verified"))
	waitDeployed(t, ns, "verified", v1beta2.ReasonDeploymentReady)

	var got *v1beta2.DynamoGraphDeploymentRequest
	waitFor(t, realizeTimeout+verifyTimeout, "the verification to end", func(ctx context.Context) (bool, string, error) {
		d := &v1beta2.DynamoGraphDeploymentRequest{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "verified"}, d); err != nil {
			return false, "", err
		}
		got = d
		v := d.Status.Verification
		if v == nil {
			return false, "no status.verification", nil
		}
		return v.Phase != v1beta2.VerificationRunning, fmt.Sprintf("phase %s %s %s", v.Phase, v.Reason, v.Message), nil
	})
	v := got.Status.Verification
	if v.Phase != v1beta2.VerificationSucceeded {
		t.Fatalf("verification %s %s: %s", v.Phase, v.Reason, v.Message)
	}
	o := v.Observed
	if o == nil || o.TTFTMs == nil || *o.TTFTMs.Mean <= 0 || o.ITLMs == nil || *o.ITLMs.Mean <= 0 || o.Throughput == nil || *o.Throughput <= 0 || o.Requests == 0 {
		t.Errorf("observed %+v", o)
	}
	if len(v.Metrics) != 3 || v.MeasuredAt == nil || v.Candidate == "" || v.DeploymentGeneration < 1 {
		t.Errorf("verification %+v", v)
	}
	cond := meta.FindStatusCondition(got.Status.Conditions, v1beta2.ConditionPredictionHeld)
	if cond == nil || cond.Status == metav1.ConditionUnknown {
		t.Errorf("PredictionHeld %+v", cond)
	}
	t.Logf("observed TTFT %.2f ms, ITL %.2f ms, %.1f tokens/s; %s", *o.TTFTMs.Mean, *o.ITLMs.Mean, *o.Throughput, cond.Message)

	job := &batchv1.Job{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: naming.VerificationJobName("verified", v.DeploymentGeneration)}, job); err != nil {
		t.Fatal(err)
	}
	if job.Status.Succeeded != 1 {
		t.Errorf("verification Job status %+v", job.Status)
	}
}
