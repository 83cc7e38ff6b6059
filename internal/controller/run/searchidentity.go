package run

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
)

// The operator holds these only because RBAC lets it grant nothing it does not hold: they are in
// the reporter Role (jobcontract.ReporterRules) for provisional Candidates' rank labels and the
// Run's artifacts ConfigMap.
// +kubebuilder:rbac:groups=nvidia.com,resources=dynamographdeploymentcandidates,verbs=patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=create;delete

// reporterLabels mark the reporter Role and the search identities.
func reporterLabels() map[string]string {
	return map[string]string{LabelManagedBy: ManagedByValue, LabelComponent: "reporter"}
}

// BuildReporterRole returns the namespace's reporter Role (jobcontract.ReporterRules). It grants
// nothing by itself: each Run's search identity is bound to it, and the search-identity
// admission policy confines each identity to its own Run (docs/operate/security.md).
func BuildReporterRole(namespace string) *rbacv1.Role {
	return &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: jobcontract.ReporterRole, Namespace: namespace, Labels: reporterLabels()},
		Rules:      jobcontract.ReporterRules(),
	}
}

// BuildSearchIdentity returns a Run's search ServiceAccount and the RoleBinding of it to the
// reporter Role, both controlled by the Run (the garbage collector removes them with it).
func BuildSearchIdentity(run *v1beta2.DynamoGraphDeploymentRun) (*corev1.ServiceAccount, *rbacv1.RoleBinding) {
	name := jobcontract.SearchIdentity(run.UID)
	meta := func() metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: run.Namespace, Labels: reporterLabels(),
			OwnerReferences: []metav1.OwnerReference{runOwnerRef(run)}}
	}
	sa := &corev1.ServiceAccount{ObjectMeta: meta(), AutomountServiceAccountToken: ptr.To(false)}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: meta(),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: jobcontract.ReporterRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: run.Namespace}},
	}
	return sa, binding
}

// ensureReporterRole creates the namespace's reporter Role, or repairs its rules. It reads the
// Role from the cache (Roles the operator manages are cached), so a Role deleted or edited by
// someone is noticed at the next search start without an API read per Run. A Role of that name
// that the operator would not have made (owner references, which tie its life to someone
// else's object, or without the operator's labels) is never used: the Run ends with a Completion
// naming it (nil when the Role is ready).
func (r *Reconciler) ensureReporterRole(ctx context.Context, namespace string) (*Completion, error) {
	want := BuildReporterRole(namespace)
	var existing rbacv1.Role
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(want), &existing)
	switch {
	case apierrors.IsNotFound(err):
		err := r.Client.Create(ctx, want)
		if err == nil {
			return nil, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating the reporter Role %s/%s: %w", namespace, want.Name, err)
		}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(want), &existing); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, err
	}
	if len(existing.OwnerReferences) > 0 || existing.Labels[LabelManagedBy] != ManagedByValue || existing.Labels[LabelComponent] != "reporter" {
		return foreignObject("Role", &existing, "the search identities are not bound to it"), nil
	}
	if apiequality.Semantic.DeepEqual(existing.Rules, want.Rules) {
		return nil, nil
	}
	existing.Rules = want.Rules
	if err := r.Client.Update(ctx, &existing); err != nil {
		return nil, fmt.Errorf("repairing the reporter Role %s/%s: %w", namespace, want.Name, err)
	}
	return nil, nil
}

// ensureSearchIdentity creates the Run's search ServiceAccount and RoleBinding. An object of
// that name whose owner references are not exactly the Run's, or without the operator's label
// (madeFor), is never used: the Run ends with a Completion naming it (nil when the identity is
// ready). An owner reference proves nothing by itself (whoever creates an object writes them),
// so one the operator would have made is replaced: it was made by an earlier attempt of this
// reconcile or by someone imitating one, and only the objects the operator creates here carry
// the identity (a planted ServiceAccount could bring image pull secrets or a legacy token Secret
// bound to its UID, a planted RoleBinding other subjects or another role).
func (r *Reconciler) ensureSearchIdentity(ctx context.Context, run *v1beta2.DynamoGraphDeploymentRun) (*Completion, error) {
	if o, err := r.ensureReporterRole(ctx, run.Namespace); err != nil || o != nil {
		return o, err
	}
	sa, binding := BuildSearchIdentity(run)
	for _, o := range []struct {
		kind string
		obj  client.Object
	}{{"ServiceAccount", sa}, {"RoleBinding", binding}} {
		fresh := o.obj.DeepCopyObject().(client.Object)
		err := r.Client.Create(ctx, o.obj)
		if err == nil {
			continue
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating the search identity's %s %s/%s: %w", o.kind, run.Namespace, o.obj.GetName(), err)
		}
		existing := fresh.DeepCopyObject().(client.Object)
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(existing), existing); err != nil {
			return nil, err
		}
		if !madeFor(existing, run) {
			return foreignObject(o.kind, existing, "it is not used as the search identity"), nil
		}
		err = r.Client.Delete(ctx, existing, client.Preconditions{UID: ptr.To(existing.GetUID())})
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("replacing the search identity's %s %s/%s: %w", o.kind, run.Namespace, existing.GetName(), err)
		}
		// Deleted in the foreground of nothing: a ServiceAccount or RoleBinding has no
		// finalizers of its own, so the name is free at once unless someone planted one again.
		if err := r.Client.Create(ctx, fresh); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return &Completion{Reason: v1beta2.ReasonSearchFailed, Message: fmt.Sprintf(
					"%s %s/%s was created again by someone else while the operator replaced it; it is not used as the search identity. Delete it and create a new request generation",
					o.kind, run.Namespace, fresh.GetName())}, nil
			}
			return nil, fmt.Errorf("creating the search identity's %s %s/%s: %w", o.kind, run.Namespace, fresh.GetName(), err)
		}
	}
	return nil, nil
}

// deleteSearchIdentity deletes the Run's search ServiceAccount and RoleBinding, so that no token
// of the identity (the search pod's, or one minted later by anyone who may create tokens or
// impersonate ServiceAccounts in the namespace) authenticates once the Run is terminal: the API
// server rejects a bound token whose ServiceAccount is gone (401). Only objects the operator made
// for this Run (madeFor) are deleted, with a UID precondition; a missing one is fine (idempotent).
func (r *Reconciler) deleteSearchIdentity(ctx context.Context, run *v1beta2.DynamoGraphDeploymentRun) error {
	sa, binding := BuildSearchIdentity(run)
	for _, obj := range []client.Object{sa, binding} {
		err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading the search identity %s/%s: %w", run.Namespace, obj.GetName(), err)
		}
		if !madeFor(obj, run) {
			continue // not this Run's: never used as its identity, and not ours to delete
		}
		err = r.Client.Delete(ctx, obj, client.Preconditions{UID: ptr.To(obj.GetUID())})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting the search identity %s/%s: %w", run.Namespace, obj.GetName(), err)
		}
	}
	return nil
}
