// Package fit marks each Candidate with whether it fits the GPUs of the cluster's Nodes
// (status.fitsCluster). The operator writes it, not the reporter: the search pod's identity
// cannot read Nodes, and the answer changes when Nodes do, long after the search ended.
package fit

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/gpunodes"
)

// The fit controller reads Candidates and Nodes from the manager's cache and patches only
// status.fitsCluster:
// +kubebuilder:rbac:groups=nvidia.com,resources=dynamographdeploymentcandidates,verbs=get;list;watch
// +kubebuilder:rbac:groups=nvidia.com,resources=dynamographdeploymentcandidates/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=list;watch

// ControllerName names the controller.
const ControllerName = "dgdr-candidate-fit"

// Reconciler keeps status.fitsCluster of every Candidate current.
type Reconciler struct {
	// Client reads Candidates and Nodes from the manager's cache.
	Client client.Client
	// nodes keeps the GPU Nodes' inventory, read again only after a Node's GPUs changed: all
	// Candidates judged after one change share one reading of the Nodes.
	nodes *gpunodes.Tracker
}

// Reconcile compares one Candidate with the Nodes of its SKU.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (ctrl.Result, error) {
	cand := &v1beta2.DynamoGraphDeploymentCandidate{}
	if err := r.Client.Get(ctx, req.NamespacedName, cand); err != nil || !cand.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	needs, sku, err := gpunodes.NeedsOf(cand)
	if err != nil {
		// Not a Candidate the operator can judge (hardware per role): no fitsCluster.
		ctrl.LoggerFrom(ctx).V(1).Info("not judging the fit", "reason", err.Error())
		return ctrl.Result{}, nil
	}
	inv, err := r.nodes.Inventory(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	fit := gpunodes.Fit(needs, sku, inv.Pool(sku))
	if cand.Status.FitsCluster != nil && equality.Semantic.DeepEqual(*cand.Status.FitsCluster, fit) {
		return ctrl.Result{}, nil
	}
	body, err := json.Marshal(map[string]any{"status": map[string]any{"fitsCluster": fit}})
	if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, client.IgnoreNotFound(r.Client.Status().Patch(ctx, cand, client.RawPatch(types.MergePatchType, body)))
}

// SetupWithManager watches Candidates, and Nodes whose GPUs change (which re-judges every
// Candidate). The Node changes come from the Tracker of the inventory the reconciles read, not
// from a handler of their own: the informer orders no two handlers, and a reconcile queued by
// another handler could read the inventory before the Tracker saw the change.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	var err error
	if r.nodes, err = gpunodes.NewTracker(context.Background(), mgr.GetCache()); err != nil {
		return fmt.Errorf("watching Nodes for the Candidates' fit: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).Named(ControllerName).
		For(&v1beta2.DynamoGraphDeploymentCandidate{}, builder.WithPredicates(predicate.Funcs{
			// Only the spec (new Candidates) and a status written by someone else matter.
			UpdateFunc: func(e event.UpdateEvent) bool {
				o, n := e.ObjectOld.(*v1beta2.DynamoGraphDeploymentCandidate), e.ObjectNew.(*v1beta2.DynamoGraphDeploymentCandidate)
				return !equality.Semantic.DeepEqual(o.Status.FitsCluster, n.Status.FitsCluster) || o.Generation != n.Generation
			},
		})).
		WatchesRawSource(source.Channel(r.nodes.Changes(), handler.EnqueueRequestsFromMapFunc(r.allCandidates))).
		Complete(r)
}

func (r *Reconciler) allCandidates(ctx context.Context, _ client.Object) []reconcile.Request {
	list := &v1beta2.DynamoGraphDeploymentCandidateList{}
	if err := r.Client.List(ctx, list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing Candidates to judge their fit again")
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}

// StripNode keeps of a cached Node what the operator reads: its name, labels, whether it is
// cordoned and its allocatable GPUs.
func StripNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	stripped := &corev1.Node{TypeMeta: n.TypeMeta, ObjectMeta: *n.ObjectMeta.DeepCopy()}
	stripped.ManagedFields, stripped.Annotations = nil, nil
	stripped.Spec.Unschedulable = n.Spec.Unschedulable
	if q, ok := n.Status.Allocatable[gpunodes.GPUResource]; ok {
		stripped.Status.Allocatable = corev1.ResourceList{gpunodes.GPUResource: q}
	}
	return stripped, nil
}

// StripCandidate keeps of a cached Candidate what the fit controller reads: its parameters
// shrink to engine.hardware (the rest is read from the API server by the rare step that needs
// it, autoApply).
func StripCandidate(obj any) (any, error) {
	c, ok := obj.(*v1beta2.DynamoGraphDeploymentCandidate)
	if !ok {
		return obj, nil
	}
	c.ManagedFields = nil
	var params struct {
		Engine struct {
			Hardware json.RawMessage `json:"hardware,omitempty"`
		} `json:"engine"`
	}
	if json.Unmarshal(c.Spec.Parameters.Raw, &params) == nil {
		if raw, err := json.Marshal(params); err == nil {
			c.Spec.Parameters.Raw = raw
		}
	}
	c.Spec.Parameters.Object = nil
	return obj, nil
}
