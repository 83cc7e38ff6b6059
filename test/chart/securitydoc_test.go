package chart_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// Markers of the generated rules' table in docs/operate/security.md.
const (
	rbacDocBegin = "<!-- generated RBAC rules: config/rbac/role.yaml (TestSecurityDocShowsGeneratedRBAC) -->"
	rbacDocEnd   = "<!-- end of generated RBAC rules -->"
)

// rbacDocTable renders the rules of the generated ClusterRole as docs/operate/security.md shows them.
func rbacDocTable(rules []rbacv1.PolicyRule) string {
	code := func(items []string) string {
		if len(items) == 0 {
			return "all"
		}
		out := make([]string, len(items))
		for i, s := range items {
			if s == "" {
				s = "core"
			}
			out[i] = "`" + s + "`"
		}
		return strings.Join(out, ", ")
	}
	var b strings.Builder
	b.WriteString("| API groups | Resources | Verbs | Names |\n|---|---|---|---|\n")
	for _, r := range rules {
		b.WriteString("| " + code(r.APIGroups) + " | " + code(r.Resources) + " | " + code(r.Verbs) + " | " + code(r.ResourceNames) + " |\n")
	}
	return b.String()
}

// TestSecurityDocShowsGeneratedRBAC: the RBAC section of docs/operate/security.md shows the operator's
// rules as generated from the kubebuilder markers (config/rbac/role.yaml, which the chart grants),
// not a hand-written summary that can drift. On a mismatch the test prints the table to paste.
func TestSecurityDocShowsGeneratedRBAC(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(data, &role); err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "operate", "security.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	i, j := strings.Index(text, rbacDocBegin), strings.Index(text, rbacDocEnd)
	if i < 0 || j < i {
		t.Fatalf("docs/operate/security.md has no generated RBAC table between %q and %q", rbacDocBegin, rbacDocEnd)
	}
	got := strings.TrimSpace(text[i+len(rbacDocBegin) : j])
	want := strings.TrimSpace(rbacDocTable(role.Rules))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("docs/operate/security.md's RBAC table differs from config/rbac/role.yaml (-want +got):\n%s\nthe table:\n%s", diff, want)
	}
}
