package reporter_test

import (
	"bufio"
	"cmp"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
)

var testImages = map[string]v1alpha1.RuntimeImage{
	"vllm":   {Image: "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1", EngineVersion: "0.24.0"},
	"sglang": {Image: "nvcr.io/nvidia/ai-dynamo/sglang-runtime:1.3.1", EngineVersion: "0.5.21"},
	"trtllm": {Image: "nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:1.3.1"},
}

func newNamespace(t *testing.T) string {
	t.Helper()
	return testenv.Namespace(t, k8s, "rep")
}

// newRun creates a Run the way the operator would, with an operator-owned status.
func newRun(t *testing.T, ns, name string, maxCandidates int32) *v1beta2.DynamoGraphDeploymentRun {
	t.Helper()
	return newRunOf(t, ns, name, builders.Request("", "").Revision("main").MaxCandidates(maxCandidates).Spec)
}

// newRunOf creates the running Run ns/name of spec.
func newRunOf(t *testing.T, ns, name string, spec v1beta2.DynamoGraphDeploymentRequestSpec) *v1beta2.DynamoGraphDeploymentRun {
	t.Helper()
	ctx := context.Background()
	run := builders.Run(ns, name).Label(v1beta2.LabelRequestName, "llm").Label(v1beta2.LabelRequestGeneration, "3").
		WithSpec(spec).Obj()
	if err := k8s.Create(ctx, run); err != nil {
		t.Fatal(err)
	}
	run.Status.Phase = v1beta2.RunPhaseRunning
	run.Status.JobRef = &v1beta2.JobReference{Name: name + "-search"}
	run.Status.Message = "operator message"
	meta.SetStatusCondition(&run.Status.Conditions, metav1.Condition{
		Type: v1beta2.ConditionCompleted, Status: metav1.ConditionFalse, Reason: v1beta2.ReasonEvaluatingCandidates, Message: "running",
	})
	if err := k8s.Status().Update(ctx, run); err != nil {
		t.Fatal(err)
	}
	return run
}

func getRun(t *testing.T, ns, name string) *v1beta2.DynamoGraphDeploymentRun {
	t.Helper()
	var run v1beta2.DynamoGraphDeploymentRun
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &run); err != nil {
		t.Fatal(err)
	}
	return &run
}

func listCandidates(t *testing.T, ns string) []v1beta2.DynamoGraphDeploymentCandidate {
	t.Helper()
	var list v1beta2.DynamoGraphDeploymentCandidateList
	if err := k8s.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(list.Items, func(a, b v1beta2.DynamoGraphDeploymentCandidate) int {
		return cmp.Compare(a.Status.Rank, b.Status.Rank)
	})
	return list.Items
}

// recommend runs the real aisim binary and returns its exit code.
func recommend(t *testing.T, input, outDir string) int {
	t.Helper()
	in := filepath.Join(t.TempDir(), "input.yaml")
	if err := os.WriteFile(in, []byte(input), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(aisimBin, "recommend", "-c", in, "--output-dir", outDir, "--format", "json")
	out, err := cmd.CombinedOutput()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		t.Fatalf("aisim: %v\n%s", err, out)
	}
	return 0
}

const infeasibleInput = `engine: {model: meta-llama/Llama-3.1-8B-Instruct, hardware: h200_sxm, workers: {aggregated: {}, prefill: {}, decode: {}}}
traffic: {source: {type: synthetic, input_tokens: 1024, output_tokens: 128}, load: {type: concurrency, concurrency: 10}, stop: {requests: 200}}
evaluation: {sla: {ttft_ms: 0.001}}
optimization: {strict_sla: true}
optimizer: {max_trials: 20}
`

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// copyTree copies the result files except the events file (written separately).
func copyResult(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if strings.HasSuffix(p, "execution-events.jsonl") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
