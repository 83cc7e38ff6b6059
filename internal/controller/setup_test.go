package controller

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/deployment"
	"github.com/dgdr-operator/dgdr-operator/internal/scheme"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
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
// Nodes, cluster-scoped, are cached whole but trimmed; of CRDs only the DynamoGraphDeployment
// CRD is cached, by its name.
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
		if isDGDCRD(obj) {
			continue
		}
		if by.Field == nil {
			t.Errorf("%T: no field selector", obj)
			continue
		}
		for ns, want := range map[string]bool{"kube-system": false, "kube-public": false, "kube-node-lease": false, "default": true, "team-a": true} {
			if got := by.Field.Matches(fields.Set{"metadata.namespace": ns, "status.successful": "0"}); got != want {
				t.Errorf("%T in %s cached = %v, want %v", obj, ns, got, want)
			}
		}
	}
	checkSucceededJobsUncached(t, all)
	scoped := CacheOptions(&v1alpha1.OperatorConfiguration{Namespaces: []string{"team-a"}})
	for obj, by := range scoped.ByObject {
		if isDGDCRD(obj) {
			if by.Field == nil || !by.Field.Matches(fields.Set{"metadata.name": deployment.DGDCRDName}) || by.Field.Matches(fields.Set{"metadata.name": "other.nvidia.com"}) {
				t.Errorf("the DGD CRD's field selector %v does not select that CRD alone", by.Field)
			}
			continue
		}
		switch obj.(type) {
		case *batchv1.Job, *corev1.Pod:
			continue // checkSucceededJobsUncached
		}
		if by.Field != nil {
			t.Errorf("%T: field selector %v with watchNamespaces set", obj, by.Field)
		}
	}
	checkSucceededJobsUncached(t, scoped)
}

// checkSucceededJobsUncached: the cache holds a Job only while none of its pods succeeded, and
// a pod only while it has not succeeded (jobcache), in whichever namespaces it caches.
func checkSucceededJobsUncached(t *testing.T, opts cache.Options) {
	t.Helper()
	cases := map[string]struct {
		obj  client.Object
		sets map[string]bool // field set value -> cached
		key  string
	}{
		"Job": {obj: &batchv1.Job{}, key: "status.successful", sets: map[string]bool{"0": true, "1": false, "2": false}},
		"Pod": {obj: &corev1.Pod{}, key: "status.phase", sets: map[string]bool{"Pending": true, "Running": true, "Failed": true, "Succeeded": false}},
	}
	for kind, tc := range cases {
		found := false
		for obj, by := range opts.ByObject {
			if reflect.TypeOf(obj) != reflect.TypeOf(tc.obj) {
				continue
			}
			found = true
			for value, want := range tc.sets {
				if got := by.Field != nil && by.Field.Matches(fields.Set{"metadata.namespace": "team-a", tc.key: value}); got != want {
					t.Errorf("a %s with %s=%s cached = %v, want %v (field selector %v)", kind, tc.key, value, got, want, by.Field)
				}
			}
		}
		if !found {
			t.Errorf("%ss are not cached", kind)
		}
	}
}

// isDGDCRD tells whether a cached object is the DynamoGraphDeployment CRD request watches.
func isDGDCRD(obj client.Object) bool {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	return ok && m.GroupVersionKind() == deployment.DGDCRDObject().GroupVersionKind()
}

// TestCachedKindsAreListedAndWatched: every kind the manager's cache holds is one the generated
// RBAC (config/rbac/role.yaml, which the chart grants) lets the operator list and watch, for
// every name (an informer lists and watches the whole kind). A kind cached without them would
// never sync. Reads of any other kind fail at once (ReaderFailOnMissingInformer) rather than
// starting an informer.
func TestCachedKindsAreListedAndWatched(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(testenv.Root(), "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(data, &role); err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []*v1alpha1.OperatorConfiguration{{}, {Namespaces: []string{"team-a"}}} {
		opts := CacheOptions(cfg)
		if !opts.ReaderFailOnMissingInformer {
			t.Error("ReaderFailOnMissingInformer is off: a read of an undeclared kind starts an informer")
		}
		for obj := range opts.ByObject {
			gvk, err := apiutil.GVKForObject(obj, scheme.Scheme)
			if err != nil {
				t.Fatal(err)
			}
			resource, _ := meta.UnsafeGuessKindToResource(gvk)
			var verbs []string
			for _, r := range role.Rules {
				if len(r.ResourceNames) == 0 && slices.Contains(r.APIGroups, gvk.Group) && slices.Contains(r.Resources, resource.Resource) {
					verbs = append(verbs, r.Verbs...)
				}
			}
			for _, v := range []string{"list", "watch"} {
				if !slices.Contains(verbs, v) {
					t.Errorf("%s is cached but the generated RBAC grants %v on %s, not %s", gvk.Kind, verbs, resource.GroupResource(), v)
				}
			}
		}
	}
}

// TestNodesCachedOnlyWithGPUDiscovery: without GPU discovery no Node is read, so none is cached
// (and none needs to be listable).
func TestNodesCachedOnlyWithGPUDiscovery(t *testing.T) {
	for _, discovery := range []bool{true, false} {
		opts := CacheOptions(&v1alpha1.OperatorConfiguration{Defaults: v1alpha1.DefaultsConfig{GPUDiscovery: ptr.To(discovery)}})
		cached := false
		for obj := range opts.ByObject {
			if _, ok := obj.(*corev1.Node); ok {
				cached = true
			}
		}
		if cached != discovery {
			t.Errorf("gpuDiscovery %v: Nodes cached = %v", discovery, cached)
		}
	}
}
