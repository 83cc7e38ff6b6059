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
// admission policy confines each identity to its own Run (docs/security.md).
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
// someone is noticed at the next search start without an API read per Run.
func (r *Reconciler) ensureReporterRole(ctx context.Context, namespace string) error {
	want := BuildReporterRole(namespace)
	var existing rbacv1.Role
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(want), &existing)
	switch {
	case apierrors.IsNotFound(err):
		if err := r.Client.Create(ctx, want); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating the reporter Role %s/%s: %w", namespace, want.Name, err)
		}
		return nil
	case err != nil:
		return err
	}
	if apiequality.Semantic.DeepEqual(existing.Rules, want.Rules) {
		return nil
	}
	existing.Rules = want.Rules
	if err := r.Client.Update(ctx, &existing); err != nil {
		return fmt.Errorf("repairing the reporter Role %s/%s: %w", namespace, want.Name, err)
	}
	return nil
}

// ensureSearchIdentity creates the Run's search ServiceAccount and RoleBinding. An existing
// object of that name that this Run does not control is never used: the Run ends with an Outcome
// naming it (nil when the identity is ready).
func (r *Reconciler) ensureSearchIdentity(ctx context.Context, run *v1beta2.DynamoGraphDeploymentRun) (*Outcome, error) {
	if err := r.ensureReporterRole(ctx, run.Namespace); err != nil {
		return nil, err
	}
	sa, binding := BuildSearchIdentity(run)
	for _, o := range []struct {
		kind string
		obj  client.Object
	}{{"ServiceAccount", sa}, {"RoleBinding", binding}} {
		obj := o.obj
		err := r.Client.Create(ctx, obj)
		if err == nil {
			continue
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating the search identity's %s %s/%s: %w", o.kind, run.Namespace, obj.GetName(), err)
		}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return nil, err
		}
		if !jobOwnedBy(obj, run) {
			return &Outcome{Reason: v1beta2.ReasonSearchFailed, Message: fmt.Sprintf(
				"%s %s/%s exists but does not belong to this Run, so it is not used as the search identity; delete it and create a new request generation",
				o.kind, run.Namespace, obj.GetName())}, nil
		}
	}
	return nil, nil
}

// deleteSearchIdentity deletes the Run's search ServiceAccount and RoleBinding, so that no token
// of the identity (the search pod's, or one minted later by anyone who may create tokens or
// impersonate ServiceAccounts in the namespace) authenticates once the Run is terminal: the API
// server rejects a bound token whose ServiceAccount is gone (401). Only objects this Run controls
// are deleted, with a UID precondition; a missing one is fine (idempotent).
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
		if !jobOwnedBy(obj, run) {
			continue // not this Run's: never used as its identity, and not ours to delete
		}
		err = r.Client.Delete(ctx, obj, client.Preconditions{UID: ptr.To(obj.GetUID())})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting the search identity %s/%s: %w", run.Namespace, obj.GetName(), err)
		}
	}
	return nil
}
