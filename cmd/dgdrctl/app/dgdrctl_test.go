package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dgdr-operator/dgdr-operator/cmd/dgdrctl/app"
)

func run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := app.NewRootCommand(&out, &errOut)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	var exit app.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.Code
	case err != nil:
		errOut.WriteString(err.Error())
		code = 1
	}
	return out.String(), errOut.String(), code
}

// TestLowerMatchesGoldens: `dgdrctl lower --show input -o json` prints exactly the canonical
// effective input whose indented form the lowering goldens pin.
func TestLowerMatchesGoldens(t *testing.T) {
	examples, _ := filepath.Glob("../../../examples/*.yaml")
	if len(examples) == 0 {
		t.Fatal("no examples")
	}
	for _, path := range examples {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		t.Run(name, func(t *testing.T) {
			out, errOut, code := run(t, "lower", "-f", path, "--gpu-sku", "h200_sxm", "--show", "input", "-o", "json")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			golden, err := os.ReadFile(filepath.Join("..", "..", "..", "internal", "aisimulate", "testdata", "golden", name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var compact bytes.Buffer
			if err := json.Compact(&compact, golden); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(compact.String()+"\n", out); diff != "" {
				t.Errorf("(-golden +dgdrctl):\n%s", diff)
			}
		})
	}
}

func TestLowerShowsAdmittedRequest(t *testing.T) {
	out, errOut, code := run(t, "lower", "-f", "../../../examples/static-partial.yaml", "--gpu-sku", "h200_sxm")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"# admitted DynamoGraphDeploymentRequest", "inputTokens: 2048", "outputTokens: 128",
		"concurrency: 10", "sku: h200_sxm", "maxCandidates: 5", "# effective AISimulate recommendation input (sha256:", "input_tokens: 2048"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestLowerSKUSources: offline there is no cluster to discover GPUs from, so a request that
// names no SKU takes --gpu-sku, else the configuration's defaults.gpuSKU, else is refused at
// spec.hardware.gpu.sku (the shipped configuration sets no default).
func TestLowerSKUSources(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("apiVersion: config.dgdr.nvidia.com/v1alpha1\nkind: OperatorConfiguration\nplanner: {image: p}\nreporter: {image: r}\ndefaults: {gpuSKU: b200_sxm}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		args    []string
		want    int
		wantOut string
		wantErr string
	}{
		{"the shipped configuration sets no default", nil, 1, "", "spec.hardware.gpu.sku: Required value"},
		{"--gpu-sku", []string{"--gpu-sku", "a100_sxm"}, 0, `"hardware":"a100_sxm"`, ""},
		{"the configuration's default", []string{"--config", cfg}, 0, `"hardware":"b200_sxm"`, ""},
		{"--gpu-sku over the configuration's default", []string{"--config", cfg, "--gpu-sku", "l40s"}, 0, `"hardware":"l40s"`, ""},
		{"an unknown --gpu-sku", []string{"--gpu-sku", "k80"}, 1, "", `--gpu-sku: "k80" is not an AISimulate system id`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"lower", "-f", "../../../examples/model-only.yaml", "--show", "input", "-o", "json"}, tc.args...)
			out, errOut, code := run(t, args...)
			// A refusal says how to fix it offline.
			if code != tc.want || !strings.Contains(out, tc.wantOut) || !strings.HasPrefix(errOut, tc.wantErr) || (code != 0) != strings.Contains(errOut, "--gpu-sku") {
				t.Fatalf("exit %d (want %d), out %q (want %q), stderr %q (want prefix %q)", code, tc.want, out, tc.wantOut, errOut, tc.wantErr)
			}
		})
	}
}

// TestValidateRejects: every invalid request is rejected with one line per problem that starts
// with the field path.
func TestValidateRejects(t *testing.T) {
	want := map[string]string{
		"load-empty":           "spec.workload.static.load: ",
		"load-two-variants":    "spec.workload.static.load: ",
		"kv-value-and-range":   "spec.workload.static.load.kvCapacityFraction: ",
		"kv-min-gt-max":        "spec.workload.static.load.kvCapacityFraction.range: ",
		"sla-e2e-with-ttft":    "spec.sla: ",
		"overrides-not-object": "spec.aisimulate.inputOverrides: ",
		"unknown-sku":          "spec.hardware.gpu.sku: ",
		"goodput-without-sla":  "spec.objective.target: ",
		"input-tokens-zero":    "spec.workload.static.inputTokens: ",
		"unknown-field":        "spec.modle: ",
		// the ratcheting rules: names, engine fields, autoApply with the shipped configuration (disabled)
		"model-name-url":         "spec.model.name: ",
		"model-name-escape":      "spec.model.name: ",
		"model-name-traversal":   "spec.model.name: ",
		"model-name-local-path":  "spec.model.name: ",
		"revision-escape":        "spec.model.revision: ",
		"revision-space":         "spec.model.revision: ",
		"deployment-name-64":     "spec.deployment.name: ",
		"overrides-engine-model": "spec.aisimulate.inputOverrides.engine.model: ",
		"auto-apply-disabled":    "spec.deployment.autoApply: ",
	}
	files, _ := filepath.Glob("testdata/invalid/*.yaml")
	if len(files) != len(want) {
		t.Fatalf("%d invalid files, %d expectations", len(files), len(want))
	}
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		t.Run(name, func(t *testing.T) {
			_, errOut, code := run(t, "validate", "-f", path, "--gpu-sku", "h200_sxm")
			if code != 1 {
				t.Fatalf("exit %d, want 1", code)
			}
			lines := strings.Split(strings.TrimSpace(errOut), "\n")
			if !strings.HasPrefix(lines[0], want[name]) {
				t.Errorf("first line %q does not start with %q", lines[0], want[name])
			}
		})
	}
}

// TestValidateReportsEveryProblem: a request with problems at every admission stage (the CRD
// schema and its CEL rules, defaulting without a GPU SKU, the webhook's own rules, the operator's
// caps on the effective input) gets one line for each, at once, each field path once, in the
// order of the stages; the SKU-independent problems are found although no SKU was given.
func TestValidateReportsEveryProblem(t *testing.T) {
	_, errOut, code := run(t, "validate", "-f", "testdata/every-problem.yaml")
	if code != 1 {
		t.Fatalf("exit %d, want 1: %s", code, errOut)
	}
	var paths []string
	for _, line := range strings.Split(strings.TrimSpace(errOut), "\n") {
		if path, _, ok := strings.Cut(line, ": "); ok && strings.HasPrefix(path, "spec.") {
			paths = append(paths, path)
		}
	}
	want := []string{
		"spec.deployment.name", "spec.deployment.selection.tolerance", "spec.sla.ttftMs", // the schema
		"spec.hardware.gpu.sku",                               // defaulting
		"spec.model.revision",                                 // the webhook
		"spec.aisimulate.inputOverrides.optimizer.max_trials", // the caps on the effective input
	}
	if diff := cmp.Diff(want, paths); diff != "" {
		t.Errorf("problems by field path (-want +got):\n%s\n%s", diff, errOut)
	}
	if !strings.Contains(errOut, "pass --gpu-sku") {
		t.Errorf("no hint for the missing SKU:\n%s", errOut)
	}
}

func TestValidateAcceptsExamples(t *testing.T) {
	// examples/auto-apply.yaml needs autoApply.enabled, which the shipped configuration lacks.
	cfg := filepath.Join(t.TempDir(), "operator-config.yaml")
	if err := os.WriteFile(cfg, []byte("apiVersion: config.dgdr.nvidia.com/v1alpha1\nkind: OperatorConfiguration\n"+
		"planner: {image: example.com/planner:1}\nreporter: {image: example.com/dgdr-operator:1}\nautoApply: {enabled: true}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	examples, _ := filepath.Glob("../../../examples/*.yaml")
	for _, path := range examples {
		out, errOut, code := run(t, "validate", "-f", path, "--config", cfg, "--gpu-sku", "h200_sxm")
		if code != 0 || !strings.HasSuffix(strings.TrimSpace(out), ": valid") {
			t.Errorf("%s: exit %d, out %q, stderr %q", path, code, out, errOut)
		}
	}
}
