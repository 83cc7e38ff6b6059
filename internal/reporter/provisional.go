package reporter

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/candidates"
	"github.com/dgdr-operator/dgdr-operator/internal/ledger"
	"github.com/dgdr-operator/dgdr-operator/internal/searchoutput"
)

// Provisional publishing (docs/design/results.md, "Provisional candidates"): while the search runs, the
// reporter publishes the best candidates settled so far, read from the candidate_completed events
// of the ledger, each of which carries the candidate's whole record (AISimulate and aisim write
// it; internal/ledger follows the live ledger, internal/candidates ranks and renders them). A
// round creates the Candidates that entered the top maxCandidates (status.provisional true, no
// rank label), updates the status rank of those that moved, deletes those that dropped out, and
// writes the Run's candidateRefs, progress and summary (recommendation.provisional true) in one
// status patch. Rounds are at least PublishInterval apart, the first one PublishInterval after
// the reporter started (a search that ends sooner costs no write more than before), and a round
// runs only when the top changed. The final publication replaces the provisional ranking: same
// names for the same candidates, so no duplicates, provisional cleared, stale ones deleted.

// Defaults of provisional publishing.
const (
	// DefaultPublishInterval is the minimum time between two provisional publish rounds.
	DefaultPublishInterval = 10 * time.Second
	// DefaultStopTimeout bounds what the reporter still publishes after SIGTERM (the pod's
	// termination grace period is 30 s by default; the sandbox node agent allows 10 s).
	DefaultStopTimeout = 8 * time.Second
)

func (r *Reporter) provisionalEnabled() bool { return r.PublishInterval > 0 }

// provisionalDue tells whether a provisional round should run now.
func (r *Reporter) provisionalDue(s *candidates.Tally) bool {
	if !r.provisionalEnabled() || len(s.Best.List()) == 0 || s.Best.Signature() == r.publishedSig {
		return false
	}
	now := r.Now()
	return now.Sub(r.started) >= r.PublishInterval && now.Sub(r.lastPublish) >= r.PublishInterval
}

// publishProvisional runs one provisional round (see the top of this file).
func (r *Reporter) publishProvisional(ctx context.Context, run *v1beta2.DynamoGraphDeploymentRun, s *candidates.Tally) error {
	r.lastPublish = r.Now()
	sig := s.Best.Signature()
	desired := candidates.Provisional(run, s.Best.List(), s.Progress().Settled, r.renderOptions(), func(id string, err error) {
		r.Log.Error(err, "rendering a provisional candidate", "candidateID", id)
	})
	names := make([]string, 0, len(desired))
	for i := range desired {
		if err := r.ensureCandidate(ctx, run, &desired[i]); err != nil {
			return fmt.Errorf("publishing provisional Candidate %s: %w", desired[i].Name, err)
		}
		names = append(names, desired[i].Name)
	}
	if err := r.deleteStale(ctx, run, names); err != nil {
		return err
	}
	p := s.Progress()
	p.Published = int32(len(desired))
	summary := &v1beta2.RecommendationSummary{
		Provisional:       true,
		Evaluated:         p.Feasible + p.Infeasible + p.Failed + p.TimedOut,
		Feasible:          p.Feasible,
		InfeasibleReasons: candidates.ReasonList(s.ReasonCounts()),
	}
	sp := statusPatch{Progress: &p, Recommendation: summary, CandidateRefs: []v1beta2.CandidateReference{}}
	if len(desired) > 0 {
		summary.BestCandidate = desired[0].Name
		summary.Metrics = desired[0].Status.Metrics.DeepCopy()
	}
	for _, n := range names {
		sp.CandidateRefs = append(sp.CandidateRefs, v1beta2.CandidateReference{Name: n})
	}
	now := metav1.NewTime(r.Now().Truncate(time.Second))
	sp.LastProgressTime = &now
	if err := r.patchStatus(ctx, run, sp); err != nil {
		return err
	}
	r.publishedSig = sig
	r.provisionalCount = p.Published
	r.lastProgress = &p
	r.lastWrite = r.Now()
	r.Log.Info("published provisional candidates", "candidates", len(names), "settled", p.Settled)
	return nil
}

// stop runs when the reporter is told to stop (SIGTERM: the Job was deleted because the Run was
// cancelled, or its deadline passed) before the search ended: within StopTimeout it publishes
// the best candidates so far when they changed since the last round, and keeps the ledger (and a
// recommendation.json, if the search wrote one) as the Run's artifacts. What was published stays,
// marked provisional.
func (r *Reporter) stop(ctx context.Context, run *v1beta2.DynamoGraphDeploymentRun, tl *ledger.Tail) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.StopTimeout)
	defer cancel()
	if err := tl.Poll(); err != nil {
		r.Log.Error(err, "reading the events file on stop")
		if searchoutput.IsRejected(err) {
			return
		}
	}
	if best := &tl.Tally().Best; len(best.List()) > 0 && best.Signature() != r.publishedSig && r.provisionalEnabled() {
		if err := r.publishProvisional(sctx, run, tl.Tally()); err != nil {
			r.Log.Error(err, "publishing provisional candidates on stop")
		}
	}
	art, err := r.keepArtifacts(sctx, run)
	if err != nil {
		r.Log.Error(err, "keeping the artifacts on stop")
		return
	}
	if art != nil {
		if err := r.patchStatus(sctx, run, statusPatch{Artifacts: art}); err != nil {
			r.Log.Error(err, "recording the artifacts on stop")
		}
	}
}

// withdraw takes back what provisional rounds published when the output turns out to break the
// contract at the end (nothing is published from rejected output): the Run's Candidates are
// deleted and its candidateRefs and recommendation cleared. Best effort: errors are logged.
func (r *Reporter) withdraw(ctx context.Context, run *v1beta2.DynamoGraphDeploymentRun) {
	if !r.provisionalEnabled() {
		return
	}
	if err := r.deleteStale(ctx, run, nil); err != nil {
		r.Log.Error(err, "withdrawing provisional candidates")
		return
	}
	if r.publishedSig == "" {
		return
	}
	body := []byte(`{"status":{"candidateRefs":null,"recommendation":null}}`)
	target := &v1beta2.DynamoGraphDeploymentRun{ObjectMeta: metav1.ObjectMeta{Namespace: run.Namespace, Name: run.Name}}
	if err := r.Client.Status().Patch(ctx, target, client.RawPatch(types.MergePatchType, body)); err != nil {
		r.Log.Error(err, "withdrawing the provisional summary")
	}
}

// graceful returns a context that outlives ctx by d: the final publication started before
// SIGTERM gets that long to finish.
func graceful(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	gctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(d, cancel)
		context.AfterFunc(gctx, func() { t.Stop() })
	})
	return gctx, func() { stop(); cancel() }
}

// mergeValue renders a struct for a JSON merge patch with every field present: a zero or nil
// field becomes null, which removes what an earlier patch (a provisional round) left there.
func mergeValue(v any) any {
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return nil
		}
		rv = rv.Elem()
	}
	if rv.Kind() != reflect.Struct {
		return v
	}
	out := map[string]any{}
	t := rv.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		fv := rv.Field(i)
		if fv.IsZero() {
			out[name] = nil
			continue
		}
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && ft != reflect.TypeOf(metav1.Time{}) {
			out[name] = mergeValue(fv.Interface())
			continue
		}
		out[name] = fv.Interface()
	}
	return out
}
