package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

const root = "../.."

func TestParseMarker(t *testing.T) {
	tests := []struct {
		args    string
		want    rbacv1.PolicyRule
		wantErr string
	}{
		{
			args: `groups="",resources=configmaps;persistentvolumeclaims,verbs=get`,
			want: rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps", "persistentvolumeclaims"}, Verbs: []string{"get"}},
		},
		{
			args: "groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;create;patch,resourceNames=a.nvidia.com;b.nvidia.com",
			want: rbacv1.PolicyRule{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"},
				Verbs: []string{"get", "create", "patch"}, ResourceNames: []string{"a.nvidia.com", "b.nvidia.com"}},
		},
		{args: "groups=,resources=pods,verbs=get,namespace=x", wantErr: `marker argument "namespace": the table knows groups, resources, verbs and resourceNames only`},
		{args: "groups=,resources=pods", wantErr: "marker without resources or verbs"},
		{args: "groups=,resources=pods,verbs", wantErr: `marker argument "verbs": want key=value`},
		{args: "groups=,resources=pods,verbs=get,verbs=list", wantErr: `marker argument "verbs" given twice`},
	}
	for _, tt := range tests {
		got, err := parseMarker(tt.args)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("parseMarker(%q) error = %v, want %q", tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseMarker(%q): %v", tt.args, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("parseMarker(%q) (-want +got):\n%s", tt.args, diff)
		}
	}
}

// writeTree writes files (path relative to the returned root: content).
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestMarkerRights(t *testing.T) {
	pods := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}}
	jobs := rbacv1.PolicyRule{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"create"}}
	events := rbacv1.PolicyRule{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create"}}
	tests := []struct {
		name    string
		files   map[string]string
		want    []right
		wantErr string
	}{
		{
			name: "consecutive markers share the comment above them; a comment after markers starts another",
			files: map[string]string{"internal/a/a.go": `package a

// The search runs as a Job,
// and its pods tell how it ended:
// +kubebuilder:rbac:groups="",resources=pods,verbs=get
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=create
// Events on Runs:
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create

// Reconciler is not about RBAC.
type Reconciler struct{}
`},
			want: []right{
				{PolicyRule: pods, Why: "The search runs as a Job, and its pods tell how it ended", Source: "internal/a/a.go"},
				{PolicyRule: jobs, Why: "The search runs as a Job, and its pods tell how it ended", Source: "internal/a/a.go"},
				{PolicyRule: events, Why: "Events on Runs", Source: "internal/a/a.go"},
			},
		},
		{
			name: "other markers are no comment; tests, testdata and excluded files are not read",
			files: map[string]string{
				"internal/a/a.go": `package a

// Pods of the search:
// +kubebuilder:object:root=true
// +kubebuilder:rbac:groups="",resources=pods,verbs=get
type T struct{}
`,
				"internal/a/a_test.go":       "package a\n\n// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=create\n",
				"internal/a/testdata/x.go":   "package x\n\n// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=create\n",
				"internal/a/tagged.go":       "//go:build e2e\n\npackage a\n\n// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=create\n",
				"cmd/elsewhere/main.go":      "package main\n\n// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=create\n",
				"internal/b/no_markers.go":   "package b\n\n// Just a comment.\nvar X = 1\n",
				"internal/b/doc.txt":         "// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=create\n",
				"internal/b/more/nested.go":  "package more\n\n// Nested packages count:\n// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create\n",
				"internal/b/more/ignored.go": "//go:build ignore\n\npackage main\n\n// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=create\n",
			},
			want: []right{
				{PolicyRule: pods, Why: "Pods of the search", Source: "internal/a/a.go"},
				{PolicyRule: events, Why: "Nested packages count", Source: "internal/b/more/nested.go"},
			},
		},
		{
			name: "every marker without a comment is named",
			files: map[string]string{
				"internal/a/a.go": "package a\n\n// +kubebuilder:rbac:groups=,resources=pods,verbs=get\n\n// +kubebuilder:object:root=true\n// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=create\ntype T struct{}\n",
				"internal/b/b.go": "package b\n\n// Why.\n// +kubebuilder:rbac:groups=,resources=pods,verbs=get\n\n// +kubebuilder:rbac:groups=,resources=pods,verbs=list\n",
			},
			wantErr: "+kubebuilder:rbac markers without a comment above them saying why the operator holds the right: internal/a/a.go:3, internal/a/a.go:6, internal/b/b.go:6",
		},
		{
			name:    "a marker that does not parse is named",
			files:   map[string]string{"internal/a/a.go": "package a\n\n// Why.\n// +kubebuilder:rbac:groups=,resources=pods\n"},
			wantErr: "internal/a/a.go:4: marker without resources or verbs",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := markerRights(writeTree(t, tt.files), "internal")
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("rights (-want +got):\n%s", diff)
			}
		})
	}
}

// rendered is a chart as helm renders it: documents headed by their template.
const rendered = `---
# Source: dgdr-operator/templates/serviceaccount.yaml
apiVersion: v1
kind: ServiceAccount
metadata:
  name: dgdr-operator
  namespace: dgdr-system
---
# Source: dgdr-operator/templates/generated/rbac.yaml
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: dgdr-operator-cluster
rules:
- apiGroups:
  - ""
  resources:
  - nodes
  verbs:
  - list
---
# Source: dgdr-operator/templates/generated/rbac.yaml
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: dgdr-operator
rules:
- apiGroups:
  - ""
  - events.k8s.io
  resources:
  - events
  verbs:
  - create
- apiGroups:
  - batch
  resources:
  - jobs
  verbs:
  - create
---
# Source: dgdr-operator/templates/rbac.yaml
# The role's own comment is not a rule's.
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: dgdr-operator
  namespace: dgdr-system
rules:
  # Leader election:
  # a Lease.
  - apiGroups: [coordination.k8s.io]
    resources: [leases]
    verbs: [get, update]
  # Self-signed certificate mode: its own Secret.
  - apiGroups: [""]
    resources: [secrets]
    resourceNames: [dgdr-operator-webhook-cert]
    verbs: [update]
---
# Source: dgdr-operator/templates/rbac.yaml
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: dgdr-operator
  namespace: dgdr-system
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: dgdr-operator}
subjects:
  - {kind: ServiceAccount, name: dgdr-operator, namespace: dgdr-system}
---
# Source: dgdr-operator/templates/metrics-reader.yaml
# Offered to scrapers, bound to someone else: not the operator's right.
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: dgdr-operator-metrics-reader
rules:
  - nonResourceURLs: [/metrics]
    verbs: [get]
---
# Source: dgdr-operator/templates/metrics-reader.yaml
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: dgdr-operator-metrics-reader
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: dgdr-operator-metrics-reader}
subjects:
  - {kind: ServiceAccount, name: prometheus, namespace: monitoring}
`

func TestChartRights(t *testing.T) {
	got, err := chartRights(strings.NewReader(rendered))
	if err != nil {
		t.Fatal(err)
	}
	want := &chart{
		generated: map[string]string{
			"/nodes":               "ClusterRole `dgdr-operator-cluster`",
			"/events":              "ClusterRole `dgdr-operator`",
			"events.k8s.io/events": "ClusterRole `dgdr-operator`",
			"batch/jobs":           "ClusterRole `dgdr-operator`",
		},
		own: []right{
			{Role: "Role `dgdr-operator` in `dgdr-system`", Why: "Leader election: a Lease.", Source: "charts/dgdr-operator/templates/rbac.yaml",
				PolicyRule: rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "update"}}},
			{Role: "Role `dgdr-operator` in `dgdr-system`", Why: "Self-signed certificate mode: its own Secret.", Source: "charts/dgdr-operator/templates/rbac.yaml",
				PolicyRule: rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"dgdr-operator-webhook-cert"}, Verbs: []string{"update"}}},
		},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(chart{})); diff != "" {
		t.Errorf("chart (-want +got):\n%s", diff)
	}

	for name, tc := range map[string]struct{ input, wantErr string }{
		"a hand-written rule without a comment": {
			input:   strings.Replace(rendered, "  # Self-signed certificate mode: its own Secret.\n", "", 1),
			wantErr: "templates/rbac.yaml, Role `dgdr-operator` in `dgdr-system` rule 2 (secrets): no comment above it saying why the operator holds it",
		},
		"a role without its template": {
			input:   strings.Replace(rendered, "# Source: dgdr-operator/templates/generated/rbac.yaml\n", "", 1),
			wantErr: `rendered chart: ClusterRole dgdr-operator-cluster has no "# Source:" comment`,
		},
		"a rule with an unknown field": {
			input:   strings.Replace(rendered, "    verbs: [get, update]", "    verbs: [get, update]\n    verb: [list]", 1),
			wantErr: "templates/rbac.yaml, Role `dgdr-operator` in `dgdr-system` rule 1: ",
		},
	} {
		if _, err := chartRights(strings.NewReader(tc.input)); err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
			t.Errorf("%s: error = %v, want %q", name, err, tc.wantErr)
		}
	}
}

func TestAssignRoles(t *testing.T) {
	c, err := chartRights(strings.NewReader(rendered))
	if err != nil {
		t.Fatal(err)
	}
	markers := []right{
		{PolicyRule: rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"list"}}, Source: "internal/a.go"},
		{PolicyRule: rbacv1.PolicyRule{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create"}}, Source: "internal/b.go"},
	}
	if err := assignRoles(markers, c); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ClusterRole `dgdr-operator-cluster`", "ClusterRole `dgdr-operator`"}, []string{markers[0].Role, markers[1].Role}); diff != "" {
		t.Errorf("roles (-want +got):\n%s", diff)
	}
	for name, tc := range map[string]struct {
		rule    rbacv1.PolicyRule
		wantErr string
	}{
		"in no role": {rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}},
			"internal/c.go: /pods is in no generated role of the chart (run make manifests)"},
		"in two roles": {rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes", "events"}, Verbs: []string{"get"}},
			"internal/c.go: one marker's resources [nodes events] are in several roles of the chart"},
	} {
		err := assignRoles([]right{{PolicyRule: tc.rule, Source: "internal/c.go"}}, c)
		if err == nil || err.Error() != tc.wantErr {
			t.Errorf("%s: error = %v, want %q", name, err, tc.wantErr)
		}
	}
}

func TestRenderTable(t *testing.T) {
	markers := []right{
		{Role: "ClusterRole `b`", PolicyRule: rbacv1.PolicyRule{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"create", "delete"}}, Why: "The search | its Job", Source: "internal/run.go"},
		{Role: "ClusterRole `b`", PolicyRule: rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}}, Why: "Pods", Source: "internal/run.go"},
		{Role: "ClusterRole `a`", PolicyRule: rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"list"}}, Why: "GPUs", Source: "internal/webhook.go"},
	}
	own := []right{
		{Role: "Role `r` in `ns`", PolicyRule: rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"cert"}, Verbs: []string{"update"}}, Why: "Its Secret.", Source: "charts/c/templates/rbac.yaml"},
		{Role: "Role `r` in `ns`", PolicyRule: rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get"}}, Why: "Leases.", Source: "charts/c/templates/rbac.yaml"},
	}
	want := "| Role | API groups | Resources | Verbs | Names | Why | Declared in |\n|---|---|---|---|---|---|---|\n" +
		"| ClusterRole `a` | `core` | `nodes` | `list` | all | GPUs | `internal/webhook.go` |\n" +
		"| ClusterRole `b` | `core` | `pods` | `get` | all | Pods | `internal/run.go` |\n" +
		"| ClusterRole `b` | `batch` | `jobs` | `create`, `delete` | all | The search \\| its Job | `internal/run.go` |\n" +
		"| Role `r` in `ns` | `core` | `secrets` | `update` | `cert` | Its Secret. | `charts/c/templates/rbac.yaml` |\n" +
		"| Role `r` in `ns` | `coordination.k8s.io` | `leases` | `get` | all | Leases. | `charts/c/templates/rbac.yaml` |\n"
	if diff := cmp.Diff(want, renderTable(markers, own)); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
}

func TestSplice(t *testing.T) {
	doc := "# Security\n\n" + tableBegin + "\nold\n" + tableEnd + "\nafter\n"
	got, err := splice(doc, "| new |\n")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("# Security\n\n"+tableBegin+"\n| new |\n"+tableEnd+"\nafter\n", got); diff != "" {
		t.Errorf("spliced (-want +got):\n%s", diff)
	}
	if _, err := splice(tableEnd+"\n"+tableBegin, "x"); err == nil {
		t.Error("markers in the wrong order were accepted")
	}
}

// grants expands rules into one "group/resource/name verb" string per right they grant ("*"
// for every name).
func grants(rules []rbacv1.PolicyRule) []string {
	seen := map[string]bool{}
	for _, r := range rules {
		names := r.ResourceNames
		if len(names) == 0 {
			names = []string{"*"}
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, n := range names {
					for _, v := range r.Verbs {
						seen[g+"/"+res+"/"+n+" "+v] = true
					}
				}
			}
		}
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestMarkersAreControllerGens: the markers the generator reads grant exactly what controller-gen
// made of them (config/rbac/role.yaml, which the chart grants): the table misses no right and
// invents none.
func TestMarkersAreControllerGens(t *testing.T) {
	markers, err := markerRights(root, "internal")
	if err != nil {
		t.Fatal(err)
	}
	var fromMarkers []rbacv1.PolicyRule
	for _, m := range markers {
		fromMarkers = append(fromMarkers, m.PolicyRule)
	}
	data, err := os.ReadFile(filepath.Join(root, "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(data, &role); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(grants(role.Rules), grants(fromMarkers)); diff != "" {
		t.Errorf("rights (-config/rbac/role.yaml +markers):\n%s", diff)
	}
}

// TestSecurityDocIsCurrent: the table in docs/operate/security.md is what the generator writes
// now from the markers and the chart rendered by bin/helm.
func TestSecurityDocIsCurrent(t *testing.T) {
	helm := filepath.Join(root, "bin", "helm")
	if _, err := os.Stat(helm); err != nil {
		t.Fatalf("%s: %v (make tools builds it)", helm, err)
	}
	table, err := generate(root, "bin/helm")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "operate", "security.md"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := splice(string(doc), table)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, string(doc)); diff != "" {
		t.Errorf("docs/operate/security.md's table of rights is stale; run make rbac-doc (-want +got):\n%s", diff)
	}
}
