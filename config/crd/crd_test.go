package crd_test

import (
	"io/fs"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/config/crd"
)

// TestEveryFieldIsDocumented walks every generated CRD schema: each property must carry a
// description, so that `kubectl explain` reads well.
func TestEveryFieldIsDocumented(t *testing.T) {
	files, err := fs.Glob(crd.Files, "bases/*.yaml")
	if err != nil || len(files) != 3 {
		t.Fatalf("want 3 CRDs, got %v (%v)", files, err)
	}
	for _, f := range files {
		data, _ := fs.ReadFile(crd.Files, f)
		c := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, c); err != nil {
			t.Fatal(err)
		}
		for _, v := range c.Spec.Versions {
			var missing []string
			walk(v.Schema.OpenAPIV3Schema, c.Spec.Names.Kind, &missing)
			if len(missing) > 0 {
				t.Errorf("%s %s: fields without a description:\n  %s", c.Spec.Names.Kind, v.Name, strings.Join(missing, "\n  "))
			}
			if v.Schema.OpenAPIV3Schema.Description == "" {
				t.Errorf("%s has no description", c.Spec.Names.Kind)
			}
		}
	}
}

func walk(s *apiextensionsv1.JSONSchemaProps, path string, missing *[]string) {
	for name, p := range s.Properties {
		child := path + "." + name
		if p.Description == "" && !(path == strings.SplitN(path, ".", 2)[0] && name == "metadata") {
			*missing = append(*missing, child)
		}
		walk(&p, child, missing)
	}
	if s.Items != nil && s.Items.Schema != nil {
		walk(s.Items.Schema, path+"[]", missing)
	}
}

// TestRBACNamesOurCRDs: the operator may get, create and patch only its own CRDs (the
// resourceNames of the kubebuilder marker in internal/crdinstall, generated into
// config/rbac/role.yaml and from there into the chart). The names must be exactly those of the
// generated CRDs: a CRD added without its name would not install, a stale name would be a right
// on someone else's CRD.
func TestRBACNamesOurCRDs(t *testing.T) {
	files, err := fs.Glob(crd.Files, "bases/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var ours []string
	for _, f := range files {
		data, _ := fs.ReadFile(crd.Files, f)
		c := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, c); err != nil {
			t.Fatal(err)
		}
		ours = append(ours, c.Name)
	}
	data, err := os.ReadFile("../rbac/role.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(data, &role); err != nil {
		t.Fatal(err)
	}
	var named []string
	for _, r := range role.Rules {
		if !slices.Contains(r.Resources, "customresourcedefinitions") {
			continue
		}
		if slices.ContainsFunc(r.Verbs, func(v string) bool { return v != "list" && v != "watch" }) {
			if len(r.ResourceNames) == 0 {
				t.Errorf("a rule grants %v on every CRD", r.Verbs)
			}
			named = append(named, r.ResourceNames...)
		}
	}
	slices.Sort(ours)
	slices.Sort(named)
	if diff := cmp.Diff(ours, named); diff != "" {
		t.Errorf("CRD names in the generated RBAC (-generated CRDs +RBAC resourceNames):\n%s", diff)
	}
}
