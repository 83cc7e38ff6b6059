package research

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/fit"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/request"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/run"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/status"
	rules "github.com/dgdr-operator/dgdr-operator/internal/research"
)

// Event reasons of re-searches.
const (
	EventResearchStarted = "ResearchStarted"
	EventResearchSkipped = "ResearchSkipped"
	EventResearchDecided = "ResearchDecided"
)

// decide records the decision of every finished re-search Run of the current generation in
// status.rules.history, once, and sets ImprovementAvailable from the newest one that
// compared. The deployment reconciler deploys a re-search Run's candidate once its decision
// there is Replaced.
func (r *Reconciler) decide(ctx context.Context, dgdr *v1beta2.DynamoGraphDeploymentRequest, runs []*v1beta2.DynamoGraphDeploymentRun, events *status.Events) error {
	for _, rn := range runs {
		end, ok := rules.WindowEnd(rn)
		if !ok || request.GenerationOf(rn) != dgdr.Status.ObservedGeneration || !run.IsTerminal(rn) {
			continue
		}
		if rec := request.HistoryRecord(dgdr, rn.Name); rec != nil && rec.Decision != "" {
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
	rec.WindowStart = ptr.To(metav1.NewTime(end.Add(-rules.Window(&full.Spec))))
	if t := full.Status.AISimulate; t != nil && t.Trace != nil && t.Trace.Window != nil && t.Trace.Window.Requests != nil {
		rec.Requests = *t.Trace.Window.Requests
	}
	done := meta.FindStatusCondition(full.Status.Conditions, v1beta2.ConditionCompleted)
	switch {
	case done != nil && done.Reason == v1beta2.ReasonInsufficientTraffic:
		rec.Decision, rec.Reason, rec.Message = v1beta2.ResearchSkipped, done.Reason, status.Truncate(done.Message, 1024)
		return rec, nil
	case done == nil || done.Reason != v1beta2.ReasonSucceeded || full.Status.Recommendation == nil || full.Status.Recommendation.BestCandidate == "":
		reason, msg := "", "the re-search did not succeed"
		if done != nil {
			reason, msg = done.Reason, done.Message
		}
		rec.Decision, rec.Reason, rec.Message = v1beta2.ResearchUndecided, reason, status.Truncate(msg, 1024)
		return rec, nil
	}
	// The candidate compared is the one autoApply would deploy: the best that fits the Nodes.
	best, unfit, notDeployable, err := fit.BestFitting(ctx, r.Client, r.APIReader, r.Config, full)
	if err != nil {
		return rec, err
	}
	if best == "" {
		rec.Decision, rec.Reason = v1beta2.ResearchUndecided, v1beta2.ReasonNoCandidateFits
		if notDeployable > 0 && notDeployable == len(unfit) {
			rec.Reason = v1beta2.ReasonNotRenderable
		}
		rec.Message = status.Truncate(fmt.Sprintf("no deployable candidate of %s fits the cluster's GPU Nodes (%v)", rn.Name, unfit), 1024)
		return rec, nil
	}
	cand := &v1beta2.DynamoGraphDeploymentCandidate{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: rn.Namespace, Name: best}, cand); err != nil {
		return rec, err
	}
	rec.BestCandidate = best
	margin, err := rules.Margin(&full.Spec)
	if err != nil {
		rec.Decision, rec.Reason, rec.Message = v1beta2.ResearchUndecided, v1beta2.ReasonBaselineUnavailable, err.Error()
		return rec, nil
	}
	d := compare(&full.Spec, margin, full.Status.Baseline, cand)
	rec.BaselineObjective, rec.BestObjective = d.BaselineObjective, d.CandidateObjective
	rec.Reason, rec.Message = d.Reason, status.Truncate(d.Message, 1024)
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
		if rules.IsRun(rn) && request.GenerationOf(rn) == dgdr.Status.ObservedGeneration {
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
