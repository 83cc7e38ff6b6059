// Package research is the request's re-search reconciler (spec.research): it judges every
// finished re-search Run of the current generation against the deployed candidate, once, and
// creates the re-search Run of each due tick. It writes request.ResearchOwner's share of the
// request's status: status.research (the schedule and the history of decisions) and the
// ImprovementAvailable condition. It reads status.observedGeneration and activeRunRef (the
// request reconciler's) and status.deployment and Deployed (the deployment reconciler's); the
// deployment reconciler reads its decisions. The pure rules (the schedule, the window, the
// baseline's input) are internal/research's.
package research

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/request"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/status"
)

// The research reconciler creates the re-search Runs and reads the Candidates it judges:
// +kubebuilder:rbac:groups=nvidia.com,resources=dynamographdeploymentruns,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=nvidia.com,resources=dynamographdeploymentcandidates,verbs=get;list;watch

// Reconciler ticks and judges the re-searches of DynamoGraphDeploymentRequests.
type Reconciler struct {
	Client client.Client
	// APIReader reads a terminal Run and its Candidate whole (the cache keeps little of them),
	// the request's spec for a tick, and a request again when a status write conflicts.
	APIReader client.Reader
	Config    *v1alpha1.OperatorConfiguration
	Recorder  recorder.EventRecorder
	// Now is the clock of ticks (time.Now when nil).
	Now func() time.Time

	// expectations skips reconciles that read a request at the version its last status write
	// was computed from.
	expectations status.Expectations
}

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return request.NewControllerManagedBy(mgr, request.ResearchOwner, r.Config, &r.expectations).Complete(r)
}

// Reconcile: fetch, reconcile, one status write, then events.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	dgdr, err := request.Fetch(ctx, r.Client, req.NamespacedName, &r.expectations)
	if dgdr == nil || err != nil {
		return ctrl.Result{}, err
	}
	writer := request.ResearchOwner.NewWriter(r.Client, r.APIReader, dgdr, &r.expectations)
	var events status.Events
	requeue, err := r.reconcile(ctx, dgdr, &events)
	if _, perr := writer.Patch(ctx, dgdr); perr != nil {
		err = errors.Join(err, perr)
		events.Drop()
	}
	events.Emit(r.Recorder, dgdr)
	return ctrl.Result{RequeueAfter: requeue}, err
}

// reconcile records the decisions of finished re-searches, then ticks; it returns when the next
// tick is due.
func (r *Reconciler) reconcile(ctx context.Context, dgdr *v1beta2.DynamoGraphDeploymentRequest, events *status.Events) (time.Duration, error) {
	if !request.ResearchOn(dgdr) {
		dgdr.Status.Research = nil
		meta.RemoveStatusCondition(&dgdr.Status.Conditions, v1beta2.ConditionImprovementAvailable)
		return 0, nil
	}
	if dgdr.Status.Research == nil {
		dgdr.Status.Research = &v1beta2.ResearchStatus{}
	}
	runs, err := request.OwnedRuns(ctx, r.Client, dgdr)
	if err != nil {
		return 0, err
	}
	if err := r.decide(ctx, dgdr, runs, events); err != nil {
		return 0, err
	}
	return r.tick(ctx, dgdr, runs, events)
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}
