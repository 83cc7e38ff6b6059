package reporter_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/internal/candidates"
	"github.com/dgdr-operator/dgdr-operator/internal/candidates/outputtest"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/internal/naming"
	"github.com/dgdr-operator/dgdr-operator/internal/reporter"
	"github.com/dgdr-operator/dgdr-operator/internal/searchoutput"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/poll"
)

// liveSearch replays a real aisim search's ledger into dir line by line, as the search would
// write it, and runs a reporter on it with a short publish interval.
type liveSearch struct {
	t      *testing.T
	ns     string
	run    *v1beta2.DynamoGraphDeploymentRun
	src    string
	dir    string
	tmp    string
	lines  []string
	events *os.File
	exit   chan int
	cancel context.CancelFunc
	result chan error
	r      *reporter.Reporter
}

func startLiveSearch(t *testing.T, name string, maxCandidates int32, interval time.Duration) *liveSearch {
	return startSearch(t, name, maxCandidates, interval, "")
}

// startSearch is startLiveSearch; with a monitor name the ledger is written where the real
// AISimulate's supervisor has it written while the search runs, $TMPDIR/<monitor>/events.jsonl
// in the search's tmp (ls.tmp, which the reporter reads), instead of the output directory.
func startSearch(t *testing.T, name string, maxCandidates int32, interval time.Duration, monitor string) *liveSearch {
	t.Helper()
	spec := builders.Request("", "").Revision("main").MaxCandidates(maxCandidates).Spec
	return startSearchOf(t, name, outputtest.SearchInput, spec, interval, monitor)
}

// startSearchOf is startSearch of the search input (YAML) for a Run of spec.
func startSearchOf(t *testing.T, name, input string, spec v1beta2.DynamoGraphDeploymentRequestSpec, interval time.Duration, monitor string) *liveSearch {
	t.Helper()
	src := filepath.Join(t.TempDir(), "src")
	if code := recommend(t, input, src); code != 0 {
		t.Fatalf("aisim exit %d", code)
	}
	ls := &liveSearch{t: t, ns: newNamespace(t), src: src, dir: t.TempDir(), tmp: t.TempDir(), exit: make(chan int, 1), result: make(chan error, 1)}
	ls.run = newRunOf(t, ls.ns, name, spec)
	ls.lines = readLines(t, filepath.Join(src, output.EventsFile))
	path := filepath.Join(ls.dir, output.EventsFile)
	if monitor != "" {
		if err := os.Mkdir(filepath.Join(ls.tmp, monitor), 0o700); err != nil {
			t.Fatal(err)
		}
		path = filepath.Join(ls.tmp, monitor, "events.jsonl")
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	ls.events = f
	ls.r = newReporter(ls.ns, ls.run.Name, ls.dir, reporter.ChanWatcher(ls.exit))
	ls.r.SearchTmpDir = ls.tmp
	ls.r.PublishInterval = interval
	ctx, cancel := context.WithCancel(context.Background())
	ls.cancel = cancel
	t.Cleanup(cancel)
	go func() {
		_, err := ls.r.Run(ctx)
		ls.result <- err
	}()
	return ls
}

// write appends ledger lines [from, to) with a pause between candidates.
func (ls *liveSearch) write(from, to int, pause time.Duration) {
	for _, l := range ls.lines[from:to] {
		if _, err := ls.events.WriteString(l + "\n"); err != nil {
			ls.t.Fatal(err)
		}
		time.Sleep(pause)
	}
}

// settledLines is the number of ledger lines: AISimulate's ledger has no end event, every line
// after requested_config is a settled candidate.
func (ls *liveSearch) settledLines() int {
	if len(ls.lines) < 2 || !strings.Contains(ls.lines[0], `"requested_config"`) {
		ls.t.Fatal("the ledger does not start with requested_config and a candidate")
	}
	return len(ls.lines)
}

// distinctFeasible are the feasible records of the ledger's lines in settling order, first of
// identical configurations.
func distinctFeasible(t *testing.T, lines []string) []*output.Candidate {
	t.Helper()
	events, err := output.ReadEvents(strings.NewReader(strings.Join(lines, "\n") + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	var feas []*output.Candidate
	seen := map[string]bool{}
	for _, e := range events {
		c, err := e.Candidate()
		if err != nil || c.Status != output.StatusFeasible || c.PredictionConfig == nil {
			continue
		}
		key, _ := json.Marshal(c.PredictionConfig)
		if seen[string(key)] {
			continue
		}
		seen[string(key)] = true
		feas = append(feas, c)
	}
	return feas
}

// bestOf is the provisional ranking the ledger's lines imply: feasible records, first of
// identical configurations, score descending, then fewer GPUs, then settled first.
func bestOf(t *testing.T, run string, lines []string, limit int) []string {
	t.Helper()
	feas := distinctFeasible(t, lines)
	slices.SortStableFunc(feas, func(a, b *output.Candidate) int {
		if *a.Score != *b.Score {
			if *a.Score > *b.Score {
				return -1
			}
			return 1
		}
		return a.UsedGPUs - b.UsedGPUs
	})
	var names []string
	for _, c := range feas[:min(limit, len(feas))] {
		names = append(names, naming.CandidateName(run, c.CandidateID))
	}
	return names
}

// published lists the Run's Candidates by rank, and whether each is provisional.
func published(t *testing.T, ns string) ([]string, []bool) {
	t.Helper()
	var names []string
	var prov []bool
	for _, c := range listCandidates(t, ns) {
		names = append(names, c.Name)
		prov = append(prov, c.Status.Provisional)
	}
	return names, prov
}

// TestProvisionalThenFinal: a search that settles candidates over time has its best ones
// published, marked provisional, before it exits; when it ends the final ranking replaces them
// with no duplicates and no provisional mark, and the Run keeps the output whole as artifacts.
func TestProvisionalThenFinal(t *testing.T) {
	ls := startLiveSearch(t, "llm-prov-1", 3, 300*time.Millisecond)
	end := ls.settledLines()
	ls.write(0, end, 15*time.Millisecond)
	want := bestOf(t, ls.run.Name, ls.lines[:end], 3)
	if len(want) == 0 {
		t.Fatal("the search has no feasible candidate to publish")
	}
	var names []string
	var prov []bool
	poll.WaitFor(t, 15*time.Second, 50*time.Millisecond, "provisional candidates", func(context.Context) (bool, string, error) {
		names, prov = published(t, ls.ns)
		refs := getRun(t, ls.ns, ls.run.Name).Status.CandidateRefs
		return slices.Equal(names, want) && len(refs) == len(want), fmt.Sprintf("published %v (refs %v), want %v", names, refs, want), nil
	})
	for i, p := range prov {
		if !p {
			t.Errorf("%s is not marked provisional", names[i])
		}
	}
	for _, c := range listCandidates(t, ls.ns) {
		if rank, ok := c.Labels[v1beta2.LabelCandidateRank]; ok {
			t.Errorf("provisional %s has the rank label %s (ranks move while the search runs)", c.Name, rank)
		}
	}
	st := getRun(t, ls.ns, ls.run.Name).Status
	if st.Recommendation == nil || !st.Recommendation.Provisional || st.Recommendation.BestCandidate != want[0] {
		t.Errorf("provisional summary %+v, want provisional with best %s", st.Recommendation, want[0])
	}
	if len(st.CandidateRefs) != len(want) || st.Progress == nil || st.Progress.Published != int32(len(want)) {
		t.Errorf("provisional refs %v, progress %+v", st.CandidateRefs, st.Progress)
	}
	select {
	case err := <-ls.result:
		t.Fatalf("the reporter ended before the search: %v", err)
	default:
	}

	// The search ends: the final ranking replaces the provisional one.
	ls.write(end, len(ls.lines), 0)
	copyResult(t, ls.src, ls.dir)
	ls.exit <- 0
	if err := <-ls.result; err != nil {
		t.Fatal(err)
	}
	final, sweep := expectedNames(t, ls.run.Name, ls.dir, 3)
	checkPublished(t, ls.ns, ls.run, ls.dir, sweep, final)
	names, prov = published(t, ls.ns)
	if !slices.Equal(names, final) || slices.Contains(prov, true) {
		t.Errorf("after the search: %v (provisional %v), want exactly %v, none provisional", names, prov, final)
	}
	st = getRun(t, ls.ns, ls.run.Name).Status
	if st.Recommendation == nil || st.Recommendation.Provisional {
		t.Errorf("final summary %+v still provisional", st.Recommendation)
	}

	// Artifacts: both files kept whole.
	if st.Artifacts == nil || st.Artifacts.Truncated || st.Artifacts.ConfigMapName != jobcontract.ArtifactsName(ls.run.UID) {
		t.Fatalf("status.artifacts = %+v", st.Artifacts)
	}
	cm := getArtifacts(t, ls.ns, st.Artifacts.ConfigMapName)
	if !metav1.IsControlledBy(cm, ls.run) || cm.Labels[v1beta2.LabelRunUID] != string(ls.run.UID) {
		t.Errorf("artifacts ConfigMap not controlled by and labelled with the Run: %+v", cm.ObjectMeta)
	}
	for key, file := range map[string]string{jobcontract.ArtifactRecommendationKey: output.RecommendationFile, jobcontract.ArtifactEventsKey: output.EventsFile} {
		want, err := os.ReadFile(filepath.Join(ls.dir, file))
		if err != nil {
			t.Fatal(err)
		}
		if got := gunzip(t, cm.BinaryData[key]); !bytes.Equal(got, want) {
			t.Errorf("%s: kept %d bytes, want the file's %d bytes whole", key, len(got), len(want))
		}
	}
}

// TestLiveMonitorThenOutputCopy: the real AISimulate's ledger is live only in its supervisor's
// monitor directory under the search's /tmp, and lands in the output directory when the search
// ends (docs/design/results.md, "While the search runs"). The reporter publishes progress and the best
// candidates so far from the monitor, then the final ranking from the output; progress never
// goes backwards and no candidate is counted twice.
func TestLiveMonitorThenOutputCopy(t *testing.T) {
	const monitor = "aisimulate-monitor-q8_x2mzt"
	ls := startSearch(t, "llm-prov-monitor", 3, 300*time.Millisecond, monitor)
	var mu sync.Mutex
	var seen []v1beta2.RunProgress
	watch, stopWatch := context.WithCancel(context.Background())
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for watch.Err() == nil {
			var run v1beta2.DynamoGraphDeploymentRun
			if err := k8s.Get(watch, client.ObjectKeyFromObject(ls.run), &run); err == nil && run.Status.Progress != nil {
				mu.Lock()
				seen = append(seen, *run.Status.Progress)
				mu.Unlock()
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	end := ls.settledLines()
	ls.write(0, end, 15*time.Millisecond)
	want := bestOf(t, ls.run.Name, ls.lines[:end], 3)
	poll.WaitFor(t, 15*time.Second, 50*time.Millisecond, "provisional candidates from the monitor's ledger", func(context.Context) (bool, string, error) {
		names, _ := published(t, ls.ns)
		p := getRun(t, ls.ns, ls.run.Name).Status.Progress
		return slices.Equal(names, want) && p != nil && p.Settled == int64(end-1), fmt.Sprintf("published %v (progress %+v), want %v", names, p, want), nil
	})
	if _, err := os.Stat(filepath.Join(ls.dir, output.EventsFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the output directory has a ledger before the search ended: %v", err)
	}

	// The search ends: the supervisor copies the ledger into the output directory, then deletes
	// its monitor directory.
	data, err := os.ReadFile(filepath.Join(ls.tmp, monitor, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ls.dir, output.EventsFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(ls.tmp, monitor)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // a few polls of the output copy before the search's end is seen
	copyResult(t, ls.src, ls.dir)
	ls.exit <- 0
	if err := <-ls.result; err != nil {
		t.Fatal(err)
	}
	stopWatch()
	<-watched
	final, sweep := expectedNames(t, ls.run.Name, ls.dir, 3)
	checkPublished(t, ls.ns, ls.run, ls.dir, sweep, final)
	st := getRun(t, ls.ns, ls.run.Name).Status
	mu.Lock()
	seen = append(seen, *st.Progress)
	defer mu.Unlock()
	for i := 1; i < len(seen); i++ {
		a, b := seen[i-1], seen[i]
		if b.Budget < a.Budget || b.Settled < a.Settled || b.Feasible < a.Feasible || b.Infeasible < a.Infeasible || b.Failed < a.Failed {
			t.Errorf("progress went backwards: %+v after %+v", b, a)
		}
	}
	// Counted once: the live count is the ledger's candidates (cache hits have no line), the
	// final one recommendation.json's.
	for _, p := range seen[:len(seen)-1] {
		if p.Settled > int64(end-1) {
			t.Errorf("live progress %+v counts more than the ledger's %d candidates", p, end-1)
		}
	}
	if st.Progress.Settled != int64(sweep.Counts.Evaluated) || st.Progress.Budget != 40 {
		t.Errorf("final progress %+v, counts %+v", st.Progress, sweep.Counts)
	}
	cm := getArtifacts(t, ls.ns, st.Artifacts.ConfigMapName)
	if got := gunzip(t, cm.BinaryData[jobcontract.ArtifactEventsKey]); !bytes.Equal(got, data) {
		t.Errorf("kept ledger of %d bytes, want the output copy's %d", len(got), len(data))
	}
}

// TestSIGTERMKeepsProvisional: SIGTERM mid-search (the Job deleted for a cancel or a deadline)
// publishes the best candidates so far, including what settled after the last round, and
// leaves them published and marked provisional, with the ledger kept as the Run's artifacts.
func TestSIGTERMKeepsProvisional(t *testing.T) {
	ls := startLiveSearch(t, "llm-prov-2", 4, 300*time.Millisecond)
	end := ls.settledLines()
	half := end / 2
	ls.write(0, half, 10*time.Millisecond)
	first := bestOf(t, ls.run.Name, ls.lines[:half], 4)
	poll.WaitFor(t, 15*time.Second, 50*time.Millisecond, "a first provisional round", func(context.Context) (bool, string, error) {
		names, _ := published(t, ls.ns)
		refs := getRun(t, ls.ns, ls.run.Name).Status.CandidateRefs
		return len(first) > 0 && slices.Equal(names, first) && len(refs) == len(first), fmt.Sprintf("published %v (refs %v), want %v", names, refs, first), nil
	})
	// More candidates settle, then SIGTERM arrives right away, before the next round is due.
	ls.write(half, end, 0)
	ls.cancel()
	if err := <-ls.result; !errors.Is(err, context.Canceled) {
		t.Fatalf("reporter after SIGTERM: %v, want context.Canceled", err)
	}
	want := bestOf(t, ls.run.Name, ls.lines[:end], 4)
	names, prov := published(t, ls.ns)
	if !slices.Equal(names, want) {
		t.Errorf("after SIGTERM: %v, want the best so far %v", names, want)
	}
	for i, p := range prov {
		if !p {
			t.Errorf("%s is not marked provisional", names[i])
		}
	}
	st := getRun(t, ls.ns, ls.run.Name).Status
	if st.Recommendation == nil || !st.Recommendation.Provisional || len(st.CandidateRefs) != len(want) {
		t.Errorf("after SIGTERM: summary %+v, refs %v", st.Recommendation, st.CandidateRefs)
	}
	if st.Artifacts == nil {
		t.Fatal("no artifacts after SIGTERM")
	}
	cm := getArtifacts(t, ls.ns, st.Artifacts.ConfigMapName)
	if _, ok := cm.BinaryData[jobcontract.ArtifactRecommendationKey]; ok {
		t.Error("a recommendation.json was kept although the search wrote none")
	}
	if got := gunzip(t, cm.BinaryData[jobcontract.ArtifactEventsKey]); len(bytes.Split(bytes.TrimSpace(got), []byte("\n"))) != end {
		t.Errorf("kept ledger has %d lines, want %d", len(bytes.Split(bytes.TrimSpace(got), []byte("\n"))), end)
	}
}

// TestSearchEndingAfterTheRunEndedKeepsProvisional: the Run is cancelled (the operator marks it
// Completed=True Cancelled and deletes the Job) but the search finishes, whole and exit 0, before
// the pod's stop reaches the reporter. The final ranking must not land on the stopped Run: what
// was published stays, marked provisional (the chaos suite's cancel scenario caught this race).
func TestSearchEndingAfterTheRunEndedKeepsProvisional(t *testing.T) {
	ls := startLiveSearch(t, "llm-prov-late", 4, 300*time.Millisecond)
	end := ls.settledLines()
	half := end / 2
	ls.write(0, half, 10*time.Millisecond)
	first := bestOf(t, ls.run.Name, ls.lines[:half], 4)
	poll.WaitFor(t, 15*time.Second, 50*time.Millisecond, "a first provisional round", func(context.Context) (bool, string, error) {
		names, _ := published(t, ls.ns)
		return len(first) > 0 && slices.Equal(names, first), fmt.Sprintf("published %v, want %v", names, first), nil
	})
	// The reporter patches the Run's status at the same time: retry on a conflict.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		run := getRun(t, ls.ns, ls.run.Name)
		run.Status.Phase = v1beta2.RunPhaseCancelled
		meta.SetStatusCondition(&run.Status.Conditions, metav1.Condition{Type: v1beta2.ConditionCompleted, Status: metav1.ConditionTrue, Reason: v1beta2.ReasonCancelled, Message: "test"})
		return k8s.Status().Update(context.Background(), run)
	}); err != nil {
		t.Fatal(err)
	}

	ls.write(half, len(ls.lines), 0)
	copyResult(t, ls.src, ls.dir)
	ls.exit <- 0
	if err := <-ls.result; !errors.Is(err, context.Canceled) {
		t.Fatalf("reporter after a search that ended on a cancelled Run: %v, want context.Canceled", err)
	}
	names, prov := published(t, ls.ns)
	if len(names) == 0 {
		t.Fatal("nothing stays published")
	}
	for i, p := range prov {
		if !p {
			t.Errorf("%s is not marked provisional: the final ranking landed on the cancelled Run", names[i])
		}
	}
	st := getRun(t, ls.ns, ls.run.Name).Status
	if st.Recommendation == nil || !st.Recommendation.Provisional {
		t.Errorf("summary %+v, want it marked provisional", st.Recommendation)
	}
	if c := meta.FindStatusCondition(st.Conditions, v1beta2.ConditionCompleted); c == nil || c.Reason != v1beta2.ReasonCancelled {
		t.Errorf("Completed condition %+v, want Cancelled untouched", c)
	}
}

// TestQuickSearchPublishesNothingProvisional: a search that ends within the publish interval
// costs no write for provisional publishing.
func TestQuickSearchPublishesNothingProvisional(t *testing.T) {
	ls := startLiveSearch(t, "llm-prov-3", 3, time.Hour)
	ls.write(0, len(ls.lines), 0)
	time.Sleep(200 * time.Millisecond)
	if names, _ := published(t, ls.ns); len(names) != 0 {
		t.Errorf("published %v before the search ended", names)
	}
	copyResult(t, ls.src, ls.dir)
	ls.exit <- 0
	if err := <-ls.result; err != nil {
		t.Fatal(err)
	}
}

// TestOversizedArtifactsTruncated: a recommendation.json far over the artifacts cap is kept cut
// at a line break with the marker, the Run's publication still succeeds, and the not-feasible
// candidates are counted by reason category.
func TestOversizedArtifactsTruncated(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	if code := recommend(t, outputtest.SearchInput, dir); code != 0 {
		t.Fatalf("aisim exit %d", code)
	}
	sweep, err := output.ReadSweepResult(dir)
	if err != nil {
		t.Fatal(err)
	}
	// 3,000 infeasible records with incompressible reasons: about 4 MB of JSON, 2 MB gzipped.
	rnd := make([]byte, 640)
	for i := range 3000 {
		for j := range rnd {
			rnd[j] = byte((i*7919 + j*104729 + (i*j)%251) * 2654435761 >> 13)
		}
		cat := []string{"kv_capacity", "sla_constraint", "gpu_budget"}[i%3]
		sweep.Candidates = append(sweep.Candidates, output.Candidate{
			CandidateID: fmt.Sprintf("candidate-9%05d", i), Status: output.StatusInfeasible, ReasonCategory: cat,
			Reason: fmt.Sprintf("%x", rnd), Config: map[string]any{},
		})
	}
	sweep.Counts.Infeasible += 3000
	sweep.Counts.Evaluated += 3000
	if err := output.WriteJSONFile(filepath.Join(dir, output.RecommendationFile), sweep); err != nil {
		t.Fatal(err)
	}
	whole, _ := os.ReadFile(filepath.Join(dir, output.RecommendationFile))
	ns := newNamespace(t)
	run := newRun(t, ns, "llm-prov-4", 3)
	exited := make(chan int, 1)
	exited <- 0
	out, err := newReporter(ns, run.Name, dir, reporter.ChanWatcher(exited)).Run(context.Background())
	if err != nil {
		t.Fatalf("publication failed: %v", err)
	}
	if len(out.Published) == 0 {
		t.Fatal("nothing published")
	}
	st := getRun(t, ns, run.Name).Status
	if st.Artifacts == nil || !st.Artifacts.Truncated {
		t.Fatalf("status.artifacts = %+v, want truncated", st.Artifacts)
	}
	cm := getArtifacts(t, ns, st.Artifacts.ConfigMapName)
	size := 0
	for _, v := range cm.BinaryData {
		size += len(v)
	}
	if size > jobcontract.MaxArtifactsBytes {
		t.Errorf("artifacts hold %d compressed bytes, over the cap %d", size, jobcontract.MaxArtifactsBytes)
	}
	if !strings.Contains(cm.Annotations[jobcontract.AnnotationArtifactsTruncated], output.RecommendationFile) {
		t.Errorf("truncation annotation %q", cm.Annotations[jobcontract.AnnotationArtifactsTruncated])
	}
	got := gunzip(t, cm.BinaryData[jobcontract.ArtifactRecommendationKey])
	lines := strings.Split(strings.TrimRight(string(got), "\n"), "\n")
	marker := lines[len(lines)-1]
	if !strings.HasPrefix(marker, candidates.TruncatedMarker+" recommendation.json: kept the first ") {
		t.Errorf("last line %q is not the truncation marker", marker)
	}
	kept := strings.TrimSuffix(string(got), "\n"+marker+"\n")
	if len(kept) >= len(whole) || !strings.HasPrefix(string(whole), kept) || !strings.HasSuffix(kept, "\n") {
		t.Errorf("kept %d bytes are not a line-aligned prefix of the %d-byte file", len(kept), len(whole))
	}
	if !strings.Contains(marker, fmt.Sprintf("of %d bytes", len(whole))) {
		t.Errorf("marker %q does not give the file's size %d", marker, len(whole))
	}
	wantReasons := []v1beta2.ReasonCount{{Category: "gpu_budget", Count: 1000}, {Category: "kv_capacity", Count: 1000}, {Category: "sla_constraint", Count: 1000}}
	if diff := cmp.Diff(wantReasons, st.Recommendation.InfeasibleReasons); diff != "" {
		t.Errorf("infeasibleReasons (-want +got):\n%s", diff)
	}
}

func getArtifacts(t *testing.T, ns, name string) *corev1.ConfigMap {
	t.Helper()
	var cm corev1.ConfigMap
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &cm); err != nil {
		t.Fatal(err)
	}
	return &cm
}

func gunzip(t *testing.T, data []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRejectedOutputWithdrawsProvisional: provisional candidates were published from the ledger,
// then the search's final output breaks the contract (recommendation.json a symbolic link):
// nothing stays published from rejected output.
func TestRejectedOutputWithdrawsProvisional(t *testing.T) {
	ls := startLiveSearch(t, "llm-prov-5", 3, 300*time.Millisecond)
	end := ls.settledLines()
	ls.write(0, end, 5*time.Millisecond)
	poll.WaitFor(t, 15*time.Second, 50*time.Millisecond, "provisional candidates", func(context.Context) (bool, string, error) {
		refs := getRun(t, ls.ns, ls.run.Name).Status.CandidateRefs
		return len(refs) > 0, fmt.Sprintf("refs %v", refs), nil
	})
	ls.write(end, len(ls.lines), 0)
	copyResult(t, ls.src, ls.dir)
	_ = os.Remove(filepath.Join(ls.dir, output.RecommendationFile))
	if err := os.Symlink("/dev/zero", filepath.Join(ls.dir, output.RecommendationFile)); err != nil {
		t.Fatal(err)
	}
	ls.exit <- 0
	if err := <-ls.result; !searchoutput.IsRejected(err) {
		t.Fatalf("err = %v, want an output rejection", err)
	}
	if names, _ := published(t, ls.ns); len(names) != 0 {
		t.Errorf("Candidates %v stay published from rejected output", names)
	}
	if st := getRun(t, ls.ns, ls.run.Name).Status; len(st.CandidateRefs) != 0 || st.Recommendation != nil {
		t.Errorf("status stays published from rejected output: refs %v, recommendation %+v", st.CandidateRefs, st.Recommendation)
	}
}
