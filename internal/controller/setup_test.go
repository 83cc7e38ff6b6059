package controller

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
)

// The cache transforms drop only what the controllers never read: a request's spec is kept
// until its generation is accepted, a Run keeps everything until it is terminal.
func TestCacheTransforms(t *testing.T) {
	spec := v1beta2.DynamoGraphDeploymentRequestSpec{Model: v1beta2.ModelSpec{Name: "m"}}

	pending := builders.Request("", "").Model("m").Generation(2).Obj()
	pending.Status.ObservedGeneration = 1
	if _, _ = stripAcceptedRequest(pending); pending.Spec.Model.Name != "m" {
		t.Error("the spec of a generation not yet accepted was dropped")
	}
	accepted := builders.Request("", "").Model("m").Generation(2).
		Annotation("kubectl.kubernetes.io/last-applied-configuration", "{}").Annotation("keep", "1").Obj()
	accepted.Status.ObservedGeneration = 2
	if _, _ = stripAcceptedRequest(accepted); accepted.Spec.Model.Name != "" || len(accepted.Annotations) != 1 {
		t.Errorf("accepted request kept spec %v, annotations %v", accepted.Spec, accepted.Annotations)
	}

	running := builders.Run("", "").WithSpec(spec).Obj()
	running.Status.Phase = v1beta2.RunPhaseRunning
	running.Status.Progress = &v1beta2.RunProgress{Settled: 3}
	if _, _ = stripTerminalRun(running); running.Spec.Model.Name != "m" || running.Status.Progress == nil {
		t.Error("a running Run was trimmed")
	}
	done := builders.Run("", "").WithSpec(spec).Annotation("a", "b").Obj()
	done.Status.Phase = v1beta2.RunPhaseSucceeded
	done.Status.Recommendation = &v1beta2.RecommendationSummary{BestCandidate: "c1"}
	meta.SetStatusCondition(&done.Status.Conditions, metav1.Condition{Type: v1beta2.ConditionQueued, Status: metav1.ConditionFalse, Reason: "R"})
	meta.SetStatusCondition(&done.Status.Conditions, metav1.Condition{Type: v1beta2.ConditionCompleted, Status: metav1.ConditionTrue,
		Reason: v1beta2.ReasonSucceeded, Message: "long"})
	_, _ = stripTerminalRun(done)
	c := meta.FindStatusCondition(done.Status.Conditions, v1beta2.ConditionCompleted)
	if done.Spec.Model.Name != "" || done.Annotations != nil || len(done.Status.Conditions) != 1 || c == nil ||
		c.Reason != v1beta2.ReasonSucceeded || c.Message != "" || done.Status.Phase != v1beta2.RunPhaseSucceeded ||
		done.Status.Recommendation.BestCandidate != "c1" {
		t.Errorf("terminal Run trimmed to %+v", done)
	}

	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}},
		Spec:   batchv1.JobSpec{Suspend: ptr.To(true), Parallelism: ptr.To[int32](1)},
		Status: batchv1.JobStatus{Active: 1, Succeeded: 2}}
	_, _ = stripJob(job)
	if job.Labels != nil || !*job.Spec.Suspend || job.Spec.Parallelism != nil || job.Status.Active != 1 || job.Status.Succeeded != 0 {
		t.Errorf("Job trimmed to %+v", job)
	}
}

// TestCacheSkipsSystemNamespaces: watching every namespace, the cache holds none of the kinds
// the operator manages in kube-system, kube-public or kube-node-lease (so nothing there is
// reconciled); with watchNamespaces, the namespaces bound the cache and no field selector is set.
// Nodes, cluster-scoped, are cached whole but trimmed.
func TestCacheSkipsSystemNamespaces(t *testing.T) {
	all := CacheOptions(&v1alpha1.OperatorConfiguration{})
	for obj, by := range all.ByObject {
		if _, node := obj.(*corev1.Node); node {
			// Cluster-scoped: GPU discovery and fitsCluster read every GPU Node.
			if by.Field != nil || by.Transform == nil {
				t.Errorf("Nodes: field selector %v, transform set %v; want none and a transform", by.Field, by.Transform != nil)
			}
			continue
		}
		if by.Field == nil {
			t.Errorf("%T: no field selector", obj)
			continue
		}
		for ns, want := range map[string]bool{"kube-system": false, "kube-public": false, "kube-node-lease": false, "default": true, "team-a": true} {
			if got := by.Field.Matches(fields.Set{"metadata.namespace": ns}); got != want {
				t.Errorf("%T in %s cached = %v, want %v", obj, ns, got, want)
			}
		}
	}
	scoped := CacheOptions(&v1alpha1.OperatorConfiguration{Namespaces: []string{"team-a"}})
	for obj, by := range scoped.ByObject {
		if by.Field != nil {
			t.Errorf("%T: field selector %v with watchNamespaces set", obj, by.Field)
		}
	}
}
