package research

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/request"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/status"
	rules "github.com/dgdr-operator/dgdr-operator/internal/research"
)

// Skip reasons of a tick that created no Run.
const (
	skipRunActive          = "RunActive"
	skipDeploymentNotReady = "DeploymentNotReady"
	skipInvalidSpec        = v1beta2.ReasonInvalidSpec
	skipRightsRevoked      = v1beta2.ReasonRightsRevoked
)

// tick creates the re-search Run of the latest due window, once: ticks fall on multiples of the
// interval since the Unix epoch, the first after the deployed search completed. It returns when
// the next tick is due.
func (r *Reconciler) tick(ctx context.Context, dgdr *v1beta2.DynamoGraphDeploymentRequest, runs []*v1beta2.DynamoGraphDeploymentRun, events *status.Events) (time.Duration, error) {
	if dgdr.Status.Deployment == nil {
		dgdr.Status.Research.NextTime = nil
		return 0, nil
	}
	interval := rules.Interval(&dgdr.Spec)
	now := r.now()
	end, next, ok := rules.DueTick(time.Unix(0, 0), now, interval)
	nextTime := metav1.NewTime(next)
	dgdr.Status.Research.NextTime = &nextTime
	wait := next.Sub(now)
	deployedRun := request.FindRun(runs, dgdr.Status.Deployment.Run)
	// A re-search compares with a deployment of the current generation; a new generation
	// deploys its own search first.
	if !ok || deployedRun == nil || request.GenerationOf(deployedRun) != dgdr.Status.ObservedGeneration ||
		deployedRun.Status.CompletionTime == nil || !end.After(deployedRun.Status.CompletionTime.Time) {
		return wait, nil
	}
	gen := dgdr.Status.ObservedGeneration
	name := rules.RunName(dgdr.Name, gen, end)
	if request.FindRun(runs, name) != nil || request.HistoryRecord(dgdr, name) != nil {
		return wait, nil
	}
	window := rules.Window(&dgdr.Spec)
	skip := func(reason, msg string) (time.Duration, error) {
		addHistory(dgdr, v1beta2.ResearchRecord{Run: name, WindowStart: ptr.To(metav1.NewTime(end.Add(-window))), WindowEnd: ptr.To(metav1.NewTime(end)),
			DeployedCandidate: dgdr.Status.Deployment.Candidate, Decision: v1beta2.ResearchSkipped, Reason: reason, Message: msg})
		events.Normal(EventResearchSkipped, "Research", fmt.Sprintf("re-search of the window ending %s skipped: %s", end.UTC().Format(time.RFC3339), msg))
		return wait, nil
	}
	// A re-search acts on behalf of the user whose rights admission reviewed: ask again, first
	// (the deployment reconciler's RightsRevoked would otherwise read as a deployment not ready).
	if denial, err := r.Rights.Denial(ctx, dgdr); err != nil {
		return 0, err
	} else if denial != "" {
		return skip(skipRightsRevoked, status.Truncate(denial+"; no re-search runs for them", 1024))
	}
	if a := request.ActiveRun(dgdr, runs); a != nil {
		return skip(skipRunActive, fmt.Sprintf("Run %s is still active", a.Name))
	}
	// Readiness as the deployment reconciler last saw it (Deployed).
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
	input, errs := aisimulate.Lower(rules.SearchSpec(&whole.Spec), aisimulate.OptionsFrom(r.Config))
	if len(errs) > 0 {
		return skip(skipInvalidSpec, status.Truncate(fmt.Sprintf("the re-search input cannot be lowered: %v", errs.ToAggregate()), 1024))
	}
	live := whole.DeepCopy()
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
		switch {
		case request.Recorded(live, existing):
			return wait, nil // recorded by an earlier reconcile; the cache shows it soon
		case !request.BelongsTo(existing, dgdr, gen):
			return skip(v1beta2.ReasonRunCreationFailed, fmt.Sprintf("a Run named %s exists but belongs to another request or generation", name))
		}
		// Labelled as this tick's Run, but not recorded: planted, or created by a reconcile
		// whose status write was lost. It is deleted (in the foreground: its Jobs' names are the
		// new Run's), and the tick's own Run created once it is gone.
		if existing.DeletionTimestamp.IsZero() {
			err := r.Client.Delete(ctx, existing, client.PropagationPolicy(metav1.DeletePropagationForeground), client.Preconditions{UID: &existing.UID})
			if client.IgnoreNotFound(err) != nil {
				return 0, fmt.Errorf("deleting Run %s, which the request did not record: %w", name, err)
			}
			events.Warning(EventResearchSkipped, "Research", fmt.Sprintf("a Run named %s (uid %s) carries this request's labels but the request did not record it; it was deleted, and the re-search's own Run is created once it is gone", name, existing.UID))
		}
		return time.Second, nil
	}
	recordRun(dgdr, desired)
	events.Normal(EventResearchStarted, "Research", fmt.Sprintf("created Run %s to search the traffic captured from %s to %s again",
		name, end.Add(-window).UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339)))
	log.FromContext(ctx).Info("created re-search run", "run", name, "windowEnd", end)
	// The request reconciler sees the new Run (it owns it, and status.research.runRefs records
	// it) and makes it the active one.
	return wait, nil
}

// recordRun records a re-search Run the operator just created in status.research.runRefs,
// newest first, as many as the history holds: only recorded Runs are judged and deployed
// (request.Recorded).
func recordRun(dgdr *v1beta2.DynamoGraphDeploymentRequest, rn *v1beta2.DynamoGraphDeploymentRun) {
	refs := append([]v1beta2.RunReference{{Name: rn.Name, UID: rn.UID}}, dgdr.Status.Research.RunRefs...)
	if len(refs) > maxResearchHistory {
		refs = refs[:maxResearchHistory]
	}
	dgdr.Status.Research.RunRefs = refs
}

// BuildResearchRun returns the re-search Run of the request's current generation for the window
// ending at end: the generation's Run with the window and the deployed candidate it is compared
// with.
func BuildResearchRun(dgdr *v1beta2.DynamoGraphDeploymentRequest, inputHash string, end time.Time, deployedCandidate string) (*v1beta2.DynamoGraphDeploymentRun, error) {
	rn, err := request.BuildRun(dgdr, inputHash)
	if err != nil {
		return nil, err
	}
	rn.Name = rules.RunName(dgdr.Name, dgdr.Status.ObservedGeneration, end)
	rn.Labels[v1beta2.LabelRequestGeneration] = fmt.Sprint(dgdr.Status.ObservedGeneration)
	rn.Annotations[v1beta2.AnnotationResearchWindowEnd] = end.UTC().Format(time.RFC3339)
	rn.Annotations[v1beta2.AnnotationResearchBaseline] = deployedCandidate
	return rn, nil
}
