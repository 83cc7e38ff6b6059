package render_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/internal/render"
)

// FuzzRender: rendering arbitrary candidate configurations never panics; a rendered deployment
// names a backend and uses at least one GPU.
func FuzzRender(f *testing.F) {
	files, _ := filepath.Glob("testdata/input/*.yaml")
	for _, file := range files {
		data, _ := os.ReadFile(file)
		if j, err := yaml.YAMLToJSON(data); err == nil {
			f.Add(j)
		}
	}
	f.Add([]byte(`{"engine":{"model":"m","hardware":"h200_sxm","backend":"vllm","mode":"aggregated"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var doc map[string]any
		if json.Unmarshal(data, &doc) != nil || doc == nil {
			return
		}
		dgd, sum, err := render.Render(doc, render.Options{Name: "c", RuntimeImages: map[string]string{"vllm": "v:1", "sglang": "s:1", "trtllm": "t:1"}})
		if err != nil {
			return
		}
		if dgd == nil || sum.Backend == "" || sum.GPUs < 1 {
			t.Fatalf("rendered without a backend or GPUs: %+v", sum)
		}
	})
}
