package coexistence_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/poll"
)

// fbfa59ffShape is a v1beta1 request using every field where the Dynamo platform's CRD at
// ai-dynamo/dynamo fbfa59ff (test/crds/upstream/dynamo) differs from later releases, whose shape
// api/v1beta1 first followed: sla.optimization_type (later: optimizationType), modelCache.pvcPath
// (later: pvcModelPath and pvcMountPath, which later CRDs default), the booleans
// features.{planner,kvRouter,mocker} (later: objects), the typed overrides.profilingJob (later
// and ours: opaque), and no nested defaults (later: workload.isl/osl, modelCache.pvcMountPath,
// overrides.trustRemoteCode). It is created strictly against the upstream CRD in setup, with a
// status as the Dynamo operator writes it.
const fbfa59ffShape = `{"metadata": {"name": "fbfa59ff-shape"}, "spec": {"model": "Qwen/Qwen3-0.6B", "backend": "vllm",
  "sla": {"ttft": 200, "itl": 20, "optimization_type": "hybrid"}, "workload": {"osl": 500},
  "features": {"planner": true, "kvRouter": true, "mocker": false},
  "modelCache": {"pvcName": "models", "pvcPath": "qwen"},
  "overrides": {"profilingJob": {"backoffLimit": 2, "template": {"spec": {"containers": [{"name": "profiler"}]}}}}},
  "status": {"phase": "Deployed", "dgdName": "qwen-dgd", "profilingJobName": "profile-qwen", "observedGeneration": 1,
  "profilingResults": {"selectedConfig": {"spec": {"services": {}}}}, "deploymentInfo": {"replicas": 1, "availableReplicas": 1}}}`

// laterShape is the same request in the shape of later Dynamo releases (and of api/v1beta1's
// first version), with the defaults their CRDs wrote into stored requests spelled out.
const laterShape = `{"metadata": {"name": "later-shape"}, "spec": {"model": "Qwen/Qwen3-0.6B", "backend": "auto", "runtimeVersionOverride": "1.2.0",
  "sla": {"e2eLatency": 1500, "optimizationType": "throughput"}, "workload": {"isl": 4000, "osl": 1000, "concurrency": 8.5},
  "hardware": {"gpuSku": "h100_sxm", "vramMb": 81559, "totalGpus": 16, "numGpusPerNode": 8, "interconnect": "nvlink", "rdma": false},
  "features": {"planner": {"mode": "sla", "nested": {"a": [1, "x"]}}, "kvRouter": {"enabled": true}, "mocker": {"enabled": false}},
  "modelCache": {"pvcName": "models", "pvcModelPath": "models/qwen", "pvcMountPath": "/opt/model-cache"},
  "overrides": {"trustRemoteCode": false, "dgd": {"apiVersion": "nvidia.com/v1beta1", "kind": "DynamoGraphDeployment", "spec": {}}},
  "searchStrategy": "rapid", "autoApply": true}}`

// TestUpstreamOnlyFieldsAndVersionsSurvive: what the Dynamo platform's DGDR CRD at fbfa59ff and
// later releases store survives our CRD taking over (docs/operate/coexistence.md):
//
//   - the fbfa59ff-shaped request stored before the install reads back as v1beta1 exactly as
//     stored, field by field (a boolean feature stays a boolean; nothing is defaulted), and as
//     v1beta2 with the same spec in spec.v1beta1;
//   - requests of both shapes written through v1beta1 after the install are accepted (strict
//     field validation: no field unknown to our schema), read back unchanged, and survive a
//     write through v1beta2 (our conversion webhook decodes and re-encodes them);
//   - every list of requests succeeds, as v1beta1 and v1beta2, and the operator still
//     reconciles a v1beta2 request created afterwards;
//   - v1alpha1, which the upstream CRD serves, is no longer served (our conversion webhook does
//     not convert it); it stays in the CRD, and nothing was ever stored as v1alpha1.
func TestUpstreamOnlyFieldsAndVersionsSurvive(t *testing.T) {
	ctx := context.Background()
	var stored *unstructured.Unstructured
	for _, o := range before {
		if o.GetName() == "fbfa59ff-shape" {
			stored = o
		}
	}
	if stored == nil {
		t.Fatal("setup did not create fbfa59ff-shape")
	}
	got := v1beta1Object()
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(stored), got); err != nil {
		t.Fatalf("reading as v1beta1: %v", err)
	}
	for _, path := range [][]string{
		{"sla", "optimization_type"}, {"sla", "ttft"}, {"sla", "itl"},
		{"modelCache", "pvcPath"}, {"modelCache", "pvcName"},
		{"features", "planner"}, {"features", "kvRouter"}, {"features", "mocker"},
		{"overrides", "profilingJob"}, {"workload"}, {"modelCache"}, {"overrides"},
	} {
		want, _, _ := unstructured.NestedFieldNoCopy(stored.Object, append([]string{"spec"}, path...)...)
		have, _, _ := unstructured.NestedFieldNoCopy(got.Object, append([]string{"spec"}, path...)...)
		if want == nil || !cmp.Equal(want, have) {
			t.Errorf("spec.%v: stored %#v, read %#v", path, want, have)
		}
	}
	if diff := cmp.Diff(stored.Object["spec"], got.Object["spec"]); diff != "" {
		t.Errorf("v1beta1 spec changed by our install (-stored +read):\n%s", diff)
	}
	if b, ok := got.Object["spec"].(map[string]any)["features"].(map[string]any)["kvRouter"].(bool); !ok || !b {
		t.Errorf("features.kvRouter is not the boolean true: %#v", got.Object["spec"])
	}
	v2 := &v1beta2.DynamoGraphDeploymentRequest{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(stored), v2); err != nil {
		t.Fatalf("reading as v1beta2: %v", err)
	}
	if diff := cmp.Diff(toMap(t, stored.Object["spec"]), decode(t, v2.Spec.V1Beta1)); diff != "" {
		t.Errorf("spec.v1beta1 (-stored +envelope):\n%s", diff)
	}
	if diff := cmp.Diff(toMap(t, stored.Object["status"]), decode(t, v2.Status.V1Beta1)); diff != "" {
		t.Errorf("status.v1beta1 (-stored +envelope):\n%s", diff)
	}

	// Both shapes keep being written through v1beta1, and survive a write through v1beta2.
	for _, doc := range []string{fbfa59ffShape, laterShape} {
		o := v1beta1Object()
		if err := json.Unmarshal([]byte(doc), &o.Object); err != nil {
			t.Fatal(err)
		}
		o.SetAPIVersion(v1beta1.GroupVersion.String())
		o.SetKind("DynamoGraphDeploymentRequest")
		o.SetNamespace(ns)
		o.SetName(o.GetName() + "-written-later")
		delete(o.Object, "status")
		written := o.DeepCopy()
		t.Run(o.GetName(), func(t *testing.T) {
			if err := k8s.Create(ctx, o, client.FieldValidation(metav1.FieldValidationStrict)); err != nil {
				t.Fatalf("creating through v1beta1 over our CRD: %v", err)
			}
			got := v1beta1Object()
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(o), got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(toMap(t, written.Object["spec"]), toMap(t, got.Object["spec"])); diff != "" {
				t.Errorf("v1beta1 spec as stored (-written +read):\n%s", diff)
			}
			v2 := &v1beta2.DynamoGraphDeploymentRequest{}
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(o), v2); err != nil {
				t.Fatalf("reading as v1beta2: %v", err)
			}
			if diff := cmp.Diff(toMap(t, written.Object["spec"]), decode(t, v2.Spec.V1Beta1)); diff != "" {
				t.Errorf("spec.v1beta1 (-written +envelope):\n%s", diff)
			}
			patch := client.MergeFrom(v2.DeepCopy())
			v2.Labels = map[string]string{"seen-by": "v1beta2"}
			if err := k8s.Patch(ctx, v2, patch); err != nil {
				t.Fatalf("labelling through v1beta2: %v", err)
			}
			after := v1beta1Object()
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(o), after); err != nil {
				t.Fatal(err)
			}
			if after.GetLabels()["seen-by"] != "v1beta2" || after.GetResourceVersion() == got.GetResourceVersion() {
				t.Errorf("the label patch was not written: %v", after.GetLabels())
			}
			if diff := cmp.Diff(toMap(t, written.Object["spec"]), toMap(t, after.Object["spec"])); diff != "" {
				t.Errorf("v1beta1 spec after a write through v1beta2 (-written +read):\n%s", diff)
			}
		})
	}

	// Lists succeed, in both versions, with every request.
	l1 := &unstructured.UnstructuredList{}
	l1.SetGroupVersionKind(v1beta1.GroupVersion.WithKind("DynamoGraphDeploymentRequestList"))
	if err := k8s.List(ctx, l1, client.InNamespace(ns)); err != nil {
		t.Errorf("listing as v1beta1: %v", err)
	}
	l2 := &v1beta2.DynamoGraphDeploymentRequestList{}
	if err := k8s.List(ctx, l2, client.InNamespace(ns)); err != nil {
		t.Errorf("listing as v1beta2: %v", err)
	}
	for _, name := range []string{"fbfa59ff-shape", "fbfa59ff-shape-written-later", "later-shape-written-later", "qwen", "llama"} {
		if !slices.ContainsFunc(l1.Items, func(o unstructured.Unstructured) bool { return o.GetName() == name }) ||
			!slices.ContainsFunc(l2.Items, func(o v1beta2.DynamoGraphDeploymentRequest) bool { return o.Name == name }) {
			t.Errorf("%s missing from the lists", name)
		}
	}

	// The operator (its informers list every request) still reconciles a v1beta2 request.
	d := builders.Request(ns, "after-upstream-shapes").Obj()
	if err := k8s.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, wait, "a Run for the v1beta2 request created after the upstream-shaped ones", func() (bool, error) {
		return len(runs(t, d.Name)) == 1, nil
	})

	// v1alpha1 stays in the CRD, unserved, never stored.
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	if err := k8s.Get(ctx, client.ObjectKey{Name: "dynamographdeploymentrequests.nvidia.com"}, u); err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	for _, v := range crd.Spec.Versions {
		served[v.Name] = v.Served
	}
	if diff := cmp.Diff(map[string]bool{"v1alpha1": false, "v1beta1": true, "v1beta2": true}, served); diff != "" {
		t.Errorf("served versions (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"v1beta1"}, crd.Status.StoredVersions); diff != "" {
		t.Errorf("stored versions (-want +got):\n%s", diff)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dc.ServerResourcesForGroupVersion("nvidia.com/v1alpha1"); !apierrors.IsNotFound(err) {
		t.Errorf("discovery of nvidia.com/v1alpha1: want NotFound, got %v", err)
	}
	alpha := &unstructured.Unstructured{}
	alpha.SetAPIVersion("nvidia.com/v1alpha1")
	alpha.SetKind("DynamoGraphDeploymentRequest")
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(stored), alpha); !meta.IsNoMatchError(err) && !apierrors.IsNotFound(err) {
		t.Errorf("reading as v1alpha1: want no such version, got %v", err)
	}
}
