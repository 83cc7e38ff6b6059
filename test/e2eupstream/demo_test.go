//go:build e2eupstream

package e2eupstream

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/internal/upstreamtest"
	"github.com/dgdr-operator/dgdr-operator/test/sandboxtest"
)

// envInt is an integer from the environment, or def.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// demoRequests reads the demo's requests (examples/demo and examples/demo/trace: model only, a
// KV-capacity range with a Pareto objective, goodput with an SLA, a trace) with their search
// budget set to trials: the real AISimulate evaluates a candidate in seconds of CPU, not
// milliseconds, and the suite runs on two cores.
func demoRequests(t *testing.T, trials int) []*v1beta2.DynamoGraphDeploymentRequest {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(root, "examples", "demo", "*.yaml"))
	traces, _ := filepath.Glob(filepath.Join(root, "examples", "demo", "trace", "*.yaml"))
	files = append(files, traces...)
	if len(files) != 4 {
		t.Fatalf("the demo has %d requests, want 4: %v", len(files), files)
	}
	var out []*v1beta2.DynamoGraphDeploymentRequest
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		d, err := sandboxtest.ParseRequest(string(data))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		overrides := map[string]any{}
		if d.Spec.AISimulate != nil && d.Spec.AISimulate.InputOverrides != nil {
			if err := json.Unmarshal(d.Spec.AISimulate.InputOverrides.Raw, &overrides); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
		}
		optimizer, _ := overrides["optimizer"].(map[string]any)
		if optimizer == nil {
			optimizer = map[string]any{}
		}
		optimizer["max_trials"] = trials
		overrides["optimizer"] = optimizer
		raw, err := json.Marshal(overrides)
		if err != nil {
			t.Fatal(err)
		}
		if d.Spec.AISimulate == nil {
			d.Spec.AISimulate = &v1beta2.AISimulateSpec{}
		}
		d.Spec.AISimulate.InputOverrides = &runtime.RawExtension{Raw: raw}
		out = append(out, d)
	}
	return out
}

// TestDemoWithTheRealAISimulate: the demo's four requests, searched by the real AISimulate, end
// Succeeded with Candidates published from its real recommendation.json; the Run records the
// real implementation and its version; every Candidate's DynamoGraphDeployment is accepted by the
// Dynamo platform's DGD CRD (server-side dry run, strict field validation); the kept artifacts
// are the real output.
func TestDemoWithTheRealAISimulate(t *testing.T) {
	ns := sandboxtest.Namespace(t, k8s, "upstream")
	ctx := context.Background()
	trace, err := os.ReadFile(filepath.Join(root, "examples", "traces", "mooncake-sample.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "llama-traffic", Namespace: ns}, Data: map[string]string{"trace.jsonl": string(trace)}}
	if err := k8s.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	version := upstreamtest.Version(t, "aisimulate")
	requests := demoRequests(t, envInt("DGDR_E2E_UPSTREAM_TRIALS", 8))
	for _, d := range requests {
		d.Namespace = ns
		if err := k8s.Create(ctx, d); err != nil {
			t.Fatalf("creating %s: %v", d.Name, err)
		}
	}
	timeout := time.Duration(envInt("DGDR_E2E_UPSTREAM_TIMEOUT_MINUTES", 40)) * time.Minute
	var wg sync.WaitGroup
	for _, d := range requests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Run(d.Name, func(t *testing.T) { checkRealSearch(t, ns, d.Name, version, timeout) })
		}()
	}
	wg.Wait()
}

func checkRealSearch(t *testing.T, ns, name, version string, timeout time.Duration) {
	t0 := time.Now()
	run, seen := waitRequestRun(t, ns, name, timeout)
	reason, msg, _ := sandboxtest.Completed(run)
	if reason != v1beta2.ReasonSucceeded {
		t.Fatalf("Run %s ended %s: %s", run.Name, reason, msg)
	}
	// The real tool copies its ledger into the output directory only when it ends; the reporter
	// follows its supervisor's live copy (docs/design/results.md), so progress and provisional
	// Candidates appear while the search runs.
	if seen.settled == 0 || seen.provisional == 0 {
		t.Errorf("Run %s showed nothing while the real search ran: %+v", run.Name, seen)
	}
	rec := run.Status.Recommendation
	if rec == nil || !strings.HasPrefix(rec.Implementation, "aisimulate") || rec.ImplementationVersion != version {
		t.Fatalf("Run %s records %+v, want the real aisimulate %s", run.Name, rec, version)
	}
	if rec.Provisional {
		t.Errorf("Run %s ended with a provisional summary", run.Name)
	}
	cands := candidatesOf(t, ns, run.Name)
	if len(cands) == 0 || len(cands) != len(run.Status.CandidateRefs) {
		t.Fatalf("Run %s: %d candidateRefs, %d Candidates", run.Name, len(run.Status.CandidateRefs), len(cands))
	}
	for i := range cands {
		c := &cands[i]
		if c.Status.Provisional {
			t.Errorf("Candidate %s is still provisional", c.Name)
		}
		dgd := &unstructured.Unstructured{}
		if err := json.Unmarshal(c.Spec.GraphDeployment.Raw, &dgd.Object); err != nil {
			t.Fatalf("Candidate %s: %v", c.Name, err)
		}
		dgd.SetNamespace(ns)
		dgd.SetName(fmt.Sprintf("dry-run-%d", i))
		if err := k8s.Create(context.Background(), dgd, client.DryRunAll, client.FieldValidation(metav1.FieldValidationStrict)); err != nil {
			t.Errorf("the DGD CRD rejects Candidate %s's deployment: %v", c.Name, err)
		}
	}
	sweep := keptRecommendation(t, run)
	if !strings.HasPrefix(sweep.Provenance.Implementation, "aisimulate") || sweep.Provenance.ImplementationVersion != version {
		t.Errorf("the kept recommendation.json of %s was not written by the real aisimulate %s: %+v", run.Name, version, sweep.Provenance)
	}
	if sweep.Counts.Evaluated == 0 || int64(sweep.Counts.Evaluated) != rec.Evaluated {
		t.Errorf("Run %s: evaluated %d, the real output says %d", run.Name, rec.Evaluated, sweep.Counts.Evaluated)
	}
	t.Logf("%s: %s after %s, %d of %d evaluated candidates feasible, %d published, best %s; while it ran: %d settled, %d provisional",
		name, reason, time.Since(t0).Round(time.Second), rec.Feasible, rec.Evaluated, len(cands), rec.BestCandidate, seen.settled, seen.provisional)
}

// TestRealAISimulateFailureEndsTheRun: a model whose configuration the real AISimulate neither
// bundles nor can download (the sandbox is offline) fails the search with exit code 1, which
// the Run controller maps to SearchFailed, pointing to AISimulate's own message in the search
// container's log rather than quoting it.
func TestRealAISimulateFailureEndsTheRun(t *testing.T) {
	ns := sandboxtest.Namespace(t, k8s, "upstream-fail")
	d := env.CreateRequest(t, ns, `
apiVersion: nvidia.com/v1beta2
kind: DynamoGraphDeploymentRequest
metadata: {name: unknown-model}
spec:
  model: {name: example-org/not-bundled-8B}
  hardware: {gpu: {budget: 8}}
  aisimulate: {inputOverrides: {optimizer: {max_trials: 2}}}
`)
	run, _ := waitRequestRun(t, ns, d.Name, 10*time.Minute)
	reason, msg, _ := sandboxtest.Completed(run)
	pod, tail := sandboxtest.SearchLogTail(t, k8s, run)
	if reason != v1beta2.ReasonSearchFailed || !strings.Contains(msg, "exited with code 1") || !strings.Contains(msg, "kubectl logs -n "+ns+" "+pod+" -c search") {
		t.Fatalf("Run %s ended %s (%s), want SearchFailed with exit code 1 and the command that reads the search's log", run.Name, reason, msg)
	}
	if !strings.Contains(tail, "not-bundled-8B") || strings.Contains(msg, "not-bundled-8B") {
		t.Errorf("AISimulate's message naming the model belongs in the log tail (%q), not the Run's message (%q)", tail, msg)
	}
}

// live is what a Run showed while its search was still running.
type live struct {
	// settled is the most candidates the Run's progress counted before it completed.
	settled int64
	// provisional is how many provisional Candidates it had published before it completed.
	provisional int
}

// waitRequestRun waits until the request's Run of its current generation is terminal, and
// records what the Run showed while its search ran.
func waitRequestRun(t *testing.T, ns, name string, timeout time.Duration) (*v1beta2.DynamoGraphDeploymentRun, live) {
	t.Helper()
	var runName string
	var seen live
	sandboxtest.WaitFor(t, timeout, time.Second, "request "+name+" to finish its search", func(ctx context.Context) (bool, string, error) {
		var d v1beta2.DynamoGraphDeploymentRequest
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &d); err != nil {
			return false, "", err
		}
		s := d.Status
		if s.ActiveRunRef != nil {
			var r v1beta2.DynamoGraphDeploymentRun
			if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: s.ActiveRunRef.Name}, &r); err == nil {
				if _, _, done := sandboxtest.Completed(&r); !done && r.Status.Progress != nil {
					seen.settled = max(seen.settled, r.Status.Progress.Settled)
					if rec := r.Status.Recommendation; rec != nil && rec.Provisional {
						seen.provisional = max(seen.provisional, len(r.Status.CandidateRefs))
					}
				}
			}
		}
		if s.ObservedGeneration != d.Generation || s.ActiveRunRef != nil || s.LatestRun == nil || s.LatestRun.Phase == "" {
			return false, fmt.Sprintf("latest=%+v active=%+v", s.LatestRun, s.ActiveRunRef), nil
		}
		runName = s.LatestRun.Name
		return true, "", nil
	})
	return env.WaitRunDone(t, ns, runName, time.Minute), seen
}

func candidatesOf(t *testing.T, ns, run string) []v1beta2.DynamoGraphDeploymentCandidate {
	t.Helper()
	var l v1beta2.DynamoGraphDeploymentCandidateList
	if err := k8s.List(context.Background(), &l, client.InNamespace(ns), client.MatchingLabels{v1beta2.LabelRunName: run}); err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// keptRecommendation reads recommendation.json from the Run's artifacts ConfigMap.
func keptRecommendation(t *testing.T, run *v1beta2.DynamoGraphDeploymentRun) *output.SweepResult {
	t.Helper()
	var cm corev1.ConfigMap
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: run.Namespace, Name: jobcontract.ArtifactsName(run.UID)}, &cm); err != nil {
		t.Fatalf("the artifacts of Run %s: %v", run.Name, err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(cm.BinaryData[jobcontract.ArtifactRecommendationKey]))
	if err != nil {
		t.Fatalf("the kept recommendation.json of %s: %v", run.Name, err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	var sweep output.SweepResult
	if err := yaml.Unmarshal(data, &sweep); err != nil {
		t.Fatalf("the kept recommendation.json of %s: %v", run.Name, err)
	}
	return &sweep
}
