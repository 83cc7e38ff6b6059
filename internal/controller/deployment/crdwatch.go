package deployment

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/promote"
)

// DGDCRDName is the name of the Dynamo platform's DynamoGraphDeployment CRD, which autoApply
// waits for when the cluster does not serve DynamoGraphDeployments yet.
var DGDCRDName = "dynamographdeployments." + promote.GVK.Group

// crdGVK is the kind of CustomResourceDefinitions, watched as unstructured objects (the manager's
// scheme does not know apiextensions, and only one CRD's name and conditions are read).
var crdGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// DGDCRDObject is the object the deployment reconciler watches for the DynamoGraphDeployment CRD
// (and the cache holds it as, setup.go).
func DGDCRDObject() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(crdGVK)
	return u
}

// StripCRD keeps of the watched CRD its name and status conditions: whether it is Established.
func StripCRD(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	out := DGDCRDObject()
	out.SetName(u.GetName())
	out.SetUID(u.GetUID())
	out.SetResourceVersion(u.GetResourceVersion())
	if conds != nil {
		_ = unstructured.SetNestedSlice(out.Object, conds, "status", "conditions")
	}
	return out, nil
}

// crdEstablished tells whether a watched CRD is Established.
func crdEstablished(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == string(metav1.ConditionTrue) {
			return true
		}
	}
	return false
}

// dgdCRDEstablished passes the events of the DynamoGraphDeployment CRD that leave it Established.
var dgdCRDEstablished = predicate.NewPredicateFuncs(func(o client.Object) bool {
	u, ok := o.(*unstructured.Unstructured)
	return ok && u.GetName() == DGDCRDName && crdEstablished(u)
})

// awaitingDGDCRD maps the DynamoGraphDeployment CRD's establishment to the requests whose
// autoApply waits for it (Deployed=False, CRDNotInstalled): they deploy at once instead of at
// their next retry.
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
