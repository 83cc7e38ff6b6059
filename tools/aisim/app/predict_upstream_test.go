package app

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/internal/upstreamtest"
)

// TestPredictHasTheKeysOfTheRealAISimulate: for the same document, aisim predict prints and
// writes the keys the real `aisimulate predict` does (goodput only under an SLA, the same keys
// for an aggregated and a disaggregated deployment), and both outputs read back through
// output.ReadPrediction.
func TestPredictHasTheKeysOfTheRealAISimulate(t *testing.T) {
	const traffic = "traffic: {source: {type: synthetic, input_tokens: 512, output_tokens: 64}, load: {type: concurrency, concurrency: 8}, stop: {requests: 40}}\n"
	const sla = "evaluation: {sla: {ttft_ms: 300, itl_ms: 25}}\n"
	for _, tc := range []struct{ name, doc string }{
		{"aggregated", "engine: {model: Qwen/Qwen3-8B, hardware: h200_sxm, backend: vllm, mode: aggregated, workers: {aggregated: {parallelism: {tensor: 1}}}}\n" + traffic + sla},
		{"no SLA", "engine: {model: Qwen/Qwen3-8B, hardware: h200_sxm, backend: vllm, mode: aggregated, workers: {aggregated: {parallelism: {tensor: 1}}}}\n" + traffic},
		{"disaggregated", "engine: {model: Qwen/Qwen3-8B, hardware: h200_sxm, backend: vllm, mode: disaggregated, workers: {prefill: {parallelism: {tensor: 1}}, decode: {parallelism: {tensor: 1}}}}\n" + traffic + sla},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "p.yaml"), []byte(tc.doc), 0o644); err != nil {
				t.Fatal(err)
			}
			realStdout := upstreamtest.RunAISimulate(t, dir, "predict", "-c", "p.yaml", "--output-dir", "real", "--format", "json")

			var stdout, stderr bytes.Buffer
			if code := Predict(context.Background(), Options{ConfigPath: filepath.Join(dir, "p.yaml"), OutputDir: filepath.Join(dir, "aisim"),
				Format: "json", Stdout: &stdout, Stderr: &stderr}); code != aisimulate.ExitOK {
				t.Fatalf("aisim predict: exit %d: %s", code, stderr.String())
			}
			for _, out := range []struct {
				what        string
				real, aisim []byte
			}{
				{"--format json", realStdout, stdout.Bytes()},
				{output.PredictionFile, readFile(t, filepath.Join(dir, "real", output.PredictionFile)), readFile(t, filepath.Join(dir, "aisim", output.PredictionFile))},
			} {
				if diff := cmp.Diff(keys(t, out.real), keys(t, out.aisim)); diff != "" {
					t.Errorf("%s: keys of the real AISimulate (-) and of aisim (+):\n%s", out.what, diff)
				}
				for who, data := range map[string][]byte{"real": out.real, "aisim": out.aisim} {
					if _, err := output.ParsePrediction(data); err != nil {
						t.Errorf("%s %s: %v", who, out.what, err)
					}
				}
			}
		})
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func keys(t *testing.T, data []byte) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%v: %.200s", err, data)
	}
	return slices.Sorted(maps.Keys(m))
}
