//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/test/sandboxtest"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/manager"
)

// publishRequest finishes its search in a few seconds with at least 20 results, so that the
// reporter publishes 20 Candidates one after the other (about 1.5 s in the sandbox).
const publishRequest = `
apiVersion: nvidia.com/v1beta2
kind: DynamoGraphDeploymentRequest
metadata:
  name: %s
spec:
  model:
    name: meta-llama/Llama-3.1-8B-Instruct
  recommendation:
    maxCandidates: 20
  aisimulate:
    inputOverrides:
      optimizer:
        max_trials: 300
      traffic:
        stop:
          requests: 200
`

// TestReporterKilledMidPublication SIGKILLs the reporter process of a search pod after it
// published its first Candidate and before it wrote the Run's candidateRefs. To hit that
// window deterministically the reporter is frozen (SIGSTOP) while the search runs, the test
// waits until the search container exited 0, starts watching Candidates, resumes the reporter
// (SIGCONT) and kills it on the first Candidate event. The reporter is a sidecar: the node agent,
// as a kubelet, starts it again while the publication container still waits for its outcome, and
// the new reporter publishes from the search's output. The Run must end Succeeded with every
// Candidate (20, final, ranked once each, as many as its candidateRefs), the pod must show the
// reporter restarted, and the namespace must satisfy every invariant.
func TestReporterKilledMidPublication(t *testing.T) {
	ns := newNamespace(t, "chaos-reporter")
	for attempt := 1; attempt <= 3; attempt++ {
		name := fmt.Sprintf("publish-%d", attempt)
		env.CreateRequest(t, ns, fmt.Sprintf(publishRequest, name))
		runName := waitRunOf(t, ns, name)
		published, hit := killReporterMidPublication(t, ns, runName)
		run := env.WaitRunDone(t, ns, runName, 2*time.Minute)
		reason, msg, _ := sandboxtest.Completed(run)
		t.Logf("attempt %d: reporter killed after %d Candidate events; Run %s ended %s: %s", attempt, published, runName, reason, msg)
		if !hit {
			t.Logf("attempt %d: publication finished before the kill; trying again", attempt)
			continue
		}
		if reason != v1beta2.ReasonSucceeded {
			t.Fatalf("Run %s ended %s, want %s: the restarted reporter publishes from the search's output: %s", runName, reason, v1beta2.ReasonSucceeded, msg)
		}
		requireFinalRanking(t, ns, run, 20)
		if n := reporterRestarts(t, ns, runName+"-search"); n < 1 {
			t.Errorf("the reporter of Run %s was restarted %d times, want at least once", runName, n)
		}
		requireInvariants(t, ns)
		return
	}
	t.Fatal("the reporter finished its publication before the kill in 3 attempts")
}

// requireFinalRanking checks that a succeeded Run published exactly want final Candidates: as
// many as its candidateRefs, each evaluated, not provisional, with a rank of its own.
func requireFinalRanking(t *testing.T, ns string, run *v1beta2.DynamoGraphDeploymentRun, want int) {
	t.Helper()
	var cands v1beta2.DynamoGraphDeploymentCandidateList
	if err := k8s.List(context.Background(), &cands, client.InNamespace(ns), client.MatchingLabels{v1beta2.LabelRunName: run.Name}); err != nil {
		t.Fatal(err)
	}
	if len(cands.Items) != want || len(run.Status.CandidateRefs) != want {
		t.Errorf("Run %s: %d Candidates, %d candidateRefs, want %d", run.Name, len(cands.Items), len(run.Status.CandidateRefs), want)
	}
	ranks := map[string]string{}
	for _, c := range cands.Items {
		rank := c.Labels[v1beta2.LabelCandidateRank]
		if !meta.IsStatusConditionTrue(c.Status.Conditions, v1beta2.ConditionEvaluated) || c.Status.Provisional || rank == "" {
			t.Errorf("Candidate %s is not final: provisional %v, rank label %q", c.Name, c.Status.Provisional, rank)
		}
		if other, dup := ranks[rank]; dup && rank != "" {
			t.Errorf("Candidates %s and %s share rank %s", other, c.Name, rank)
		}
		ranks[rank] = c.Name
	}
	if r := run.Status.Recommendation; r == nil || r.Provisional || r.BestCandidate == "" {
		t.Errorf("Run %s: recommendation %+v, want a final one", run.Name, r)
	}
}

// reporterRestarts is the restart count of the reporter sidecar of the Job's pod.
func reporterRestarts(t *testing.T, ns, jobName string) int32 {
	t.Helper()
	var pods corev1.PodList
	if err := k8s.List(context.Background(), &pods, client.InNamespace(ns), client.MatchingLabels{"batch.kubernetes.io/job-name": jobName}); err != nil {
		t.Fatal(err)
	}
	var n int32
	for _, p := range pods.Items {
		for _, cs := range p.Status.InitContainerStatuses {
			if cs.Name == "reporter" {
				n = max(n, cs.RestartCount)
			}
		}
	}
	return n
}

// killReporterMidPublication freezes the reporter of the Run's pod, waits for the search to
// end, resumes the reporter and SIGKILLs it on the first Candidate it creates. It returns
// how many Candidate events it saw and whether the kill hit a running reporter.
func killReporterMidPublication(t *testing.T, ns, runName string) (int, bool) {
	t.Helper()
	jobName := runName + "-search"
	pid := 0
	waitFor(t, time.Minute, "the reporter process of "+jobName, func(ctx context.Context) (bool, string, error) {
		for _, dir := range podDirs(ns, jobName) {
			b, err := os.ReadFile(filepath.Join(dir, "pids", "reporter"))
			if err != nil {
				continue
			}
			if pid, err = strconv.Atoi(strings.TrimSpace(string(b))); err == nil && manager.Alive(pid) {
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("%d pod directories", len(podDirs(ns, jobName))), nil
	})
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP reporter pid %d: %v", pid, err)
	}
	stopped := true
	defer func() {
		if stopped {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}()
	t.Logf("reporter of %s (pid %d) frozen", runName, pid)
	waitFor(t, 2*time.Minute, "the search container of "+jobName+" to exit", func(ctx context.Context) (bool, string, error) {
		var pods corev1.PodList
		if err := k8s.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"batch.kubernetes.io/job-name": jobName}); err != nil {
			return false, "", err
		}
		for _, p := range pods.Items {
			for _, cs := range p.Status.ContainerStatuses {
				if cs.Name == "search" && cs.State.Terminated != nil {
					if cs.State.Terminated.ExitCode != 0 {
						return false, "", fmt.Errorf("search exited %d", cs.State.Terminated.ExitCode)
					}
					return true, "", nil
				}
			}
		}
		return false, fmt.Sprintf("%d pods", len(pods.Items)), nil
	})
	w := watchCandidates(t, ns, runName, time.Minute)
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatalf("SIGCONT reporter pid %d: %v", pid, err)
	}
	stopped = false
	events := 0
	for ev := range w.ResultChan() {
		if ev.Type != watch.Added {
			continue
		}
		events++
		alive := manager.Alive(pid)
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil || !alive {
			return events, false
		}
		t.Logf("reporter pid %d SIGKILLed on Candidate event %d", pid, events)
		return events, true
	}
	return events, false
}

// watchCandidates watches the Candidates of a Run (stopped at the end of the test or after
// timeout).
func watchCandidates(t *testing.T, ns, runName string, timeout time.Duration) watch.Interface {
	t.Helper()
	wc, err := client.NewWithWatch(restConfig, client.Options{Scheme: k8s.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	w, err := wc.Watch(ctx, &v1beta2.DynamoGraphDeploymentCandidateList{}, client.InNamespace(ns), client.MatchingLabels{v1beta2.LabelRunName: runName})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(); cancel() })
	return w
}
