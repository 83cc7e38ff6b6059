package request

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/run"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/status"
	"github.com/dgdr-operator/dgdr-operator/internal/research"
)

// Event reasons of scheduled re-searches.
const (
	EventResearchStarted = "ResearchStarted"
	EventResearchSkipped = "ResearchSkipped"
	EventResearchDecided = "ResearchDecided"
)

// maxResearchHistory bounds status.research.history.
const maxResearchHistory = 10

// Skip reasons of a tick that created no Run.
const (
	skipRunActive          = "RunActive"
	skipDeploymentNotReady = "DeploymentNotReady"
	skipInvalidSpec        = v1beta2.ReasonInvalidSpec
)

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// researchOn tells whether the request's re-searches are in force: they replace only what
// autoApply deployed.
func researchOn(dgdr *v1beta2.DynamoGraphDeploymentRequest) bool {
	return research.On(&dgdr.Spec) && autoApplyOn(dgdr)
}

// decideResearch records the decision of every finished re-search Run of the current generation
// in status.research.history, once, and sets ImprovementAvailable from the newest one that
// compared. It runs before autoApply, which deploys a re-search Run's candidate only when its
// decision is Replaced.
func (r *Reconciler) decideResearch(ctx context.Context, dgdr *v1beta2.DynamoGraphDeploymentRequest, runs []*v1beta2.DynamoGraphDeploymentRun, events *status.Events) error {
	if !researchOn(dgdr) {
		dgdr.Status.Research = nil
		meta.RemoveStatusCondition(&dgdr.Status.Conditions, v1beta2.ConditionImprovementAvailable)
		return nil
	}
	if dgdr.Status.Research == nil {
		dgdr.Status.Research = &v1beta2.ResearchStatus{}
	}
	for _, rn := range runs {
		end, ok := research.WindowEnd(rn)
		if !ok || generationOf(rn) != dgdr.Status.ObservedGeneration || !run.IsTerminal(rn) {
			continue
		}
		if rec := historyRecord(dgdr, rn.Name); rec != nil && rec.Decision != "" {
			continue
		}
		// A Run older than a full history's oldest record was judged before and dropped from it.
		if h := dgdr.Status.Research.History; len(h) >= maxResearchHistory && !end.After(windowEndOf(h[len(h)-1])) {
			continue
		}
		rec, err := r.judge(ctx, rn, end)
		if err != nil {
			return err
		}
		addHistory(dgdr, rec)
		ev := fmt.Sprintf("re-search %s: %s (%s): %s", rn.Name, rec.Decision, rec.Reason, rec.Message)
		if rec.Decision == v1beta2.ResearchSkipped {
			events.Normal(EventResearchSkipped, "Research", ev)
		} else {
			events.Normal(EventResearchDecided, "Research", ev)
		}
	}
	setImprovement(dgdr, runs)
	return nil
}

// judge compares a finished re-search Run's best candidate with its baseline. The cache keeps
// little of a terminal Run: it is read whole, once per Run.
func (r *Reconciler) judge(ctx context.Context, rn *v1beta2.DynamoGraphDeploymentRun, end time.Time) (v1beta2.ResearchRecord, error) {
	rec := v1beta2.ResearchRecord{
		Run:               rn.Name,
		WindowEnd:         ptr.To(metav1.NewTime(end)),
		DeployedCandidate: rn.Annotations[v1beta2.AnnotationResearchBaseline],
	}
	full := &v1beta2.DynamoGraphDeploymentRun{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(rn), full); err != nil {
		return rec, err
	}
	rec.WindowStart = ptr.To(metav1.NewTime(end.Add(-research.Window(&full.Spec))))
	if t := full.Status.AISimulate; t != nil && t.Trace != nil && t.Trace.Window != nil && t.Trace.Window.Requests != nil {
		rec.Requests = *t.Trace.Window.Requests
	}
	done := meta.FindStatusCondition(full.Status.Conditions, v1beta2.ConditionCompleted)
	switch {
	case done != nil && done.Reason == v1beta2.ReasonInsufficientTraffic:
		rec.Decision, rec.Reason, rec.Message = v1beta2.ResearchSkipped, done.Reason, truncate(done.Message, 1024)
		return rec, nil
	case done == nil || done.Reason != v1beta2.ReasonSucceeded || full.Status.Recommendation == nil || full.Status.Recommendation.BestCandidate == "":
		reason, msg := "", "the re-search did not succeed"
		if done != nil {
			reason, msg = done.Reason, done.Message
		}
		rec.Decision, rec.Reason, rec.Message = v1beta2.ResearchUndecided, reason, truncate(msg, 1024)
		return rec, nil
	}
	// The candidate compared is the one autoApply would deploy: the best that fits the Nodes.
	best, unfit, err := r.bestFitting(ctx, full)
	if err != nil {
		return rec, err
	}
	if best == "" {
		rec.Decision, rec.Reason = v1beta2.ResearchUndecided, v1beta2.ReasonNoCandidateFits
		rec.Message = truncate(fmt.Sprintf("no candidate of %s fits the cluster's GPU Nodes (%v)", rn.Name, unfit), 1024)
		return rec, nil
	}
	cand := &v1beta2.DynamoGraphDeploymentCandidate{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: rn.Namespace, Name: best}, cand); err != nil {
		return rec, err
	}
	rec.BestCandidate = best
	margin, err := research.Margin(&full.Spec)
	if err != nil {
		rec.Decision, rec.Reason, rec.Message = v1beta2.ResearchUndecided, v1beta2.ReasonBaselineUnavailable, err.Error()
		return rec, nil
	}
	d := compare(&full.Spec, margin, full.Status.Baseline, cand)
	rec.BaselineObjective, rec.BestObjective = d.BaselineObjective, d.CandidateObjective
	rec.Reason, rec.Message = d.Reason, truncate(d.Message, 1024)
	switch d.Reason {
	case v1beta2.ReasonBetterCandidate, v1beta2.ReasonBaselineMissesSLA:
		rec.Decision = v1beta2.ResearchReplaced
	case v1beta2.ReasonBaselineStillBest:
		rec.Decision = v1beta2.ResearchKept
	default:
		rec.Decision = v1beta2.ResearchUndecided
	}
	return rec, nil
}

// setImprovement sets ImprovementAvailable from the newest compared re-search of the current
// generation.
func setImprovement(dgdr *v1beta2.DynamoGraphDeploymentRequest, runs []*v1beta2.DynamoGraphDeploymentRun) {
	current := map[string]bool{}
	for _, rn := range runs {
		if research.IsRun(rn) && generationOf(rn) == dgdr.Status.ObservedGeneration {
			current[rn.Name] = true
		}
	}
	cond := metav1.Condition{Type: v1beta2.ConditionImprovementAvailable, Status: metav1.ConditionUnknown,
		Reason: v1beta2.ReasonAwaitingResearch, Message: "no re-search of this generation has compared a new candidate with the deployed one yet",
		ObservedGeneration: dgdr.Generation}
	for _, rec := range dgdr.Status.Research.History {
		if !current[rec.Run] || rec.Decision == v1beta2.ResearchSkipped {
			continue
		}
		cond.Reason, cond.Message = rec.Reason, rec.Run+": "+rec.Message
		switch rec.Decision {
		case v1beta2.ResearchReplaced:
			cond.Status = metav1.ConditionTrue
		case v1beta2.ResearchKept:
			cond.Status = metav1.ConditionFalse
		default:
			cond.Reason = v1beta2.ReasonBaselineUnavailable
		}
		break
	}
	meta.SetStatusCondition(&dgdr.Status.Conditions, cond)
}

// replacedBy reports whether the re-search Run rn decided to replace the deployment.
func replacedBy(dgdr *v1beta2.DynamoGraphDeploymentRequest, rn *v1beta2.DynamoGraphDeploymentRun) bool {
	rec := historyRecord(dgdr, rn.Name)
	return rec != nil && rec.Decision == v1beta2.ResearchReplaced
}

// latestKept is the newest re-search of the current deployment that kept it, if that is the
// latest decision.
func latestKept(dgdr *v1beta2.DynamoGraphDeploymentRequest) *v1beta2.ResearchRecord {
	if dgdr.Status.Research == nil {
		return nil
	}
	for i := range dgdr.Status.Research.History {
		rec := &dgdr.Status.Research.History[i]
		switch rec.Decision {
		case v1beta2.ResearchKept:
			return rec
		case v1beta2.ResearchReplaced, v1beta2.ResearchUndecided:
			return nil
		}
	}
	return nil
}

// tick creates the re-search Run of the latest due window, once: ticks fall on multiples of the
// interval since the Unix epoch, the first after the deployed search completed. It returns when
// the next tick is due.
func (r *Reconciler) tick(ctx context.Context, dgdr *v1beta2.DynamoGraphDeploymentRequest, runs []*v1beta2.DynamoGraphDeploymentRun, events *status.Events) (time.Duration, error) {
	if !researchOn(dgdr) || dgdr.Status.Deployment == nil {
		if dgdr.Status.Research != nil {
			dgdr.Status.Research.NextTime = nil
		}
		return 0, nil
	}
	interval := research.Interval(&dgdr.Spec)
	now := r.now()
	end, next, ok := research.DueTick(time.Unix(0, 0), now, interval)
	nextTime := metav1.NewTime(next)
	dgdr.Status.Research.NextTime = &nextTime
	wait := next.Sub(now)
	deployedRun := findRun(runs, dgdr.Status.Deployment.Run)
	// A re-search compares with a deployment of the current generation; a new generation
	// deploys its own search first.
	if !ok || deployedRun == nil || generationOf(deployedRun) != dgdr.Status.ObservedGeneration ||
		deployedRun.Status.CompletionTime == nil || !end.After(deployedRun.Status.CompletionTime.Time) {
		return wait, nil
	}
	gen := dgdr.Status.ObservedGeneration
	name := research.RunName(dgdr.Name, gen, end)
	if findRun(runs, name) != nil || historyRecord(dgdr, name) != nil {
		return wait, nil
	}
	window := research.Window(&dgdr.Spec)
	skip := func(reason, msg string) (time.Duration, error) {
		addHistory(dgdr, v1beta2.ResearchRecord{Run: name, WindowStart: ptr.To(metav1.NewTime(end.Add(-window))), WindowEnd: ptr.To(metav1.NewTime(end)),
			DeployedCandidate: dgdr.Status.Deployment.Candidate, Decision: v1beta2.ResearchSkipped, Reason: reason, Message: msg})
		events.Normal(EventResearchSkipped, "Research", fmt.Sprintf("re-search of the window ending %s skipped: %s", end.UTC().Format(time.RFC3339), msg))
		return wait, nil
	}
	if a := dgdr.Status.ActiveRunRef; a != nil {
		return skip(skipRunActive, fmt.Sprintf("Run %s is still active", a.Name))
	}
	if c := meta.FindStatusCondition(dgdr.Status.Conditions, v1beta2.ConditionDeployed); c == nil || c.Status != metav1.ConditionTrue {
		return skip(skipDeploymentNotReady, fmt.Sprintf("DynamoGraphDeployment %s is not ready", dgdr.Status.Deployment.Name))
	}
	// The cache keeps only the schedule of an accepted request's spec: read it whole.
	whole := &v1beta2.DynamoGraphDeploymentRequest{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(dgdr), whole); err != nil {
		return 0, err
	}
	if whole.UID != dgdr.UID || whole.Generation != dgdr.Status.ObservedGeneration {
		return time.Second, nil // a newer generation is on its way
	}
	input, errs := aisimulate.Lower(research.SearchSpec(&whole.Spec), aisimulate.OptionsFrom(r.Config))
	if len(errs) > 0 {
		return skip(skipInvalidSpec, truncate(fmt.Sprintf("the re-search input cannot be lowered: %v", errs.ToAggregate()), 1024))
	}
	whole.Status = dgdr.Status
	desired, err := BuildResearchRun(whole, input.Hash, end, dgdr.Status.Deployment.Candidate)
	if err != nil {
		return 0, err
	}
	if err := r.Client.Create(ctx, desired); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return 0, fmt.Errorf("creating re-search Run %s: %w", name, err)
		}
		existing := &v1beta2.DynamoGraphDeploymentRun{}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(desired), existing); err != nil {
			return 0, err
		}
		if !belongsTo(existing, dgdr, gen) {
			return skip(v1beta2.ReasonRunCreationFailed, fmt.Sprintf("a Run named %s exists but belongs to another request or generation", name))
		}
	} else {
		events.Normal(EventResearchStarted, "Research", fmt.Sprintf("created Run %s to search the traffic captured from %s to %s again",
			name, end.Add(-window).UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339)))
		log.FromContext(ctx).Info("created re-search run", "run", name, "windowEnd", end)
	}
	dgdr.Status.ActiveRunRef = &v1beta2.RunReference{Name: name}
	dgdr.Status.LatestRun = &v1beta2.RunSummary{Name: name, Phase: v1beta2.RunPhasePending}
	return wait, nil
}

// BuildResearchRun returns the re-search Run of the request's current generation for the window
// ending at end: the generation's Run with the window and the deployed candidate it is compared
// with.
func BuildResearchRun(dgdr *v1beta2.DynamoGraphDeploymentRequest, inputHash string, end time.Time, deployedCandidate string) (*v1beta2.DynamoGraphDeploymentRun, error) {
	rn, err := BuildRun(dgdr, inputHash)
	if err != nil {
		return nil, err
	}
	rn.Name = research.RunName(dgdr.Name, dgdr.Status.ObservedGeneration, end)
	rn.Labels[v1beta2.LabelRequestGeneration] = fmt.Sprint(dgdr.Status.ObservedGeneration)
	rn.Annotations[v1beta2.AnnotationResearchWindowEnd] = end.UTC().Format(time.RFC3339)
	rn.Annotations[v1beta2.AnnotationResearchBaseline] = deployedCandidate
	return rn, nil
}

func findRun(runs []*v1beta2.DynamoGraphDeploymentRun, name string) *v1beta2.DynamoGraphDeploymentRun {
	for _, rn := range runs {
		if rn.Name == name {
			return rn
		}
	}
	return nil
}

func historyRecord(dgdr *v1beta2.DynamoGraphDeploymentRequest, name string) *v1beta2.ResearchRecord {
	if dgdr.Status.Research == nil {
		return nil
	}
	for i := range dgdr.Status.Research.History {
		if dgdr.Status.Research.History[i].Run == name {
			return &dgdr.Status.Research.History[i]
		}
	}
	return nil
}

// addHistory puts rec into the history, newest window first, replacing a record of the same Run.
func addHistory(dgdr *v1beta2.DynamoGraphDeploymentRequest, rec v1beta2.ResearchRecord) {
	h := slices.DeleteFunc(dgdr.Status.Research.History, func(o v1beta2.ResearchRecord) bool { return o.Run == rec.Run })
	h = append(h, rec)
	slices.SortStableFunc(h, func(a, b v1beta2.ResearchRecord) int { return windowEndOf(b).Compare(windowEndOf(a)) })
	if len(h) > maxResearchHistory {
		h = h[:maxResearchHistory]
	}
	dgdr.Status.Research.History = h
}

func windowEndOf(r v1beta2.ResearchRecord) time.Time {
	if r.WindowEnd == nil {
		return time.Time{}
	}
	return r.WindowEnd.Time
}
