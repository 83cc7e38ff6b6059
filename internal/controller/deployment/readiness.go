package deployment

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/request"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/status"
	"github.com/dgdr-operator/dgdr-operator/internal/promote"
)

// How often autoApply looks at a deployment again. The DynamoGraphDeployments themselves belong
// to the Dynamo platform and are read on a timer (one GET per request and period) rather than
// watched; a missing CRD is waited for by watching it (crdwatch.go), the timer only a fallback.
const (
	deployPollProgressing = 15 * time.Second
	deployPollSettled     = 2 * time.Minute
	deployPollMissingCRD  = 5 * time.Minute
)

// followReadiness reads the deployed DynamoGraphDeployment and mirrors its readiness. It returns
// when to look again, and the deployment when it is ready.
func (r *Reconciler) followReadiness(ctx context.Context, dgdr *v1beta2.DynamoGraphDeploymentRequest, events *status.Events) (time.Duration, *unstructured.Unstructured, error) {
	d := dgdr.Status.Deployment
	dgd := &unstructured.Unstructured{}
	dgd.SetGroupVersionKind(promote.GVK)
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: dgdr.Namespace, Name: d.Name}, dgd)
	switch {
	case meta.IsNoMatchError(err):
		r.setDeployed(dgdr, metav1.ConditionFalse, v1beta2.ReasonDeploymentCRDMissing, promote.ErrCRDMissing.Error(), events)
		return deployPollMissingCRD, nil, nil
	case apierrors.IsNotFound(err):
		// Deleted by someone (the operator never deletes one): an admin's deletion stands.
		// status.deployment stays, so the same result is not deployed again; a new generation
		// deploys its own.
		r.setDeployed(dgdr, metav1.ConditionFalse, v1beta2.ReasonDeploymentDeleted,
			fmt.Sprintf("DynamoGraphDeployment %s (candidate %s of Run %s) was deleted by someone else; it is not created again for generation %d: edit the spec (a new generation) to deploy again",
				d.Name, d.Candidate, d.Run, dgdr.Status.ObservedGeneration), events)
		return deployPollSettled, nil, nil
	case err != nil:
		return 0, nil, err
	}
	if dgd.GetAnnotations()[promote.AnnotationAppliedBy] != string(dgdr.UID) {
		dgdr.Status.Deployment = nil
		r.setDeployed(dgdr, metav1.ConditionFalse, v1beta2.ReasonDeploymentConflict,
			fmt.Sprintf("DynamoGraphDeployment %s was replaced by one this request did not create; it is left unchanged", d.Name), events)
		return deployPollSettled, nil, nil
	}
	ready, why := promote.Readiness(dgd)
	if ready {
		reason, msg := v1beta2.ReasonDeploymentReady, fmt.Sprintf("DynamoGraphDeployment %s (candidate %s of Run %s) is ready: %s", d.Name, d.Candidate, d.Run, why)
		// The research reconciler's latest decision, in status.research.
		if kept := request.LatestKept(dgdr); kept != nil && request.ResearchOn(dgdr) && kept.DeployedCandidate == d.Candidate {
			reason = v1beta2.ReasonBaselineStillBest
			msg += fmt.Sprintf("; re-search %s kept it: %s", kept.Run, kept.Message)
		}
		r.setDeployed(dgdr, metav1.ConditionTrue, reason, msg, events)
		return deployPollSettled, dgd, nil
	}
	r.setDeployed(dgdr, metav1.ConditionFalse, v1beta2.ReasonDeploymentProgressing,
		fmt.Sprintf("DynamoGraphDeployment %s (candidate %s of Run %s) is not ready: %s", d.Name, d.Candidate, d.Run, why), events)
	return deployPollProgressing, nil, nil
}

// setDeployed sets the Deployed condition, with an event when its reason changes to one worth
// telling (ready, conflict, missing CRD).
func (r *Reconciler) setDeployed(dgdr *v1beta2.DynamoGraphDeploymentRequest, status metav1.ConditionStatus, reason, msg string, events *status.Events) {
	before := meta.FindStatusCondition(dgdr.Status.Conditions, v1beta2.ConditionDeployed)
	changed := before == nil || before.Reason != reason || before.Status != status
	meta.SetStatusCondition(&dgdr.Status.Conditions, metav1.Condition{
		Type: v1beta2.ConditionDeployed, Status: status, Reason: reason, Message: msg, ObservedGeneration: dgdr.Generation,
	})
	if !changed {
		return
	}
	switch reason {
	case v1beta2.ReasonDeploymentReady:
		events.Normal(EventDeploymentReady, "Deploy", msg)
	case v1beta2.ReasonDeploymentConflict:
		events.Warning(EventDeployConflict, "Deploy", msg)
	case v1beta2.ReasonDeploymentCRDMissing:
		events.Warning(EventDeployCRDMissing, "Deploy", msg)
	case v1beta2.ReasonRightsRevoked:
		events.Warning(EventRightsRevoked, "Deploy", msg)
	case v1beta2.ReasonDeploymentDeleted:
		events.Warning(EventDeploymentDeleted, "Deploy", msg)
	}
}
