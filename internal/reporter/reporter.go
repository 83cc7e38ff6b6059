// Package reporter is the sidecar of every search Job (`dgdr-operator report`): the loop that
// publishes a search. While the search runs it follows the ledger (internal/ledger) and
// publishes Run.status.progress and the best candidates so far; when the search ends it
// publishes the result: the ranked DynamoGraphDeploymentCandidates internal/candidates builds
// from the output, Run.status.candidateRefs and Run.status.recommendation, and keeps the output
// as the Run's artifacts ConfigMap. In a re-search's baseline Job (PublishBaseline) it publishes
// the baseline's prediction as Run.status.baseline.
//
// The reporter writes only status.progress, status.lastProgressTime, status.candidateRefs,
// status.recommendation, status.artifacts and status.baseline of its Run, with JSON merge
// patches on the status subresource, so it never clobbers what the operator owns (phase,
// conditions, jobRef, aisimulate, times).
//
// Publication is exactly-once in effect: candidate names are deterministic, creation treats
// AlreadyExists as success after verifying the existing object is the same candidate of the same
// Run, statuses are set only when missing, stale candidates of the Run are deleted, and
// candidateRefs are written last. A reporter restarted at any point (the kubelet restarts the
// sidecar whenever it exits while the pod runs) converges to the same set from the same output.
package reporter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/internal/apiretry"
	"github.com/dgdr-operator/dgdr-operator/internal/candidates"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/internal/ledger"
	"github.com/dgdr-operator/dgdr-operator/internal/searchoutput"
)

// Defaults of the intervals.
const (
	DefaultProgressInterval = 5 * time.Second
	DefaultPollInterval     = time.Second
)

// Reporter follows one Run's search and publishes its output.
type Reporter struct {
	// Client is a direct (uncached) client with the v1beta2 types in its scheme.
	Client client.Client
	// APIRetryTimeout bounds the retries of API calls that fail transiently (default 3 min).
	APIRetryTimeout time.Duration
	// Namespace and RunName identify the Run.
	Namespace string
	RunName   string
	// OutputDir is AISimulate's --output-dir (the directory holding recommendation.json).
	OutputDir string
	// SearchTmpDir is where the search container's /tmp is mounted (read-only), holding the
	// real AISimulate's live ledger while the search runs (internal/ledger); "" follows only the
	// output directory's ledger.
	SearchTmpDir string
	// RuntimeImages maps backends to Dynamo runtime images (and their engine versions) for
	// rendering.
	RuntimeImages map[string]v1alpha1.RuntimeImage
	// GPUsPerNode is the node size used to render multinode workers (default 8).
	GPUsPerNode int
	// PlannerImage is the image of the rendered Planner component (planner.enabled).
	PlannerImage string
	// Watcher tells when the search (or, for PublishBaseline, the baseline) container ended.
	Watcher SearchWatcher
	// ProgressInterval is the minimum time between two progress writes (default 5s).
	ProgressInterval time.Duration
	// PollInterval is how often the events file is read (default 1s).
	PollInterval time.Duration
	// PublishInterval is the minimum time between two provisional publish rounds, and the time
	// before the first (default DefaultPublishInterval; negative: no provisional publishing).
	PublishInterval time.Duration
	// StopTimeout bounds what is published after the reporter is told to stop (default
	// DefaultStopTimeout).
	StopTimeout time.Duration
	// Log receives structured progress logs.
	Log logr.Logger
	// Now is the clock (tests).
	Now func() time.Time
	// OnCandidateCreated, when set, is called after each successful Create (a test hook used to
	// interrupt a publication midway).
	OnCandidateCreated func(name string)

	lastProgress *v1beta2.RunProgress
	lastWrite    time.Time
	// tail follows the search's ledger (set by Run).
	tail *ledger.Tail
	// Provisional publishing: when the reporter started, when the last round ran, and the
	// ranking it published.
	started          time.Time
	lastPublish      time.Time
	publishedSig     string
	provisionalCount int32
}

// Publication is what the reporter published for a search that ended.
type Publication struct {
	SearchExitCode int
	Published      []string
	Progress       v1beta2.RunProgress
}

// ResolveOutputDir maps the output mount (DGDR_OUTPUT_DIR may name the emptyDir mount or
// AISimulate's result directory inside it) to the directory AISimulate writes.
func ResolveOutputDir(dir string) string {
	if filepath.Clean(dir) == jobcontract.OutputMountDir {
		return jobcontract.ResultDir
	}
	return dir
}

func (r *Reporter) defaults() {
	if r.ProgressInterval <= 0 {
		r.ProgressInterval = DefaultProgressInterval
	}
	if r.PollInterval <= 0 {
		r.PollInterval = DefaultPollInterval
	}
	if r.PublishInterval == 0 {
		r.PublishInterval = DefaultPublishInterval
	}
	if r.StopTimeout <= 0 {
		r.StopTimeout = DefaultStopTimeout
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	if r.Log.GetSink() == nil {
		r.Log = logr.Discard()
	}
	if r.APIRetryTimeout <= 0 {
		r.APIRetryTimeout = apiretry.DefaultTimeout
	}
}

// Run follows the search until the watcher reports its end, then publishes the output. It
// returns nil once the result is published (or there was nothing to publish because the search
// failed before writing one), and an error when publication failed.
func (r *Reporter) Run(ctx context.Context) (*Publication, error) {
	r.defaults()
	if r.Watcher == nil {
		return nil, errors.New("no search watcher configured")
	}
	run, err := r.getRun(ctx)
	if err != nil {
		return nil, err
	}
	best := candidates.BestSoFar{Pareto: candidates.Pareto(&run.Spec)}
	if r.provisionalEnabled() {
		best.Limit = candidates.MaxCandidates(run)
	}
	tl := ledger.NewTail(r.OutputDir, r.SearchTmpDir, best)
	r.tail = tl
	r.started = r.Now()

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ended := awaitExit(wctx, r.Watcher)

	ticker := time.NewTicker(r.PollInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			// SIGTERM before the search ended (the Run was cancelled or its deadline passed):
			// what was published stays, marked provisional.
			r.stop(ctx, run, tl)
			return nil, ctx.Err()
		case e := <-ended:
			return r.searchEnded(ctx, run, tl, e)
		case <-ticker.C:
			r.followSearch(ctx, run, tl)
		}
	}
}

// containerExit is how a watched container ended.
type containerExit struct {
	code int
	err  error
}

// awaitExit reports the end of the container w waits for on the returned channel.
func awaitExit(ctx context.Context, w SearchWatcher) <-chan containerExit {
	ended := make(chan containerExit, 1)
	go func() {
		code, err := w.Wait(ctx)
		ended <- containerExit{code, err}
	}()
	return ended
}

// searchEnded publishes the search's result once its container ended with e.
func (r *Reporter) searchEnded(ctx context.Context, run *v1beta2.DynamoGraphDeploymentRun, tl *ledger.Tail, e containerExit) (*Publication, error) {
	if ctx.Err() != nil {
		// Told to stop (SIGTERM: the Run was cancelled or its deadline passed) while the
		// search ended: select picks either ready case, and the search, stopped with the
		// same pod, may even exit 0. What was published stays, marked provisional; the
		// final publication is never started after the stop.
		r.stop(ctx, run, tl)
		return nil, ctx.Err()
	}
	if e.err != nil {
		return nil, fmt.Errorf("waiting for the search to end: %w", e.err)
	}
	r.Log.Info("search ended", "exitCode", e.code)
	// The Run may have ended (cancelled, superseded, past its deadline) while the search
	// finished before the pod's stop reached this process: a final ranking must never
	// land on a Run that was stopped. It is read from the API server, not from the
	// start-up copy, once per search.
	if fresh, err := r.getRun(ctx); err == nil && meta.IsStatusConditionTrue(fresh.Status.Conditions, v1beta2.ConditionCompleted) {
		c := meta.FindStatusCondition(fresh.Status.Conditions, v1beta2.ConditionCompleted)
		r.Log.Info("the Run ended before the search's result was published; what was published stays provisional", "reason", c.Reason)
		r.stop(ctx, fresh, tl)
		return nil, fmt.Errorf("%w: Run %s ended %s before the search's result was published", context.Canceled, r.RunName, c.Reason)
	}
	if err := tl.Poll(); err != nil {
		if searchoutput.IsRejected(err) {
			// Nothing is published from output that broke the contract.
			r.withdraw(ctx, run)
			return &Publication{SearchExitCode: e.code}, err
		}
		return nil, fmt.Errorf("reading %s: %w", output.EventsFile, err)
	}
	// Publication is idempotent (exactly once in effect), so a publication interrupted by
	// an API outage is simply done again. A SIGTERM arriving meanwhile leaves it
	// StopTimeout to finish.
	pctx, pcancel := graceful(ctx, r.StopTimeout)
	defer pcancel()
	var out *Publication
	err := apiretry.Do(pctx, r.APIRetryTimeout, r.logRetry("publishing the result"), func() error {
		var perr error
		p := tl.Tally().Progress()
		p.Published = r.provisionalCount // what a failed search leaves published
		out, perr = r.Publish(pctx, run, e.code, p)
		return perr
	})
	if searchoutput.IsRejected(err) {
		r.withdraw(pctx, run)
	}
	return out, err
}

// followSearch reads what the running search wrote since the last poll and publishes a
// provisional round or the progress when one is due.
func (r *Reporter) followSearch(ctx context.Context, run *v1beta2.DynamoGraphDeploymentRun, tl *ledger.Tail) {
	if tl.Rejected() {
		return // reported when the search ends
	}
	if err := tl.Poll(); err != nil {
		// A damaged events file only costs live progress; the final result is read
		// from recommendation.json.
		r.Log.Error(err, "reading the events file")
		return
	}
	if r.provisionalDue(tl.Tally()) {
		// The round writes the progress too.
		if err := r.publishProvisional(ctx, run, tl.Tally()); err != nil {
			r.Log.Error(err, "publishing provisional candidates")
		}
		return
	}
	p := tl.Tally().Progress()
	p.Published = r.provisionalCount
	due := r.lastProgress == nil || (*r.lastProgress != p && r.Now().Sub(r.lastWrite) >= r.ProgressInterval)
	if !due {
		return
	}
	if err := r.patchProgress(ctx, run, p); err != nil {
		r.Log.Error(err, "publishing progress")
	}
}

func (r *Reporter) getRun(ctx context.Context) (*v1beta2.DynamoGraphDeploymentRun, error) {
	var run v1beta2.DynamoGraphDeploymentRun
	err := apiretry.Do(ctx, r.APIRetryTimeout, r.logRetry("getting the Run"), func() error {
		return r.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: r.RunName}, &run)
	})
	if err != nil {
		return nil, fmt.Errorf("getting Run %s/%s: %w", r.Namespace, r.RunName, err)
	}
	return &run, nil
}

func (r *Reporter) logRetry(what string) func(error) {
	return func(err error) {
		r.Log.Info("transient API error; retrying", "what", what, "error", err.Error())
	}
}

// statusPatch is the reporter's slice of the Run status. Only these keys are ever sent, so a
// JSON merge patch leaves every operator-owned field alone.
type statusPatch struct {
	Progress         *v1beta2.RunProgress           `json:"progress,omitempty"`
	LastProgressTime *metav1.Time                   `json:"lastProgressTime,omitempty"`
	CandidateRefs    []v1beta2.CandidateReference   `json:"candidateRefs,omitempty"`
	Recommendation   *v1beta2.RecommendationSummary `json:"recommendation,omitempty"`
	Artifacts        *v1beta2.RunArtifacts          `json:"artifacts,omitempty"`
	Baseline         *v1beta2.BaselineStatus        `json:"baseline,omitempty"`
}

// body renders the patch. A recommendation is sent with every field (absent ones as null) and
// with the candidateRefs (null when there are none), so the final result replaces a provisional
// one entirely, provisional flag included.
func (sp statusPatch) body() map[string]any {
	m := map[string]any{}
	if sp.Progress != nil {
		m["progress"] = mergeValue(sp.Progress)
	}
	if sp.LastProgressTime != nil {
		m["lastProgressTime"] = sp.LastProgressTime
	}
	if sp.Recommendation != nil {
		m["recommendation"] = mergeValue(sp.Recommendation)
		m["candidateRefs"] = nil
	}
	if len(sp.CandidateRefs) > 0 {
		m["candidateRefs"] = sp.CandidateRefs
	}
	if sp.Artifacts != nil {
		m["artifacts"] = sp.Artifacts
	}
	if sp.Baseline != nil {
		// Whole, so a metrics-less error replaces earlier metrics and the other way around.
		m["baseline"] = mergeValue(sp.Baseline)
	}
	return m
}

func (r *Reporter) patchStatus(ctx context.Context, run *v1beta2.DynamoGraphDeploymentRun, sp statusPatch) error {
	body, err := json.Marshal(map[string]any{"status": sp.body()})
	if err != nil {
		return err
	}
	target := &v1beta2.DynamoGraphDeploymentRun{ObjectMeta: metav1.ObjectMeta{Namespace: run.Namespace, Name: run.Name}}
	return r.Client.Status().Patch(ctx, target, client.RawPatch(types.MergePatchType, body))
}

func (r *Reporter) patchProgress(ctx context.Context, run *v1beta2.DynamoGraphDeploymentRun, p v1beta2.RunProgress) error {
	now := metav1.NewTime(r.Now().Truncate(time.Second))
	if err := r.patchStatus(ctx, run, statusPatch{Progress: &p, LastProgressTime: &now}); err != nil {
		return err
	}
	r.lastProgress = &p
	r.lastWrite = r.Now()
	r.Log.V(1).Info("progress", "settled", p.Settled, "budget", p.Budget, "feasible", p.Feasible)
	return nil
}
