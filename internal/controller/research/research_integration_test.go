package research_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	ct "github.com/dgdr-operator/dgdr-operator/internal/controller/controllertest"
	"github.com/dgdr-operator/dgdr-operator/internal/naming"
	"github.com/dgdr-operator/dgdr-operator/internal/research"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/poll"
)

// tickWait is how long a re-search tick may take: ticks fall on whole minutes (the test
// configuration's research.minInterval) and the controller looks again at the tick.
const tickWait = 100 * time.Second

// throughputMetrics are the metrics of a candidate on 4 GPUs (finishRun's) whose objective
// (throughput per GPU, the requests' target) is perGPU.
func throughputMetrics(perGPU float64) *v1beta2.CandidateMetrics {
	return &v1beta2.CandidateMetrics{Score: ptr.To(perGPU), ThroughputPerGPU: ptr.To(perGPU), Throughput: ptr.To(perGPU * 4),
		TTFTMs: ptr.To(80.0), ITLMs: ptr.To(6.0), E2EMs: ptr.To(900.0)}
}

// researchRequest is an autoApply request with capture onto the claim "traffic" (created) and
// a re-search every minute.
func researchRequest(t *testing.T, ns, name string) *v1beta2.DynamoGraphDeploymentRequest {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "traffic"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	if err := k8s.Create(context.Background(), pvc); err != nil {
		t.Fatal(err)
	}
	return researchRequestOn(t, ns, name, "traffic")
}

// researchRequestOn is researchRequest capturing onto claim, which it does not create.
func researchRequestOn(t *testing.T, ns, name, claim string) *v1beta2.DynamoGraphDeploymentRequest {
	t.Helper()
	d := builders.Request(ns, name).GPUSKU("h200_sxm").AutoApply(name+"-dgd").Capture(claim).
		Research(1, 1).Objective(v1beta2.TargetThroughputPerGPU).Obj()
	if err := k8s.Create(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	return d
}

// finishRun publishes one Candidate of r (rendered from the shared candidate parameters, with
// metrics) as its best, an optional baseline, for a re-search the input container's report of
// its window (42 requests), and ends its Job successfully.
func finishRun(t *testing.T, r *v1beta2.DynamoGraphDeploymentRun, metrics *v1beta2.CandidateMetrics, baseline *v1beta2.BaselineStatus) string {
	t.Helper()
	cand := ct.RenderedCandidate(t, cfg, r, naming.CandidateName(r.Name, "1"), metrics)
	s := ct.Search{Candidates: []*v1beta2.DynamoGraphDeploymentCandidate{cand}, Baseline: baseline}
	if research.IsRun(r) {
		// searchinput.SummaryMessage
		s.Window = `{"requests":42,"sha256":"` + strings.Repeat("ab", 32) + `","segments":3,"truncatedSegments":0,"pods":2}`
	}
	ct.FinishSearch(t, k8s, r, s)
	return cand.Name
}

// makeReady marks the DynamoGraphDeployment ready, as the Dynamo operator would.
func makeReady(t *testing.T, ns, name string) {
	t.Helper()
	ct.MakeReady(t, k8s, ns, name)
}

// nextResearchRun waits for a re-search Run of the request other than those in seen.
func nextResearchRun(t *testing.T, d *v1beta2.DynamoGraphDeploymentRequest, seen map[string]bool) *v1beta2.DynamoGraphDeploymentRun {
	t.Helper()
	var found *v1beta2.DynamoGraphDeploymentRun
	poll.Eventually(t, tickWait, "a re-search Run", func() (bool, error) {
		var list v1beta2.DynamoGraphDeploymentRunList
		if err := k8s.List(context.Background(), &list, client.InNamespace(d.Namespace)); err != nil {
			return false, err
		}
		for i := range list.Items {
			rn := &list.Items[i]
			if research.IsRun(rn) && rn.Labels[v1beta2.LabelRequestName] == d.Name && !seen[rn.Name] && rn.Status.AISimulate != nil {
				found = rn
				return true, nil
			}
		}
		return false, nil
	})
	seen[found.Name] = true
	return found
}

func condition(d *v1beta2.DynamoGraphDeploymentRequest, typ string) *metav1.Condition {
	return meta.FindStatusCondition(d.Status.Conditions, typ)
}

// TestResearchReplacesOnlyABetterCandidate: a deployed request with capture and a re-search
// every minute. The first tick creates a re-search Run of the same generation for the last
// minute of captured traffic, comparing with the deployed candidate (its baseline input is that
// candidate's parameters under the window's traffic). A new best 50% better than the baseline
// replaces the deployment (ImprovementAvailable=True BetterCandidate); at the next tick a new
// best only 5% better keeps it (ImprovementAvailable=False, Deployed reason BaselineStillBest).
func TestResearchReplacesOnlyABetterCandidate(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k8s, "t")
	d := researchRequest(t, ns, "drift")
	gen := &v1beta2.DynamoGraphDeploymentRun{}
	poll.Eventually(t, wait, "the generation's Run", func() (bool, error) {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: naming.RunName(d.Name, 1)}, gen)
		return err == nil && gen.Status.AISimulate != nil, client.IgnoreNotFound(err)
	})
	first := finishRun(t, gen, throughputMetrics(1000), nil)
	makeReady(t, ns, "drift-dgd")
	var last *v1beta2.DynamoGraphDeploymentRequest
	defer func() {
		if t.Failed() && last != nil {
			st, _ := json.MarshalIndent(last.Status, "", "  ")
			sp, _ := json.Marshal(last.Spec)
			t.Logf("request spec: %s\nstatus: %s", sp, st)
			probe := last.DeepCopy()
			pp := client.MergeFrom(last.DeepCopy())
			probe.Status.Research = &v1beta2.ResearchStatus{NextTime: &metav1.Time{Time: time.Now()}}
			t.Logf("probe patch: %v", k8s.Status().Patch(context.Background(), probe, pp))
		}
	}()
	last = waitForStatus(t, d, "Deployed=True", func(d *v1beta2.DynamoGraphDeploymentRequest) bool {
		last = d.DeepCopy()
		c := condition(d, v1beta2.ConditionDeployed)
		return c != nil && c.Status == metav1.ConditionTrue && d.Status.Research != nil && d.Status.Research.NextTime != nil
	})

	seen := map[string]bool{}
	r1 := nextResearchRun(t, d, seen)
	end, ok := research.WindowEnd(r1)
	if !ok || r1.Name != research.RunName(d.Name, 1, end) || r1.Annotations[v1beta2.AnnotationResearchBaseline] != first {
		t.Fatalf("re-search Run %s: annotations %v", r1.Name, r1.Annotations)
	}
	if end.Unix()%60 != 0 {
		t.Errorf("the window ends at %s, not on a whole minute", end)
	}
	if got := r1.Labels[v1beta2.LabelRequestGeneration]; got != "1" {
		t.Errorf("re-search Run generation label = %q, want 1", got)
	}
	w := r1.Status.AISimulate.Trace
	if w == nil || w.Window == nil || w.Window.ClaimName != "traffic" || !w.Window.End.Time.Equal(end) || !w.Window.Start.Time.Equal(end.Add(-time.Minute)) || w.PVC != nil {
		t.Errorf("status.aisimulate.trace = %+v, want the window [%s, %s) of claim traffic", w, end.Add(-time.Minute), end)
	}
	var input map[string]any
	if err := json.Unmarshal(r1.Status.AISimulate.Input.Raw, &input); err != nil {
		t.Fatal(err)
	}
	traffic, _ := json.Marshal(input["traffic"])
	if !strings.Contains(string(traffic), research.WindowFile) || !strings.Contains(string(traffic), `"dynamo"`) {
		t.Errorf("the re-search input's traffic is not the captured window: %s", traffic)
	}
	b := r1.Status.AISimulate.Baseline
	if b == nil || b.Candidate != first {
		t.Fatalf("status.aisimulate.baseline = %+v, want the deployed candidate %s", b, first)
	}
	var baselineInput map[string]any
	if err := json.Unmarshal(b.Input.Raw, &baselineInput); err != nil {
		t.Fatal(err)
	}
	bTraffic, _ := json.Marshal(baselineInput["traffic"])
	if string(bTraffic) != string(traffic) || baselineInput["engine"] == nil {
		t.Errorf("the baseline input's traffic %s differs from the re-search's %s (or has no engine)", bTraffic, traffic)
	}
	active := waitForStatus(t, d, "the re-search Run active", func(d *v1beta2.DynamoGraphDeploymentRequest) bool {
		return d.Status.ActiveRunRef != nil && d.Status.ActiveRunRef.Name == r1.Name
	})
	if c := condition(active, v1beta2.ConditionImprovementAvailable); c == nil || c.Status != metav1.ConditionUnknown || c.Reason != v1beta2.ReasonAwaitingResearch {
		t.Errorf("ImprovementAvailable before a comparison = %+v", c)
	}
	waitForEvent(t, ns, d.Name, "ResearchStarted")

	baseline := &v1beta2.BaselineStatus{Candidate: first, Metrics: throughputMetrics(1000), MeanTPOTMs: ptr.To(6.0), GPUs: ptr.To(4.0), CompletedRequests: 50}
	better := finishRun(t, r1, throughputMetrics(1500), baseline)
	replaced := waitForStatus(t, d, "the better candidate deployed", func(d *v1beta2.DynamoGraphDeploymentRequest) bool {
		return d.Status.Deployment != nil && d.Status.Deployment.Candidate == better
	})
	c := condition(replaced, v1beta2.ConditionImprovementAvailable)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1beta2.ReasonBetterCandidate || !strings.Contains(c.Message, "1,500") || !strings.Contains(c.Message, "1,000") {
		t.Errorf("ImprovementAvailable = %+v, want True BetterCandidate with both numbers", c)
	}
	if h := replaced.Status.Research.History; len(h) == 0 || h[0].Run != r1.Name || h[0].Decision != v1beta2.ResearchReplaced || h[0].BestCandidate != better || h[0].Requests != 42 {
		t.Errorf("history = %+v", h)
	}
	if replaced.Status.Deployment.Run != r1.Name {
		t.Errorf("deployed from Run %s, want %s", replaced.Status.Deployment.Run, r1.Name)
	}
	done := &v1beta2.DynamoGraphDeploymentRun{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(r1), done); err != nil {
		t.Fatal(err)
	}
	if w := done.Status.AISimulate.Trace.Window; w.Requests == nil || *w.Requests != 42 || w.SHA256 != "sha256:"+strings.Repeat("ab", 32) || w.Segments != 3 || w.Pods != 2 {
		t.Errorf("status.aisimulate.trace.window = %+v, want the input container's report", w)
	}
	makeReady(t, ns, "drift-dgd")

	r2 := nextResearchRun(t, d, seen)
	if r2.Annotations[v1beta2.AnnotationResearchBaseline] != better {
		t.Errorf("the second re-search compares with %q, want the deployed %s", r2.Annotations[v1beta2.AnnotationResearchBaseline], better)
	}
	baseline2 := &v1beta2.BaselineStatus{Candidate: better, Metrics: throughputMetrics(1500), MeanTPOTMs: ptr.To(6.0), GPUs: ptr.To(4.0), CompletedRequests: 50}
	finishRun(t, r2, throughputMetrics(1575), baseline2)
	kept := waitForStatus(t, d, "the deployment kept", func(d *v1beta2.DynamoGraphDeploymentRequest) bool {
		c := condition(d, v1beta2.ConditionImprovementAvailable)
		return c != nil && c.Status == metav1.ConditionFalse
	})
	c = condition(kept, v1beta2.ConditionImprovementAvailable)
	if c.Reason != v1beta2.ReasonBaselineStillBest || !strings.Contains(c.Message, "1,575") || !strings.Contains(c.Message, "10%") {
		t.Errorf("ImprovementAvailable = %+v, want False BaselineStillBest with both numbers and the margin", c)
	}
	if kept.Status.Deployment.Candidate != better {
		t.Errorf("deployed candidate = %s, want %s kept", kept.Status.Deployment.Candidate, better)
	}
	waitForStatus(t, d, "Deployed=True BaselineStillBest", func(d *v1beta2.DynamoGraphDeploymentRequest) bool {
		c := condition(d, v1beta2.ConditionDeployed)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == v1beta2.ReasonBaselineStillBest && strings.Contains(c.Message, r2.Name)
	})
	if h := kept.Status.Research.History; len(h) < 2 || h[0].Run != r2.Name || h[0].Decision != v1beta2.ResearchKept {
		t.Errorf("history = %+v", h)
	}
}

// TestResearchTicksOnceAcrossARestart: the operator restarts while a re-search Run is active.
// The restarted operator computes the same tick and creates no second Run for it; the next tick,
// while that Run is still active, is skipped (history Skipped RunActive, a ResearchSkipped
// event) instead of starting a second search. When the active Run's window turns out to hold
// too little traffic (the input container exits 4 with its report), the Run ends
// InsufficientTraffic and the request records it as Skipped; ImprovementAvailable stays
// Unknown. Beside it, a request whose capture claim is gone: its re-search Run ends
// TraceSourceMissing naming the claim, recorded as Undecided.
func TestResearchTicksOnceAcrossARestart(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k8s, "t")
	d := researchRequest(t, ns, "restart")
	lost := researchRequestOn(t, ns, "lost", "gone")
	for _, req := range []*v1beta2.DynamoGraphDeploymentRequest{d, lost} {
		gen := &v1beta2.DynamoGraphDeploymentRun{}
		poll.Eventually(t, wait, "the generation's Run of "+req.Name, func() (bool, error) {
			err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: naming.RunName(req.Name, 1)}, gen)
			return err == nil && gen.Status.AISimulate != nil, client.IgnoreNotFound(err)
		})
		finishRun(t, gen, throughputMetrics(1000), nil)
		makeReady(t, ns, req.Name+"-dgd")
	}
	gen := &v1beta2.DynamoGraphDeploymentRun{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: naming.RunName(d.Name, 1)}, gen); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	r1 := nextResearchRun(t, d, seen)
	end, _ := research.WindowEnd(r1)

	stopManager()
	if err := startOperator(); err != nil {
		t.Fatal(err)
	}
	next := research.RunName(d.Name, 1, end.Add(time.Minute))
	skipped := waitForStatusWithin(t, d, tickWait, "the next tick skipped while "+r1.Name+" is active", func(d *v1beta2.DynamoGraphDeploymentRequest) bool {
		return d.Status.Research != nil && len(d.Status.Research.History) > 0 && d.Status.Research.History[0].Run == next
	})
	if rec := skipped.Status.Research.History[0]; rec.Decision != v1beta2.ResearchSkipped || rec.Reason != "RunActive" || !strings.Contains(rec.Message, r1.Name) {
		t.Errorf("the skipped tick's record = %+v", rec)
	}
	waitForEvent(t, ns, d.Name, "ResearchSkipped")
	var list v1beta2.DynamoGraphDeploymentRunList
	if err := k8s.List(ctx, &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var researchRuns []string
	for i := range list.Items {
		if research.IsRun(&list.Items[i]) && list.Items[i].Labels[v1beta2.LabelRequestName] == d.Name {
			researchRuns = append(researchRuns, list.Items[i].Name)
		}
	}
	if diff := cmp.Diff([]string{r1.Name}, researchRuns); diff != "" {
		t.Errorf("re-search Runs after a restart and a skipped tick (-want +got):\n%s", diff)
	}

	// The window held 3 requests: the input container reports them and exits 4.
	job := &batchv1.Job{}
	poll.Eventually(t, wait, "the search Job of "+r1.Name, func() (bool, error) {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: naming.JobName(r1.Name)}, job)
		return err == nil, client.IgnoreNotFound(err)
	})
	pod, err := ct.CreatePod(ctx, k8s, job, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase = corev1.PodFailed
	pod.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "input", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: 4, Reason: "Error", Message: `{"requests":3,"sha256":"` + strings.Repeat("cd", 32) + `","segments":1,"truncatedSegments":1,"pods":1}`}}}}
	if err := k8s.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	got := waitForStatus(t, d, "the thin window recorded", func(d *v1beta2.DynamoGraphDeploymentRequest) bool {
		return historyOf(d, r1.Name) != nil
	})
	rec := historyOf(got, r1.Name)
	if rec.Decision != v1beta2.ResearchSkipped || rec.Reason != v1beta2.ReasonInsufficientTraffic || rec.Requests != 3 || !strings.Contains(rec.Message, "holds 3 requests") {
		t.Errorf("the thin window's record = %+v", rec)
	}
	if c := condition(got, v1beta2.ConditionImprovementAvailable); c == nil || c.Status != metav1.ConditionUnknown {
		t.Errorf("ImprovementAvailable after skipped ticks only = %+v", c)
	}
	if got.Status.Deployment == nil || got.Status.Deployment.Run != gen.Name {
		t.Errorf("deployment = %+v, want the generation's Run kept", got.Status.Deployment)
	}

	var failed v1beta2.ResearchRecord
	undecided := waitForStatus(t, lost, "the lost claim's re-search recorded", func(d *v1beta2.DynamoGraphDeploymentRequest) bool {
		if d.Status.Research == nil {
			return false
		}
		for _, r := range d.Status.Research.History {
			if r.Decision != v1beta2.ResearchSkipped {
				failed = r
				return true
			}
		}
		return false
	})
	if failed.Decision != v1beta2.ResearchUndecided || failed.Reason != v1beta2.ReasonTraceSourceMissing || !strings.Contains(failed.Message, ns+"/gone") {
		t.Errorf("the lost claim's record = %+v", failed)
	}
	if c := condition(undecided, v1beta2.ConditionImprovementAvailable); c == nil || c.Status != metav1.ConditionUnknown || c.Reason != v1beta2.ReasonBaselineUnavailable {
		t.Errorf("ImprovementAvailable after a failed re-search = %+v", c)
	}
}

func historyOf(d *v1beta2.DynamoGraphDeploymentRequest, run string) *v1beta2.ResearchRecord {
	if d.Status.Research == nil {
		return nil
	}
	for i := range d.Status.Research.History {
		if d.Status.Research.History[i].Run == run {
			return &d.Status.Research.History[i]
		}
	}
	return nil
}

func waitForStatus(t *testing.T, d *v1beta2.DynamoGraphDeploymentRequest, what string, cond func(*v1beta2.DynamoGraphDeploymentRequest) bool) *v1beta2.DynamoGraphDeploymentRequest {
	t.Helper()
	return ct.WaitForStatus(t, k8s, d, 2*wait, what, cond)
}

func waitForStatusWithin(t *testing.T, d *v1beta2.DynamoGraphDeploymentRequest, within time.Duration, what string, cond func(*v1beta2.DynamoGraphDeploymentRequest) bool) *v1beta2.DynamoGraphDeploymentRequest {
	t.Helper()
	return ct.WaitForStatus(t, k8s, d, within, what, cond)
}

func waitForEvent(t *testing.T, ns, request, reason string) {
	t.Helper()
	ct.WaitForEvent(t, k8s, ns, request, reason, "")
}
