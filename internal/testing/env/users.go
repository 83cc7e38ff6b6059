package env

import (
	"context"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/internal/scheme"
)

// UserClient grants user the rules in ns by RBAC (a Role and a RoleBinding named for the user,
// created with admin) and returns a client of cfg that impersonates the user with the group
// every authenticated user has, as the API server sees a user authenticated by a token. RBAC
// reads bindings from an informer, so UserClient returns once a SubjectAccessReview allows every
// verb of every rule.
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
	groups := []string{"system:authenticated"}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return allowsAll(ctx, admin, ns, user, groups, rules)
	}); err != nil {
		t.Fatalf("RBAC did not grant %s its rules in %s: %v", user, ns, err)
	}
	impersonating := rest.CopyConfig(cfg)
	impersonating.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	c, err := client.New(impersonating, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// allowsAll reports whether the API server's authorizer allows user every verb of rules in ns.
func allowsAll(ctx context.Context, admin client.Client, ns, user string, groups []string, rules []rbacv1.PolicyRule) (bool, error) {
	for _, r := range rules {
		names := r.ResourceNames
		if len(names) == 0 {
			names = []string{""}
		}
		for _, group := range r.APIGroups {
			for _, resource := range r.Resources {
				resource, subresource, _ := strings.Cut(resource, "/")
				for _, verb := range r.Verbs {
					for _, name := range names {
						sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
							User: user, Groups: groups,
							ResourceAttributes: &authorizationv1.ResourceAttributes{
								Namespace: ns, Verb: verb, Group: group, Resource: resource, Subresource: subresource, Name: name}}}
						if err := admin.Create(ctx, sar); err != nil {
							return false, err
						}
						if !sar.Status.Allowed {
							return false, nil
						}
					}
				}
			}
		}
	}
	return true, nil
}
