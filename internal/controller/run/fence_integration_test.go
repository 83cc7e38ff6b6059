package run_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/internal/controller/run"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/poll"
)

// generatedRules are the rules of the generated ClusterRole (config/rbac/role.yaml), which the
// chart grants the operator (hack/chartgen).
func generatedRules(t *testing.T) []rbacv1.PolicyRule {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.Root(), "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var generated rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(data, &generated); err != nil {
		t.Fatal(err)
	}
	return generated.Rules
}

// TestOperatorIsFenced plays a compromised operator: a ServiceAccount holding exactly the
// generated ClusterRole, bound cluster-wide (the chart's binding when watchNamespaces is empty),
// under the chart's fence (jobcontract.OperatorFencePolicy for its user and the configured
// images). It may still do its job (apply the search-identity policy, patch its own CRD, create
// the search identity and Job of a Run), and is refused (403) on a foreign CRD, on any other
// admission policy, on a Job in kube-system, on a Job with another image or ServiceAccount, and
// on ServiceAccounts, Roles and RoleBindings under other names. Reverted (CRD and policy rules
// without resourceNames, no fence), every one of these succeeds.
func TestOperatorIsFenced(t *testing.T) {
	ctx := context.Background()
	admin := mustClient(t)
	ns := testenv.Namespace(t, k8s, "t")
	operator := asOperator(t, ns, "fenced-operator", generatedRules(t))
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	rawOperator, err := client.New(operatorConfig(ns, "fenced-operator"), client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}

	policy, binding := jobcontract.OperatorFencePolicy(jobcontract.FenceOptions{
		Username: "system:serviceaccount:" + ns + ":fenced-operator", Images: []string{cfg.Planner.Image, cfg.Reporter.Image}})
	policy.Name, binding.Name, binding.Spec.PolicyName = "fence-"+ns, "fence-"+ns, "fence-"+ns
	for _, obj := range []client.Object{policy, binding} {
		if err := admin.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = admin.Delete(ctx, binding); _ = admin.Delete(ctx, policy) })

	r := createRun(t, ns, "fenced", nil)
	waitForJob(t, r)
	r = getRun(t, r)
	job := run.BuildJob(r, cfg)
	job.Name = "probe-job"
	// The API server loads policies asynchronously: wait until a forbidden write is refused.
	poll.Eventually(t, 30*time.Second, "the fence refusing a Job in kube-system", func() (bool, error) {
		j := job.DeepCopy()
		j.Namespace, j.OwnerReferences = "kube-system", nil
		err := operator.Create(ctx, j, client.DryRunAll)
		return apierrors.IsForbidden(err), nil
	})

	foreignCRD := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.fence.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "fence.example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}}}},
	}
	crdClient, err := client.New(env.Config, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	if err := crdClient.Create(ctx, foreignCRD); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	label := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"pwned":"true"}}}`))
	badImage := job.DeepCopy()
	badImage.Name = "probe-bad-image"
	badImage.Spec.Template.Spec.Containers[0].Image = "attacker/miner:latest"
	badAccount := job.DeepCopy()
	badAccount.Name = "probe-bad-account"
	badAccount.Spec.Template.Spec.ServiceAccountName = "default"
	attacks := map[string]func() error{
		"patch a foreign CRD": func() error {
			return rawOperator.Patch(ctx, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: foreignCRD.Name}}, label)
		},
		"create an arbitrary admission policy": func() error {
			p, _ := jobcontract.SearchIdentityPolicy()
			p.Name = "attacker-policy"
			return rawOperator.Create(ctx, p)
		},
		"create a Job in kube-system": func() error {
			j := job.DeepCopy()
			j.Namespace, j.OwnerReferences = "kube-system", nil
			return operator.Create(ctx, j)
		},
		"create a Job with another image":          func() error { return operator.Create(ctx, badImage) },
		"create a Job with another ServiceAccount": func() error { return operator.Create(ctx, badAccount) },
		"create a ServiceAccount named otherwise": func() error {
			return operator.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "builder"}})
		},
		"create a RoleBinding named otherwise": func() error {
			return operator.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "admin-for-me"},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: jobcontract.ReporterRole},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "default", Namespace: ns}}})
		},
	}
	for name, attack := range attacks {
		if err := attack(); !apierrors.IsForbidden(err) {
			t.Errorf("%s as the fenced operator: err = %v, want 403 Forbidden", name, err)
		}
	}

	// Its own work still passes.
	if err := rawOperator.Patch(ctx, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "dynamographdeploymentruns.nvidia.com"}},
		client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"fence-test":"`+ns+`"}}}`))); err != nil {
		t.Errorf("the operator patching its own CRD: %v", err)
	}
	if err := admin.Delete(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: jobcontract.SearchIdentityPolicyName}}); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	if err := jobcontract.ApplySearchIdentityPolicy(ctx, rawOperator); err != nil {
		t.Errorf("the operator applying the search-identity policy (creating its binding by name): %v", err)
	}
	sa, rb := run.BuildSearchIdentity(r)
	sa.Name, rb.Name = jobcontract.SearchIdentityPrefix+"probe", jobcontract.SearchIdentityPrefix+"probe"
	for _, obj := range []client.Object{sa, rb, job} {
		if err := operator.Create(ctx, obj); err != nil {
			t.Errorf("the fenced operator creating %T %s: %v", obj, obj.GetName(), err)
		}
	}
}
