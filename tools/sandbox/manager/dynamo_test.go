package manager

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/dgdrealizer"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/nodeagent"
)

// TestDynamoRuntimeImagesFollowTheOperatorConfiguration: every runtime image the operator
// renders deployments with runs the venv's python as python3.
func TestDynamoRuntimeImagesFollowTheOperatorConfiguration(t *testing.T) {
	got := dynamoRuntimeImages("/s/dynamo-python3")
	want := map[string]nodeagent.Image{}
	for _, img := range operatorConfigFor(OperatorPorts{}, "", nil, "").RuntimeImages {
		want[img.Image] = nodeagent.Image{Binary: "/s/dynamo-python3", Entrypoint: []string{"python3"}}
	}
	if len(want) == 0 {
		t.Fatal("the operator configuration has no runtime images")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("images (-want +got):\n%s", diff)
	}
}

// TestRealizerConfigLoads: the realizer reads the configuration the sandbox writes, and the
// model and launcher it names are in the repository.
func TestRealizerConfigLoads(t *testing.T) {
	root, err := FindRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	want := realizerConfig(root, dir, "/k")
	path := filepath.Join(dir, "dgd-realizer.yaml")
	if err := writeConfig(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := dgdrealizer.LoadConfig(path) // strict, every field required
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("configuration (-written +loaded):\n%s", diff)
	}
	for _, f := range []string{filepath.Join(got.ModelDir, "tokenizer.json"), filepath.Join(got.ModelDir, "config.json"), filepath.Join(got.LauncherDir, dgdrealizer.LauncherScript)} {
		if _, err := os.Stat(f); err != nil {
			t.Error(err)
		}
	}
}
