package env

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/internal/scheme"
)

// UserClient grants user the rules in ns by RBAC (a Role and a RoleBinding named for the user,
// created with admin) and returns a client of cfg that impersonates the user with the group
// every authenticated user has, as the API server sees a user authenticated by a token. RBAC
// reads bindings from an informer: a caller that must not race it waits for the first allowed
// call.
func UserClient(t testing.TB, admin client.Client, cfg *rest.Config, ns, user string, rules []rbacv1.PolicyRule) client.Client {
	t.Helper()
	ctx := context.Background()
	if err := admin.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user}, Rules: rules}); err != nil {
		t.Fatal(err)
	}
	if err := admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}); err != nil {
		t.Fatal(err)
	}
	impersonating := rest.CopyConfig(cfg)
	impersonating.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	c, err := client.New(impersonating, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
