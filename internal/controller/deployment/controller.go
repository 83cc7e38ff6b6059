// Package deployment is the request's deployment reconciler: autoApply deploys the best
// candidate of the current generation (or of a re-search that decided to replace it), follows
// the DynamoGraphDeployment's readiness, verifies a ready deployment with a Job and adds a
// successful verification to the calibration profile. It writes request.DeploymentOwner's share
// of the request's status: the Deployed and PredictionHeld conditions, status.deployment (and its
// name again in status.dgdName) and status.verification. It reads status.observedGeneration (the request reconciler's) and the
// re-search decisions in status.research (the research reconciler's).
package deployment

import (
	"context"
	"errors"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/request"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/status"
	"github.com/dgdr-operator/dgdr-operator/internal/rights"
	"github.com/dgdr-operator/dgdr-operator/internal/verification"
)

// The deployment reconciler reads the Runs whose best candidate it deploys:
// +kubebuilder:rbac:groups=nvidia.com,resources=dynamographdeploymentruns,verbs=get;list;watch

// Reconciler deploys, follows, verifies and calibrates what DynamoGraphDeploymentRequests with
// spec.deployment.autoApply found.
type Reconciler struct {
	Client client.Client
	// APIReader reads what the cache keeps too little of (a terminal Run, a Candidate's
	// graphDeployment, the request's workload, a Job's pod history), the calibration profile,
	// and a request again when a status write conflicts.
	APIReader client.Reader
	Config    *v1alpha1.OperatorConfiguration
	Recorder  recorder.EventRecorder
	// Now is the clock of verification start failures (time.Now when nil).
	Now func() time.Time
	// Rights asks, before anything is deployed, followed or verified for a request, whether
	// the user whose rights admission reviewed for it still holds them (shared with the
	// research reconciler).
	Rights *rights.Checker

	// expectations skips reconciles that read a request at the version its last status write
	// was computed from.
	expectations status.Expectations
	// verificationStarts holds since when each request's verification pod has had a given
	// container unable to start (podstart.Due).
	verificationStarts status.Sightings
}

// SetupWithManager registers the controller: requests and their Runs, the verification Jobs and
// pods, and the DynamoGraphDeployment CRD's establishment.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return request.NewControllerManagedBy(mgr, request.DeploymentOwner, r.Config, &r.expectations, &r.verificationStarts).
		// A verification Job's end is what its request waits for, or its pod failing to start.
		Owns(&batchv1.Job{}).
		Watches(verificationPodWatch()).
		// autoApply waits for the Dynamo platform's CRD when the cluster lacks it.
		Watches(DGDCRDObject(), handler.EnqueueRequestsFromMapFunc(r.awaitingDGDCRD), builder.WithPredicates(dgdCRDChanged)).
		Complete(r)
}

// Reconcile: fetch, reconcile, one status write, then events.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	dgdr, err := request.Fetch(ctx, r.Client, req.NamespacedName, &r.expectations)
	if dgdr == nil || err != nil {
		return ctrl.Result{}, err
	}
	writer := request.DeploymentOwner.NewWriter(r.Client, r.APIReader, dgdr, &r.expectations)
	var events status.Events
	requeue, err := r.reconcile(ctx, dgdr, &events)
	// status.dgdName names the deployment where the Dynamo platform's v1beta1 requests do.
	dgdr.Status.DGDName = ""
	if d := dgdr.Status.Deployment; d != nil {
		dgdr.Status.DGDName = d.Name
	}
	if _, perr := writer.Patch(ctx, dgdr); perr != nil {
		err = errors.Join(err, perr)
		events.Drop()
	}
	events.Emit(r.Recorder, dgdr)
	return ctrl.Result{RequeueAfter: requeue}, err
}

// reconcile computes the request's deployment status and returns when to look again (0: only
// on the next event).
func (r *Reconciler) reconcile(ctx context.Context, dgdr *v1beta2.DynamoGraphDeploymentRequest, events *status.Events) (time.Duration, error) {
	if !request.AutoApplyOn(dgdr) || !verification.Enabled(dgdr) {
		dgdr.Status.Verification = nil
		meta.RemoveStatusCondition(&dgdr.Status.Conditions, v1beta2.ConditionPredictionHeld)
	}
	if !request.AutoApplyOn(dgdr) {
		// What was deployed stays recorded in status.deployment: the deployment outlives autoApply.
		meta.RemoveStatusCondition(&dgdr.Status.Conditions, v1beta2.ConditionDeployed)
		return 0, nil
	}
	runs, err := request.OwnedRuns(ctx, r.Client, dgdr)
	if err != nil {
		return 0, err
	}
	wait, ready, err := r.autoApply(ctx, dgdr, runs, events)
	if ready == nil || err != nil || !verification.Enabled(dgdr) {
		return wait, err
	}
	again, err := r.verify(ctx, dgdr, ready, events)
	if again > 0 && again < wait {
		wait = again
	}
	return wait, err
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}
