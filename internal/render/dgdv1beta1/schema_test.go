package dgdv1beta1_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/upstreamcrd"
)

// TestRenderedDeploymentsPassTheStrictSchema: the Dynamo platform's own DynamoGraphDeployment
// CRD (test/crds/upstream/dynamo, copied unchanged from ai-dynamo/dynamo) judges what the
// renderer writes. Every rendered golden DGD (internal/render/testdata/golden: all backends,
// aggregated, disaggregated, multinode, Planner, router, model access, overrides, capture) is created on
// a real API server with that CRD installed, as a server-side dry run with strict field
// validation: the upstream v1beta1 schema and its CEL rules validate it, and a field the schema
// does not know is an error, never pruned.
//
// The CRD is installed as upstreamcrd.DGD() derives it: v1beta1 stored and conversion None
// instead of upstream's webhook (which only the Dynamo operator serves); the schemas are
// upstream's.
func TestRenderedDeploymentsPassTheStrictSchema(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	crd, err := upstreamcrd.DGD()
	if err != nil {
		t.Fatal(err)
	}
	env, err := testenv.Start(testenv.Options{NoProjectCRDs: true, CRDs: []*apiextensionsv1.CustomResourceDefinition{crd}})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Stop()

	root := filepath.Join("..", "testdata", "golden")
	var goldens []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".yaml") {
			goldens = append(goldens, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(goldens) < 48 {
		t.Fatalf("found only %d rendered goldens under %s", len(goldens), root)
	}
	ctx := context.Background()
	create := func(obj *unstructured.Unstructured) error {
		return env.Client.Create(ctx, obj, client.DryRunAll, client.FieldValidation(metav1.FieldValidationStrict))
	}
	for _, path := range goldens {
		rel, _ := filepath.Rel(root, path)
		t.Run(filepath.ToSlash(rel), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			obj := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(data, &obj.Object); err != nil {
				t.Fatal(err)
			}
			if obj.GetAPIVersion() != "nvidia.com/v1beta1" || obj.GetKind() != "DynamoGraphDeployment" {
				t.Fatalf("not a nvidia.com/v1beta1 DynamoGraphDeployment: %s %s", obj.GetAPIVersion(), obj.GetKind())
			}
			obj.SetNamespace("default")
			if err := create(obj); err != nil {
				t.Fatalf("the upstream DynamoGraphDeployment CRD rejected %s: %v", path, err)
			}
		})
	}

	// dgd is a minimal valid DGD with one component whose main container has extra fields.
	dgd := func(spec map[string]any, container map[string]any) *unstructured.Unstructured {
		c := map[string]any{"name": "main", "image": "i"}
		for k, v := range container {
			c[k] = v
		}
		s := map[string]any{"components": []any{map[string]any{"name": "w", "podTemplate": map[string]any{
			"spec": map[string]any{"containers": []any{c}}}}}}
		for k, v := range spec {
			s[k] = v
		}
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "nvidia.com/v1beta1", "kind": "DynamoGraphDeployment",
			"metadata": map[string]any{"name": "probe", "namespace": "default"},
			"spec":     s,
		}}
	}
	rejected := func(t *testing.T, what string, obj *unstructured.Unstructured, want ...string) {
		t.Helper()
		err := create(obj)
		if err == nil {
			t.Fatalf("%s was accepted", what)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: the error does not name %q: %v", what, w, err)
			}
		}
	}
	t.Run("reject/valid-probe", func(t *testing.T) {
		// The probes below differ from this accepted object in one field each.
		if err := create(dgd(nil, nil)); err != nil {
			t.Fatalf("the minimal DGD was rejected: %v", err)
		}
	})
	// Strict: a field the schema does not know is an error, not pruned.
	t.Run("reject/unknown-container-field", func(t *testing.T) {
		rejected(t, "an unknown container field", dgd(nil, map[string]any{"envv": []any{}}), "envv", "unknown field")
	})
	// The real schema's own constraints: an enum, a type and a CEL rule of upstream's v1beta1.
	t.Run("reject/backendFramework-enum", func(t *testing.T) {
		obj := dgd(map[string]any{"backendFramework": "tensorrt"}, nil)
		rejected(t, "an unsupported backendFramework", obj, "spec.backendFramework", `Unsupported value: "tensorrt"`)
		if err := create(obj); !apierrors.IsInvalid(err) {
			t.Errorf("not an Invalid error: %v", err)
		}
	})
	t.Run("reject/component-type-enum", func(t *testing.T) {
		obj := dgd(nil, nil)
		comps, _, _ := unstructured.NestedSlice(obj.Object, "spec", "components")
		comps[0].(map[string]any)["type"] = "router"
		_ = unstructured.SetNestedSlice(obj.Object, comps, "spec", "components")
		rejected(t, "an unsupported component type", obj, "spec.components[0].type", `Unsupported value: "router"`)
	})
	t.Run("reject/replicas-type", func(t *testing.T) {
		obj := dgd(nil, nil)
		comps, _, _ := unstructured.NestedSlice(obj.Object, "spec", "components")
		comps[0].(map[string]any)["replicas"] = "two"
		_ = unstructured.SetNestedSlice(obj.Object, comps, "spec", "components")
		rejected(t, "a string replicas", obj, "spec.components[0].replicas", "integer")
	})
	t.Run("reject/component-names-case-insensitive-CEL", func(t *testing.T) {
		obj := dgd(nil, nil)
		comps, _, _ := unstructured.NestedSlice(obj.Object, "spec", "components")
		twin := map[string]any{"name": "W", "podTemplate": comps[0].(map[string]any)["podTemplate"]}
		_ = unstructured.SetNestedSlice(obj.Object, append(comps, twin), "spec", "components")
		rejected(t, "component names equal but for case", obj, "component names must be unique case-insensitively")
	})
}
