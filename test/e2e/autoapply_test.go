//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/promote"
)

// autoApplyRequest is fastRequest with autoApply on, deploying as deployName.
const autoApplyRequest = `
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
  aisimulate:
    inputOverrides:
      optimizer:
        max_trials: 32
`

// deployment reads a DynamoGraphDeployment, nil when absent.
func deployment(ctx context.Context, ns, name string) (*unstructured.Unstructured, error) {
	dgd := &unstructured.Unstructured{}
	dgd.SetGroupVersionKind(promote.GVK)
	err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, dgd)
	if client.IgnoreNotFound(err) != nil {
		return nil, err
	}
	if err != nil {
		return nil, nil
	}
	return dgd, nil
}

// waitDeployed waits for the request's Deployed condition to have reason and returns it.
func waitDeployed(t *testing.T, ns, name, reason string) *metav1.Condition {
	t.Helper()
	var cond *metav1.Condition
	waitFor(t, searchTimeout, fmt.Sprintf("%s Deployed reason %s", name, reason), func(ctx context.Context) (bool, string, error) {
		d, err := getDGDR(ctx, ns, name)
		if err != nil {
			return false, "", err
		}
		cond = meta.FindStatusCondition(d.Status.Conditions, v1beta2.ConditionDeployed)
		return cond != nil && cond.Reason == reason, fmt.Sprintf("Deployed=%+v", cond), nil
	})
	return cond
}

// markReady writes the DynamoGraphDeployment's status as the Dynamo operator would once its
// pods serve (the sandbox runs no Dynamo operator).
func markReady(t *testing.T, dgd *unstructured.Unstructured) {
	t.Helper()
	dgd.Object["status"] = map[string]any{"observedGeneration": dgd.GetGeneration(), "state": "successful",
		"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "AllComponentsReady", "message": "all components ready",
			"lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}}}
	if err := k8s.Status().Update(context.Background(), dgd); err != nil {
		t.Fatal(err)
	}
}

// TestAutoApplyDeploysAndFollowsReadiness: with autoApply, a successful search creates the
// DynamoGraphDeployment of the best candidate; Deployed follows the deployment's readiness; a
// second generation updates the same deployment with its own best candidate.
func TestAutoApplyDeploysAndFollowsReadiness(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	env.CreateRequest(t, ns, fmt.Sprintf(autoApplyRequest, "auto", "llama-prod"))
	first := waitRequestDone(t, ns, "auto")
	requireSucceededWithCandidates(t, first)

	waitDeployed(t, ns, "auto", v1beta2.ReasonDeploymentProgressing)
	dgd, err := deployment(ctx, ns, "llama-prod")
	if err != nil || dgd == nil {
		t.Fatalf("autoApply created no DynamoGraphDeployment llama-prod: %v", err)
	}
	if got := dgd.GetAnnotations()[promote.AnnotationPromotedFrom]; got != first.Status.Recommendation.BestCandidate {
		t.Errorf("deployed candidate %q, want the best of Run %s: %q", got, first.Name, first.Status.Recommendation.BestCandidate)
	}
	// The request names no SKU and the sandbox's configuration no default: the SKU is the
	// sandbox Node's product, and the deployed candidate fits its 8 GPUs.
	if d, err := getDGDR(ctx, ns, "auto"); err != nil {
		t.Fatal(err)
	} else if hw := d.Spec.Hardware; hw == nil || hw.GPU == nil || hw.GPU.SKU != "h200_sxm" {
		t.Errorf("the request's SKU was not discovered from the sandbox Node (NVIDIA-H200): %+v", hw)
	}
	waitFor(t, searchTimeout, "the deployed candidate's status.fitsCluster", func(ctx context.Context) (bool, string, error) {
		c := &v1beta2.DynamoGraphDeploymentCandidate{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: first.Status.Recommendation.BestCandidate}, c); err != nil {
			return false, "", err
		}
		f := c.Status.FitsCluster
		return f != nil && ptr.Deref(f.Fits, false) && f.SKU == "h200_sxm" && ptr.Deref(f.GPUsAvailable, 0) == 8 && f.Nodes == 1 && f.GPUsNeeded <= 8,
			fmt.Sprintf("fitsCluster = %+v", f), nil
	})
	markReady(t, dgd)
	cond := waitDeployed(t, ns, "auto", v1beta2.ReasonDeploymentReady)
	if cond.Status != metav1.ConditionTrue {
		t.Errorf("Deployed = %+v", cond)
	}

	// A second generation (another SLA) deploys its own best candidate over the first.
	patchSpec(t, ns, "auto", `{"spec":{"sla":{"ttftMs":400}}}`)
	second := waitRunForGeneration(t, ns, "auto", 2)
	secondRun := env.WaitRunDone(t, ns, second, searchTimeout)
	requireSucceededWithCandidates(t, secondRun)
	waitFor(t, searchTimeout, "the deployment to carry generation 2's best candidate", func(ctx context.Context) (bool, string, error) {
		dgd, err := deployment(ctx, ns, "llama-prod")
		if err != nil || dgd == nil {
			return false, "absent", err
		}
		a := dgd.GetAnnotations()
		return a[promote.AnnotationGeneration] == "2" && a[promote.AnnotationPromotedFrom] == secondRun.Status.Recommendation.BestCandidate,
			fmt.Sprintf("annotations %v", a), nil
	})
	// The request's status follows the deployment in a later write.
	waitFor(t, searchTimeout, "status.deployment to name generation 2's Run", func(ctx context.Context) (bool, string, error) {
		d, err := getDGDR(ctx, ns, "auto")
		if err != nil {
			return false, "", err
		}
		s := d.Status.Deployment
		return s != nil && s.Run == secondRun.Name && s.Name == "llama-prod", fmt.Sprintf("status.deployment = %+v", s), nil
	})
}

// TestAutoApplyNeverOverwritesAForeignDeployment: a DynamoGraphDeployment of the same name that
// the request did not create gives Deployed=False Conflict and stays exactly as it was.
func TestAutoApplyNeverOverwritesAForeignDeployment(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	foreign := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"backendFramework": "sglang",
		"components": []any{map[string]any{"name": "Frontend", "type": "frontend", "replicas": int64(1),
			"podTemplate": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "main", "image": "team/frontend:1"}}}}}},
	}}}
	foreign.SetGroupVersionKind(promote.GVK)
	foreign.SetNamespace(ns)
	foreign.SetName("serving")
	if err := k8s.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	before, err := deployment(ctx, ns, "serving")
	if err != nil {
		t.Fatal(err)
	}
	env.CreateRequest(t, ns, fmt.Sprintf(autoApplyRequest, "intruder", "serving"))
	requireSucceededWithCandidates(t, waitRequestDone(t, ns, "intruder"))
	cond := waitDeployed(t, ns, "intruder", v1beta2.ReasonDeploymentConflict)
	if cond.Status != metav1.ConditionFalse {
		t.Errorf("Deployed = %+v", cond)
	}
	after, err := deployment(ctx, ns, "serving")
	if err != nil {
		t.Fatal(err)
	}
	if after.GetResourceVersion() != before.GetResourceVersion() {
		t.Errorf("the foreign DynamoGraphDeployment was modified: resourceVersion %s → %s", before.GetResourceVersion(), after.GetResourceVersion())
	}
}
