//go:build attack

package attack

import (
	"context"
	"fmt"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/calibration"
	"github.com/dgdr-operator/dgdr-operator/test/sandboxtest"
)

// verifiedRequest (name, deployment, requests, maxDurationSeconds) is an autoApply request
// verified at the prediction's own load (else the verification is no calibration observation)
// against whatever frontend the test serves (AIPerf's own start takes most of the time allowed).
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
      requests: %d
      maxDurationSeconds: %d
  aisimulate:
    inputOverrides:
      optimizer:
        max_trials: 8
`

// TestVerificationsDoNotStallTheOperator: on a chart install the operator may read and write the
// calibration profile, but not list or watch ConfigMaps. Recording a verification's observation
// once went through the cached client, whose informer then waited for ever to sync: each
// verification held a request worker, and after concurrency.requests of them (4 here) no
// request anywhere was reconciled. Five verifications at once each record their observation
// within a minute of ending, and a request created afterwards in another namespace gets its
// Run within a minute.
func TestVerificationsDoNotStallTheOperator(t *testing.T) {
	ns := newNamespace(t)
	port := sandboxtest.ServingFrontend(t, "meta-llama/Llama-3.1-8B-Instruct")
	const n = 5
	for i := range n {
		env.CreateRequest(t, ns, fmt.Sprintf(verifiedRequest, fmt.Sprintf("v%d", i), fmt.Sprintf("llama-v%d", i), 10, 120))
	}
	for i := range n {
		env.ReadyBehind(t, ns, fmt.Sprintf("llama-v%d", i), port, searchTimeout)
	}
	for i := range n {
		name := fmt.Sprintf("v%d", i)
		v := verificationOf(t, ns, name, 5*time.Minute, func(v *v1beta2.VerificationStatus) bool {
			return v.Phase == v1beta2.VerificationSucceeded || v.Phase == v1beta2.VerificationFailed
		})
		if v.Phase != v1beta2.VerificationSucceeded {
			t.Fatalf("%s: verification %s %s: %s", name, v.Phase, v.Reason, v.Message)
		}
		source := fmt.Sprintf("%s/%s@gen%d", ns, name, v.DeploymentGeneration)
		sandboxtest.WaitFor(t, time.Minute, poll, "the calibration observation "+source, func(ctx context.Context) (bool, string, error) {
			p, err := calibration.Load(ctx, k8s, ns)
			if err != nil {
				return false, "", err
			}
			for _, o := range p.Observations {
				if o.Source == source {
					return true, "", nil
				}
			}
			return false, fmt.Sprintf("%d observations", len(p.Observations)), nil
		})
	}

	other := newNamespace(t)
	env.CreateRequest(t, other, fmt.Sprintf(sandboxtest.TinyRequest, "after"))
	sandboxtest.WaitFor(t, time.Minute, poll, "a Run for the request created after the verifications", func(ctx context.Context) (bool, string, error) {
		d := &v1beta2.DynamoGraphDeploymentRequest{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: other, Name: "after"}, d); err != nil {
			return false, "", err
		}
		return d.Status.ActiveRunRef != nil || d.Status.LatestRun != nil, "no Run", nil
	})
}

// verificationOf waits until the verification of request ns/name satisfies done and returns it.
func verificationOf(t *testing.T, ns, name string, timeout time.Duration, done func(*v1beta2.VerificationStatus) bool) *v1beta2.VerificationStatus {
	t.Helper()
	var v *v1beta2.VerificationStatus
	sandboxtest.WaitFor(t, timeout, poll, name+"'s verification to end", func(ctx context.Context) (bool, string, error) {
		d := &v1beta2.DynamoGraphDeploymentRequest{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
			return false, "", err
		}
		if v = d.Status.Verification; v == nil {
			return false, "no verification", nil
		}
		return done(v), fmt.Sprintf("%s %s %+v", v.Phase, v.Reason, v.Calibration), nil
	})
	return v
}
