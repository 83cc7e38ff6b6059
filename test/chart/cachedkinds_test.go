package chart_test

import (
	"context"
	"io/fs"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/config/crd"
	"github.com/dgdr-operator/dgdr-operator/internal/calibration"
	"github.com/dgdr-operator/dgdr-operator/internal/controller"
	"github.com/dgdr-operator/dgdr-operator/internal/scheme"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/poll"
)

// TestChartRBACCoversTheOperatorsReads installs the chart's RBAC (with and without
// watchNamespaces) and asks the API server's authorizer, as the chart's ServiceAccount, for what
// the operator needs beyond its controllers' writes:
//   - list and watch of every kind its cache holds (controller.CacheOptions), where it caches it
//     (each watched namespace, or every namespace; cluster-wide for cluster-scoped kinds). An
//     informer the RBAC does not allow never syncs, and a read through it blocks for good;
//   - the calibration profile of every namespace it reconciles (each watched namespace, or any
//     namespace): get (Load, Record), create and update of its ConfigMap (Record), and nothing in
//     the release namespace when it is not watched: no profile is kept there any more.
func TestChartRBACCoversTheOperatorsReads(t *testing.T) {
	for _, tc := range []struct {
		release string
		watch   []string
	}{
		{release: "rbac-all"},
		{release: "rbac-watched", watch: []string{"rbac-team-a", "rbac-team-b"}},
	} {
		t.Run(tc.release, func(t *testing.T) {
			ns := tc.release + "-system"
			args := []string{"template", tc.release, chart, "--namespace", ns, "--set", "featureGates.DGDRV1Beta2=true"}
			if len(tc.watch) > 0 {
				args = append(args, "--set", "watchNamespaces={"+strings.Join(tc.watch, ",")+"}")
			}
			var rbac []string
			for _, o := range objects(t, tool(t, nil, "helm", args...)) {
				switch o["kind"] {
				case "ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding":
					b, err := yaml.Marshal(o)
					if err != nil {
						t.Fatal(err)
					}
					rbac = append(rbac, string(b))
				}
			}
			for _, n := range append([]string{ns}, tc.watch...) {
				tool(t, []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: "+n+"}\n"), "kubectl", "apply", "-f", "-")
			}
			tool(t, []byte(strings.Join(rbac, "---\n")), "kubectl", "apply", "-f", "-")
			operator := "system:serviceaccount:" + ns + ":" + tc.release + "-dgdr-operator"

			cfg := &v1alpha1.OperatorConfiguration{Namespaces: tc.watch}
			for obj := range controller.CacheOptions(cfg).ByObject {
				gvk, err := apiutil.GVKForObject(obj, scheme.Scheme)
				if err != nil {
					t.Fatal(err)
				}
				resource, _ := meta.UnsafeGuessKindToResource(gvk)
				where := []string{""}
				if namespaced(t, gvk) && len(tc.watch) > 0 {
					where = tc.watch
				}
				for _, n := range where {
					for _, verb := range []string{"list", "watch"} {
						allowed(t, operator, authorizationv1.ResourceAttributes{Namespace: n, Verb: verb, Group: gvk.Group, Resource: resource.Resource})
					}
				}
			}
			profiles := tc.watch
			if len(profiles) == 0 {
				profiles = []string{"rbac-any-tenant"}
			}
			for _, n := range profiles {
				for _, verb := range []string{"get", "create"} {
					allowed(t, operator, authorizationv1.ResourceAttributes{Namespace: n, Verb: verb, Resource: "configmaps"})
				}
				allowed(t, operator, authorizationv1.ResourceAttributes{Namespace: n, Verb: "update", Resource: "configmaps", Name: calibration.ConfigMapName})
				denied(t, operator, authorizationv1.ResourceAttributes{Namespace: n, Verb: "update", Resource: "configmaps", Name: "tenant-settings"})
			}
			if len(tc.watch) > 0 {
				denied(t, operator, authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "configmaps"})
			}
		})
	}
}

// namespaced tells whether gvk is namespaced: the project's kinds from their CRDs (this API
// server does not serve them), the others from the API server's discovery.
func namespaced(t *testing.T, gvk schema.GroupVersionKind) bool {
	t.Helper()
	files, err := fs.Glob(crd.Files, "bases/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		data, err := fs.ReadFile(crd.Files, f)
		if err != nil {
			t.Fatal(err)
		}
		var c apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(data, &c); err != nil {
			t.Fatal(err)
		}
		if c.Spec.Group == gvk.Group && c.Spec.Names.Kind == gvk.Kind {
			return c.Spec.Scope == apiextensionsv1.NamespaceScoped
		}
	}
	ok, err := apiutil.IsGVKNamespaced(gvk, env.Client.RESTMapper())
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// allowed waits until the authorizer allows user what attrs ask (RBAC learns new bindings from
// an informer), failing the test if it never does.
func allowed(t *testing.T, user string, attrs authorizationv1.ResourceAttributes) {
	t.Helper()
	what := attrs.Verb + " " + attrs.Resource + "." + attrs.Group + " " + attrs.Name + " in namespace " + attrs.Namespace
	poll.Eventually(t, 10*time.Second, user+" may "+what, func() (bool, error) {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: []string{"system:serviceaccounts", "system:authenticated"}, ResourceAttributes: &attrs}}
		if err := env.Client.Create(context.Background(), sar); err != nil {
			return false, err
		}
		return sar.Status.Allowed, nil
	})
}

// denied checks, once the authorizer allows what the test expects (allowed has waited for the
// bindings), that it does not allow user what attrs ask.
func denied(t *testing.T, user string, attrs authorizationv1.ResourceAttributes) {
	t.Helper()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user, Groups: []string{"system:serviceaccounts", "system:authenticated"}, ResourceAttributes: &attrs}}
	if err := env.Client.Create(context.Background(), sar); err != nil {
		t.Fatal(err)
	}
	if sar.Status.Allowed {
		t.Errorf("%s may %s %s %s in namespace %s", user, attrs.Verb, attrs.Resource, attrs.Name, attrs.Namespace)
	}
}
