package dgdrealizer

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

const testDeployment = `
backendFramework: sglang
components:
- {name: Frontend, type: frontend, podTemplate: {spec: {containers: [{name: main, image: sg:1}]}}}
- {name: W, type: worker, replicas: 2, podTemplate: {spec: {containers: [{name: main, image: sg:1, args: [--model-path, m]}]}}}
`

// frontendStub answers /v1/models with the given model ids, as the Dynamo frontend does.
func frontendStub(t *testing.T, models *[]string) (ip string, port int32) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		body := `{"object":"list","data":[`
		for i, m := range *models {
			if i > 0 {
				body += ","
			}
			body += fmt.Sprintf(`{"id":%q}`, m)
		}
		_, _ = w.Write([]byte(body + "]}"))
	}))
	t.Cleanup(srv.Close)
	host, p, _ := net.SplitHostPort(srv.Listener.Addr().String())
	n, _ := strconv.Atoi(p)
	return host, int32(n) //nolint:gosec // a port
}

type fixture struct {
	c   client.Client
	r   *Reconciler
	key types.NamespacedName
}

func newFixture(t *testing.T, realize bool, port int32) *fixture {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	s.AddKnownTypeWithName(GVK, &unstructured.Unstructured{})
	s.AddKnownTypeWithName(GVK.GroupVersion().WithKind(GVK.Kind+"List"), &unstructured.UnstructuredList{})
	dgd := deploymentFromYAML(t, testDeployment)
	dgd.SetResourceVersion("")
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", Labels: map[string]string{}}}
	if !realize {
		ns.Labels[LabelRealize] = "false"
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(ns, dgd).WithStatusSubresource(dgd).Build()
	cfg := &Config{StateDir: t.TempDir(), ModelDir: "/m", LauncherDir: "/l", AISSystem: "h200_sxm"}
	return &fixture{c: c, key: types.NamespacedName{Namespace: "team", Name: "llama"},
		r: &Reconciler{Client: c, Config: cfg, HTTP: http.DefaultClient, FreePort: func() (int32, error) { return port, nil }}}
}

func (f *fixture) reconcile(t *testing.T) ctrl.Result {
	t.Helper()
	res, err := f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: f.key})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func (f *fixture) pods(t *testing.T) []corev1.Pod {
	t.Helper()
	var l corev1.PodList
	if err := f.c.List(context.Background(), &l, client.InNamespace("team")); err != nil {
		t.Fatal(err)
	}
	return l.Items
}

func (f *fixture) deployment(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	d := &unstructured.Unstructured{}
	d.SetGroupVersionKind(GVK)
	if err := f.c.Get(context.Background(), f.key, d); err != nil {
		t.Fatal(err)
	}
	return d
}

// readiness is the deployment's state and Ready condition.
func readiness(d *unstructured.Unstructured) string {
	state, _, _ := unstructured.NestedString(d.Object, "status", "state")
	conds, _, _ := unstructured.NestedSlice(d.Object, "status", "conditions")
	for _, c := range conds {
		if cm, _ := c.(map[string]any); cm["type"] == "Ready" {
			return fmt.Sprintf("%s Ready=%s %s", state, cm["status"], cm["reason"])
		}
	}
	return state
}

// runAll marks every pod Running at ip, as the node agent would.
func (f *fixture) runAll(t *testing.T, ip string) {
	t.Helper()
	for _, p := range f.pods(t) {
		p.Status.Phase, p.Status.PodIP = corev1.PodRunning, ip
		if err := f.c.Status().Update(context.Background(), &p); err != nil {
			t.Fatal(err)
		}
	}
}

func podNames(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name+"@"+p.Annotations[AnnotationGeneration])
	}
	slices.Sort(out)
	return out
}

// TestReconcileRealizesAndFollowsTheFrontend: pods and the Service are created, the
// deployment is pending until every pod runs and the frontend lists the model, then Ready; the
// port stays the one the Service records; a new generation replaces the pods.
func TestReconcileRealizesAndFollowsTheFrontend(t *testing.T) {
	models := []string{}
	ip, port := frontendStub(t, &models)
	f := newFixture(t, true, port)

	if res := f.reconcile(t); res.RequeueAfter == 0 {
		t.Error("a pending deployment is not polled")
	}
	want := []string{"llama-frontend@3", "llama-w-0@3", "llama-w-1@3"}
	if diff := cmp.Diff(want, podNames(f.pods(t))); diff != "" {
		t.Errorf("pods (-want +got):\n%s", diff)
	}
	if got := readiness(f.deployment(t)); got != "pending Ready=False ComponentsNotReady" {
		t.Errorf("after creating the pods: %s", got)
	}
	f.runAll(t, ip)
	f.reconcile(t)
	if got := readiness(f.deployment(t)); got != "pending Ready=False ComponentsNotReady" {
		t.Errorf("frontend lists no model: %s", got)
	}
	models = []string{"m"}
	f.r.FreePort = func() (int32, error) { return 0, fmt.Errorf("the recorded port must be reused") }
	if res := f.reconcile(t); res.RequeueAfter != 0 {
		t.Errorf("a ready deployment is polled: %+v", res)
	}
	d := f.deployment(t)
	if got := readiness(d); got != "successful Ready=True AllComponentsReady" {
		t.Errorf("frontend lists the model: %s", got)
	}
	if g, _, _ := unstructured.NestedInt64(d.Object, "status", "observedGeneration"); g != 3 {
		t.Errorf("observedGeneration %d, want 3", g)
	}

	// Generation 4: the pods of generation 3 are deleted, then created again.
	d.SetGeneration(4)
	if err := f.c.Update(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	f.reconcile(t)
	if got := podNames(f.pods(t)); len(got) != 0 {
		t.Errorf("pods of generation 3 left: %v", got)
	}
	f.reconcile(t)
	if diff := cmp.Diff([]string{"llama-frontend@4", "llama-w-0@4", "llama-w-1@4"}, podNames(f.pods(t))); diff != "" {
		t.Errorf("pods of generation 4 (-want +got):\n%s", diff)
	}
	if got := readiness(f.deployment(t)); got != "pending Ready=False ComponentsNotReady" {
		t.Errorf("generation 4 before its pods run: %s", got)
	}
}

// TestReconcileLeavesOtherNamespacesAlone: a deployment in a namespace that opts out (a test
// playing the Dynamo operator) gets no pods and no status.
func TestReconcileLeavesOtherNamespacesAlone(t *testing.T) {
	f := newFixture(t, false, 1)
	f.reconcile(t)
	if pods := f.pods(t); len(pods) != 0 {
		t.Errorf("pods created: %v", podNames(pods))
	}
	if _, found, _ := unstructured.NestedMap(f.deployment(t).Object, "status"); found {
		t.Error("status written")
	}
}

// TestReconcileInvalidDeploymentFails: a deployment the realizer cannot map is failed with
// the field path in the Ready condition's message.
func TestReconcileInvalidDeploymentFails(t *testing.T) {
	f := newFixture(t, true, 1)
	d := f.deployment(t)
	_ = unstructured.SetNestedField(d.Object, "tgi", "spec", "backendFramework")
	if err := f.c.Update(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	f.reconcile(t)
	d = f.deployment(t)
	if got := readiness(d); got != "failed Ready=False InvalidDeployment" {
		t.Errorf("state %s", got)
	}
	conds, _, _ := unstructured.NestedSlice(d.Object, "status", "conditions")
	if msg, _ := conds[0].(map[string]any)["message"].(string); msg != `spec.backendFramework: "tgi" is not one of sglang, vllm, trtllm` {
		t.Errorf("message %q", msg)
	}
}
