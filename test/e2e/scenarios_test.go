//go:build e2e

package e2e

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/promote"
	"github.com/dgdr-operator/dgdr-operator/test/sandboxtest"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/manager"
)

// fastRequest finishes in a few seconds; slowRequest (1000 trials of 2000 requests, about
// 15 s) runs long enough to act on it mid-search.
const fastRequest = `
apiVersion: nvidia.com/v1beta2
kind: DynamoGraphDeploymentRequest
metadata:
  name: %s
spec:
  model:
    name: meta-llama/Llama-3.1-8B-Instruct
  hardware:
    gpu:
      budget: 8
  aisimulate:
    inputOverrides:
      optimizer:
        max_trials: 32
`

// slowPatch turns fastRequest into slowRequest (a new generation).
const slowPatch = `{"spec":{"hardware":null,"aisimulate":{"inputOverrides":{"optimizer":{"max_trials":1000},"traffic":{"stop":{"requests":2000}}}}}}`

// waitRequestDone waits until the request's latest Run (of its current generation) is
// complete and returns that Run.
func waitRequestDone(t *testing.T, ns, name string) *v1beta2.DynamoGraphDeploymentRun {
	t.Helper()
	var runName string
	waitFor(t, searchTimeout, "request "+name+" to finish its search", func(ctx context.Context) (bool, string, error) {
		d, err := getDGDR(ctx, ns, name)
		if err != nil {
			return false, "", err
		}
		s := d.Status
		desc := fmt.Sprintf("generation=%d observed=%d active=%v latest=%+v", d.Generation, s.ObservedGeneration, s.ActiveRunRef, s.LatestRun)
		if s.ObservedGeneration != d.Generation || s.ActiveRunRef != nil || s.LatestRun == nil || s.LatestRun.Phase == "" {
			return false, desc, nil
		}
		runName = s.LatestRun.Name
		return true, desc, nil
	})
	return env.WaitRunDone(t, ns, runName, 30*time.Second)
}

func requireSucceededWithCandidates(t *testing.T, run *v1beta2.DynamoGraphDeploymentRun) {
	t.Helper()
	reason, msg, _ := sandboxtest.Completed(run)
	if reason != v1beta2.ReasonSucceeded {
		t.Fatalf("Run %s ended %s: %s", run.Name, reason, msg)
	}
	if len(run.Status.CandidateRefs) == 0 {
		t.Fatalf("Run %s succeeded without candidateRefs", run.Name)
	}
	cands, err := candidatesOfRun(context.Background(), run.Namespace, run.Name)
	if err != nil {
		t.Fatal(err)
	}
	if len(cands) != len(run.Status.CandidateRefs) {
		t.Fatalf("Run %s: %d candidateRefs but %d Candidates", run.Name, len(run.Status.CandidateRefs), len(cands))
	}
}

// requireParetoSpread: the published candidates of a Pareto Run span the front: rank 1 is its
// throughput-per-GPU end, the last rank its throughput-per-user end, every one says why it was
// chosen, and ranks follow the front (throughput per user not decreasing).
func requireParetoSpread(t *testing.T, run *v1beta2.DynamoGraphDeploymentRun) {
	t.Helper()
	cands, err := candidatesOfRun(context.Background(), run.Namespace, run.Name)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(cands, func(a, b v1beta2.DynamoGraphDeploymentCandidate) int {
		return cmp.Compare(a.Status.Rank, b.Status.Rank)
	})
	var roles []string
	for i, c := range cands {
		roles = append(roles, string(c.Status.ParetoRole))
		if c.Status.ParetoRole == "" {
			t.Errorf("Pareto Run %s: %s has no paretoRole", run.Name, c.Name)
		}
		if m, prev := c.Status.Metrics, cands[max(i-1, 0)].Status.Metrics; m == nil || m.ThroughputPerUser == nil || prev.ThroughputPerUser == nil ||
			*m.ThroughputPerUser < *prev.ThroughputPerUser {
			t.Errorf("Pareto Run %s: %s breaks the front's order by throughput per user", run.Name, c.Name)
		}
	}
	if roles[0] != string(v1beta2.ParetoRoleMaxThroughputPerGPU) || (len(roles) > 1 && roles[len(roles)-1] != string(v1beta2.ParetoRoleMaxThroughputPerUser)) {
		t.Errorf("Pareto Run %s: roles by rank %v, want %s first and %s last", run.Name, roles, v1beta2.ParetoRoleMaxThroughputPerGPU, v1beta2.ParetoRoleMaxThroughputPerUser)
	}
	t.Logf("%s: Pareto roles by rank %v", run.Name, roles)
}

// TestDemoExamplesComplete: every example of examples/demo completes with Candidates, its
// search pod scheduled on the sandbox node by the real scheduler.
func TestDemoExamplesComplete(t *testing.T) {
	ns := newNamespace(t)
	files, err := filepath.Glob(filepath.Join(root, "examples", "demo", "*.yaml"))
	if err != nil || len(files) < 3 {
		t.Fatalf("expected at least 3 demo examples, got %v (%v)", files, err)
	}
	var names []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, env.CreateRequest(t, ns, string(b)).Name)
	}
	for _, n := range names {
		run := waitRequestDone(t, ns, n)
		requireSucceededWithCandidates(t, run)
		if run.Spec.Objective != nil && run.Spec.Objective.Target == v1beta2.TargetPareto {
			requireParetoSpread(t, run)
		}
		var pods corev1.PodList
		if err := k8s.List(context.Background(), &pods, client.InNamespace(ns), client.MatchingLabels{v1beta2.LabelRunName: run.Name}); err != nil {
			t.Fatal(err)
		}
		// Search pods ask for no GPU: the GPU Nodes' taint keeps them on the CPU Node.
		if len(pods.Items) != 1 || pods.Items[0].Spec.NodeName != manager.CPUNode.Name || pods.Items[0].Status.Phase != corev1.PodSucceeded {
			t.Fatalf("Run %s: expected one Succeeded pod on %s, got %d pods", run.Name, manager.CPUNode.Name, len(pods.Items))
		}
		t.Logf("%s: %s with %d candidates", n, run.Name, len(run.Status.CandidateRefs))
	}
}

// TestInvalidInputFromAISimulate: an input the schema admits but aisim rejects (exit 2) ends
// InvalidInput. aisim's message stays in the search container's log (its termination message
// on the pod): the Run's message gives the exit code and the command that reads it, and does not
// quote it.
func TestInvalidInputFromAISimulate(t *testing.T) {
	ns := newNamespace(t)
	env.CreateRequest(t, ns, `
apiVersion: nvidia.com/v1beta2
kind: DynamoGraphDeploymentRequest
metadata:
  name: unknown-model
spec:
  model:
    name: example-org/not-in-the-catalog-7B
`)
	run := waitRequestDone(t, ns, "unknown-model")
	reason, msg, _ := sandboxtest.Completed(run)
	if reason != v1beta2.ReasonInvalidInput {
		t.Fatalf("Run %s ended %s (%s), want InvalidInput", run.Name, reason, msg)
	}
	pod, tail := sandboxtest.SearchLogTail(t, k8s, run)
	if !strings.Contains(tail, "not-in-the-catalog-7B") {
		t.Fatalf("the search container's log tail does not carry aisim's rejection: %q", tail)
	}
	if want := "exited with code 2"; !strings.Contains(msg, want) || !strings.Contains(msg, "kubectl logs -n "+ns+" "+pod+" -c search") ||
		strings.Contains(msg, "not-in-the-catalog-7B") {
		t.Fatalf("the Run's message %q does not say %q and point to the pod's log without quoting it", msg, want)
	}
	if run.Status.JobRef == nil {
		t.Fatalf("Run %s has no Job: the rejection should come from the search itself", run.Name)
	}
	t.Logf("message: %s", msg)
}

// TestEditSupersedesActiveRun: a new generation mid-search supersedes the active Run and
// starts a new one.
func TestEditSupersedesActiveRun(t *testing.T) {
	ns := newNamespace(t)
	d := env.CreateRequest(t, ns, fmt.Sprintf(sandboxtest.SlowRequest, "edited"))
	first := waitRunForGeneration(t, ns, d.Name, 1)
	waitSearchRunning(t, ns, first)

	patchSpec(t, ns, d.Name, `{"spec":{"aisimulate":{"inputOverrides":{"optimizer":{"max_trials":32}}}}}`)
	second := waitRunForGeneration(t, ns, d.Name, 2)
	if second == first {
		t.Fatalf("generation 2 reuses Run %s", first)
	}
	old := env.WaitRunDone(t, ns, first, time.Minute)
	if reason, msg, _ := sandboxtest.Completed(old); reason != v1beta2.ReasonSuperseded {
		t.Fatalf("Run %s ended %s (%s), want Superseded", first, reason, msg)
	}
	run := waitRequestDone(t, ns, d.Name)
	if run.Name != second {
		t.Fatalf("latest Run is %s, want %s", run.Name, second)
	}
	requireSucceededWithCandidates(t, run)
	// The superseded Run's Job is gone (deleted by the operator, pods by the GC).
	waitFor(t, time.Minute, "the superseded Run's Job to be deleted", func(ctx context.Context) (bool, string, error) {
		jobs, err := jobsOf(ctx, ns, d.Name)
		if err != nil {
			return false, "", err
		}
		for _, j := range jobs {
			if j.Labels[v1beta2.LabelRunName] == first && j.DeletionTimestamp == nil {
				return false, "Job " + j.Name + " still exists", nil
			}
		}
		return true, "", nil
	})
}

func patchSpec(t *testing.T, ns, name, patch string) {
	t.Helper()
	d := &v1beta2.DynamoGraphDeploymentRequest{}
	d.Namespace, d.Name = ns, name
	if err := k8s.Patch(context.Background(), d, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
		t.Fatalf("patching %s: %v", name, err)
	}
}

// TestCancelKeepsPublishedCandidates: cancelling a request mid-search ends the active Run
// Cancelled and keeps what was published: the Candidates of the earlier Run and the progress
// of the cancelled one.
func TestCancelKeepsPublishedCandidates(t *testing.T) {
	ns := newNamespace(t)
	d := env.CreateRequest(t, ns, fmt.Sprintf(fastRequest, "cancelled"))
	first := waitRequestDone(t, ns, d.Name)
	requireSucceededWithCandidates(t, first)
	before, _ := candidatesOfRun(context.Background(), ns, first.Name)

	// Generation 2 is the slow search; cancel it once it has published progress.
	patchSpec(t, ns, d.Name, slowPatch)
	second := waitRunForGeneration(t, ns, d.Name, 2)
	waitSearchRunning(t, ns, second)
	waitFor(t, time.Minute, "progress of "+second, func(ctx context.Context) (bool, string, error) {
		r, err := getRun(ctx, ns, second)
		if err != nil {
			return false, "", err
		}
		_, _, done := sandboxtest.Completed(r)
		if done {
			return false, "", fmt.Errorf("Run %s finished before it could be cancelled", second)
		}
		return r.Status.Progress != nil && r.Status.Progress.Settled > 0, fmt.Sprintf("%+v", r.Status.Progress), nil
	})
	obj := &v1beta2.DynamoGraphDeploymentRequest{}
	obj.Namespace, obj.Name = ns, d.Name
	if err := k8s.Patch(context.Background(), obj, client.RawPatch("application/merge-patch+json",
		[]byte(`{"metadata":{"annotations":{"`+v1beta2.AnnotationCancel+`":"true"}}}`))); err != nil {
		t.Fatal(err)
	}
	run := env.WaitRunDone(t, ns, second, time.Minute)
	if reason, msg, _ := sandboxtest.Completed(run); reason != v1beta2.ReasonCancelled {
		t.Fatalf("Run %s ended %s (%s), want Cancelled", second, reason, msg)
	}
	if run.Status.Progress == nil || run.Status.Progress.Settled == 0 {
		t.Fatalf("the cancelled Run lost its published progress: %+v", run.Status.Progress)
	}
	after, err := candidatesOfRun(context.Background(), ns, first.Name)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) || len(after) == 0 {
		t.Fatalf("Candidates of %s: %d before the cancellation, %d after", first.Name, len(before), len(after))
	}
	r1, err := getRun(context.Background(), ns, first.Name)
	if err != nil || len(r1.Status.CandidateRefs) != len(before) {
		t.Fatalf("Run %s lost its candidateRefs: %v %v", first.Name, err, r1.Status.CandidateRefs)
	}
	// The cancelled search stops: its Job is deleted and its pod processes end.
	waitFor(t, time.Minute, "the cancelled Run's pods to be gone", func(ctx context.Context) (bool, string, error) {
		var pods corev1.PodList
		if err := k8s.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{v1beta2.LabelRunName: second}); err != nil {
			return false, "", err
		}
		return len(pods.Items) == 0, fmt.Sprintf("%d pods", len(pods.Items)), nil
	})
}

// TestDeleteGarbageCollectsEverything: deleting a request removes its Runs, Jobs, pods,
// Candidates and the Runs' artifacts ConfigMaps through the real garbage collector. The only
// ConfigMap of a Run is its artifacts (the search reads its input from the Run).
func TestDeleteGarbageCollectsEverything(t *testing.T) {
	ns := newNamespace(t)
	d := env.CreateRequest(t, ns, fmt.Sprintf(fastRequest, "deleted"))
	run := waitRequestDone(t, ns, d.Name)
	requireSucceededWithCandidates(t, run)
	ctx := context.Background()
	count := func(ctx context.Context) (map[string]int, error) {
		n := map[string]int{}
		runs, err := runsOf(ctx, ns, d.Name)
		if err != nil {
			return nil, err
		}
		n["runs"] = len(runs)
		jobs, err := jobsOf(ctx, ns, d.Name)
		if err != nil {
			return nil, err
		}
		n["jobs"] = len(jobs)
		var cms corev1.ConfigMapList
		if err := k8s.List(ctx, &cms, client.InNamespace(ns), client.MatchingLabels{v1beta2.LabelRunName: run.Name}); err != nil {
			return nil, err
		}
		n["configmaps"] = len(cms.Items)
		var pods corev1.PodList
		if err := k8s.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{v1beta2.LabelRunName: run.Name}); err != nil {
			return nil, err
		}
		n["pods"] = len(pods.Items)
		cands, err := candidatesOfRun(ctx, ns, run.Name)
		if err != nil {
			return nil, err
		}
		n["candidates"] = len(cands)
		return n, nil
	}
	n, err := count(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"runs", "jobs", "pods", "candidates"} {
		if n[k] == 0 {
			t.Fatalf("before deletion: no %s for %s (%v)", k, d.Name, n)
		}
	}
	if n["configmaps"] != 1 || run.Status.Artifacts == nil {
		t.Fatalf("before deletion: %d ConfigMaps labelled with Run %s, want its artifacts only (%v, status.artifacts %+v)", n["configmaps"], run.Name, n, run.Status.Artifacts)
	}
	if err := k8s.Delete(ctx, d, client.PropagationPolicy("Background")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, "the garbage collector to remove everything of "+d.Name, func(ctx context.Context) (bool, string, error) {
		n, err := count(ctx)
		if err != nil {
			return false, "", err
		}
		for _, v := range n {
			if v != 0 {
				return false, fmt.Sprint(n), nil
			}
		}
		return true, "", nil
	})
}

// TestPromoteCreatesDynamoGraphDeployment: dgdrctl promote creates the rendered
// DynamoGraphDeployment (test-only CRD) from the best candidate.
func TestPromoteCreatesDynamoGraphDeployment(t *testing.T) {
	ns := newNamespace(t)
	d := env.CreateRequest(t, ns, fmt.Sprintf(fastRequest, "promoted"))
	run := waitRequestDone(t, ns, d.Name)
	requireSucceededWithCandidates(t, run)
	best := run.Status.CandidateRefs[0].Name
	cmd := exec.Command(filepath.Join(root, "bin", "dgdrctl"), "promote", best, "--name", "llama-prod", "-n", ns, "--kubeconfig", kubeconfig)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("dgdrctl promote: %v\n%s", err, out)
	}
	dgd := &unstructured.Unstructured{}
	dgd.SetGroupVersionKind(schema.GroupVersionKind{Group: "nvidia.com", Version: "v1beta1", Kind: "DynamoGraphDeployment"})
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "llama-prod"}, dgd); err != nil {
		t.Fatalf("the promoted DynamoGraphDeployment: %v (dgdrctl said: %s)", err, out)
	}
	backend, _, _ := unstructured.NestedString(dgd.Object, "spec", "backendFramework")
	comps, _, _ := unstructured.NestedSlice(dgd.Object, "spec", "components")
	if backend == "" || len(comps) == 0 {
		t.Fatalf("the promoted DynamoGraphDeployment has no backend or components: %v", dgd.Object["spec"])
	}
	if got := dgd.GetAnnotations()[promote.AnnotationPromotedFrom]; got != best {
		t.Errorf("annotation %s = %q, want the promoted Candidate %q", promote.AnnotationPromotedFrom, got, best)
	}
}

// TestOperatorRestartMidSearch: restarting the operator during a search creates no duplicate
// Runs, Jobs or Candidates, and the search still completes.
func TestOperatorRestartMidSearch(t *testing.T) {
	ns := newNamespace(t)
	d := env.CreateRequest(t, ns, fmt.Sprintf(sandboxtest.SlowRequest, "restarted"))
	first := waitRunForGeneration(t, ns, d.Name, 1)
	waitSearchRunning(t, ns, first)
	if err := manager.Restart(root, manager.Operator); err != nil {
		t.Fatalf("restarting the operator: %v", err)
	}
	waitOperatorReady(t)
	run := waitRequestDone(t, ns, d.Name)
	if run.Name != first {
		t.Fatalf("the search finished in Run %s, want the original %s", run.Name, first)
	}
	requireSucceededWithCandidates(t, run)
	ctx := context.Background()
	runs, _ := runsOf(ctx, ns, d.Name)
	jobs, _ := jobsOf(ctx, ns, d.Name)
	if len(runs) != 1 || len(jobs) != 1 {
		t.Fatalf("after the restart: %d Runs and %d Jobs, want 1 and 1", len(runs), len(jobs))
	}
	cands, _ := candidatesOfRun(ctx, ns, run.Name)
	ranks := map[string]bool{}
	for _, c := range cands {
		r := c.Labels["nvidia.com/dgdc-rank"]
		if ranks[r] {
			t.Fatalf("two Candidates with rank %s", r)
		}
		ranks[r] = true
	}
}

// waitOperatorReady waits until admission calls the operator's webhooks again.
func waitOperatorReady(t *testing.T) {
	t.Helper()
	waitFor(t, time.Minute, "the operator's webhooks", func(ctx context.Context) (bool, string, error) {
		return env.OperatorAdmits(ctx)
	})
}
