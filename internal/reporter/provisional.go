package reporter

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
)

// Provisional publishing (docs/design/results.md, "Provisional candidates"): while the search runs, the
// reporter publishes the best candidates settled so far, read from the candidate_completed events
// of the ledger, each of which carries the candidate's whole record (AISimulate and aisim write
// it; progress.go follows the live ledger). A round creates the Candidates that entered the top
// maxCandidates (status.provisional true, no rank label), updates the status rank
// of those that moved, deletes those that dropped out, and writes the Run's candidateRefs,
// progress and summary (recommendation.provisional true) in one status patch. Rounds are at least PublishInterval
// apart, the first one PublishInterval after the reporter started (a search that ends sooner
// costs no write more than before), and a round runs only when the top changed. The final
// publication replaces the provisional ranking: same names for the same candidates, so no
// duplicates, provisional cleared, stale ones deleted.

// Defaults of provisional publishing.
const (
	// DefaultPublishInterval is the minimum time between two provisional publish rounds.
	DefaultPublishInterval = 10 * time.Second
	// DefaultStopTimeout bounds what the reporter still publishes after SIGTERM (the pod's
	// termination grace period is 30 s by default; the sandbox node agent allows 10 s).
	DefaultStopTimeout = 8 * time.Second
)

// maxReasonCategories bounds the reason categories kept from the (untrusted) output.
const maxReasonCategories = 64

// settledCandidate is a feasible candidate of the ledger, with what rendering it needs: key is
// its prediction_config as JSON (the configuration rendered, and what tells identical
// configurations apart), rec the record's id, score, GPUs, metrics and error band.
type settledCandidate struct {
	id       string
	score    float64
	usedGPUs int
	order    int
	key      string
	rec      *output.Candidate
}

// bestSoFar keeps the best limit feasible candidates settled so far, best first: score
// descending, then fewer GPUs, then earlier settled. Memory stays bounded by limit.
type bestSoFar struct {
	limit int
	seq   int
	list  []settledCandidate
}

func better(a, b settledCandidate) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	if a.usedGPUs != b.usedGPUs {
		return a.usedGPUs < b.usedGPUs
	}
	return a.order < b.order
}

func (b *bestSoFar) offer(c settledCandidate) {
	b.seq++
	c.order = b.seq
	if b.limit <= 0 {
		return
	}
	for _, x := range b.list {
		if x.id == c.id || x.key == c.key {
			return // the recommender keeps the first of identical configurations
		}
	}
	// The first entry c is better than (ties go after: c settled last).
	i := len(b.list)
	for j := range b.list {
		if better(c, b.list[j]) {
			i = j
			break
		}
	}
	if i >= b.limit {
		return
	}
	b.list = slices.Insert(b.list, i, c)
	if len(b.list) > b.limit {
		b.list = b.list[:b.limit]
	}
}

// signature identifies the ranking (ids in order).
func (b *bestSoFar) signature() string {
	ids := make([]string, len(b.list))
	for i, c := range b.list {
		ids[i] = c.id
	}
	return strings.Join(ids, ",")
}

// settle records a candidate_completed record: a feasible one with a finite score and its
// concrete configuration is offered to the best so far, any other outcome is counted by reason
// category.
func (s *progressState) settle(c *output.Candidate) {
	if c.Status != output.StatusFeasible {
		s.countReason(c.ReasonCategory)
		return
	}
	if c.Score == nil || math.IsNaN(*c.Score) || math.IsInf(*c.Score, 0) || c.PredictionConfig == nil {
		return
	}
	key, err := json.Marshal(c.PredictionConfig)
	if err != nil {
		return
	}
	// Only what rendering needs is kept: AISimulate's sample config and provenance are large.
	rec := &output.Candidate{CandidateID: c.CandidateID, Status: c.Status, UsedGPUs: c.UsedGPUs, Score: c.Score,
		Metrics: c.Metrics, ErrorBand: c.ErrorBand}
	s.best.offer(settledCandidate{id: c.CandidateID, score: *c.Score, usedGPUs: c.UsedGPUs, key: string(key), rec: rec})
}

func (s *progressState) countReason(category string) {
	if s.reasons == nil {
		s.reasons = map[string]int64{}
	}
	s.reasons[reasonCategory(category, s.reasons)]++
}

// reasonCategory bounds a category from the output: length, and the number of distinct ones
// (the rest are "other").
func reasonCategory(c string, seen map[string]int64) string {
	c = strings.TrimSpace(c)
	if c == "" {
		c = "unknown"
	}
	if len(c) > 64 {
		c = c[:64]
	}
	if _, ok := seen[c]; !ok && len(seen) >= maxReasonCategories {
		return "other"
	}
	return c
}

// reasonCounts lists counts by category, most frequent first, at most 16 (the rest summed under
// "other").
func reasonCounts(counts map[string]int64) []v1beta2.ReasonCount {
	out := make([]v1beta2.ReasonCount, 0, len(counts))
	for c, n := range counts {
		if n > 0 {
			out = append(out, v1beta2.ReasonCount{Category: c, Count: n})
		}
	}
	slices.SortFunc(out, func(a, b v1beta2.ReasonCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.Category, b.Category))
	})
	const maxListed = 16
	if len(out) > maxListed {
		var rest int64
		for _, rc := range out[maxListed-1:] {
			rest += rc.Count
		}
		out = append(out[:maxListed-1], v1beta2.ReasonCount{Category: "other", Count: rest})
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// sweepReasons counts the not-feasible candidate records of recommendation.json by category.
func sweepReasons(sweep *output.SweepResult) []v1beta2.ReasonCount {
	counts := map[string]int64{}
	for i := range sweep.Candidates {
		if c := &sweep.Candidates[i]; c.Status != output.StatusFeasible {
			counts[reasonCategory(c.ReasonCategory, counts)]++
		}
	}
	return reasonCounts(counts)
}

// maxCandidates is the Run's spec.recommendation.maxCandidates, or DefaultMaxCandidates.
func maxCandidates(run *v1beta2.DynamoGraphDeploymentRun) int {
	if rs := run.Spec.Recommendation; rs != nil && rs.MaxCandidates != nil && *rs.MaxCandidates > 0 {
		return int(*rs.MaxCandidates)
	}
	return DefaultMaxCandidates
}

func (r *Reporter) provisionalEnabled() bool { return r.PublishInterval > 0 }

// provisionalDue tells whether a provisional round should run now.
func (r *Reporter) provisionalDue(s *progressState) bool {
	if !r.provisionalEnabled() || len(s.best.list) == 0 || s.best.signature() == r.publishedSig {
		return false
	}
	now := r.Now()
	return now.Sub(r.started) >= r.PublishInterval && now.Sub(r.lastPublish) >= r.PublishInterval
}

// provisionalCandidates renders the best candidates so far. A candidate that cannot be rendered
// is left out (logged); the final publication reports such errors.
func (r *Reporter) provisionalCandidates(run *v1beta2.DynamoGraphDeploymentRun, s *progressState) []v1beta2.DynamoGraphDeploymentCandidate {
	sweep := &output.SweepResult{Provenance: output.Provenance{Implementation: "the search"}}
	settled := s.progress().Settled
	out := make([]v1beta2.DynamoGraphDeploymentCandidate, 0, len(s.best.list))
	for _, sc := range s.best.list {
		var doc map[string]any
		if err := json.Unmarshal([]byte(sc.key), &doc); err != nil {
			continue
		}
		rank := len(out) + 1
		c, err := r.buildCandidate(run, sweep, sc.rec, doc, rank)
		if err != nil {
			r.Log.Error(err, "rendering a provisional candidate", "candidateID", sc.id)
			continue
		}
		c.Status.Provisional = true
		// No rank label while provisional: ranks move between rounds, and a round cut short
		// (the reporter killed) must not leave two Candidates labelled with the same rank. The
		// final publication labels them.
		delete(c.Labels, v1beta2.LabelCandidateRank)
		c.Status.Conditions[0].Message = fmt.Sprintf("provisional: rank %d of the best candidates among %d settled so far; the final ranking replaces it when the search ends", rank, settled)
		out = append(out, *c)
	}
	return out
}

// publishProvisional runs one provisional round (see the top of this file).
func (r *Reporter) publishProvisional(ctx context.Context, run *v1beta2.DynamoGraphDeploymentRun, s *progressState) error {
	r.lastPublish = r.Now()
	sig := s.best.signature()
	desired := r.provisionalCandidates(run, s)
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
	p := s.progress()
	p.Published = int32(len(desired))
	summary := &v1beta2.RecommendationSummary{
		Provisional:       true,
		Evaluated:         p.Feasible + p.Infeasible + p.Failed + p.TimedOut,
		Feasible:          p.Feasible,
		InfeasibleReasons: reasonCounts(s.reasonCounts()),
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
func (r *Reporter) stop(ctx context.Context, run *v1beta2.DynamoGraphDeploymentRun, tl *tail) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.StopTimeout)
	defer cancel()
	if err := tl.poll(); err != nil {
		r.Log.Error(err, "reading the events file on stop")
		if IsOutputRejected(err) {
			return
		}
	}
	if len(tl.state.best.list) > 0 && tl.state.best.signature() != r.publishedSig && r.provisionalEnabled() {
		if err := r.publishProvisional(sctx, run, &tl.state); err != nil {
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
