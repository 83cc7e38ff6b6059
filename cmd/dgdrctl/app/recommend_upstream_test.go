package app_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/internal/upstreamtest"
)

// smallRequest searches Qwen3-8B (a model config AISimulate bundles, so it runs offline) with
// vLLM on at most 2 H200 GPUs in 3 trials: seconds of the real tool's CPU per trial.
const smallRequest = `apiVersion: nvidia.com/v1beta2
kind: DynamoGraphDeploymentRequest
metadata: {name: qwen-offline}
spec:
  model: {name: Qwen/Qwen3-8B}
  backends: [vllm]
  hardware: {gpu: {sku: h200_sxm, budget: 2}}
  sla: {ttftMs: 300, itlMs: 25}
  aisimulate:
    inputOverrides:
      optimizer: {max_trials: 3}
`

// TestRecommendWithTheRealAISimulate: dgdrctl recommend --recommender aisimulate runs the pinned
// AISimulate of the upstream venv as the search Job does, and publishes exactly what the real tool
// ranks when run by hand on the effective input (dgdrctl lower): the same candidates in the same
// order with the same scores and parameters (recommendations/NNNN.yaml), predicted by the real
// tool, each costed at the configuration's price.
func TestRecommendWithTheRealAISimulate(t *testing.T) {
	aisimulateBin := upstreamtest.MustExecutable(t, "aisimulate")
	t.Setenv("HF_HUB_OFFLINE", "1")
	t.Setenv("TRANSFORMERS_OFFLINE", "1")
	dir := t.TempDir()
	request := filepath.Join(dir, "request.yaml")
	if err := os.WriteFile(request, []byte(smallRequest), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := pricedConfig(t, "[aisimulate, recommend]", "[]")

	out, errOut, code := run(t, "recommend", "-f", request, "--config", cfg, "--recommender", "aisimulate", "--recommender-command", aisimulateBin, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var list candidateList
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}

	input, errOut, code := run(t, "lower", "-f", request, "--config", cfg, "--show", "input")
	if code != 0 {
		t.Fatalf("lower: exit %d: %s", code, errOut)
	}
	if err := os.WriteFile(filepath.Join(dir, "input.yaml"), []byte(input), 0o644); err != nil {
		t.Fatal(err)
	}
	upstreamtest.RunAISimulate(t, dir, "recommend", "--config", "input.yaml", "--output-dir", "direct", "--format", "json")
	sweep, err := output.ReadSweepResult(filepath.Join(dir, "direct"))
	if err != nil {
		t.Fatal(err)
	}

	type published struct {
		ID, Parameters, Cost string
		Score                float64
	}
	var want []published
	for i, id := range sweep.Views.Selected() {
		rec, _ := sweep.Candidate(id)
		params, err := os.ReadFile(output.RecommendationPath(filepath.Join(dir, "direct"), i))
		if err != nil {
			t.Fatal(err)
		}
		asJSON, err := yaml.YAMLToJSON(params)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, published{id, canonical(t, asJSON), strconv.FormatFloat(3.5*float64(rec.UsedGPUs), 'f', 2, 64), *rec.Score})
	}
	if len(want) == 0 {
		t.Fatal("the real tool selected no candidate: the comparison would be empty")
	}
	var got []published
	for _, c := range list.Items {
		p := published{ID: c.Status.CandidateID, Parameters: canonical(t, c.Spec.Parameters.Raw), Score: *c.Status.Metrics.Score}
		if c.Status.Metrics.Cost != nil {
			p.Cost = c.Status.Metrics.Cost.PerHour
		}
		got = append(got, p)
		if msg := c.Status.Conditions[0].Message; !strings.Contains(msg, "predicted by "+sweep.Provenance.Implementation+" "+sweep.Provenance.ImplementationVersion) {
			t.Errorf("%s: Evaluated says %q, not the real tool %s %s", c.Name, msg, sweep.Provenance.Implementation, sweep.Provenance.ImplementationVersion)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("dgdrctl recommend --recommender aisimulate against the real tool by hand (-by hand +dgdrctl):\n%s", diff)
	}
}

// canonical re-encodes a JSON document with sorted keys.
func canonical(t *testing.T, data []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
