package request

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/status"
)

// The field-owner table of a request's status: three reconcilers write it, each only its own
// fields and condition types (status.Owner; its Writer refuses a reconcile that changed anything
// else). What one needs from another it reads from the status the other wrote (readers.go),
// never from the order in which they run.
//
// status.v1beta1 is no reconciler's here: it carries the v1beta1 status of requests the Dynamo
// operator serves (docs/operate/coexistence.md), which none of them reconciles.
var (
	// RequestOwner: this package's reconciler, which turns generations into Runs.
	RequestOwner = status.Owner{
		Manager:    "dgdr-request",
		Fields:     []string{"observedGeneration", "activeRunRef", "recentRunRefs", "latestRun"},
		Conditions: []string{v1beta2.ConditionAccepted},
	}
	// DeploymentOwner: internal/controller/deployment, which deploys, follows readiness, verifies
	// and calibrates.
	DeploymentOwner = status.Owner{
		Manager:    "dgdr-deployment",
		Fields:     []string{"deployment", "dgdName", "verification"},
		Conditions: []string{v1beta2.ConditionDeployed, v1beta2.ConditionPredictionHeld},
	}
	// ResearchOwner: internal/controller/research, which ticks re-searches and judges them.
	ResearchOwner = status.Owner{
		Manager:    "dgdr-research",
		Fields:     []string{"research"},
		Conditions: []string{v1beta2.ConditionImprovementAvailable},
	}
)

// StatusOwners lists the table's owners.
var StatusOwners = []status.Owner{RequestOwner, DeploymentOwner, ResearchOwner}

// NotOwned are the status fields no reconciler here writes.
var NotOwned = []string{"v1beta1"}

// Each of the request's reconcilers follows requests and their Runs, and patches its share of
// the requests' status:
// +kubebuilder:rbac:groups=nvidia.com,resources=dynamographdeploymentrequests,verbs=get;list;watch
// +kubebuilder:rbac:groups=nvidia.com,resources=dynamographdeploymentrequests/status,verbs=patch
// Events on requests (each reconciler's own: Runs, deployments, verifications, re-searches):
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// No code path calls these (status writes are merge patches of the status subresource):
// candidates for removal.
// +kubebuilder:rbac:groups=nvidia.com,resources=dynamographdeploymentrequests/status,verbs=get;update

// NewControllerManagedBy starts the controller of one of the request's reconcilers: named by
// its owner, with concurrency.requests workers, over the v1beta2 requests and their Runs; the
// reconciler's per-request records forget a request when it is deleted. The manager must have
// the Runs' index (IndexRuns).
func NewControllerManagedBy(mgr ctrl.Manager, owner status.Owner, cfg *v1alpha1.OperatorConfiguration, records ...status.PerObject) *builder.Builder {
	return ctrl.NewControllerManagedBy(mgr).
		Named(owner.Manager).
		WithOptions(controller.Options{MaxConcurrentReconciles: status.Workers(cfg.Concurrency.Requests)}).
		For(&v1beta2.DynamoGraphDeploymentRequest{}, builder.WithPredicates(predicate.NewPredicateFuncs(isV1Beta2Native))).
		Owns(&v1beta2.DynamoGraphDeploymentRun{}).
		Watches(&v1beta2.DynamoGraphDeploymentRequest{}, status.ForgetOnDelete(records...))
}

// isV1Beta2Native selects the requests these controllers own: those created through v1beta2.
func isV1Beta2Native(o client.Object) bool {
	dgdr, ok := o.(*v1beta2.DynamoGraphDeploymentRequest)
	return ok && !dgdr.IsV1Beta1Native()
}

// Fetch reads the request of a reconcile from the cache. It returns nil when there is nothing to
// reconcile: the request is gone or being deleted; it was created through v1beta1 (it belongs to
// the Dynamo operator, docs/operate/coexistence.md: never searched, its status never written
// here); or the cache still shows the version the caller's own last status write was computed
// from (expectations: the write's event follows).
func Fetch(ctx context.Context, c client.Reader, key client.ObjectKey, expectations *status.Expectations) (*v1beta2.DynamoGraphDeploymentRequest, error) {
	dgdr := &v1beta2.DynamoGraphDeploymentRequest{}
	if err := c.Get(ctx, key, dgdr); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if !expectations.Satisfied(dgdr) || !dgdr.DeletionTimestamp.IsZero() || dgdr.IsV1Beta1Native() {
		return nil, nil
	}
	return dgdr, nil
}
