// Package chart_test checks the Helm chart with the real helm and kubectl (built into bin/) and
// a real API server.
package chart_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/internal/config"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/golden"
)

var (
	env        *testenv.Env
	kubeconfig string
	root       = testenv.Root()
	chart      = filepath.Join(root, "charts", "dgdr-operator")
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	for _, tool := range []string{"helm", "kubectl"} {
		if _, err := os.Stat(filepath.Join(root, "bin", tool)); err != nil {
			fmt.Fprintf(os.Stderr, "bin/%s missing: run `make tools`\n", tool)
			return 1
		}
	}
	var err error
	// The chart's own CRDs are created by the dry runs, as on a fresh cluster.
	env, err = testenv.Start(testenv.Options{NoProjectCRDs: true, ExtraCRDDirs: []string{filepath.Join(root, "test", "crds", "thirdparty")}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the control plane:", err)
		return 1
	}
	defer env.Stop()
	user, err := env.Env.ControlPlane.AddUser(envtestAdmin(), nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	kc, err := user.KubeConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir, _ := os.MkdirTemp("", "chart-test-")
	defer os.RemoveAll(dir)
	kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, kc, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

func tool(t *testing.T, stdin []byte, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(filepath.Join(root, "bin", name), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir())
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out, stderr.String())
	}
	return out
}

var variants = map[string][]string{
	"default":     {"--set", "featureGates.DGDRV1Beta2=true"},
	"certmanager": {"--set", "featureGates.DGDRV1Beta2=true", "--set", "webhook.certManager.enabled=true", "--set", "metrics.serviceMonitor.enabled=true", "--set", "replicaCount=2"},
	"gate-off":    nil,
	"networkpolicy": {"--set", "featureGates.DGDRV1Beta2=true", "--set", "webhook.networkPolicy.enabled=true",
		"--set", "webhook.networkPolicy.apiServerCIDRs={10.0.0.0/24,192.168.10.5/32}",
		"--set", "webhook.maxRequestBodySize=4Mi", "--set", "webhook.requestReadTimeout=5s"},
	// An example price list: --set keeps 3.50 a string, which the operator reads as a decimal.
	"pricing": {"--set", "featureGates.DGDRV1Beta2=true", "--set", "pricing.currency=USD", "--set", "pricing.pricePerGPUHour.h200_sxm=3.50",
		"--set", "pricing.pricePerGPUHour.a100_sxm=2"},
	// The verification Job's image (spec.deployment.verification).
	"verification": {"--set", "featureGates.DGDRV1Beta2=true", "--set", "verification.image=registry.example/aiperf:0.13.0",
		"--set", "verification.resources.limits.cpu=2", "--set", "verification.nodeSelector.pool=load",
		"--set-json", `verification.tolerations=[{"key":"load","operator":"Exists"}]`, "--set", "verification.priorityClassName=verify"},
	// Every value the operator fence pins, with characters CEL, YAML and Helm each treat
	// specially (quotes, a backslash, braces, spaces, <&>).
	"fence": {"--set", "featureGates.DGDRV1Beta2=true", "--set", "planner.image=registry.example/planner:7",
		"--set-json", `planner.command=["/opt/aisim/bin/aisimulate","recommend","--mode","it's \"fast\""]`,
		"--set-json", `planner.args=["--seed","7","--note","a\\b {x} <&> 'q'"]`,
		"--set-json", `planner.predictCommand=["aisimulate","predict","--quiet"]`,
		"--set", "reporter.image=registry.example/reporter:7", "--set", "verification.image=registry.example/aiperf:0.13.0"},
	// The cluster calibration profile of two trusted namespaces, among the watched ones.
	"calibration": {"--set", "featureGates.DGDRV1Beta2=true", "--set", "watchNamespaces={team-a,team-b,team-c}",
		"--set", "calibration.trustedNamespaces={team-a,team-b}", "--set", "calibration.minObservations=5"},
	// What the released chart sets: the image pinned by digest.
	"pinned": {"--set", "featureGates.DGDRV1Beta2=true", "--set", "image.digest=" + pinnedDigest},
}

var pinnedDigest = "sha256:" + strings.Repeat("0123456789abcdef", 4)

func template(t *testing.T, variant string) []byte {
	t.Helper()
	args := append([]string{"template", "dgdr-operator", chart, "--namespace", "dgdr-system"}, variants[variant]...)
	return tool(t, nil, "helm", args...)
}

func TestLint(t *testing.T) {
	for name, args := range variants {
		t.Run(name, func(t *testing.T) {
			out := tool(t, nil, "helm", append([]string{"lint", "--strict", chart}, args...)...)
			if !strings.Contains(string(out), "0 chart(s) failed") {
				t.Errorf("helm lint:\n%s", out)
			}
		})
	}
}

// TestTemplateGolden pins the rendered chart for default and cert-manager values.
// Regenerate with UPDATE_GOLDEN=true go test ./test/chart.
func TestTemplateGolden(t *testing.T) {
	for _, name := range []string{"default", "certmanager"} {
		t.Run(name, func(t *testing.T) {
			golden.Assert(t, filepath.Join("testdata", name+".yaml"), template(t, name))
		})
	}
}

// TestServerDryRun validates every rendered object with the real API server.
func TestServerDryRun(t *testing.T) {
	tool(t, []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: dgdr-system}\n"), "kubectl", "apply", "-f", "-")
	for _, name := range []string{"default", "certmanager", "gate-off", "networkpolicy", "fence"} {
		t.Run(name, func(t *testing.T) {
			out := tool(t, template(t, name), "kubectl", "apply", "--dry-run=server", "-f", "-")
			if !strings.Contains(string(out), "deployment.apps/dgdr-operator created (server dry run)") {
				t.Errorf("kubectl apply --dry-run=server:\n%s", out)
			}
		})
	}
}

func objects(t *testing.T, rendered []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, doc := range strings.Split(string(rendered), "\n---") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatal(err)
		}
		if m != nil {
			out = append(out, m)
		}
	}
	return out
}

func kinds(objs []map[string]any) map[string]int {
	k := map[string]int{}
	for _, o := range objs {
		k[o["kind"].(string)]++
	}
	return k
}

// TestGate: the chart renders no CRD in either state (the operator installs them, see
// internal/crdinstall); with the gate off no webhook is installed, with it on both webhook
// configurations are. Either way the operator is told where its conversion webhook is.
func TestGate(t *testing.T) {
	off := objects(t, template(t, "gate-off"))
	if k := kinds(off); k["CustomResourceDefinition"] != 0 || k["ValidatingWebhookConfiguration"] != 0 || k["MutatingWebhookConfiguration"] != 0 {
		t.Errorf("gate off renders %v", k)
	}
	on := objects(t, template(t, "default"))
	if k := kinds(on); k["CustomResourceDefinition"] != 0 || k["ValidatingWebhookConfiguration"] != 1 || k["MutatingWebhookConfiguration"] != 1 {
		t.Errorf("gate on renders %v", k)
	}
	for name, objs := range map[string][]map[string]any{"gate-off": off, "default": on} {
		for _, o := range objs {
			if o["kind"] != "ConfigMap" {
				continue
			}
			data, _ := o["data"].(map[string]any)
			cfg, _ := data["config.yaml"].(string)
			if !strings.Contains(cfg, "conversionService:") || !strings.Contains(cfg, "name: dgdr-operator-webhook") {
				t.Errorf("%s: the operator configuration does not install the CRDs with the conversion Service:\n%s", name, cfg)
			}
		}
	}
}

// TestImagePinnedByDigest: with image.digest set (the released chart), the operator container and
// the reporter of every search Job run repository:tag@digest; a value that is not a digest is
// refused by the values schema.
func TestImagePinnedByDigest(t *testing.T) {
	var meta struct {
		AppVersion string `json:"appVersion"`
	}
	chartYAML, err := os.ReadFile(filepath.Join(chart, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(chartYAML, &meta); err != nil {
		t.Fatal(err)
	}
	want := "ghcr.io/dgdr-operator/dgdr-operator:" + meta.AppVersion + "@" + pinnedDigest
	var images []string
	for _, o := range objects(t, template(t, "pinned")) {
		switch o["kind"] {
		case "Deployment":
			var d appsv1.Deployment
			data, _ := yaml.Marshal(o)
			if err := yaml.Unmarshal(data, &d); err != nil {
				t.Fatal(err)
			}
			for _, c := range d.Spec.Template.Spec.Containers {
				images = append(images, "container "+c.Name+" "+c.Image)
			}
		case "ConfigMap":
			data, _ := o["data"].(map[string]any)
			var cfg struct {
				Reporter struct {
					Image string `json:"image"`
				} `json:"reporter"`
			}
			if err := yaml.Unmarshal([]byte(data["config.yaml"].(string)), &cfg); err != nil {
				t.Fatal(err)
			}
			images = append(images, "reporter "+cfg.Reporter.Image)
		}
	}
	slices.Sort(images)
	if diff := cmp.Diff([]string{"container manager " + want, "reporter " + want}, images); diff != "" {
		t.Errorf("images (-want +got):\n%s", diff)
	}
	cmd := exec.Command(filepath.Join(root, "bin", "helm"), "template", "dgdr-operator", chart, "--set", "image.digest=latest")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "digest") {
		t.Errorf("image.digest=latest rendered (%v):\n%s", err, out)
	}
}

// TestOperatorConfigDecodes: the configuration the chart renders from values is accepted by the
// operator's strict decoder, in every variant.
func TestOperatorConfigDecodes(t *testing.T) {
	for name := range variants {
		t.Run(name, func(t *testing.T) {
			for _, o := range objects(t, template(t, name)) {
				if o["kind"] != "ConfigMap" {
					continue
				}
				data, _ := yaml.Marshal(o)
				cm := &corev1.ConfigMap{}
				if err := yaml.Unmarshal(data, cm); err != nil {
					t.Fatal(err)
				}
				t.Setenv("POD_NAMESPACE", "dgdr-system")
				cfg, err := config.Decode([]byte(cm.Data["config.yaml"]))
				if err != nil {
					t.Fatalf("the operator rejects the chart's configuration: %v\n%s", err, cm.Data["config.yaml"])
				}
				selfSigned := cfg.Webhook.SelfSignedCertificates != nil
				if wantSelf := name != "certmanager"; selfSigned != wantSelf {
					t.Errorf("self-signed certificates = %v, want %v", selfSigned, wantSelf)
				}
				wantPricing := map[string]*v1alpha1.PricingConfig{"pricing": {Currency: "USD", PricePerGPUHour: map[string]v1alpha1.Decimal{"h200_sxm": "3.50", "a100_sxm": "2"}}}[name]
				if diff := cmp.Diff(wantPricing, cfg.Pricing); diff != "" {
					t.Errorf("pricing (-want +got):\n%s", diff)
				}
				if wantImage := map[string]string{"verification": "registry.example/aiperf:0.13.0", "fence": "registry.example/aiperf:0.13.0"}[name]; cfg.Verification.Image != wantImage {
					t.Errorf("verification.image %q, want %q", cfg.Verification.Image, wantImage)
				}
				wantCalibration := v1alpha1.CalibrationConfig{MinObservations: ptr.To[int32](3)}
				if name == "calibration" {
					wantCalibration = v1alpha1.CalibrationConfig{TrustedNamespaces: []string{"team-a", "team-b"}, MinObservations: ptr.To[int32](5)}
				}
				if diff := cmp.Diff(wantCalibration, cfg.Calibration); diff != "" {
					t.Errorf("calibration (-want +got):\n%s", diff)
				}
				if name == "verification" {
					want := v1alpha1.VerificationConfig{Image: "registry.example/aiperf:0.13.0", ImagePullPolicy: corev1.PullIfNotPresent,
						Resources:    corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}},
						NodeSelector: map[string]string{"pool": "load"}, PriorityClassName: "verify",
						Tolerations: []corev1.Toleration{{Key: "load", Operator: corev1.TolerationOpExists}}}
					if diff := cmp.Diff(want, cfg.Verification); diff != "" {
						t.Errorf("verification (-want +got):\n%s", diff)
					}
				}
				if name == "certmanager" && !cfg.LeaderElection.Enabled {
					t.Errorf("replicaCount 2 must enable leader election")
				}
				return
			}
			t.Fatal("no ConfigMap rendered")
		})
	}
}

// TestRBACMatchesControllerGen: the chart's two ClusterRoles (cluster-scoped and namespaced
// rules) hold exactly the rules controller-gen generated into config/rbac.
func TestRBACMatchesControllerGen(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := &rbacv1.ClusterRole{}
	if err := yaml.Unmarshal(data, want); err != nil {
		t.Fatal(err)
	}
	roles := clusterRoles(t, objects(t, template(t, "default")))
	for _, name := range []string{"dgdr-operator", "dgdr-operator-cluster"} {
		if roles[name] == nil {
			t.Fatalf("no ClusterRole %s rendered", name)
		}
	}
	got := append(slices.Clone(roles["dgdr-operator-cluster"].Rules), roles["dgdr-operator"].Rules...)
	sortRules := func(rules []rbacv1.PolicyRule) {
		slices.SortFunc(rules, func(a, b rbacv1.PolicyRule) int {
			return strings.Compare(fmt.Sprint(a.APIGroups, a.Resources, a.ResourceNames), fmt.Sprint(b.APIGroups, b.Resources, b.ResourceNames))
		})
	}
	sortRules(got)
	sortRules(want.Rules)
	if diff := cmp.Diff(want.Rules, got); diff != "" {
		t.Errorf("chart RBAC differs from config/rbac (-controller-gen +chart):\n%s", diff)
	}
}

func clusterRoles(t *testing.T, objs []map[string]any) map[string]*rbacv1.ClusterRole {
	t.Helper()
	out := map[string]*rbacv1.ClusterRole{}
	for _, o := range objs {
		if o["kind"] != "ClusterRole" {
			continue
		}
		b, _ := yaml.Marshal(o)
		r := &rbacv1.ClusterRole{}
		if err := yaml.Unmarshal(b, r); err != nil {
			t.Fatal(err)
		}
		out[r.Name] = r
	}
	return out
}

// TestWatchNamespacesGrantNothingElsewhere: with watchNamespaces, the namespaced rules are bound
// only in those namespaces (RoleBindings), never cluster-wide; only the cluster-scoped rules
// (which name no namespaced resource) keep a ClusterRoleBinding; kube-system cannot be watched.
func TestWatchNamespacesGrantNothingElsewhere(t *testing.T) {
	args := []string{"template", "dgdr-operator", chart, "--namespace", "dgdr-system",
		"--set", "featureGates.DGDRV1Beta2=true", "--set", "watchNamespaces={team-a,team-b}"}
	objs := objects(t, tool(t, nil, "helm", args...))
	roles := clusterRoles(t, objs)
	bound := map[string][]string{} // ClusterRole -> where it is bound
	for _, o := range objs {
		meta, _ := o["metadata"].(map[string]any)
		ref, _ := o["roleRef"].(map[string]any)
		switch o["kind"] {
		case "ClusterRoleBinding":
			bound[ref["name"].(string)] = append(bound[ref["name"].(string)], "cluster-wide")
		case "RoleBinding":
			if ref["kind"] == "ClusterRole" {
				bound[ref["name"].(string)] = append(bound[ref["name"].(string)], meta["namespace"].(string))
			}
		}
	}
	// The webhook-ca ClusterRole names only the operator's own webhook configurations and the
	// request CRD (self-signed certificate mode).
	want := map[string][]string{"dgdr-operator": {"team-a", "team-b"}, "dgdr-operator-cluster": {"cluster-wide"}, "dgdr-operator-webhook-ca": {"cluster-wide"}}
	if diff := cmp.Diff(want, bound); diff != "" {
		t.Errorf("ClusterRole bindings (-want +got):\n%s", diff)
	}
	for _, rule := range roles["dgdr-operator-cluster"].Rules {
		for _, res := range rule.Resources {
			if !slices.Contains([]string{"nodes", "customresourcedefinitions", "validatingadmissionpolicies", "validatingadmissionpolicybindings", "subjectaccessreviews", "tokenreviews"}, res) {
				t.Errorf("the cluster-wide ClusterRole grants namespaced %s", res)
			}
		}
	}
	for _, ns := range []string{"kube-system", "kube-public"} {
		cmd := exec.Command(filepath.Join(root, "bin", "helm"), "template", "dgdr-operator", chart, "--set", "watchNamespaces={"+ns+"}")
		cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir())
		if out, err := cmd.CombinedOutput(); err == nil {
			t.Errorf("watchNamespaces={%s} rendered; want a values schema error", ns)
		} else if !strings.Contains(string(out), "watchNamespaces") {
			t.Errorf("watchNamespaces={%s}: the error does not name the field:\n%s", ns, out)
		}
	}
}

// TestTrustedNamespacesSchema: calibration.trustedNamespaces holds namespace names, each once:
// anything else is a values schema error naming the field.
func TestTrustedNamespacesSchema(t *testing.T) {
	for _, value := range []string{`["Team_A"]`, `["team-a","team-a"]`, `"team-a"`} {
		cmd := exec.Command(filepath.Join(root, "bin", "helm"), "template", "dgdr-operator", chart, "--set-json", "calibration.trustedNamespaces="+value)
		cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir())
		if out, err := cmd.CombinedOutput(); err == nil {
			t.Errorf("calibration.trustedNamespaces=%s rendered; want a values schema error", value)
		} else if !strings.Contains(string(out), "trustedNamespaces") {
			t.Errorf("calibration.trustedNamespaces=%s: the error does not name the field:\n%s", value, out)
		}
	}
}

// TestPodDisruptionBudget: the default two replicas get a PodDisruptionBudget that keeps one
// serving admission; a single replica gets none (it could never be drained).
func TestPodDisruptionBudget(t *testing.T) {
	if k := kinds(objects(t, template(t, "default"))); k["PodDisruptionBudget"] != 1 || k["Deployment"] != 1 {
		t.Errorf("default values render %v, want one PodDisruptionBudget", k)
	}
	args := []string{"template", "dgdr-operator", chart, "--namespace", "dgdr-system", "--set", "replicaCount=1"}
	if k := kinds(objects(t, tool(t, nil, "helm", args...))); k["PodDisruptionBudget"] != 0 {
		t.Errorf("replicaCount=1 renders %v, want no PodDisruptionBudget", k)
	}
}

// TestNetworkPolicy: by default no NetworkPolicy is rendered (the chart cannot know the API
// server's addresses). Enabled, it selects exactly the operator's pods and admits to the webhook
// port only the given CIDRs, while metrics and health stay open; the webhook limits reach the
// operator configuration. Enabled without any peer it refuses to render rather than cut the API
// server off.
func TestNetworkPolicy(t *testing.T) {
	if k := kinds(objects(t, template(t, "default"))); k["NetworkPolicy"] != 0 {
		t.Errorf("default values render %v, want no NetworkPolicy", k)
	}
	var policy *networkingv1.NetworkPolicy
	var deploy *appsv1.Deployment
	var cfgDoc string
	for _, o := range objects(t, template(t, "networkpolicy")) {
		data, _ := yaml.Marshal(o)
		switch o["kind"] {
		case "NetworkPolicy":
			policy = &networkingv1.NetworkPolicy{}
			if err := yaml.UnmarshalStrict(data, policy); err != nil {
				t.Fatal(err)
			}
		case "Deployment":
			deploy = &appsv1.Deployment{}
			if err := yaml.Unmarshal(data, deploy); err != nil {
				t.Fatal(err)
			}
		case "ConfigMap":
			cm := &corev1.ConfigMap{}
			if err := yaml.Unmarshal(data, cm); err != nil {
				t.Fatal(err)
			}
			cfgDoc = cm.Data["config.yaml"]
		}
	}
	if policy == nil || deploy == nil {
		t.Fatalf("networkpolicy values render no NetworkPolicy or no Deployment")
	}
	if diff := cmp.Diff(deploy.Spec.Selector.MatchLabels, policy.Spec.PodSelector.MatchLabels); diff != "" {
		t.Errorf("the policy's pod selector is not the Deployment's (-deployment +policy):\n%s", diff)
	}
	tcp := corev1.ProtocolTCP
	port := func(name string) networkingv1.NetworkPolicyPort {
		return networkingv1.NetworkPolicyPort{Protocol: &tcp, Port: &intstr.IntOrString{Type: intstr.String, StrVal: name}}
	}
	want := networkingv1.NetworkPolicySpec{
		PodSelector: policy.Spec.PodSelector,
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		Ingress: []networkingv1.NetworkPolicyIngressRule{
			{Ports: []networkingv1.NetworkPolicyPort{port("webhook")}, From: []networkingv1.NetworkPolicyPeer{
				{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/24"}}, {IPBlock: &networkingv1.IPBlock{CIDR: "192.168.10.5/32"}}}},
			{Ports: []networkingv1.NetworkPolicyPort{port("metrics"), port("health")}},
		},
	}
	if diff := cmp.Diff(want, policy.Spec); diff != "" {
		t.Errorf("NetworkPolicy spec (-want +got):\n%s", diff)
	}
	t.Setenv("POD_NAMESPACE", "dgdr-system")
	cfg, err := config.Decode([]byte(cfgDoc))
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%s %s", cfg.Webhook.MaxRequestBodySize, cfg.Webhook.RequestReadTimeout.Duration); got != "4Mi 5s" {
		t.Errorf("webhook limits in the configuration: %s, want 4Mi 5s", got)
	}
	cmd := exec.Command(filepath.Join(root, "bin", "helm"), "template", "dgdr-operator", chart, "--namespace", "dgdr-system",
		"--set", "webhook.networkPolicy.enabled=true")
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "webhook.networkPolicy.apiServerCIDRs") {
		t.Errorf("enabled without peers: want a render error naming webhook.networkPolicy.apiServerCIDRs, got %v:\n%s", err, out)
	}
}

// TestServiceAccount: the operator's cluster RBAC is bound to its own ServiceAccount. With
// serviceAccount.create=false the chart binds (and runs as) serviceAccount.name; without a name,
// or with the namespace's default ServiceAccount, which every pod without one of its own runs
// as, it refuses to render, naming the value. Otherwise those pods would hold the operator's
// rights.
func TestServiceAccount(t *testing.T) {
	base := []string{"template", "dgdr-operator", chart, "--namespace", "dgdr-system", "--set", "featureGates.DGDRV1Beta2=true"}
	for name, c := range map[string]struct {
		args   []string
		wantIn string
	}{
		"create=false without a name": {[]string{"--set", "serviceAccount.create=false"}, "serviceAccount.create=false needs serviceAccount.name"},
		"the default ServiceAccount":  {[]string{"--set", "serviceAccount.create=false", "--set", "serviceAccount.name=default"}, "serviceAccount.name=default is refused"},
		"created under default":       {[]string{"--set", "serviceAccount.name=default"}, "serviceAccount.name=default is refused"},
	} {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(filepath.Join(root, "bin", "helm"), append(base, c.args...)...)
			if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), c.wantIn) {
				t.Errorf("rendered (%v), want a refusal naming %q:\n%.2000s", err, c.wantIn, out)
			}
		})
	}
	var subjects []string
	for _, o := range objects(t, tool(t, nil, "helm", append(base, "--set", "serviceAccount.create=false", "--set", "serviceAccount.name=ops")...)) {
		data, _ := yaml.Marshal(o)
		switch o["kind"] {
		case "ServiceAccount":
			t.Errorf("create=false renders a ServiceAccount: %v", o["metadata"])
		case "ClusterRoleBinding", "RoleBinding":
			var b rbacv1.RoleBinding
			if err := yaml.Unmarshal(data, &b); err != nil {
				t.Fatal(err)
			}
			for _, s := range b.Subjects {
				subjects = append(subjects, s.Kind+" "+s.Namespace+"/"+s.Name)
			}
		case "Deployment":
			var d appsv1.Deployment
			if err := yaml.Unmarshal(data, &d); err != nil {
				t.Fatal(err)
			}
			if sa := d.Spec.Template.Spec.ServiceAccountName; sa != "ops" {
				t.Errorf("the operator runs as %q, want ops", sa)
			}
		}
	}
	if len(subjects) == 0 {
		t.Fatal("no binding rendered")
	}
	for _, s := range subjects {
		if s != "ServiceAccount dgdr-system/ops" {
			t.Errorf("a binding's subject is %s, want ServiceAccount dgdr-system/ops", s)
		}
	}
}

// TestMetricsReaders: the chart offers scrapers the ClusterRole <fullname>-metrics-reader, which
// allows get on /metrics and nothing else, binds it only to metrics.readers (nobody by default,
// never the operator), and its ServiceMonitor scrapes over HTTPS with Prometheus' token.
func TestMetricsReaders(t *testing.T) {
	render := func(args ...string) (map[string]*rbacv1.ClusterRole, []rbacv1.ClusterRoleBinding, []map[string]any) {
		objs := objects(t, tool(t, nil, "helm", append([]string{"template", "dgdr-operator", chart, "--namespace", "dgdr-system",
			"--set", "featureGates.DGDRV1Beta2=true"}, args...)...))
		var bindings []rbacv1.ClusterRoleBinding
		for _, o := range objs {
			if o["kind"] == "ClusterRoleBinding" {
				data, _ := yaml.Marshal(o)
				var b rbacv1.ClusterRoleBinding
				if err := yaml.Unmarshal(data, &b); err != nil {
					t.Fatal(err)
				}
				bindings = append(bindings, b)
			}
		}
		return clusterRoles(t, objs), bindings, objs
	}
	const reader = "dgdr-operator-metrics-reader"
	roles, bindings, _ := render()
	want := []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}
	if r := roles[reader]; r == nil || !cmp.Equal(want, r.Rules) {
		t.Fatalf("ClusterRole %s: %+v, want only get on /metrics", reader, r)
	}
	for _, b := range bindings {
		if b.RoleRef.Name == reader {
			t.Errorf("by default ClusterRoleBinding %s grants %s to %v", b.Name, reader, b.Subjects)
		}
	}
	_, bindings, objs := render("--set-json", `metrics.readers=[{"kind":"ServiceAccount","name":"prometheus-k8s","namespace":"monitoring"}]`,
		"--set", "metrics.serviceMonitor.enabled=true")
	var subjects []rbacv1.Subject
	for _, b := range bindings {
		if b.RoleRef.Name == reader {
			subjects = append(subjects, b.Subjects...)
		}
	}
	if diff := cmp.Diff([]rbacv1.Subject{{Kind: "ServiceAccount", Name: "prometheus-k8s", Namespace: "monitoring"}}, subjects); diff != "" {
		t.Errorf("metrics.readers bound (-want +got):\n%s", diff)
	}
	for _, o := range objs {
		if o["kind"] != "ServiceMonitor" {
			continue
		}
		endpoints, _ := o["spec"].(map[string]any)["endpoints"].([]any)
		if len(endpoints) != 1 {
			t.Fatalf("ServiceMonitor endpoints %v", endpoints)
		}
		e := endpoints[0].(map[string]any)
		if e["scheme"] != "https" || e["bearerTokenFile"] != "/var/run/secrets/kubernetes.io/serviceaccount/token" {
			t.Errorf("the ServiceMonitor scrapes %v, want https with Prometheus' ServiceAccount token", e)
		}
	}
	cmd := exec.Command(filepath.Join(root, "bin", "helm"), "template", "dgdr-operator", chart, "--set-json", `metrics.readers=[{"kind":"ServiceAccount","name":"p"}]`)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "needs its namespace") {
		t.Errorf("a ServiceAccount reader without a namespace rendered (%v):\n%.1000s", err, out)
	}
}
