package research_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/admission"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/research"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/golden"
)

// TestSearchedInputGolden pins the effective input of a re-search of examples/research.yaml
// byte for byte: the request's own, with the captured window as a Dynamo trace replayed at its
// timestamps. Regenerate with UPDATE_GOLDEN=true go test ./internal/research.
func TestSearchedInputGolden(t *testing.T) {
	data, err := os.ReadFile("../../examples/research.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dgdr := &v1beta2.DynamoGraphDeploymentRequest{}
	if err := yaml.UnmarshalStrict(data, dgdr); err != nil {
		t.Fatal(err)
	}
	if errs := admission.Default(dgdr, admission.DefaultingOptions{DefaultGPUSKU: "h200_sxm"}); len(errs) > 0 {
		t.Fatalf("defaulting: %v", errs)
	}
	in, errs := aisimulate.Lower(research.SearchSpec(&dgdr.Spec), aisimulate.Options{})
	if len(errs) > 0 {
		t.Fatalf("lowering: %v", errs)
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, in.JSON, "", "  "); err != nil {
		t.Fatal(err)
	}
	pretty.WriteString("\n")
	golden.Assert(t, filepath.Join("testdata", "golden", "research-window.json"), pretty.Bytes())
}
