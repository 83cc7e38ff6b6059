package run

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
)

// reporterLabels mark the per-namespace reporter identity.
func reporterLabels() map[string]string {
	return map[string]string{LabelManagedBy: ManagedByValue, LabelComponent: "reporter"}
}

// BuildReporterRBAC returns the reporter's ServiceAccount, Role and RoleBinding in a namespace.
func BuildReporterRBAC(namespace string) (*corev1.ServiceAccount, *rbacv1.Role, *rbacv1.RoleBinding) {
	meta := func() metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: jobcontract.ReporterServiceAccount, Namespace: namespace, Labels: reporterLabels()}
	}
	sa := &corev1.ServiceAccount{ObjectMeta: meta()}
	role := &rbacv1.Role{ObjectMeta: meta(), Rules: jobcontract.ReporterRules()}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: meta(),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: jobcontract.ReporterServiceAccount},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: jobcontract.ReporterServiceAccount, Namespace: namespace}},
	}
	return sa, role, binding
}

// ensureReporterRBAC creates the reporter identity of a namespace, and repairs the Role's rules
// if they drifted. It reads through the API server (no informers on RBAC objects).
func ensureReporterRBAC(ctx context.Context, c client.Client, reader client.Reader, namespace string) error {
	sa, role, binding := BuildReporterRBAC(namespace)
	for _, obj := range []client.Object{sa, role, binding} {
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating reporter %T %s/%s: %w", obj, namespace, obj.GetName(), err)
		}
	}
	var existing rbacv1.Role
	if err := reader.Get(ctx, client.ObjectKeyFromObject(role), &existing); err != nil {
		return fmt.Errorf("reading reporter Role: %w", err)
	}
	if !apiequality.Semantic.DeepEqual(existing.Rules, role.Rules) {
		existing.Rules = role.Rules
		if err := c.Update(ctx, &existing); err != nil {
			return fmt.Errorf("repairing reporter Role: %w", err)
		}
	}
	return nil
}
