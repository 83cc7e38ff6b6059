//go:build attack

package attack

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/test/sandboxtest"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/audit"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/manager"
)

// TestAuditNamesARemovedRight: the suites' audit scan is what notices a right the chart forgot.
// With `create` on Jobs taken out of the chart's ClusterRole, a new request's search cannot
// start, and the scan of the API server's audit log names the refused create of jobs.batch in
// the request's namespace (the suite's own end-of-run scan excludes this test's window).
func TestAuditNamesARemovedRight(t *testing.T) {
	ctx := context.Background()
	sandboxtest.ExpectDenials(t, "jobs.batch")
	role := &rbacv1.ClusterRole{}
	key := client.ObjectKey{Name: manager.ChartRelease}
	var original []rbacv1.PolicyRule
	edit := func(keep func([]rbacv1.PolicyRule) []rbacv1.PolicyRule) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := k8s.Get(ctx, key, role); err != nil {
				return err
			}
			if original == nil {
				original = role.DeepCopy().Rules
			}
			role.Rules = keep(role.Rules)
			return k8s.Update(ctx, role)
		})
	}
	withoutJobCreate := func(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
		out := make([]rbacv1.PolicyRule, 0, len(rules))
		for _, r := range rules {
			r = *r.DeepCopy()
			if slices.Contains(r.APIGroups, "batch") && slices.Contains(r.Resources, "jobs") {
				r.Verbs = slices.DeleteFunc(r.Verbs, func(v string) bool { return v == "create" })
			}
			out = append(out, r)
		}
		return out
	}
	if err := edit(withoutJobCreate); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := edit(func([]rbacv1.PolicyRule) []rbacv1.PolicyRule { return original }); err != nil {
			t.Errorf("restoring ClusterRole %s: %v", key.Name, err)
		}
	})
	since := time.Now()
	ns := newNamespace(t)
	env.CreateRequest(t, ns, fmt.Sprintf(sandboxtest.TinyRequest, "no-jobs"))
	sandboxtest.WaitFor(t, time.Minute, poll, "the audit scan to name the refused create of jobs.batch in "+ns, func(context.Context) (bool, string, error) {
		findings, err := audit.ScanFile(env.AuditLogPath(), audit.Options{User: manager.OperatorUsername(), Since: since})
		if err != nil {
			return false, "", err
		}
		var seen []string
		for _, f := range findings {
			s := f.String()
			if f.Verb == "create" && f.GroupResource() == "jobs.batch" && f.Namespace == ns && f.Code == 403 &&
				strings.Contains(s, "create jobs.batch") && strings.Contains(s, "in namespace "+ns) {
				t.Logf("the scan names it: %s", s)
				return true, "", nil
			}
			seen = append(seen, s)
		}
		return false, fmt.Sprintf("findings %q", seen), nil
	})
}
