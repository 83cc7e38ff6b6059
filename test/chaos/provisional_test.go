//go:build chaos

package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/test/sandboxtest"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/manager"
)

// provisionalRequest is publishRequest with five candidates: the reporter's provisional rounds
// publish the best five settled so far while the search runs.
const provisionalRequest = `
apiVersion: nvidia.com/v1beta2
kind: DynamoGraphDeploymentRequest
metadata:
  name: %s
spec:
  model:
    name: meta-llama/Llama-3.1-8B-Instruct
  recommendation:
    maxCandidates: 5
  aisimulate:
    inputOverrides:
      optimizer:
        max_trials: 300
      traffic:
        stop:
          requests: 200
`

// containerPID is the pid of a container's process in the Job's pod (0 while there is none).
func containerPID(ns, jobName, container string) int {
	for _, dir := range podDirs(ns, jobName) {
		b, err := os.ReadFile(filepath.Join(dir, "pids", container))
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && manager.Alive(pid) {
			return pid
		}
	}
	return 0
}

// freezeSearchMidway waits until the search's ledger holds feasible candidates with their
// configuration, then freezes the search (SIGSTOP to its process group), so that it is still
// running when the reporter's first provisional round comes. It returns the search's pid, or
// false when the search finished first.
func freezeSearchMidway(t *testing.T, ns, jobName string) (int, bool) {
	t.Helper()
	var pid int
	waitFor(t, time.Minute, "the search process of "+jobName, func(context.Context) (bool, string, error) {
		pid = containerPID(ns, jobName, "search")
		return pid != 0, "", nil
	})
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		var ledger []byte
		finished := false
		for _, dir := range podDirs(ns, jobName) {
			// aisim writes AISimulate's ledger live into the output directory, and
			// recommendation.json when the search has ended.
			if b, err := os.ReadFile(filepath.Join(dir, "volumes", "output", "result", "execution-events.jsonl")); err == nil {
				ledger = b
			}
			if _, err := os.Stat(filepath.Join(dir, "volumes", "output", "result", "recommendation.json")); err == nil {
				finished = true
			}
		}
		if finished {
			return pid, false
		}
		settled, feasible := ledgerCounts(ledger)
		if feasible >= 8 {
			if err := syscall.Kill(-pid, syscall.SIGSTOP); err != nil {
				t.Fatalf("SIGSTOP search pid %d: %v", pid, err)
			}
			t.Logf("search of %s (pid %d) frozen after %d settled candidates", jobName, pid, settled)
			return pid, true
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("the ledger of %s holds no feasible candidate after a minute", jobName)
	return 0, false
}

// ledgerCounts counts the candidate_completed lines of a ledger (output.Event), and the feasible
// ones among them, which carry the configuration the reporter's provisional rounds publish.
func ledgerCounts(ledger []byte) (settled, feasible int) {
	for line := range bytes.Lines(ledger) {
		if !bytes.HasSuffix(line, []byte("\n")) {
			break // still being written
		}
		var e output.Event
		if json.Unmarshal(line, &e) != nil {
			continue
		}
		if c, err := e.Candidate(); err == nil {
			settled++
			if c.Status == output.StatusFeasible && c.PredictionConfig != nil {
				feasible++
			}
		}
	}
	return settled, feasible
}

// runCandidates lists the Run's Candidates.
func runCandidates(t *testing.T, ns, runName string) []v1beta2.DynamoGraphDeploymentCandidate {
	t.Helper()
	var cands v1beta2.DynamoGraphDeploymentCandidateList
	if err := k8s.List(context.Background(), &cands, client.InNamespace(ns), client.MatchingLabels{v1beta2.LabelRunName: runName}); err != nil {
		t.Fatal(err)
	}
	return cands.Items
}

// TestReporterKilledMidProvisionalRound SIGKILLs the reporter in the middle of a provisional
// round, on its first Candidate create, while the search is still running (frozen, then let go).
// The reporter is a sidecar: started again, it follows the search from its ledger and publishes
// the final ranking when the search ends. The Run ends Succeeded with exactly the final set:
// what the cut round published is replaced or ranked, nothing provisional stays, and the
// namespace satisfies every invariant.
func TestReporterKilledMidProvisionalRound(t *testing.T) {
	ns := newNamespace(t, "chaos-provisional")
	runName, jobName, searchPID := frozenSearch(t, ns, "provisional")
	reporterPID := containerPID(ns, jobName, "reporter")
	killed := killOnFirstCandidate(t, ns, runName, reporterPID)
	if err := syscall.Kill(-searchPID, syscall.SIGCONT); err != nil {
		t.Fatalf("SIGCONT search: %v", err)
	}
	if !killed {
		t.Fatal("no provisional Candidate appeared while the search was frozen")
	}
	run := env.WaitRunDone(t, ns, runName, 2*time.Minute)
	reason, msg, _ := sandboxtest.Completed(run)
	if reason != v1beta2.ReasonSucceeded {
		t.Fatalf("Run %s ended %s, want %s: the restarted reporter publishes the final ranking: %s", runName, reason, v1beta2.ReasonSucceeded, msg)
	}
	requireFinalRanking(t, ns, run, len(run.Status.CandidateRefs))
	if n := len(run.Status.CandidateRefs); n == 0 || n > 5 {
		t.Errorf("Run %s: %d candidateRefs, want the final ranking of at most 5", runName, n)
	}
	if n := reporterRestarts(t, ns, jobName); n < 1 {
		t.Errorf("the reporter of Run %s was restarted %d times, want at least once", runName, n)
	}
	requireInvariants(t, ns)
}

// TestCancelKeepsProvisional cancels a Run whose search is still running after a provisional
// round: the Job is deleted, the reporter gets SIGTERM, and the Run ends Cancelled keeping the
// provisional Candidates, its candidateRefs and summary marked provisional, and the ledger in its
// artifacts.
func TestCancelKeepsProvisional(t *testing.T) {
	ns := newNamespace(t, "chaos-cancel")
	runName, jobName, searchPID := frozenSearch(t, ns, "cancel")
	var run v1beta2.DynamoGraphDeploymentRun
	waitFor(t, time.Minute, "a provisional round of "+runName, func(ctx context.Context) (bool, string, error) {
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: runName}, &run); err != nil {
			return false, "", err
		}
		s := run.Status.Recommendation
		return s != nil && s.Provisional && len(run.Status.CandidateRefs) > 0, fmt.Sprintf("recommendation %+v", s), nil
	})
	refs := run.Status.CandidateRefs
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+v1beta2.AnnotationCancel+`":"true"}}}`))
	if err := k8s.Patch(context.Background(), &v1beta2.DynamoGraphDeploymentRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: runName}}, patch); err != nil {
		t.Fatal(err)
	}
	done := env.WaitRunDone(t, ns, runName, 2*time.Minute)
	_ = syscall.Kill(-searchPID, syscall.SIGCONT) // gone with the pod, normally
	if reason, msg, _ := sandboxtest.Completed(done); reason != v1beta2.ReasonCancelled {
		t.Fatalf("Run %s ended %s, want %s: %s", runName, reason, v1beta2.ReasonCancelled, msg)
	}
	// The Job's deletion and the reporter's stop take a moment after the Run is terminal.
	waitFor(t, time.Minute, "the reporter of "+runName+" to stop", func(context.Context) (bool, string, error) {
		return containerPID(ns, jobName, "reporter") == 0, "", nil
	})
	if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: runName}, &run); err != nil {
		t.Fatal(err)
	}
	if s := run.Status.Recommendation; s == nil || !s.Provisional || len(run.Status.CandidateRefs) < len(refs) {
		t.Errorf("after the cancel: recommendation %+v, refs %v (had %v)", s, run.Status.CandidateRefs, refs)
	}
	cands := runCandidates(t, ns, runName)
	if len(cands) != len(run.Status.CandidateRefs) {
		t.Errorf("%d Candidates, %d candidateRefs", len(cands), len(run.Status.CandidateRefs))
	}
	for _, c := range cands {
		if !c.Status.Provisional {
			t.Errorf("Candidate %s is not marked provisional", c.Name)
		}
	}
	if run.Status.Artifacts == nil {
		t.Error("no artifacts kept on SIGTERM")
	}
	t.Logf("Run %s cancelled: %d provisional Candidates kept, artifacts %+v", runName, len(cands), run.Status.Artifacts)
	requireInvariants(t, ns)
}

// frozenSearch creates provisional requests named prefix-1, -2, ... until one's search can be
// frozen midway (at most 3; a search can finish before it is caught), and returns that Run, its
// Job and the frozen search's process group.
func frozenSearch(t *testing.T, ns, prefix string) (runName, jobName string, searchPID int) {
	t.Helper()
	for attempt := 1; attempt <= 3; attempt++ {
		name := fmt.Sprintf("%s-%d", prefix, attempt)
		env.CreateRequest(t, ns, fmt.Sprintf(provisionalRequest, name))
		runName = waitRunOf(t, ns, name)
		jobName = runName + "-search"
		pid, frozen := freezeSearchMidway(t, ns, jobName)
		if frozen {
			return runName, jobName, pid
		}
		t.Logf("attempt %d: the search finished before it could be frozen; trying again", attempt)
		env.WaitRunDone(t, ns, runName, 2*time.Minute)
	}
	t.Fatal("the search finished before it could be frozen in 3 attempts")
	return "", "", 0
}

// killOnFirstCandidate SIGKILLs the reporter on the first Candidate the Run gets; false when
// none came within a minute.
func killOnFirstCandidate(t *testing.T, ns, runName string, pid int) bool {
	t.Helper()
	w := watchCandidates(t, ns, runName, time.Minute)
	for ev := range w.ResultChan() {
		if ev.Type != watch.Added {
			continue
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("SIGKILL reporter pid %d: %v", pid, err)
		}
		t.Logf("reporter pid %d SIGKILLed on its first provisional Candidate", pid)
		return true
	}
	return false
}
