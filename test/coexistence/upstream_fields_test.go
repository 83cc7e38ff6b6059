package coexistence_test

import (
	"context"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/testenv"
	"github.com/dgdr-operator/dgdr-operator/internal/testenv/upstreamcrd"
)

// upstreamOnlyGate enables TestUpstreamOnlyFieldsAndVersionsSurvive, which fails today.
const upstreamOnlyGate = "DGDR_COEXISTENCE_UPSTREAM_ONLY"

// TestUpstreamOnlyFieldsAndVersionsSurvive: what the upstream DGDR CRD (test/crds/upstream/dynamo,
// ai-dynamo/dynamo fbfa59ff) has and ours (api/v1beta1) lacks survives our install:
//
//   - a request using the fields where the two v1beta1 schemas differ reads back as v1beta1
//     exactly as stored, as v1beta2 through the envelope, and the namespace's requests can still
//     be listed. The fields: upstream's spec.sla.optimization_type, spec.modelCache.pvcPath and
//     the booleans spec.features.{planner,kvRouter,mocker}; ours are sla.optimizationType,
//     modelCache.pvcModelPath/pvcMountPath (with a default), objects under features, and a
//     default overrides.trustRemoteCode;
//   - v1alpha1, which upstream serves and our install keeps served, still reads a request.
//
// Today the install prunes and defaults those fields on read, the boolean features make the
// request undecodable by our conversion webhook (which fails every list of requests, so it
// would stop the shared operator's informers: this test has its own control plane), and our
// webhook cannot convert to v1alpha1. It runs only with DGDR_COEXISTENCE_UPSTREAM_ONLY=1 until
// our CRD handles these.
func TestUpstreamOnlyFieldsAndVersionsSurvive(t *testing.T) {
	if os.Getenv(upstreamOnlyGate) != "1" {
		t.Skipf("known incompatibilities with the upstream DGDR CRD (see the doc comment); set %s=1 to run", upstreamOnlyGate)
	}
	e, err := testenv.Start(testenv.Options{NoProjectCRDs: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	ctx := context.Background()
	crd, err := upstreamcrd.DGDR()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := envtest.InstallCRDs(e.Config, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{crd}}); err != nil {
		t.Fatal(err)
	}
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	o := v1beta1Object()
	o.SetNamespace(ns)
	o.SetName("upstream-shape")
	o.Object["spec"] = map[string]any{
		"model": "Qwen/Qwen3-0.6B", "backend": "vllm",
		"sla":        map[string]any{"ttft": int64(200), "itl": int64(20), "optimization_type": "latency"},
		"features":   map[string]any{"planner": true, "kvRouter": true, "mocker": false},
		"modelCache": map[string]any{"pvcName": "models", "pvcPath": "qwen"},
		"overrides": map[string]any{"profilingJob": map[string]any{"backoffLimit": int64(2),
			"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "profiler"}}}}}},
	}
	if err := e.Client.Create(ctx, o, client.FieldValidation(metav1.FieldValidationStrict)); err != nil {
		t.Fatalf("creating the request on the upstream CRD: %v", err)
	}
	want := v1beta1Object()
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(o), want); err != nil {
		t.Fatal(err)
	}
	plain := upstreamRequests()[1]
	plain.SetName("plain")
	if err := e.Client.Create(ctx, plain); err != nil {
		t.Fatal(err)
	}

	if err := e.InstallProjectCRDs(); err != nil {
		t.Fatalf("installing our CRDs over the Dynamo platform's: %v", err)
	}
	got := v1beta1Object()
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(o), got); err != nil {
		t.Errorf("reading as v1beta1: %v", err)
	} else if diff := cmp.Diff(want.Object["spec"], got.Object["spec"]); diff != "" {
		t.Errorf("v1beta1 spec changed by our install (-stored +read):\n%s", diff)
	}
	v2 := &v1beta2.DynamoGraphDeploymentRequest{}
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(o), v2); err != nil {
		t.Errorf("reading as v1beta2: %v", err)
	} else if diff := cmp.Diff(toMap(t, want.Object["spec"]), decode(t, v2.Spec.V1Beta1)); diff != "" {
		t.Errorf("spec.v1beta1 (-stored +envelope):\n%s", diff)
	}
	if err := e.Client.List(ctx, &v1beta2.DynamoGraphDeploymentRequestList{}, client.InNamespace(ns)); err != nil {
		t.Errorf("listing the requests as v1beta2: %v", err)
	}
	// Upstream also serves v1alpha1 (not stored); our install keeps it served.
	alpha := &unstructured.Unstructured{}
	alpha.SetAPIVersion("nvidia.com/v1alpha1")
	alpha.SetKind("DynamoGraphDeploymentRequest")
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(plain), alpha); err != nil {
		t.Errorf("reading a request of the shared fields as v1alpha1 (served by the upstream CRD, kept by our install): %v", err)
	}
}
