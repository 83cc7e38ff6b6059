package controlplane_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/audit"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/controlplane"
)

// startAPIServer runs the sandbox's etcd and kube-apiserver from bin/ with exactly the
// arguments the sandbox uses, in a fresh state directory, and returns the cluster and an admin
// configuration.
func startAPIServer(t *testing.T) (*controlplane.Cluster, *rest.Config) {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join("..", "..", "..", "bin"))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			t.Fatalf("%s not found in %s: run `make tools` first", b, bin)
		}
	}
	dir := t.TempDir()
	ports, err := controlplane.FreePorts()
	if err != nil {
		t.Fatal(err)
	}
	cl := controlplane.New(bin, dir, ports)
	if err := cl.PKI.Generate(); err != nil {
		t.Fatal(err)
	}
	if err := cl.WriteKubeconfig(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run(t, dir, cl.Etcd())
	if err := cl.WaitEtcd(ctx); err != nil {
		t.Fatal(err)
	}
	run(t, dir, cl.APIServer())
	if err := cl.WaitAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", cl.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	return cl, cfg
}

// run starts p with its output in dir/<name>.log, killed when the test ends.
func run(t *testing.T, dir string, p controlplane.Process) {
	t.Helper()
	log, err := os.Create(filepath.Join(dir, p.Name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(p.Path, p.Args...)
	cmd.Env = append(os.Environ(), p.Env...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = log.Close()
		if t.Failed() {
			b, _ := os.ReadFile(log.Name())
			if len(b) > 4000 {
				b = b[len(b)-4000:]
			}
			t.Logf("end of %s:\n%s", log.Name(), b)
		}
	})
}

// TestAPIServerAuditsTheOperatorNamespace: the sandbox's API server logs the requests of the
// operator namespace's ServiceAccounts, and the audit scan finds exactly the operator's refused
// requests and unsuccessful lists and watches in that log: not its successes, not a 404 on a get,
// not an admin's request impersonating it, not another ServiceAccount's.
func TestAPIServerAuditsTheOperatorNamespace(t *testing.T) {
	cl, admin := startAPIServer(t)
	ctx := context.Background()
	kc := kubernetes.NewForConfigOrDie(admin)
	for _, ns := range []string{controlplane.OperatorNamespace, "tenant"} {
		if _, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	operator := serviceAccountClient(t, kc, admin, controlplane.OperatorNamespace, "dgdr-operator")
	tenant := serviceAccountClient(t, kc, admin, "tenant", "app")
	user := serviceaccount.MakeUsername(controlplane.OperatorNamespace, "dgdr-operator")
	grant(t, kc, controlplane.OperatorNamespace, user, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}})
	grant(t, kc, "tenant", user, rbacv1.PolicyRule{APIGroups: []string{"nvidia.com"}, Resources: []string{"dynamographdeployments"}, Verbs: []string{"list"}})
	// Refused until RBAC's informer has the binding; the scan starts after that (the API
	// server's clock is this one).
	waitAllowed(t, func() error {
		_, err := operator.CoreV1().ConfigMaps(controlplane.OperatorNamespace).List(ctx, metav1.ListOptions{})
		return err
	})
	since := time.Now()
	if _, err := operator.CoreV1().ConfigMaps(controlplane.OperatorNamespace).List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err) // a successful list is no finding
	}
	if _, err := operator.CoreV1().ConfigMaps(controlplane.OperatorNamespace).Get(ctx, "absent", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get of a missing ConfigMap: %v, want NotFound", err) // a 404 get is no finding
	}
	if _, err := operator.CoreV1().Secrets("tenant").Get(ctx, "token", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("get secret: %v, want Forbidden", err)
	}
	if _, err := operator.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("watch pods: %v, want Forbidden", err)
	}
	// Allowed but not served (its CRD is not installed): an informer on it never syncs.
	missing := schema.GroupVersionResource{Group: "nvidia.com", Version: "v1alpha1", Resource: "dynamographdeployments"}
	if _, err := dynamic.NewForConfigOrDie(operatorConfig(t, kc, admin)).Resource(missing).Namespace("tenant").List(ctx, metav1.ListOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("list of a resource the API server does not serve: %v, want NotFound", err)
	}
	// An admin impersonating the operator, and another namespace's ServiceAccount: not the
	// operator's requests, and not even logged.
	impersonating := rest.CopyConfig(admin)
	impersonating.Impersonate = rest.ImpersonationConfig{UserName: user}
	if _, err := kubernetes.NewForConfigOrDie(impersonating).CoreV1().Secrets("tenant").Get(ctx, "impersonated", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("impersonated get: %v, want Forbidden", err)
	}
	if _, err := tenant.CoreV1().Secrets("tenant").Get(ctx, "tenant-secret", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("tenant get: %v, want Forbidden", err)
	}

	log := controlplane.AuditLogPath(cl.StateDir)
	got, err := audit.ScanFile(log, audit.Options{User: user, Since: since})
	if err != nil {
		t.Fatal(err)
	}
	want := []audit.Finding{
		{Verb: "get", Resource: "secrets", Namespace: "tenant", Name: "token", Code: 403,
			Message: `secrets "token" is forbidden: User "` + user + `" cannot get resource "secrets" in API group "" in the namespace "tenant"`},
		{Verb: "watch", Resource: "pods", Code: 403,
			Message: `pods is forbidden: User "` + user + `" cannot watch resource "pods" in API group "" at the cluster scope`},
		{Verb: "list", Group: "nvidia.com", Resource: "dynamographdeployments", Namespace: "tenant", Code: 404},
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(audit.Finding{}, "Time")); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	for _, f := range got {
		if f.Time.Before(since) || f.Time.After(time.Now()) {
			t.Errorf("finding %s: time outside the test", f)
		}
	}

	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	for _, absent := range []string{"impersonated", "tenant-secret", "sandbox-admin"} {
		if strings.Contains(string(data), absent) {
			t.Errorf("the audit log holds %q: only the operator namespace's ServiceAccounts are audited", absent)
		}
	}
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if !strings.Contains(line, `"stage":"ResponseComplete"`) || !strings.Contains(line, `"level":"Metadata"`) {
			t.Errorf("audit log line %d is not a Metadata ResponseComplete event: %s", i+1, line)
		}
	}
}

// TestAPIServerGivesGPUPodsTheGPUToleration: a pod requesting nvidia.com/gpu gets the toleration
// of the GPU nodes' taint from the ExtendedResourceToleration admission plugin.
func TestAPIServerGivesGPUPodsTheGPUToleration(t *testing.T) {
	_, admin := startAPIServer(t)
	ctx := context.Background()
	kc := kubernetes.NewForConfigOrDie(admin)
	if _, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// No controller manager here to create the namespace's default ServiceAccount.
	if _, err := kc.CoreV1().ServiceAccounts("gpu").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := func(name string, gpus int64) *corev1.Pod {
		c := corev1.Container{Name: "main", Image: "busybox"}
		if gpus > 0 {
			c.Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI)}
		}
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}
	}
	gpuToleration := corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	for _, tc := range []struct {
		name string
		gpus int64
		want bool
	}{{"with-gpu", 1, true}, {"without-gpu", 0, false}} {
		created, err := kc.CoreV1().Pods("gpu").Create(ctx, pod(tc.name, tc.gpus), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		has := false
		for _, tol := range created.Spec.Tolerations {
			has = has || cmp.Equal(tol, gpuToleration)
		}
		if has != tc.want {
			t.Errorf("pod %s: has the GPU toleration = %v, want %v (tolerations %+v)", tc.name, has, tc.want, created.Spec.Tolerations)
		}
	}
}

// serviceAccountClient creates the ServiceAccount ns/name and returns a client that
// authenticates with a token of it, as a pod of it would.
func serviceAccountClient(t *testing.T, kc kubernetes.Interface, admin *rest.Config, ns, name string) kubernetes.Interface {
	t.Helper()
	return kubernetes.NewForConfigOrDie(tokenConfig(t, kc, admin, ns, name))
}

func operatorConfig(t *testing.T, kc kubernetes.Interface, admin *rest.Config) *rest.Config {
	return tokenConfig(t, kc, admin, controlplane.OperatorNamespace, "dgdr-operator")
}

func tokenConfig(t *testing.T, kc kubernetes.Interface, admin *rest.Config, ns, name string) *rest.Config {
	t.Helper()
	ctx := context.Background()
	if _, err := kc.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	tr, err := kc.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(admin)
	cfg.BearerToken = tr.Status.Token
	return cfg
}

// grant binds a Role with rule to user in ns.
func grant(t *testing.T, kc kubernetes.Interface, ns, user string, rule rbacv1.PolicyRule) {
	t.Helper()
	ctx := context.Background()
	if _, err := kc.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "granted"}, Rules: []rbacv1.PolicyRule{rule}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kc.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "granted"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "granted"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitAllowed retries call while RBAC's informer has not seen a new binding yet.
func waitAllowed(t *testing.T, call func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := call()
		if err == nil {
			return
		}
		if !apierrors.IsForbidden(err) || time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
