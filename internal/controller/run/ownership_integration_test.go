package run_test

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/run"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/internal/scheme"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/poll"
)

// jobControllerUser plays the cluster's Job controller in these tests.
const jobControllerUser = jobcontract.DefaultJobControllerUsername

// impersonating binds rules to user in ns (a Role and a RoleBinding of that user name) and returns
// a client and a clientset that impersonate the user with groups.
func impersonating(t *testing.T, ns, user string, groups []string, rules []rbacv1.PolicyRule) (client.Client, kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	name := "u-" + rand8(user)
	if err := k8s.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: rules}); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append(groups, "system:authenticated")}
	c, err := client.New(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, cs
}

// rand8 is a short stable name part for user (RBAC object names cannot hold its colons).
func rand8(user string) string {
	h := uint32(2166136261)
	for i := 0; i < len(user); i++ {
		h = (h ^ uint32(user[i])) * 16777619
	}
	const digits = "0123456789abcdefghijklmnopqrstuv"
	out := make([]byte, 0, 7)
	for i := 0; i < 7; i++ {
		out = append(out, digits[h%32])
		h /= 32
	}
	return string(out)
}

// adminUsername is the API server's name for the tests' admin client: the operator of this
// package's manager, which runs on it.
func adminUsername(t *testing.T) string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return review.Status.UserInfo.Username
}

// installOwnershipPolicy installs the chart's ownership policy (jobcontract.OwnershipPolicy) for
// the operator user operator, bound to namespace ns only (the package's other tests create pods
// and Runs as the admin elsewhere), and waits until the API server enforces it for tenant.
func installOwnershipPolicy(t *testing.T, ns, operator string, tenant client.Client) {
	t.Helper()
	ctx := context.Background()
	policy, binding := jobcontract.OwnershipPolicy(jobcontract.OwnershipOptions{Username: operator, JobControllerUsername: jobControllerUser})
	policy.Name, binding.Name, binding.Spec.PolicyName = "ownership-"+ns, "ownership-"+ns, "ownership-"+ns
	binding.Spec.MatchResources = &admissionregistrationv1.MatchResources{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}}}
	for _, obj := range []client.Object{policy, binding} {
		if err := k8s.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = k8s.Delete(ctx, binding); _ = k8s.Delete(ctx, policy) })
	poll.Eventually(t, 30*time.Second, "the ownership policy refusing a tenant's Run", func() (bool, error) {
		err := tenant.Create(ctx, builders.Run(ns, "probe").WithSpec(admittedSpec()).Obj(), client.DryRunAll)
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "ownership policy"), nil
	})
}

// plainJob is a Job of one busybox container, labelled labels, its pods labelled podLabels and
// running as account.
func plainJob(ns, name string, labels, podLabels map[string]string, account string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, ServiceAccountName: account,
				Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
		}},
	}
}

// plainPod is a pod of one busybox container, labelled labels and running as account.
func plainPod(ns, name string, labels map[string]string, account string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, ServiceAccountName: account,
			Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
	}
}

// TestOwnershipPolicy plays, on the real API server under the chart's ownership policy, a tenant
// U whose RBAC allows every write on the nvidia.com group, Jobs, pods and ServiceAccount tokens in
// its namespace, and the cluster admin. Each tries to make what the operator trusts because it
// made it: a Run, a Candidate or a Run's status; a Job or a pod with the operator's labels or a
// search identity's ServiceAccount (directly, in a Job's pod template, or by relabelling its own);
// an ephemeral container in a search pod; a token of a search identity. Each gets 403 naming the
// rule. The operator (here the manager's own user, whose Run controller makes the Run's search
// Job), a search identity, the Job controller and a node still do their part, and housekeeping
// (the cancel annotation, removing an owner reference, a label that is no mark) still passes.
// Without the policy every refused call succeeds.
func TestOwnershipPolicy(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k8s, "own")
	everything := []rbacv1.PolicyRule{
		{APIGroups: []string{v1beta2.GroupVersion.Group}, Resources: []string{"*"}, Verbs: []string{"*"}},
		{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"*"}},
		{APIGroups: []string{""}, Resources: []string{"pods", "pods/ephemeralcontainers", "serviceaccounts", "serviceaccounts/token"}, Verbs: []string{"*"}},
	}
	jobController, _ := impersonating(t, ns, jobControllerUser, []string{"system:serviceaccounts", "system:serviceaccounts:kube-system"}, everything)
	// What the Node authorizer grants a kubelet for the pods bound to it (envtest runs RBAC only).
	_, nodeSet := impersonating(t, ns, "system:node:gpu-a", []string{"system:nodes"}, append(everything,
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"*"}, Verbs: []string{"request-serviceaccounts-token-audience"}}))
	// A cluster admin other than the operator (who is the admin client here).
	admin, adminSet := impersonating(t, ns, "cluster-admin", []string{"system:masters"}, nil)
	// Last: once RBAC lets U through (installOwnershipPolicy waits for it), the bindings created
	// before are in force too.
	tenant, tenantSet := impersonating(t, ns, "tenant-u", nil, everything)
	installOwnershipPolicy(t, ns, adminUsername(t), tenant)

	// The operator's Run, and what its Run controller makes for it: its search identity and Job.
	r := createRun(t, ns, "owned", nil)
	job := waitForJob(t, r)
	r = getRun(t, r)
	searchIdentity := asSearchIdentity(t, r)
	marks := map[string]string{run.LabelManagedBy: run.ManagedByValue, v1beta2.LabelRunUID: string(r.UID)}
	account := jobcontract.SearchIdentity(r.UID)
	tenantJob := plainJob(ns, "tenant-job", nil, nil, "")
	if err := tenant.Create(ctx, tenantJob); err != nil {
		t.Fatalf("the tenant's own unmarked Job: %v", err)
	}
	searchPod := plainPod(ns, "owned-search-x1", marks, account)
	searchPod.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))}
	searchPod.Spec.NodeName = "gpu-a" // the node that mints its token
	if err := jobController.Create(ctx, searchPod); err != nil {
		t.Fatalf("the Job controller creating the search pod: %v", err)
	}
	mergePatch := func(body string) client.Patch { return client.RawPatch(types.MergePatchType, []byte(body)) }
	tokenFor := func(cs kubernetes.Interface, sa string) error {
		_, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: ptr.To[int64](600),
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: searchPod.Name, UID: searchPod.UID}}}, metav1.CreateOptions{})
		return err
	}

	refused := map[string]func() error{
		"U creates a Run": func() error {
			return tenant.Create(ctx, builders.Run(ns, "planted").WithSpec(admittedSpec()).Label(v1beta2.LabelRequestName, "req").Obj())
		},
		"the admin creates a Run": func() error {
			return admin.Create(ctx, builders.Run(ns, "planted-by-admin").WithSpec(admittedSpec()).Obj(), client.DryRunAll)
		},
		"U relabels the operator's Run": func() error {
			return tenant.Patch(ctx, r.DeepCopy(), mergePatch(`{"metadata":{"labels":{"`+v1beta2.LabelRequestGeneration+`":"9"}}}`))
		},
		"U annotates the operator's Run otherwise than to cancel it": func() error {
			return tenant.Patch(ctx, r.DeepCopy(), mergePatch(`{"metadata":{"annotations":{"`+v1beta2.AnnotationSupersededBy+`":"x"}}}`))
		},
		"U writes a Run's status": func() error {
			return tenant.Status().Patch(ctx, r.DeepCopy(), mergePatch(`{"status":{"lastProgressTime":"2026-01-01T00:00:00Z"}}`))
		},
		"U creates a Candidate": func() error {
			return tenant.Create(ctx, candidateOf(r, r.UID, "owned-forged"))
		},
		"U creates a Job labelled managed-by dgdr-operator": func() error {
			return tenant.Create(ctx, plainJob(ns, "j-managed", map[string]string{run.LabelManagedBy: run.ManagedByValue}, nil, ""))
		},
		"U creates a Job whose pods carry a Run's UID": func() error {
			return tenant.Create(ctx, plainJob(ns, "j-template", nil, map[string]string{v1beta2.LabelRunUID: string(r.UID)}, ""))
		},
		"U creates a Job of a search identity": func() error {
			return tenant.Create(ctx, plainJob(ns, "j-account", nil, nil, account))
		},
		"U labels its own Job with a request's UID": func() error {
			return tenant.Patch(ctx, tenantJob.DeepCopy(), mergePatch(`{"metadata":{"labels":{"`+v1beta2.LabelRequestUID+`":"x"}}}`))
		},
		"the admin creates a Job labelled managed-by dgdr-operator": func() error {
			return admin.Create(ctx, plainJob(ns, "j-admin", map[string]string{run.LabelManagedBy: run.ManagedByValue}, nil, ""), client.DryRunAll)
		},
		"U creates a pod with a Run's labels": func() error {
			return tenant.Create(ctx, plainPod(ns, "p-labels", marks, ""))
		},
		"U creates a pod of a search identity": func() error {
			return tenant.Create(ctx, plainPod(ns, "p-account", nil, account))
		},
		"U changes a search pod's Run UID": func() error {
			return tenant.Patch(ctx, searchPod.DeepCopy(), mergePatch(`{"metadata":{"labels":{"`+v1beta2.LabelRunUID+`":"another"}}}`))
		},
		"U adds an ephemeral container to a search pod": func() error {
			p := searchPod.DeepCopy()
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
			return tenant.SubResource("ephemeralcontainers").Update(ctx, p)
		},
		"U mints a search identity's token": func() error { return tokenFor(tenantSet, account) },
		"the admin mints a search identity's token": func() error {
			return tokenFor(adminSet, account)
		},
	}
	for what, do := range refused {
		err := do()
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "ownership policy") {
			t.Errorf("%s: err = %v, want 403 Forbidden from the ownership policy", what, err)
		}
	}

	// In this order: cancelling the Run ends it, and with it its search identity.
	allowed := []struct {
		what string
		do   func() error
	}{
		{"the search identity writes its Run's progress", func() error {
			return searchIdentity.Status().Patch(ctx, r.DeepCopy(), mergePatch(`{"status":{"lastProgressTime":"2026-01-01T00:00:00Z"}}`))
		}},
		{"the search identity publishes a Candidate", func() error {
			return searchIdentity.Create(ctx, candidateOf(r, r.UID, "owned-c1"))
		}},
		{"U labels a search pod with a label that is no mark", func() error {
			return tenant.Patch(ctx, searchPod.DeepCopy(), mergePatch(`{"metadata":{"labels":{"team":"b"}}}`))
		}},
		{"U annotates the operator's Job (as Kueue would)", func() error {
			return tenant.Patch(ctx, job.DeepCopy(), mergePatch(`{"metadata":{"annotations":{"kueue.x-k8s.io/note":"x"}}}`))
		}},
		{"the node mints the search pod's token", func() error { return tokenFor(nodeSet, account) }},
		{"U mints a token of another ServiceAccount", func() error {
			if err := k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "builder"}}); err != nil {
				return err
			}
			_, err := tenantSet.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "builder", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
			return err
		}},
		{"U cancels the operator's Run", func() error {
			return tenant.Patch(ctx, r.DeepCopy(), mergePatch(`{"metadata":{"annotations":{"`+v1beta2.AnnotationCancel+`":"true"}}}`))
		}},
	}
	for _, a := range allowed {
		if err := a.do(); err != nil {
			t.Errorf("%s: %v", a.what, err)
		}
	}
}
