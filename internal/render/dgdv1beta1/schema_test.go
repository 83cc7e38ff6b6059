package dgdv1beta1_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/internal/testenv"
)

// TestRenderedDeploymentsPassTheStrictSchema applies every rendered golden DynamoGraphDeployment
// (internal/render/testdata/golden, all backends, aggregated, disaggregated, multinode, model
// access, router and overrides) to a real API server whose DGD CRD (test/crds-strict, generated
// from these types with their upstream validation markers and a full core/v1 PodSpec schema,
// no preserve-unknown-fields) validates them with strict field validation: an unknown or
// mistyped field, a bad enum or pattern is rejected, never pruned.
func TestRenderedDeploymentsPassTheStrictSchema(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	env, err := testenv.Start(testenv.Options{NoProjectCRDs: true, ExtraCRDDirs: []string{filepath.Join(testenv.Root(), "test", "crds-strict")}})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Stop()
	goldens, err := filepath.Glob(filepath.Join("..", "testdata", "golden", "*", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	top, _ := filepath.Glob(filepath.Join("..", "testdata", "golden", "*.yaml"))
	goldens = append(goldens, top...)
	if len(goldens) < 30 {
		t.Fatalf("found only %d rendered goldens", len(goldens))
	}
	ctx := context.Background()
	for i, path := range goldens {
		t.Run(strings.TrimPrefix(path, "../testdata/golden/"), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			obj := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(data, &obj.Object); err != nil {
				t.Fatal(err)
			}
			obj.SetNamespace("default")
			obj.SetName(fmt.Sprintf("dgd-%d", i))
			if err := env.Client.Create(ctx, obj, client.FieldValidation(metav1.FieldValidationStrict)); err != nil {
				t.Fatalf("the API server rejected %s: %v", path, err)
			}
		})
	}

	// The fixture is strict: a field the schema does not know is an error, not pruned.
	bad := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "nvidia.com/v1beta1", "kind": "DynamoGraphDeployment",
		"metadata": map[string]any{"name": "bad", "namespace": "default"},
		"spec": map[string]any{"components": []any{map[string]any{"name": "w", "podTemplate": map[string]any{
			"spec": map[string]any{"containers": []any{map[string]any{"name": "main", "image": "i", "envv": []any{}}}}}}}},
	}}
	if err := env.Client.Create(ctx, bad, client.FieldValidation(metav1.FieldValidationStrict)); err == nil || !strings.Contains(err.Error(), "envv") {
		t.Errorf("an unknown container field was accepted: %v", err)
	}
}
