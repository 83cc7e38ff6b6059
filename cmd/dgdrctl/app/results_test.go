package app_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/cmd/dgdrctl/app"
	"github.com/dgdr-operator/dgdr-operator/internal/promote"
	"github.com/dgdr-operator/dgdr-operator/internal/reporter"
	"github.com/dgdr-operator/dgdr-operator/internal/reporter/reportertest"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
)

func dgdrctlRun(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var stdout bytes.Buffer
	root := app.NewRootCommand(&stdout, io.Discard)
	root.SetArgs(append(args, "--kubeconfig", kubeconfig))
	err := root.ExecuteContext(context.Background())
	return stdout.String(), err
}

// fixture is a request with one Run whose result the real reporter published from a real
// aisim search.
type fixture struct {
	ns  string
	req *v1beta2.DynamoGraphDeploymentRequest
	run *v1beta2.DynamoGraphDeploymentRun
	out *reporter.Publication
	dir string // the search's output directory
}

func newFixture(t *testing.T, maxCandidates int32) *fixture {
	t.Helper()
	ctx := context.Background()
	c := env.Client
	ns := testenv.Namespace(t, c, "ctl")
	req := builders.Request(ns, "llm").MaxCandidates(maxCandidates).Obj()
	if err := c.Create(ctx, req); err != nil {
		t.Fatal(err)
	}
	run := builders.Run(ns, "llm-run-1").From(req, 1).Obj()
	if err := c.Create(ctx, run); err != nil {
		t.Fatal(err)
	}
	req.Status.ActiveRunRef = &v1beta2.RunReference{Name: run.Name}
	if err := c.Status().Update(ctx, req); err != nil {
		t.Fatal(err)
	}
	reportertest.SetRunState(t, env.Client, run, v1beta2.RunPhaseRunning, metav1.ConditionFalse, v1beta2.ReasonEvaluatingCandidates)
	// The price the operator records with the input: the reporter computes costs from it.
	run.Status.Pricing = &v1beta2.RunPricing{System: "h200_sxm", Currency: "USD", PricePerGPUHour: "3.50"}
	if err := c.Status().Update(ctx, run); err != nil {
		t.Fatal(err)
	}

	input := "engine: {model: meta-llama/Llama-3.1-8B-Instruct, hardware: h200_sxm, workers: {aggregated: {}, prefill: {}, decode: {}}}\n" +
		"traffic: {source: {type: synthetic, input_tokens: 1024, output_tokens: 128}, load: {type: concurrency, concurrency: 10}, stop: {requests: 200}}\n" +
		"optimization: {}\noptimizer: {max_trials: 24}\n"
	out, dir, err := reportertest.Publish(ctx, env.Config, aisimBin, t.TempDir(), ns, run.Name, input)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Published) == 0 {
		t.Fatal("nothing published")
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(run), run); err != nil {
		t.Fatal(err)
	}
	return &fixture{ns: ns, req: req, run: run, out: out, dir: dir}
}

var dgdGVK = schema.GroupVersionKind{Group: "nvidia.com", Version: "v1beta1", Kind: "DynamoGraphDeployment"}

func TestPromote(t *testing.T) {
	f := newFixture(t, 2)
	best := f.out.Published[0]

	// The Run is still running: refused.
	_, err := dgdrctlRun(t, "promote", best, "--name", "llm-prod", "-n", f.ns)
	if err == nil || !strings.Contains(err.Error(), "has not completed") {
		t.Fatalf("promote of a running Run: err = %v", err)
	}
	reportertest.SetRunState(t, env.Client, f.run, v1beta2.RunPhaseFailed, metav1.ConditionTrue, v1beta2.ReasonPublishFailed)
	_, err = dgdrctlRun(t, "promote", best, "--name", "llm-prod", "-n", f.ns)
	if err == nil || !strings.Contains(err.Error(), "did not succeed") {
		t.Fatalf("promote of a failed Run: err = %v", err)
	}
	reportertest.SetRunState(t, env.Client, f.run, v1beta2.RunPhaseSucceeded, metav1.ConditionTrue, v1beta2.ReasonSucceeded)

	// --dry-run prints the object and creates nothing.
	stdout, err := dgdrctlRun(t, "promote", best, "--name", "llm-prod", "-n", f.ns, "--dry-run")
	if err != nil {
		t.Fatal(err)
	}
	var printed map[string]any
	if err := yaml.Unmarshal([]byte(stdout), &printed); err != nil {
		t.Fatalf("dry-run output is not YAML: %v\n%s", err, stdout)
	}
	md, _ := printed["metadata"].(map[string]any)
	if printed["apiVersion"] != "nvidia.com/v1beta1" || printed["kind"] != "DynamoGraphDeployment" || md["name"] != "llm-prod" || md["namespace"] != f.ns {
		t.Errorf("dry-run object envelope: %v %v %v", printed["apiVersion"], printed["kind"], md)
	}
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(dgdGVK)
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "llm-prod"}, got); err == nil {
		t.Fatal("--dry-run created the object")
	}

	// A real promotion: the (test-only) DGD CRD accepts the rendered object.
	stdout, err = dgdrctlRun(t, "promote", best, "--name", "llm-prod", "-n", f.ns)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout, "llm-prod created") {
		t.Errorf("stdout %q", stdout)
	}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "llm-prod"}, got); err != nil {
		t.Fatal(err)
	}
	var cand v1beta2.DynamoGraphDeploymentCandidate
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: best}, &cand); err != nil {
		t.Fatal(err)
	}
	comps, _, _ := unstructured.NestedSlice(got.Object, "spec", "components")
	if len(comps) < 2 || got.GetAnnotations()[promote.AnnotationPromotedFrom] != best {
		t.Errorf("promoted object: %d components, annotations %v", len(comps), got.GetAnnotations())
	}
	if bf, _, _ := unstructured.NestedString(got.Object, "spec", "backendFramework"); bf != string(cand.Spec.Backend) {
		t.Errorf("backendFramework %q, candidate backend %q", bf, cand.Spec.Backend)
	}

	// Never replaces an existing deployment.
	if _, err := dgdrctlRun(t, "promote", best, "--name", "llm-prod", "-n", f.ns); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("second promotion: err = %v", err)
	}
	// --force promotes a candidate of a Run that did not succeed.
	reportertest.SetRunState(t, env.Client, f.run, v1beta2.RunPhaseCancelled, metav1.ConditionTrue, v1beta2.ReasonCancelled)
	if _, err := dgdrctlRun(t, "promote", f.out.Published[1], "--name", "llm-canary", "-n", f.ns, "--force"); err != nil {
		t.Errorf("--force: %v", err)
	}
}

func TestStatus(t *testing.T) {
	f := newFixture(t, 3)
	stdout, err := dgdrctlRun(t, "status", "llm", "-n", f.ns)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range append([]string{"RUN", "llm-run-1", "Running", "EvaluatingCandidates", "RANK", "TOK/S/GPU"}, f.out.Published...) {
		if !strings.Contains(stdout, want) {
			t.Errorf("status output lacks %q:\n%s", want, stdout)
		}
	}
	// Candidates are listed best first.
	if i, j := strings.Index(stdout, f.out.Published[0]), strings.Index(stdout, f.out.Published[2]); i < 0 || j < i {
		t.Errorf("candidates out of order:\n%s", stdout)
	}
	// Latencies carry the estimator's expected error, and the table says what it means.
	if !regexp.MustCompile(`\d ±\d+%`).MatchString(stdout) || !strings.Contains(stdout, "median error of the estimate against measured serving runs") {
		t.Errorf("status output lacks the error band:\n%s", stdout)
	}
	// Each candidate's cost per hour and per million output tokens, in the recorded currency.
	if !strings.Contains(stdout, "COST/H") || !regexp.MustCompile(`\d+\.\d{2} USD\s+\d+\.\d{4} USD`).MatchString(stdout) {
		t.Errorf("status output lacks the cost columns:\n%s", stdout)
	}
	// --watch ends once the newest run is complete and shows the final view.
	reportertest.SetRunState(t, env.Client, f.run, v1beta2.RunPhaseSucceeded, metav1.ConditionTrue, v1beta2.ReasonSucceeded)
	stdout, err = dgdrctlRun(t, "status", "llm", "-n", f.ns, "--watch", "--interval", "10ms")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout, "Succeeded") {
		t.Errorf("watch output:\n%s", stdout)
	}
	if _, err := dgdrctlRun(t, "status", "missing", "-n", f.ns); err == nil {
		t.Error("status of a missing request: want an error")
	}
}

func TestCancel(t *testing.T) {
	f := newFixture(t, 1)
	ctx := context.Background()
	tests := []struct {
		name string
		obj  client.Object
	}{
		{"llm", &v1beta2.DynamoGraphDeploymentRequest{}},
		{"llm-run-1", &v1beta2.DynamoGraphDeploymentRun{}},
	}
	for _, tc := range tests {
		if _, err := dgdrctlRun(t, "cancel", tc.name, "-n", f.ns); err != nil {
			t.Fatalf("cancel %s: %v", tc.name, err)
		}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: tc.name}, tc.obj); err != nil {
			t.Fatal(err)
		}
		if got := tc.obj.GetAnnotations()[v1beta2.AnnotationCancel]; got != "true" {
			t.Errorf("%s: cancel annotation = %q", tc.name, got)
		}
	}
	if _, err := dgdrctlRun(t, "cancel", "nothing", "-n", f.ns); err == nil || !strings.Contains(err.Error(), "no DynamoGraphDeploymentRequest") {
		t.Errorf("cancel of a missing object: err = %v", err)
	}
}

// TestResults: results --raw prints the kept recommendation.json and ledger as the search wrote
// them; results and status show the not-feasible candidates by reason category and say when the
// published candidates are provisional.
func TestResults(t *testing.T) {
	f := newFixture(t, 3)
	ctx := context.Background()
	for args, file := range map[string]string{"llm-run-1 --raw": "recommendation.json", "llm --raw --events": "execution-events.jsonl"} {
		stdout, err := dgdrctlRun(t, append([]string{"results", "-n", f.ns}, strings.Fields(args)...)...)
		if err != nil {
			t.Fatalf("results %s: %v", args, err)
		}
		want, err := os.ReadFile(filepath.Join(f.dir, file))
		if err != nil {
			t.Fatal(err)
		}
		if stdout != string(want) {
			t.Errorf("results %s printed %d bytes, want %s's %d bytes", args, len(stdout), file, len(want))
		}
	}

	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(f.run), f.run); err != nil {
		t.Fatal(err)
	}
	f.run.Status.Recommendation.InfeasibleReasons = []v1beta2.ReasonCount{{Category: "kv_capacity", Count: 7}, {Category: "sla_constraint", Count: 2}}
	f.run.Status.Recommendation.Provisional = true
	if err := env.Client.Status().Update(ctx, f.run); err != nil {
		t.Fatal(err)
	}
	reasons := "Not feasible (9) by reason: kv_capacity 7, sla_constraint 2"
	stdout, err := dgdrctlRun(t, "results", "llm-run-1", "-n", f.ns)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range append([]string{reasons, "provisional: the best so far", "--raw", "RANK"}, f.out.Published...) {
		if !strings.Contains(stdout, want) {
			t.Errorf("results output lacks %q:\n%s", want, stdout)
		}
	}
	stdout, err = dgdrctlRun(t, "status", "llm", "-n", f.ns)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout, reasons) || !strings.Contains(stdout, "provisional") {
		t.Errorf("status output lacks the reasons or the provisional mark:\n%s", stdout)
	}

	f.run.Status.Artifacts = nil
	if err := env.Client.Status().Update(ctx, f.run); err != nil {
		t.Fatal(err)
	}
	if _, err := dgdrctlRun(t, "results", "llm-run-1", "-n", f.ns, "--raw"); err == nil || !strings.Contains(err.Error(), "no kept artifacts") {
		t.Errorf("results --raw without artifacts: err = %v", err)
	}
}
