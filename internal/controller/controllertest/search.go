package controllertest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/config"
	"github.com/dgdr-operator/dgdr-operator/internal/naming"
	"github.com/dgdr-operator/dgdr-operator/internal/promote"
	"github.com/dgdr-operator/dgdr-operator/internal/render"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/poll"
)

// Wait is how long a test waits for the operator to react.
const Wait = 20 * time.Second

// CandidateParameters is a recommendations/NNNN.yaml as the search writes it: 4 GPUs of
// h200_sxm (2 replicas of TP2), aggregated vLLM.
const CandidateParameters = `{"engine":{"backend":"vllm","hardware":"h200_sxm","mode":"aggregated","model":"Qwen/Qwen3-0.6B","context_length":8192,
	"workers":{"aggregated":{"kv_cache":{"block_size":32,"capacity":{"memory_fraction":0.9,"type":"default"},"prefix_caching":true},
	"parallelism":{"attention_data":1,"moe_expert":1,"moe_tensor":1,"pipeline":1,"replicas":2,"tensor":2},
	"scheduler":{"max_batched_tokens":8192,"max_sequences":256}}}},
	"traffic":{"load":{"concurrency":10,"type":"concurrency"},"source":{"input_tokens":1024,"output_tokens":128,"type":"synthetic"}}}`

// RenderedCandidate is the Candidate name of Run r, controlled by it, with CandidateParameters
// and the graphDeployment the reporter renders from them with cfg: what autoApply deploys.
// metrics become its status.metrics (FinishSearch writes them).
func RenderedCandidate(t testing.TB, cfg *v1alpha1.OperatorConfiguration, r *v1beta2.DynamoGraphDeploymentRun, name string, metrics *v1beta2.CandidateMetrics) *v1beta2.DynamoGraphDeploymentCandidate {
	t.Helper()
	return RenderedCandidateOf(t, cfg, r, name, CandidateParameters, 4, metrics)
}

// RenderedCandidateOf is RenderedCandidate with other parameters (a recommendations/NNNN.yaml as
// JSON), which use gpus GPUs.
func RenderedCandidateOf(t testing.TB, cfg *v1alpha1.OperatorConfiguration, r *v1beta2.DynamoGraphDeploymentRun, name, parameters string, gpus int32, metrics *v1beta2.CandidateMetrics) *v1beta2.DynamoGraphDeploymentCandidate {
	t.Helper()
	var params map[string]any
	if err := json.Unmarshal([]byte(parameters), &params); err != nil {
		t.Fatal(err)
	}
	dgd, _, err := render.Render(params, render.RunOptions(r, name, config.RuntimeImageRefs(cfg.RuntimeImages), render.DefaultGPUsPerNode, cfg.Planner.Image))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(dgd)
	if err != nil {
		t.Fatal(err)
	}
	cand := builders.Candidate(r.Namespace, name).OwnedBy(r).GPUs(gpus).GraphDeployment(raw).Parameters(parameters).Obj()
	cand.Status.Metrics = metrics
	return cand
}

// Search is what a search publishes before it ends.
type Search struct {
	// Candidates, best first; created with their status.
	Candidates []*v1beta2.DynamoGraphDeploymentCandidate
	// Baseline is a re-search's status.baseline.
	Baseline *v1beta2.BaselineStatus
	// Window is the report of a re-search's input container (searchinput.SummaryMessage), "" for
	// none.
	Window string
}

// FinishSearch publishes s as the result of Run r and ends its search Job successfully, as the
// reporter, the kubelet and the Job controller would.
func FinishSearch(t testing.TB, c client.Client, r *v1beta2.DynamoGraphDeploymentRun, s Search) {
	t.Helper()
	ctx := context.Background()
	for _, cand := range s.Candidates {
		st := cand.Status
		if err := c.Create(ctx, cand); err != nil {
			t.Fatal(err)
		}
		if st.Metrics == nil {
			continue
		}
		patch := client.MergeFrom(cand.DeepCopy())
		cand.Status = st
		if err := c.Status().Patch(ctx, cand, patch); err != nil {
			t.Fatal(err)
		}
	}
	job := &batchv1.Job{}
	poll.Eventually(t, Wait, "the search Job of "+r.Name, func() (bool, error) {
		err := c.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: naming.JobName(r.Name)}, job)
		return err == nil, client.IgnoreNotFound(err)
	})
	if err := c.Get(ctx, client.ObjectKeyFromObject(r), r); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(r.DeepCopy())
	for _, cand := range s.Candidates {
		r.Status.CandidateRefs = append(r.Status.CandidateRefs, v1beta2.CandidateReference{Name: cand.Name})
	}
	r.Status.Recommendation = &v1beta2.RecommendationSummary{BestCandidate: s.Candidates[0].Name, Evaluated: 10, Feasible: int64(len(s.Candidates))}
	r.Status.Baseline = s.Baseline
	if err := c.Status().Patch(ctx, r, patch); err != nil {
		t.Fatal(err)
	}
	pod, err := CreatePod(ctx, c, job, &Terminated{}, &Terminated{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Window != "" {
		pod.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "input", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: s.Window}}}}
		if err := c.Status().Update(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	if err := FinishJob(ctx, c, job, ""); err != nil {
		t.Fatal(err)
	}
}

// MakeReady marks the DynamoGraphDeployment ns/name ready, as the Dynamo operator would, once
// autoApply created it.
func MakeReady(t testing.TB, c client.Client, ns, name string) {
	t.Helper()
	ctx := context.Background()
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(promote.GVK)
	poll.Eventually(t, 2*Wait, "the DynamoGraphDeployment "+name, func() (bool, error) {
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj)
		return err == nil, client.IgnoreNotFound(err)
	})
	_ = unstructured.SetNestedField(obj.Object, "successful", "status", "state")
	_ = unstructured.SetNestedSlice(obj.Object, []any{map[string]any{"type": "Ready", "status": "True", "reason": "AllReady",
		"message": "all components ready", "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}}, "status", "conditions")
	if err := c.Status().Update(ctx, obj); err != nil {
		t.Fatal(err)
	}
}

// WaitForStatus waits up to within for the request's status to satisfy cond, and returns the
// request as it then was.
func WaitForStatus(t testing.TB, c client.Client, d *v1beta2.DynamoGraphDeploymentRequest, within time.Duration, what string, cond func(*v1beta2.DynamoGraphDeploymentRequest) bool) *v1beta2.DynamoGraphDeploymentRequest {
	t.Helper()
	cur := &v1beta2.DynamoGraphDeploymentRequest{}
	poll.Eventually(t, within, what, func() (bool, error) {
		err := c.Get(context.Background(), client.ObjectKeyFromObject(d), cur)
		return err == nil && cond(cur), err
	})
	return cur
}

// WaitForEvent waits for an event of the given reason (and type, when not "") about the
// request ns/name.
func WaitForEvent(t testing.TB, c client.Client, ns, name, reason, typ string) {
	t.Helper()
	poll.Eventually(t, Wait, "event "+reason, func() (bool, error) {
		var list eventsv1.EventList
		if err := c.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, e := range list.Items {
			if e.Regarding.Name == name && e.Reason == reason && (typ == "" || e.Type == typ) {
				return true, nil
			}
		}
		return false, nil
	})
}
