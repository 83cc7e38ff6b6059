package deployment

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/promote"
)

// DGDCRDName is the name of the Dynamo platform's DynamoGraphDeployment CRD, which autoApply
// waits for when the cluster does not serve DynamoGraphDeployments yet.
var DGDCRDName = "dynamographdeployments." + promote.GVK.Group

// crdGVK is the kind of CustomResourceDefinitions, watched as metadata (the manager's scheme
// does not know apiextensions).
var crdGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// DGDCRDObject is the object the deployment reconciler watches for the DynamoGraphDeployment CRD
// (and the cache holds it as, setup.go): its metadata alone. Its schema is a megabyte of JSON
// that a watch of the whole object would decode at every start and keep the size of in its
// buffers for good (docs/develop/performance.md, P5). The watch only says when the CRD changes:
// it is created, or its status changes (Established), which changes its resourceVersion; the
// reconcile asks the API server whether it serves DynamoGraphDeployments.
func DGDCRDObject() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(crdGVK)
	return m
}

// StripCRD keeps of the watched CRD's metadata its identity and resourceVersion.
func StripCRD(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	out := DGDCRDObject()
	out.Name, out.UID, out.ResourceVersion = m.Name, m.UID, m.ResourceVersion
	return out, nil
}

// dgdCRDChanged passes the DynamoGraphDeployment CRD's creation and changes (each may be its
// establishment); its deletion wakes no request.
var dgdCRDChanged = predicate.Funcs{
	CreateFunc:  func(e event.CreateEvent) bool { return e.Object.GetName() == DGDCRDName },
	UpdateFunc:  func(e event.UpdateEvent) bool { return e.ObjectNew.GetName() == DGDCRDName },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// awaitingDGDCRD maps a change of the DynamoGraphDeployment CRD to the requests whose autoApply
// waits for it (Deployed=False, CRDNotInstalled): they deploy as soon as it is established
// instead of at their next retry.
func (r *Reconciler) awaitingDGDCRD(ctx context.Context, _ client.Object) []ctrl.Request {
	var list v1beta2.DynamoGraphDeploymentRequestList
	if err := r.Client.List(ctx, &list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing the requests waiting for the DynamoGraphDeployment CRD")
		return nil
	}
	var out []ctrl.Request
	for i := range list.Items {
		d := &list.Items[i]
		if c := meta.FindStatusCondition(d.Status.Conditions, v1beta2.ConditionDeployed); c != nil && c.Reason == v1beta2.ReasonDeploymentCRDMissing {
			out = append(out, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(d)})
		}
	}
	return out
}
