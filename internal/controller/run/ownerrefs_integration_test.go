package run_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/run"
	"github.com/dgdr-operator/dgdr-operator/internal/scheme"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/poll"
)

// asOperator binds rules to a fresh ServiceAccount and returns a client authenticated as it.
func asOperator(t *testing.T, ns, name string, rules []rbacv1.PolicyRule) client.Client {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name}, Rules: rules}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}}}
	for _, obj := range []client.Object{&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, role, binding} {
		if err := k8s.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = k8s.Delete(ctx, binding); _ = k8s.Delete(ctx, role) })
	c, err := client.New(operatorConfig(ns, name), client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestGeneratedRBACPassesOwnerReferencesPermissionEnforcement creates what the Run controller
// creates for a Run (search identity, Job: each with blockOwnerDeletion to the Run) as a
// ServiceAccount holding exactly the generated ClusterRole (config/rbac/role.yaml), on an API
// server with OwnerReferencesPermissionEnforcement (internal/testing/env). Without the finalizers rule
// every create is Forbidden, which the test shows first, so it fails if the rule is dropped or
// the admission plugin is switched off.
func TestGeneratedRBACPassesOwnerReferencesPermissionEnforcement(t *testing.T) {
	ctx := context.Background()
	data, err := os.ReadFile(filepath.Join(testenv.Root(), "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var generated rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(data, &generated); err != nil {
		t.Fatal(err)
	}
	ns := testenv.Namespace(t, k8s, "t")
	r := createRun(t, ns, "owned", nil)
	waitForJob(t, r) // the controller has made the namespace's reporter Role, which the binding names
	r = getRun(t, r)

	withoutFinalizers := slices.DeleteFunc(slices.Clone(generated.Rules), func(rule rbacv1.PolicyRule) bool {
		return slices.ContainsFunc(rule.Resources, func(res string) bool { return filepath.Base(res) == "finalizers" })
	})
	weak := asOperator(t, ns, "weak-operator", withoutFinalizers)
	sa, _ := run.BuildSearchIdentity(r)
	sa.Name = "probe-weak"
	if err := weak.Create(ctx, sa); !apierrors.IsForbidden(err) {
		t.Fatalf("without update on runs/finalizers, creating a child with blockOwnerDeletion: err = %v, want Forbidden (is OwnerReferencesPermissionEnforcement on?)", err)
	}

	operator := asOperator(t, ns, "operator", generated.Rules)
	cfgCopy := *cfg
	sa, binding := run.BuildSearchIdentity(r)
	sa.Name, binding.Name = "probe-sa", "probe-binding"
	job := run.BuildJob(r, &cfgCopy)
	job.Name = "probe-job"
	for _, obj := range []client.Object{sa, binding, job} {
		if err := operator.Create(ctx, obj); err != nil {
			t.Errorf("creating %T %s as the operator's generated ClusterRole: %v", obj, obj.GetName(), err)
		}
	}
}

// operatorConfig authenticates as the ServiceAccount ns/name (impersonation sets exactly the
// user name and groups its token carries).
func operatorConfig(ns, name string) *rest.Config {
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":" + name,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}}
	return cfg
}

// TestPlantedJobIsReplaced: a Run waits for a slot; a tenant who read its UID plants its search
// Job (<run>-search), with exactly the owner reference the operator gives its Jobs and a pod
// running an image of theirs. The operator never tracks it as the search: the Run has not
// recorded it (status.jobRef), so the Job is deleted at once, and when a slot frees the Run's
// search runs in a Job the operator created (the configured image). Before, a controller
// reference to the Run was taken as proof that the operator had created the Job.
func TestPlantedJobIsReplaced(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k8s, "t")
	active := slotTakers(t, ns)
	target := createRun(t, ns, "planted-job", nil)
	waitQueued(t, target)
	target = getRun(t, target)

	planted := run.BuildJob(target, cfg)
	planted.Spec.Template.Spec.Containers[0].Image = "attacker/miner:latest"
	if err := k8s.Create(ctx, planted); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, wait, "the planted Job to be deleted", func() (bool, error) {
		var j batchv1.Job
		err := k8s.Get(ctx, client.ObjectKeyFromObject(planted), &j)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return err == nil && (j.UID != planted.UID || j.DeletionTimestamp != nil), client.IgnoreNotFound(err)
	})
	cancelRun(t, active[0])
	job := waitForJob(t, target)
	if job.UID == planted.UID || job.Spec.Template.Spec.Containers[0].Image != cfg.Planner.Image {
		t.Errorf("the Run's search Job %s (uid %s, image %s) is the planted one (uid %s)", job.Name, job.UID, job.Spec.Template.Spec.Containers[0].Image, planted.UID)
	}
	// The Job is created before the status write that records it.
	poll.Eventually(t, wait, "status.jobRef to name the operator's Job "+string(job.UID), func() (bool, error) {
		ref := getRun(t, target).Status.JobRef
		return ref != nil && ref.UID == job.UID, nil
	})
}

// TestUnlabelledPlantedJobIsForeign: a tenant plants a waiting Run's search Job with exactly the
// owner reference the operator gives its Jobs but without the operator's managed-by label, which
// the operator's fence requires of every Job it deletes. The operator neither tracks nor deletes
// it: when a slot frees, the Run ends SearchFailed naming the Job and its label (instead of
// failing the fence's 403 at every retry), and the Job is left to its owner.
func TestUnlabelledPlantedJobIsForeign(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k8s, "t")
	active := slotTakers(t, ns)
	target := createRun(t, ns, "unlabelled-job", nil)
	waitQueued(t, target)
	target = getRun(t, target)

	planted := run.BuildJob(target, cfg)
	delete(planted.Labels, run.LabelManagedBy)
	if err := k8s.Create(ctx, planted); err != nil {
		t.Fatal(err)
	}
	cancelRun(t, active[0])
	ended := waitForReason(t, target, v1beta2.ReasonSearchFailed)
	if c := meta.FindStatusCondition(ended.Status.Conditions, v1beta2.ConditionCompleted); !strings.Contains(c.Message, "Job "+ns+"/"+planted.Name) ||
		!strings.Contains(c.Message, run.LabelManagedBy+`=""`) {
		t.Errorf("Completed message %q does not name the planted Job and its missing label", c.Message)
	}
	var j batchv1.Job
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(planted), &j); err != nil || j.UID != planted.UID || j.DeletionTimestamp != nil {
		t.Errorf("the planted Job: err = %v, uid %s (planted %s), deletion %v; want it untouched", err, j.UID, planted.UID, j.DeletionTimestamp)
	}
}
