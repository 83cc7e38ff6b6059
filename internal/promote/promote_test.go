package promote_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/promote"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/upstreamcrd"
)

var (
	env *testenv.Env
	k8s client.Client
)

// TestMain starts one real API server with the Dynamo platform's DynamoGraphDeployment CRD
// (upstreamcrd.DGD: upstream's schemas, v1beta1 stored, no conversion webhook).
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	dgd, err := upstreamcrd.DGD()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env, err = testenv.Start(testenv.Options{CRDs: []*apiextensionsv1.CustomResourceDefinition{dgd}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the control plane:", err)
		return 1
	}
	defer env.Stop()
	k8s = env.Client
	return m.Run()
}

// candidate is a published Candidate whose graphDeployment has one component of the given
// replicas, so each test can tell which result a deployment carries.
func candidate(ns, name string, replicas int) *v1beta2.DynamoGraphDeploymentCandidate {
	return builders.Candidate(ns, name).Label(v1beta2.LabelRequestName, "llama").Label(v1beta2.LabelRunName, "llama-run-1").
		GraphDeployment(fmt.Appendf(nil, `{"apiVersion":"nvidia.com/v1beta1","kind":"DynamoGraphDeployment",
				"metadata":{"labels":{"app":"llama"}},
				"spec":{"backendFramework":"vllm","components":[{"name":"Frontend","type":"frontend","replicas":%d,"podTemplate":{"spec":{"containers":[{"name":"main","image":"f"}]}}}]}}`, replicas)).
		Obj()
}

func namespace(t *testing.T) string {
	t.Helper()
	return testenv.Namespace(t, k8s, "promote")
}

func replicasOf(t *testing.T, ns, name string) int64 {
	t.Helper()
	dgd := &unstructured.Unstructured{}
	dgd.SetGroupVersionKind(promote.GVK)
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, dgd); err != nil {
		t.Fatal(err)
	}
	comps, _, _ := unstructured.NestedSlice(dgd.Object, "spec", "components")
	r, _, _ := unstructured.NestedInt64(comps[0].(map[string]any), "replicas")
	return r
}

// apply renders cand as the deployment "llama" and applies it for owner, against the real API
// server.
func apply(t *testing.T, cand *v1beta2.DynamoGraphDeploymentCandidate, owner *promote.Owner) (promote.Result, error) {
	t.Helper()
	obj, err := promote.Render(cand, "llama", owner)
	if err != nil {
		t.Fatal(err)
	}
	return promote.Apply(context.Background(), k8s, obj, owner)
}

// TestApplyOwnership: autoApply creates, updates only what the same request created and only
// with a result at least as new; promote without an owner never modifies anything.
func TestApplyOwnership(t *testing.T) {
	ns := namespace(t)
	req := types.UID("request-uid-1")
	gen := func(g int64) *promote.Owner { return &promote.Owner{RequestUID: req, Generation: g} }

	if got, err := apply(t, candidate(ns, "llama-run-2-c1", 1), gen(2)); err != nil || got != promote.Created {
		t.Fatalf("first apply = %s, %v; want Created", got, err)
	}
	steps := []struct {
		name     string
		cand     *v1beta2.DynamoGraphDeploymentCandidate
		owner    *promote.Owner
		want     promote.Result
		replicas int64
	}{
		{"the same result again", candidate(ns, "llama-run-2-c1", 1), gen(2), promote.Unchanged, 1},
		{"a newer generation updates", candidate(ns, "llama-run-3-c4", 3), gen(3), promote.Updated, 3},
		{"an older generation never replaces a newer one", candidate(ns, "llama-run-2-c1", 1), gen(2), promote.Unchanged, 3},
	}
	for _, s := range steps {
		got, err := apply(t, s.cand, s.owner)
		if err != nil || got != s.want {
			t.Errorf("%s: %s, %v; want %s", s.name, got, err, s.want)
		}
		if r := replicasOf(t, ns, "llama"); r != s.replicas {
			t.Errorf("%s: deployed replicas %d, want %d", s.name, r, s.replicas)
		}
	}

	var conflict *promote.ConflictError
	if _, err := apply(t, candidate(ns, "llama-run-9-c1", 9), &promote.Owner{RequestUID: "another-request", Generation: 9}); !errors.As(err, &conflict) {
		t.Errorf("another request's apply: err = %v, want a ConflictError", err)
	}
	if _, err := apply(t, candidate(ns, "llama-run-9-c1", 9), nil); !errors.As(err, &conflict) {
		t.Errorf("promote over an existing deployment: err = %v, want a ConflictError", err)
	}
	if r := replicasOf(t, ns, "llama"); r != 3 {
		t.Errorf("after refused writes the deployment has %d replicas, want 3 (unchanged)", r)
	}
}

// TestRenderCarriesOriginAndOwnership: the rendered object keeps the candidate's own labels and
// adds the request (the owner's, not the Candidate's label, for autoApply; under the v1beta1
// request's keys too), Run, origin and (for autoApply) ownership.
func TestRenderCarriesOriginAndOwnership(t *testing.T) {
	cand := candidate("ns", "llama-run-1-c2", 1)
	cand.Labels[v1beta2.LabelRequestName] = "not-the-owner"
	obj, err := promote.Render(cand, "prod", &promote.Owner{RequestUID: "u", RequestName: "llama", Generation: 4})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"labels": map[string]string{"app": "llama", v1beta2.LabelRequestName: "llama", v1beta2.LabelRunName: "llama-run-1",
			"dgdr.nvidia.com/name": "llama", "dgdr.nvidia.com/namespace": "ns"},
		"annotations": map[string]string{promote.AnnotationPromotedFrom: "llama-run-1-c2",
			promote.AnnotationAppliedBy: "u", promote.AnnotationGeneration: "4"},
		"gvk": promote.GVK.String(), "name": "prod", "namespace": "ns",
	}
	got := map[string]any{"labels": obj.GetLabels(), "annotations": obj.GetAnnotations(),
		"gvk": obj.GroupVersionKind().String(), "name": obj.GetName(), "namespace": obj.GetNamespace()}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rendered (-want +got):\n%s", diff)
	}
}

// TestReadiness reads the DynamoGraphDeployment status shapes the Dynamo operator writes.
func TestReadiness(t *testing.T) {
	cases := []struct {
		name   string
		status map[string]any
		gen    int64
		want   bool
	}{
		{"no status", nil, 1, false},
		{"Ready condition true", map[string]any{"observedGeneration": int64(1), "conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}, 1, true},
		{"Ready condition false wins over state", map[string]any{"state": "successful", "conditions": []any{map[string]any{"type": "Ready", "status": "False", "message": "pods pending"}}}, 1, false},
		{"state successful", map[string]any{"state": "successful"}, 1, true},
		{"state pending", map[string]any{"state": "pending"}, 1, false},
		{"stale status of an older generation", map[string]any{"observedGeneration": int64(1), "state": "successful"}, 2, false},
	}
	for _, tc := range cases {
		obj := &unstructured.Unstructured{Object: map[string]any{}}
		if tc.status != nil {
			obj.Object["status"] = tc.status
		}
		obj.SetGeneration(tc.gen)
		if got, why := promote.Readiness(obj); got != tc.want {
			t.Errorf("%s: ready = %v (%s), want %v", tc.name, got, why, tc.want)
		}
	}
}

// TestPromoteDropsOwnKeys: a Candidate's graphDeployment carries nvidia.com/dgdr-* and
// dgdr.nvidia.com/* annotations and labels copied from a victim's deployment (applied-by the victim request's UID, a high
// request generation). `dgdrctl promote` (no owner) creates the deployment on the real API
// server; read back, it carries no such key but the promoted-from promote sets and
// the request and Run labels of the Candidate itself (the request's under both keys), so the victim's autoApply never takes it
// for its own. Reverted (the Candidate's keys copied), the deployment is applied-by the victim.
func TestPromoteDropsOwnKeys(t *testing.T) {
	ns := namespace(t)
	cand := candidate(ns, "llama-run-1-c3", 1)
	cand.Spec.GraphDeployment.Raw = []byte(`{"apiVersion":"nvidia.com/v1beta1","kind":"DynamoGraphDeployment",
		"metadata":{"labels":{"app":"llama","nvidia.com/dgdr-request-name":"victim","dgdr.nvidia.com/name":"victim","dgdr.nvidia.com/namespace":"victims","dgdr.nvidia.com/other":"x"},
			"annotations":{"note":"kept","nvidia.com/dgdr-applied-by":"victim-uid","nvidia.com/dgdr-request-generation":"99","nvidia.com/dgdr-anything":"x"}},
		"spec":{"backendFramework":"vllm","components":[{"name":"Frontend","type":"frontend","replicas":1,"podTemplate":{"spec":{"containers":[{"name":"main","image":"f"}]}}}]}}`)
	obj, err := promote.Render(cand, "forged", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := promote.Apply(context.Background(), k8s, obj, nil); err != nil {
		t.Fatal(err)
	}
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(promote.GVK)
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "forged"}, got); err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]string{
		"labels": {"app": "llama", v1beta2.LabelRequestName: "llama", v1beta2.LabelRunName: "llama-run-1",
			"dgdr.nvidia.com/name": "llama", "dgdr.nvidia.com/namespace": ns},
		"annotations": {"note": "kept", promote.AnnotationPromotedFrom: "llama-run-1-c3"},
	}
	if diff := cmp.Diff(want, map[string]map[string]string{"labels": got.GetLabels(), "annotations": got.GetAnnotations()}); diff != "" {
		t.Errorf("promoted deployment's metadata (-want +got):\n%s", diff)
	}
}

// TestRenderRefusesACandidateThatIsNotDeployable: a Candidate whose Deployable condition is False
// (NotRenderable) is never rendered into a deployment — the one code path of dgdrctl promote, the
// UI's promote and autoApply — and the error carries the reason and the fields.
func TestRenderRefusesACandidateThatIsNotDeployable(t *testing.T) {
	cand := candidate("ns", "llama-run-1-c3", 1)
	cand.Status.Conditions = []metav1.Condition{{Type: v1beta2.ConditionDeployable, Status: metav1.ConditionFalse,
		Reason: v1beta2.ReasonNotRenderable, Message: "not deployable: the renderer cannot lower engine.speculation"}}
	obj, err := promote.Render(cand, "prod", nil)
	var nd *promote.NotDeployableError
	if !errors.As(err, &nd) || obj != nil {
		t.Fatalf("Render = %v, %v; want a NotDeployableError", obj, err)
	}
	for _, w := range []string{"llama-run-1-c3", v1beta2.ReasonNotRenderable, "engine.speculation"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q does not name %s", err, w)
		}
	}
	cand.Status.Conditions[0].Status = metav1.ConditionTrue
	if _, err := promote.Render(cand, "prod", nil); err != nil {
		t.Errorf("a deployable candidate: %v", err)
	}
}
