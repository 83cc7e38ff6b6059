package reporter_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/internal/candidates/outputtest"
	"github.com/dgdr-operator/dgdr-operator/internal/naming"
	"github.com/dgdr-operator/dgdr-operator/internal/reporter"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/poll"
)

func newReporter(ns, run, dir string, w reporter.SearchWatcher) *reporter.Reporter {
	return &reporter.Reporter{
		Client:           k8s,
		Namespace:        ns,
		RunName:          run,
		OutputDir:        dir,
		RuntimeImages:    testImages,
		Watcher:          w,
		ProgressInterval: 50 * time.Millisecond,
		PollInterval:     10 * time.Millisecond,
	}
}

// expectedNames are the Candidate names recommendation.json implies, best first.
func expectedNames(t *testing.T, run, dir string, max int) ([]string, *output.SweepResult) {
	t.Helper()
	sweep, err := output.ReadSweepResult(dir)
	if err != nil {
		t.Fatal(err)
	}
	ids := sweep.Views.Selected()
	if len(ids) > max {
		ids = ids[:max]
	}
	var names []string
	for _, id := range ids {
		names = append(names, naming.CandidateName(run, id))
	}
	return names, sweep
}

// TestProgressThenPublication replays a real aisim search into the output directory line by
// line: progress must appear on the Run while the search runs, and the final Candidates, refs
// and summary must match recommendation.json.
func TestProgressThenPublication(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "src")
	if code := recommend(t, outputtest.SearchInput, src); code != 0 {
		t.Fatalf("aisim exit %d", code)
	}
	ns := newNamespace(t)
	run := newRun(t, ns, "llm-run-3", 3)
	dir := t.TempDir()

	done := make(chan int, 1)
	r := newReporter(ns, run.Name, dir, reporter.ChanWatcher(done))
	type res struct {
		out *reporter.Publication
		err error
	}
	resCh := make(chan res, 1)
	go func() {
		out, err := r.Run(ctx)
		resCh <- res{out, err}
	}()

	lines := readLines(t, filepath.Join(src, output.EventsFile))
	f, err := os.Create(filepath.Join(dir, output.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	half := len(lines) / 2
	for _, l := range lines[:half] {
		if _, err := f.WriteString(l + "\n"); err != nil {
			t.Fatal(err)
		}
	}
	// A half-written line must be tolerated.
	if _, err := f.WriteString(lines[half][:10]); err != nil {
		t.Fatal(err)
	}
	var seen *v1beta2.RunProgress
	poll.WaitFor(t, 10*time.Second, 25*time.Millisecond, "progress while the search runs", func(context.Context) (bool, string, error) {
		seen = getRun(t, ns, run.Name).Status.Progress
		return seen != nil && seen.Settled > 0, fmt.Sprintf("progress %+v", seen), nil
	})
	// requested_config, then one candidate_completed line per settled candidate.
	if seen.Settled >= int64(len(lines)-1) || seen.Budget != 40 || seen.Published != 0 {
		t.Errorf("mid-search progress = %+v, want 0 < settled < %d, budget 40, nothing published", seen, len(lines)-1)
	}
	if got := getRun(t, ns, run.Name).Status.LastProgressTime; got == nil {
		t.Error("lastProgressTime not set")
	}
	if _, err := f.WriteString(lines[half][10:] + "\n"); err != nil {
		t.Fatal(err)
	}
	for _, l := range lines[half+1:] {
		if _, err := f.WriteString(l + "\n"); err != nil {
			t.Fatal(err)
		}
	}
	copyResult(t, src, dir)
	done <- 0

	var got res
	select {
	case got = <-resCh:
	case <-time.After(20 * time.Second):
		t.Fatal("reporter did not finish")
	}
	if got.err != nil {
		t.Fatal(got.err)
	}
	want, sweep := expectedNames(t, run.Name, dir, 3)
	if len(want) != 3 {
		t.Fatalf("want 3 selected candidates, recommendation.json has %d", len(want))
	}
	if diff := cmp.Diff(want, got.out.Published); diff != "" {
		t.Errorf("published (-want +got):\n%s", diff)
	}
	checkPublished(t, ns, run, dir, sweep, want)

	// The operator's fields are untouched.
	final := getRun(t, ns, run.Name)
	if final.Status.Phase != v1beta2.RunPhaseRunning || final.Status.Message != "operator message" || final.Status.JobRef == nil ||
		meta.FindStatusCondition(final.Status.Conditions, v1beta2.ConditionCompleted) == nil {
		t.Errorf("operator-owned status fields changed: %+v", final.Status)
	}
}

// checkPublished compares the Candidates and the Run status with recommendation.json.
func checkPublished(t *testing.T, ns string, run *v1beta2.DynamoGraphDeploymentRun, dir string, sweep *output.SweepResult, want []string) {
	t.Helper()
	cands := listCandidates(t, ns)
	var names []string
	for i, c := range cands {
		names = append(names, c.Name)
		id := sweep.Views.Selected()[i]
		rec, _ := sweep.Candidate(id)
		if c.Status.Rank != int32(i+1) || c.Status.CandidateID != id {
			t.Errorf("%s: rank %d id %s, want %d %s", c.Name, c.Status.Rank, c.Status.CandidateID, i+1, id)
		}
		if !metav1.IsControlledBy(&c, run) {
			t.Errorf("%s: not controlled by the Run", c.Name)
		}
		wantLabels := map[string]string{
			v1beta2.LabelRunName: run.Name, v1beta2.LabelRunUID: string(run.UID), v1beta2.LabelCandidateRank: strconv.Itoa(i + 1),
			v1beta2.LabelRequestName: "llm", v1beta2.LabelRequestGeneration: "3",
		}
		if diff := cmp.Diff(wantLabels, c.Labels); diff != "" {
			t.Errorf("%s labels (-want +got):\n%s", c.Name, diff)
		}
		cond := meta.FindStatusCondition(c.Status.Conditions, v1beta2.ConditionEvaluated)
		if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != v1beta2.ReasonFeasible {
			t.Errorf("%s: Evaluated condition %+v", c.Name, cond)
		}
		m := c.Status.Metrics
		if m == nil || m.Score == nil || *m.Score != *rec.Score || m.GPUs != int32(rec.UsedGPUs) || m.TTFTMs == nil ||
			*m.TTFTMs != rec.Metrics["mean_ttft_ms"] || m.Throughput == nil || m.ThroughputPerGPU == nil || m.ThroughputPerUser == nil || m.ITLMs == nil {
			t.Errorf("%s: metrics %+v do not match the record", c.Name, m)
		}
		// The recommender's error band reaches every Candidate.
		if b := m.ErrorBand; rec.ErrorBand == nil || b == nil || b.TTFTPct == nil || *b.TTFTPct != rec.ErrorBand.Metrics["ttft_ms"].MedianAbsPct ||
			b.ITLPct == nil || b.Basis != rec.ErrorBand.Basis {
			t.Errorf("%s: error band %+v, want the record's %+v", c.Name, m.ErrorBand, rec.ErrorBand)
		}
		if c.Spec.GPUs != int32(rec.UsedGPUs) {
			t.Errorf("%s: spec.gpus %d, want %d", c.Name, c.Spec.GPUs, rec.UsedGPUs)
		}
		// parameters = recommendations/NNNN.yaml, graphDeployment = a v1beta1 DGD.
		data, err := os.ReadFile(output.RecommendationPath(dir, i))
		if err != nil {
			t.Fatal(err)
		}
		var wantParams, gotParams map[string]any
		_ = yaml.Unmarshal(data, &wantParams)
		_ = json.Unmarshal(c.Spec.Parameters.Raw, &gotParams)
		if diff := cmp.Diff(wantParams, gotParams); diff != "" {
			t.Errorf("%s parameters (-want +got):\n%s", c.Name, diff)
		}
		var gd map[string]any
		_ = json.Unmarshal(c.Spec.GraphDeployment.Raw, &gd)
		if gd["apiVersion"] != "nvidia.com/v1beta1" || gd["kind"] != "DynamoGraphDeployment" || gd["spec"] == nil {
			t.Errorf("%s: graphDeployment is not a DGD: %v", c.Name, gd["kind"])
		}
	}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("candidates (-want +got):\n%s", diff)
	}
	st := getRun(t, ns, run.Name).Status
	var refs []string
	for _, r := range st.CandidateRefs {
		refs = append(refs, r.Name)
	}
	if diff := cmp.Diff(want, refs); diff != "" {
		t.Errorf("candidateRefs (-want +got):\n%s", diff)
	}
	wantSummary := &v1beta2.RecommendationSummary{
		BestCandidate:         want[0],
		Metrics:               cands[0].Status.Metrics,
		Implementation:        sweep.Provenance.Implementation,
		ImplementationVersion: sweep.Provenance.ImplementationVersion,
		View:                  "top_n",
		Evaluated:             int64(sweep.Counts.Evaluated),
		Feasible:              int64(sweep.Counts.Feasible),
	}
	if diff := cmp.Diff(wantSummary, st.Recommendation); diff != "" {
		t.Errorf("recommendation (-want +got):\n%s", diff)
	}
	if st.Progress == nil || st.Progress.Published != int32(len(want)) || st.Progress.Feasible != int64(sweep.Counts.Feasible) ||
		st.Progress.Settled != int64(sweep.Counts.Evaluated) {
		t.Errorf("final progress %+v, counts %+v", st.Progress, sweep.Counts)
	}
}

// TestRestartMidPublication interrupts the reporter after two creates and runs a new one: the
// result is the same set of Candidates, statuses complete, no duplicates.
func TestRestartMidPublication(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "out")
	if code := recommend(t, outputtest.SearchInput, dir); code != 0 {
		t.Fatalf("aisim exit %d", code)
	}
	ns := newNamespace(t)
	run := newRun(t, ns, "llm-run-4", 5)

	cctx, cancel := context.WithCancel(ctx)
	created := 0
	exited := make(chan int, 1)
	exited <- 0
	r1 := newReporter(ns, run.Name, dir, reporter.ChanWatcher(exited))
	r1.StopTimeout = time.Nanosecond // killed, not asked to stop: no grace to finish
	r1.OnCandidateCreated = func(string) {
		created++
		if created == 2 {
			cancel() // the container is killed right after the second create
		}
	}
	_, err := r1.Run(cctx)
	if !errors.Is(err, context.Canceled) && (err == nil || !strings.Contains(err.Error(), "context canceled")) {
		t.Fatalf("first reporter: err = %v, want a cancellation", err)
	}
	if n := len(listCandidates(t, ns)); n != 2 {
		t.Fatalf("after the interruption %d Candidates exist, want 2", n)
	}
	if refs := getRun(t, ns, run.Name).Status.CandidateRefs; len(refs) != 0 {
		t.Fatalf("refs written before all Candidates exist: %v", refs)
	}

	for attempt := 0; attempt < 2; attempt++ { // a second restart after success is a no-op
		exited := make(chan int, 1)
		exited <- 0
		out, err := newReporter(ns, run.Name, dir, reporter.ChanWatcher(exited)).Run(ctx)
		if err != nil {
			t.Fatalf("restart %d: %v", attempt, err)
		}
		want, sweep := expectedNames(t, run.Name, dir, 5)
		if diff := cmp.Diff(want, out.Published); diff != "" {
			t.Errorf("restart %d published (-want +got):\n%s", attempt, diff)
		}
		checkPublished(t, ns, run, dir, sweep, want)
	}
}

// TestNoFeasibleCandidate: aisim exits 1 with an empty top_n; nothing is published but the
// counts are.
func TestNoFeasibleCandidate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	code := recommend(t, infeasibleInput, dir)
	if code != 1 {
		t.Fatalf("aisim exit %d, want 1", code)
	}
	sweep, err := output.ReadSweepResult(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(sweep.Views.TopN) != 0 {
		t.Fatalf("top_n = %v, want empty", sweep.Views.TopN)
	}
	ns := newNamespace(t)
	run := newRun(t, ns, "llm-run-5", 5)
	exited := make(chan int, 1)
	exited <- code
	out, err := newReporter(ns, run.Name, dir, reporter.ChanWatcher(exited)).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if out.SearchExitCode != 1 || len(out.Published) != 0 {
		t.Errorf("outcome %+v", out)
	}
	if n := len(listCandidates(t, ns)); n != 0 {
		t.Errorf("%d Candidates published, want 0", n)
	}
	st := getRun(t, ns, run.Name).Status
	if len(st.CandidateRefs) != 0 || st.Recommendation == nil || st.Recommendation.BestCandidate != "" ||
		st.Recommendation.Evaluated != int64(sweep.Counts.Evaluated) || st.Recommendation.Feasible != 0 {
		t.Errorf("status after an infeasible search: refs %v recommendation %+v", st.CandidateRefs, st.Recommendation)
	}
	if st.Progress == nil || st.Progress.Infeasible != int64(sweep.Counts.Infeasible) || st.Progress.Published != 0 {
		t.Errorf("progress %+v", st.Progress)
	}
}

// TestSearchFailedWithoutResult: an invalid input (exit 2) writes no result; the reporter exits
// cleanly (the search's exit code fails the Job) and publishes nothing.
func TestSearchFailedWithoutResult(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	code := recommend(t, "engine: {model: nope}\n", dir)
	if code != 2 {
		t.Fatalf("aisim exit %d, want 2", code)
	}
	ns := newNamespace(t)
	run := newRun(t, ns, "llm-run-6", 5)
	exited := make(chan int, 1)
	exited <- code
	if _, err := newReporter(ns, run.Name, dir, reporter.ChanWatcher(exited)).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(listCandidates(t, ns)); n != 0 {
		t.Errorf("%d Candidates, want 0", n)
	}
	// A search that exits 0 without a result is a publication failure.
	exited <- 0
	if _, err := newReporter(ns, run.Name, dir, reporter.ChanWatcher(exited)).Run(context.Background()); err == nil {
		t.Error("exit 0 without recommendation.json: want an error")
	}
}

// TestForeignCandidateFailsPublication: an object with a Candidate's name that belongs to
// another Run is never adopted; publication fails visibly.
func TestForeignCandidateFailsPublication(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	if code := recommend(t, outputtest.SearchInput, dir); code != 0 {
		t.Fatalf("aisim exit %d", code)
	}
	ns := newNamespace(t)
	other := newRun(t, ns, "other-run", 1)
	run := newRun(t, ns, "llm-run-7", 2)
	names, _ := expectedNames(t, run.Name, dir, 2)
	foreign := builders.Candidate(ns, names[1]).Label(v1beta2.LabelRunUID, string(other.UID)).Obj()
	if err := k8s.Create(context.Background(), foreign); err != nil {
		t.Fatal(err)
	}
	exited := make(chan int, 1)
	exited <- 0
	_, err := newReporter(ns, run.Name, dir, reporter.ChanWatcher(exited)).Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "does not belong") {
		t.Fatalf("err = %v, want a refusal to adopt", err)
	}
	if refs := getRun(t, ns, run.Name).Status.CandidateRefs; len(refs) != 0 {
		t.Errorf("refs written after a failed publication: %v", refs)
	}
}

// TestPodWatcher drives the own-pod watch against the real API server: no kubelet, so the test
// writes the container statuses itself.
func TestPodWatcher(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "search-abcde"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "search", Image: "planner"}, {Name: "reporter", Image: "operator"},
		}},
	}
	decoy := pod.DeepCopy()
	decoy.Name = "search-other"
	for _, p := range []*corev1.Pod{pod, decoy} {
		if err := k8s.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	w := &reporter.PodWatcher{Client: k8s, Namespace: ns, PodName: pod.Name, Container: "search"}
	got := make(chan int, 1)
	go func() {
		code, err := w.Wait(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- code
	}()
	setState := func(p *corev1.Pod, search corev1.ContainerState) {
		t.Helper()
		p.Status.ContainerStatuses = []corev1.ContainerStatus{
			{Name: "search", State: search}, {Name: "reporter", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
		}
		if err := k8s.Status().Update(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	setState(pod, corev1.ContainerState{Running: &corev1.ContainerStateRunning{}})
	setState(decoy, corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 9}})
	select {
	case code := <-got:
		t.Fatalf("watcher returned %d while the search still runs", code)
	case <-time.After(300 * time.Millisecond):
	}
	setState(pod, corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 3}})
	select {
	case code := <-got:
		if code != 3 {
			t.Errorf("exit code %d, want 3", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("watcher did not see the termination")
	}
	// Already terminated before the watch started: seen by the initial list.
	code, err := w.Wait(ctx)
	if err != nil || code != 3 {
		t.Errorf("Wait on a terminated pod = %d, %v", code, err)
	}
}

func TestResolveOutputDir(t *testing.T) {
	for in, want := range map[string]string{
		"/var/run/dgdr/output":        "/var/run/dgdr/output/result",
		"/var/run/dgdr/output/":       "/var/run/dgdr/output/result",
		"/var/run/dgdr/output/result": "/var/run/dgdr/output/result",
		"/tmp/x":                      "/tmp/x",
	} {
		if got := reporter.ResolveOutputDir(in); got != want {
			t.Errorf("ResolveOutputDir(%q) = %q, want %q", in, got, want)
		}
	}
}
