package app_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/config"
	"github.com/dgdr-operator/dgdr-operator/internal/render/dgdv1beta1"
)

const recommendConfig = "../../../examples/config/operator-config.yaml"

// sampleTrace is the checked-in mooncake trace the trace examples replay offline.
const sampleTrace = "../../../examples/traces/mooncake-sample.jsonl"

// replaysTrace reports whether the request file has spec.workload.trace.
func replaysTrace(t *testing.T, path string) bool {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var req v1beta2.DynamoGraphDeploymentRequest
	if err := yaml.Unmarshal(data, &req); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return req.Spec.Workload != nil && req.Spec.Workload.Trace != nil
}

type candidateList struct {
	APIVersion string                                   `json:"apiVersion"`
	Kind       string                                   `json:"kind"`
	Items      []v1beta2.DynamoGraphDeploymentCandidate `json:"items"`
}

// TestRecommendEveryExample: dgdrctl recommend prints ranked Candidates for every example (or
// exits 1 with the recommender's reason), each with a DynamoGraphDeployment. A trace example
// replays the sample trace (--trace) and must find candidates.
func TestRecommendEveryExample(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the local recommender on every example")
	}
	examples, _ := filepath.Glob("../../../examples/*.yaml")
	for _, path := range examples {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		t.Run(name, func(t *testing.T) {
			args := []string{"recommend", "-f", path, "--config", recommendConfig, "-o", "json"}
			trace := replaysTrace(t, path)
			if trace {
				args = append(args, "--trace", sampleTrace)
			}
			out, errOut, code := run(t, args...)
			if code == 1 && strings.Contains(errOut, "no feasible candidate") && !trace {
				return
			}
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var list candidateList
			if err := json.Unmarshal([]byte(out), &list); err != nil {
				t.Fatal(err)
			}
			if list.APIVersion != "v1" || list.Kind != "List" || len(list.Items) == 0 {
				t.Fatalf("want a non-empty v1 List, got %s/%s with %d items", list.APIVersion, list.Kind, len(list.Items))
			}
			for i, c := range list.Items {
				if c.Status.Rank != int32(i+1) || c.Kind != "DynamoGraphDeploymentCandidate" {
					t.Errorf("item %d: kind %q rank %d", i, c.Kind, c.Status.Rank)
				}
				var dgd dgdv1beta1.DynamoGraphDeployment
				if err := json.Unmarshal(c.Spec.GraphDeployment.Raw, &dgd); err != nil || dgd.Kind != dgdv1beta1.Kind {
					t.Errorf("item %d: graphDeployment %v %q", i, err, dgd.Kind)
				}
			}
		})
	}
}

// TestRecommendRendersTheRequest: the rendered deployments carry the request's model access,
// router and overrides, exactly as the reporter publishes them.
func TestRecommendRendersTheRequest(t *testing.T) {
	out, errOut, code := run(t, "recommend", "-f", "../../../examples/model-access.yaml", "--config", recommendConfig, "-o", "yaml")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var list candidateList
	if err := yaml.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	dgd := string(list.Items[0].Spec.GraphDeployment.Raw)
	for _, want := range []string{`"secretKeyRef":{"key":"HF_TOKEN","name":"hf-token"}`, `"claimName":"model-cache","readOnly":true`, `--trust-remote-code`} {
		if !strings.Contains(dgd, want) {
			t.Errorf("the rendered deployment lacks %s:\n%s", want, dgd)
		}
	}
}

// TestRecommendWithoutConfigRendersTheTestedRelease: without --config, dgdrctl recommend
// renders every candidate with the runtime image of the Dynamo release the operator is tested
// with, the operator's own default (config.DefaultRuntimeImages).
func TestRecommendWithoutConfigRendersTheTestedRelease(t *testing.T) {
	out, errOut, code := run(t, "recommend", "-f", "../../../examples/full.yaml", "-o", "yaml")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var list candidateList
	if err := yaml.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) == 0 {
		t.Fatal("no candidates")
	}
	for _, c := range list.Items {
		image := config.DefaultRuntimeImages[string(c.Spec.Backend)].Image
		if image == "" || !strings.Contains(string(c.Spec.GraphDeployment.Raw), `"image":"`+image+`"`) {
			t.Errorf("candidate %s (%s) is not rendered with %q:\n%s", c.Name, c.Spec.Backend, image, c.Spec.GraphDeployment.Raw)
		}
	}
}

func TestRecommendExitCodes(t *testing.T) {
	cases := []struct {
		name, file, config string
		want               int
		wantErr            string
	}{
		{"invalid request", "testdata/invalid/load-empty.yaml", recommendConfig, 2, "spec.workload.static.load"},
		// The shipped configuration names the runtime images of the tested Dynamo release.
		{"without --config", "../../../examples/full.yaml", "", 0, ""},
		{"table", "../../../examples/model-only.yaml", recommendConfig, 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"recommend", "-f", tc.file, "-o", "table"}
			if tc.config != "" {
				args = append(args, "--config", tc.config)
			}
			out, errOut, code := run(t, args...)
			if code != tc.want || !strings.Contains(errOut, tc.wantErr) {
				t.Fatalf("exit %d (want %d), stderr %q (want %q)", code, tc.want, errOut, tc.wantErr)
			}
			if code == 0 && !strings.HasPrefix(out, "RANK") {
				t.Errorf("table output: %q", out)
			}
		})
	}
}

// TestRecommendParetoSpread: for the demo's Pareto request, dgdrctl recommend publishes what the
// reporter would, a spread of the front: its two ends, the knee, ranked along the front, each
// labelled; the table lists the labels.
func TestRecommendParetoSpread(t *testing.T) {
	const request = "../../../examples/demo/kv-range-pareto.yaml"
	out, errOut, code := run(t, "recommend", "-f", request, "--config", recommendConfig, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var list candidateList
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	var roles []v1beta2.ParetoRole
	for i, c := range list.Items {
		roles = append(roles, c.Status.ParetoRole)
		if i > 0 && *c.Status.Metrics.ThroughputPerUser < *list.Items[i-1].Status.Metrics.ThroughputPerUser {
			t.Errorf("rank %d breaks the front's order by throughput per user", c.Status.Rank)
		}
	}
	if len(roles) < 3 || roles[0] != v1beta2.ParetoRoleMaxThroughputPerGPU || roles[len(roles)-1] != v1beta2.ParetoRoleMaxThroughputPerUser ||
		!slices.Contains(roles, v1beta2.ParetoRoleKnee) {
		t.Errorf("roles by rank %v: want both ends and the knee", roles)
	}
	table, errOut, code := run(t, "recommend", "-f", request, "--config", recommendConfig, "-o", "table")
	if code != 0 || !strings.Contains(table, "Chosen along the Pareto front: #1 max-throughput-per-gpu, ") {
		t.Errorf("exit %d (%s), table:\n%s", code, errOut, table)
	}
}

// pricedConfig writes an operator configuration with a price for h200_sxm and the search command
// and arguments given; it returns its path.
func pricedConfig(t *testing.T, command, args string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "operator-config.yaml")
	doc := "apiVersion: config.dgdr.nvidia.com/v1alpha1\nkind: OperatorConfiguration\n" +
		"planner: {image: example.com/planner:1, command: " + command + ", args: " + args + "}\nreporter: {image: example.com/dgdr-operator:1}\n" +
		"pricing: {currency: USD, pricePerGPUHour: {h200_sxm: \"3.50\"}}\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRecommendCostsWithPrices: with a configuration that prices the request's GPU, every
// Candidate carries its cost as the reporter computes it in the cluster (GPUs × 3.50 USD an hour),
// and the table shows the cost columns. Without prices there is no cost.
func TestRecommendCostsWithPrices(t *testing.T) {
	cfg := pricedConfig(t, "[aisimulate, recommend]", "[]")
	out, errOut, code := run(t, "recommend", "-f", "../../../examples/model-only.yaml", "--gpu-sku", "h200_sxm", "--config", cfg, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var list candidateList
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) == 0 {
		t.Fatal("no candidates")
	}
	for _, c := range list.Items {
		want := &v1beta2.CandidateCost{Currency: "USD", PerHour: strconv.FormatFloat(3.5*float64(c.Spec.GPUs), 'f', 2, 64)}
		got := c.Status.Metrics.Cost
		if got == nil || got.PerMillionOutputTokens == "" {
			t.Errorf("%s: cost %+v, want one per hour and per million tokens", c.Name, got)
			continue
		}
		if diff := cmp.Diff(want, &v1beta2.CandidateCost{Currency: got.Currency, PerHour: got.PerHour}); diff != "" {
			t.Errorf("%s (%d GPUs): cost (-want +got):\n%s", c.Name, c.Spec.GPUs, diff)
		}
	}
	table, _, _ := run(t, "recommend", "-f", "../../../examples/model-only.yaml", "--gpu-sku", "h200_sxm", "--config", cfg, "-o", "table")
	if !strings.Contains(table, "COST/H") || !strings.Contains(table, " USD") {
		t.Errorf("the table has no costs:\n%s", table)
	}
	plain, _, _ := run(t, "recommend", "-f", "../../../examples/model-only.yaml", "--gpu-sku", "h200_sxm", "-o", "json")
	if strings.Contains(plain, `"cost"`) {
		t.Error("costs without a price list")
	}
}

// TestRecommendRunsTheSearchCommandAsTheJob: --recommender-command runs an executable in place of
// planner.command's first word, with the rest of planner.command, the search Job's arguments
// (jobcontract.SearchArgs) on local paths and planner.args, on the effective input as YAML (what
// dgdrctl lower prints), with a /tmp of its own; its exit code is dgdrctl's. The executable here
// records what it got and exits 2 (invalid input).
func TestRecommendRunsTheSearchCommandAsTheJob(t *testing.T) {
	record := t.TempDir()
	script := filepath.Join(t.TempDir(), "fake-aisimulate")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$RECORD/args\"\ncp \"$3\" \"$RECORD/input.yaml\"\n"+
		"test -d \"$TMPDIR\" && echo tmp > \"$RECORD/tmp\"\necho 'config: invalid' >&2\nexit 2\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("RECORD", record)
	cfg := pricedConfig(t, "[aisimulate, recommend]", "[--seed, \"7\"]")
	const request = "../../../examples/model-only.yaml"
	_, errOut, code := run(t, "recommend", "-f", request, "--gpu-sku", "h200_sxm", "--config", cfg, "--recommender-command", script)
	if code != 2 || !strings.Contains(errOut, "config: invalid") {
		t.Fatalf("exit %d, stderr %q; want the recommender's 2 and its stderr", code, errOut)
	}
	read := func(name string) string {
		data, err := os.ReadFile(filepath.Join(record, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	args := strings.Split(strings.TrimSpace(read("args")), "\n")
	want := []string{"recommend", "--config", "<input>/input.yaml", "--output-dir", "<input>/result", "--format", "json", "--seed", "7"}
	if len(args) == len(want) {
		dir := filepath.Dir(args[2])
		for i := range args {
			args[i] = strings.Replace(args[i], dir, "<input>", 1)
		}
	}
	if diff := cmp.Diff(want, args); diff != "" {
		t.Errorf("arguments (-want +got):\n%s", diff)
	}
	lowered, errOut, code := run(t, "lower", "-f", request, "--gpu-sku", "h200_sxm", "--config", cfg, "--show", "input")
	if code != 0 {
		t.Fatalf("lower: exit %d: %s", code, errOut)
	}
	if diff := cmp.Diff(lowered, read("input.yaml")); diff != "" {
		t.Errorf("the recommender's input is not the effective input (-lower +recommender):\n%s", diff)
	}
	if read("tmp") != "tmp\n" {
		t.Error("the recommender has no TMPDIR of its own")
	}

	if _, errOut, code := run(t, "recommend", "-f", request, "--gpu-sku", "h200_sxm", "--recommender", "aisimulate", "--recommender-command", filepath.Join(record, "missing")); code == 0 || !strings.Contains(errOut, "missing") {
		t.Errorf("a missing recommender: exit %d, stderr %q", code, errOut)
	}
	if _, errOut, code := run(t, "recommend", "-f", request, "--recommender", "aisim", "--recommender-command", script); code == 0 || !strings.Contains(errOut, "--recommender aisimulate") {
		t.Errorf("--recommender-command with aisim: exit %d, stderr %q", code, errOut)
	}
}
