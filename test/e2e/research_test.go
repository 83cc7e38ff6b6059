//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/research"
	"github.com/dgdr-operator/dgdr-operator/test/sandboxtest"
)

// driftingRequest was searched for 8 concurrent requests of 64 input and 512 output tokens
// under a 120 ms TTFT bound, on at most 2 GPUs (aisim picks one GPU); its verification then
// sends prompts of 3,000 tokens, which the Frontend captures in segments of 1 MiB of records. A
// 3,000-token prefill on one GPU takes longer than the bound allows, on two it does not. It
// searches again every minute over the last 15 minutes of captured traffic.
const driftingRequest = `
apiVersion: nvidia.com/v1beta2
kind: DynamoGraphDeploymentRequest
metadata:
  name: drifting
spec:
  model:
    name: meta-llama/Llama-3.1-8B-Instruct
  hardware:
    gpu:
      budget: 2
  objective:
    target: throughputPerGpu
  sla:
    ttftMs: 120
  workload:
    static:
      inputTokens: 64
      outputTokens: 512
      load: {concurrency: 8}
  deployment:
    autoApply: true
    name: llama-drifting
    capture:
      enabled: true
      claimName: traces
      rotation: {maxSegmentMiB: 1}
    verification:
      enabled: true
      requests: 40
      maxDurationSeconds: 180
      load: {concurrency: 2, inputTokens: 3000, outputTokens: 32}
  research:
    intervalMinutes: 1
    windowMinutes: 15
    minRequests: 10
  aisimulate:
    inputOverrides:
      optimizer:
        max_trials: 32
`

// researchTimeout bounds the wait for a decided re-search: a tick (a minute), the re-search's
// search and baseline over the window, and ticks skipped while the window has no closed segment
// yet or the deployment is being replaced.
const researchTimeout = 8 * time.Minute

// TestResearchOnTheCapturedTraffic runs the whole loop on the real Dynamo frontend and mocker:
//  1. autoApply deploys the search's best candidate, with capture on a claim;
//  2. the verification's real AIPerf drives prompts much longer than the modeled ones through
//     the real Frontend, which records them;
//  3. a scheduled re-search cuts the captured window from the claim (its Run records the
//     requests and the file's hash), searches it, and evaluates the deployed candidate on the
//     same window with aisim predict (status.baseline);
//  4. the deployed candidate misses the TTFT bound under the long prompts (or a candidate beats
//     it by the margin): ImprovementAvailable=True and autoApply replaces the deployment;
//  5. a later re-search of the same traffic finds nothing clearly better than the replacement:
//     ImprovementAvailable=False BaselineStillBest, and the deployment stays.
//
// Every decision must agree with the numbers it records.
func TestResearchOnTheCapturedTraffic(t *testing.T) {
	ctx := context.Background()
	ns := realizedNamespace(t)
	hostPathClaim(t, ns, "traces")
	req, err := sandboxtest.ParseRequest(driftingRequest)
	if err != nil {
		t.Fatal(err)
	}
	req.Namespace = ns
	if err := k8s.Create(ctx, req); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { releaseDeployment(t, ns, "drifting", "llama-drifting") })
	requireSucceededWithCandidates(t, waitRequestDone(t, ns, "drifting"))
	first := waitDeployed(t, ns, "drifting", v1beta2.ReasonDeploymentReady)
	t.Logf("deployed: %s", first.Message)
	d, err := getDGDR(ctx, ns, "drifting")
	if err != nil {
		t.Fatal(err)
	}
	deployed := d.Status.Deployment.Candidate

	replaced := waitDecision(t, ns, "drifting", nil)
	rn := requireWindowSearched(t, ns, replaced)
	if replaced.Decision != v1beta2.ResearchReplaced {
		t.Fatalf("the first decided re-search kept %s: %s (%s); want it replaced under the long prompts", deployed, replaced.Message, replaced.Reason)
	}
	b := rn.Status.Baseline
	if b == nil || b.Candidate != deployed || b.Error != "" || b.Metrics == nil || b.CompletedRequests == 0 {
		t.Fatalf("the baseline of %s = %+v, want the deployed %s evaluated", rn.Name, b, deployed)
	}
	waitFor(t, realizeTimeout, "the replacement deployed", func(ctx context.Context) (bool, string, error) {
		d, err := getDGDR(ctx, ns, "drifting")
		if err != nil {
			return false, "", err
		}
		c := meta.FindStatusCondition(d.Status.Conditions, v1beta2.ConditionImprovementAvailable)
		dep := d.Status.Deployment
		return dep != nil && dep.Run == rn.Name && dep.Candidate == replaced.BestCandidate && c != nil && c.Status == metav1.ConditionTrue,
			fmt.Sprintf("deployment %+v, ImprovementAvailable %+v", dep, c), nil
	})
	waitDeployed(t, ns, "drifting", v1beta2.ReasonDeploymentReady)

	kept := waitDecision(t, ns, "drifting", func(r v1beta2.ResearchRecord) bool { return r.WindowEnd.After(replaced.WindowEnd.Time) })
	requireWindowSearched(t, ns, kept)
	if kept.Decision != v1beta2.ResearchKept || kept.DeployedCandidate != replaced.BestCandidate {
		t.Fatalf("the re-search after the replacement decided %s (%s): %s; want the replacement %s kept", kept.Decision, kept.Reason, kept.Message, replaced.BestCandidate)
	}
	waitFor(t, 2*time.Minute, "Deployed=True BaselineStillBest", func(ctx context.Context) (bool, string, error) {
		d, err := getDGDR(ctx, ns, "drifting")
		if err != nil {
			return false, "", err
		}
		c := meta.FindStatusCondition(d.Status.Conditions, v1beta2.ConditionDeployed)
		i := meta.FindStatusCondition(d.Status.Conditions, v1beta2.ConditionImprovementAvailable)
		ok := c != nil && c.Reason == v1beta2.ReasonBaselineStillBest && i != nil && i.Status == metav1.ConditionFalse &&
			d.Status.Deployment != nil && d.Status.Deployment.Candidate == replaced.BestCandidate
		return ok, fmt.Sprintf("Deployed %+v, ImprovementAvailable %+v", c, i), nil
	})
}

// waitDecision waits for the newest re-search record that compared (Replaced or Kept) and
// passes after, and checks that its decision agrees with its numbers.
func waitDecision(t *testing.T, ns, name string, after func(v1beta2.ResearchRecord) bool) v1beta2.ResearchRecord {
	t.Helper()
	var got v1beta2.ResearchRecord
	waitFor(t, researchTimeout, "a decided re-search", func(ctx context.Context) (bool, string, error) {
		d, err := getDGDR(ctx, ns, name)
		if err != nil {
			return false, "", err
		}
		if d.Status.Research == nil {
			return false, "no status.research", nil
		}
		var seen []string
		for _, r := range d.Status.Research.History {
			seen = append(seen, fmt.Sprintf("%s %s %s", r.Run, r.Decision, r.Reason))
			if (r.Decision == v1beta2.ResearchReplaced || r.Decision == v1beta2.ResearchKept) && (after == nil || after(r)) {
				got = r
				return true, "", nil
			}
			if r.Decision == v1beta2.ResearchUndecided {
				return false, "", fmt.Errorf("re-search %s undecided (%s): %s", r.Run, r.Reason, r.Message)
			}
		}
		return false, strings.Join(seen, "; "), nil
	})
	t.Logf("%s: %s (%s) %s", got.Run, got.Decision, got.Reason, got.Message)
	if got.BaselineObjective == nil || got.BestObjective == nil || got.BestCandidate == "" {
		t.Fatalf("decided re-search %s without both objectives: %+v", got.Run, got)
	}
	b, n := *got.BaselineObjective, *got.BestObjective
	if got.Reason == v1beta2.ReasonBetterCandidate && !(n > b && n-b >= 0.10*b) {
		t.Errorf("%s says BetterCandidate with %v against %v (margin 10%%)", got.Run, n, b)
	}
	if got.Decision == v1beta2.ResearchKept && n > b && n-b >= 0.10*b {
		t.Errorf("%s kept the deployment although %v beats %v by the margin", got.Run, n, b)
	}
	if !strings.Contains(got.Message, got.BestCandidate) {
		t.Errorf("%s's message does not name the best candidate %s: %s", got.Run, got.BestCandidate, got.Message)
	}
	return got
}

// requireWindowSearched checks the re-search Run of rec: a Run of the request's generation for
// the recorded window, whose input container cut that window from the claim.
func requireWindowSearched(t *testing.T, ns string, rec v1beta2.ResearchRecord) *v1beta2.DynamoGraphDeploymentRun {
	t.Helper()
	rn, err := getRun(context.Background(), ns, rec.Run)
	if err != nil {
		t.Fatalf("re-search Run %s: %v", rec.Run, err)
	}
	end, ok := research.WindowEnd(rn)
	if !ok || !end.Equal(rec.WindowEnd.Time) || rn.Name != research.RunName("drifting", 1, end) {
		t.Errorf("Run %s window end %v, want %v", rn.Name, end, rec.WindowEnd)
	}
	w := rn.Status.AISimulate.Trace.Window
	if w == nil || w.ClaimName != "traces" || w.Requests == nil || *w.Requests < 10 || len(w.SHA256) != 71 || w.Segments < 1 || w.Pods < 1 {
		t.Errorf("Run %s's window = %+v, want at least 10 requests cut from the claim", rn.Name, w)
	}
	if rec.Requests != *w.Requests {
		t.Errorf("the record says %d requests, the Run %d", rec.Requests, *w.Requests)
	}
	return rn
}

// releaseDeployment deletes the request, then its deployment, and waits for the deployment's
// pods to go, so that the Node's GPUs are free for later tests (autoApply would deploy a
// deleted deployment again while the request exists).
func releaseDeployment(t *testing.T, ns, request, dgdName string) {
	t.Helper()
	ctx := context.Background()
	if d, err := getDGDR(ctx, ns, request); err == nil {
		_ = k8s.Delete(ctx, d)
	}
	waitFor(t, 30*time.Second, "the request to be gone", func(ctx context.Context) (bool, string, error) {
		_, err := getDGDR(ctx, ns, request)
		return err != nil && client.IgnoreNotFound(err) == nil, "present", client.IgnoreNotFound(err)
	})
	if dgd, err := deployment(ctx, ns, dgdName); err == nil && dgd != nil {
		_ = k8s.Delete(ctx, dgd)
	}
	waitFor(t, time.Minute, "the deployment's pods to be gone", func(ctx context.Context) (bool, string, error) {
		left, err := deploymentPods(ctx, ns, dgdName)
		return err == nil && len(left) == 0, fmt.Sprintf("%d pods", len(left)), err
	})
}
