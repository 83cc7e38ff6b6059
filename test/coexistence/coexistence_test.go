// Package coexistence installs dgdr-operator into a cluster where a Dynamo platform already
// serves DynamoGraphDeploymentRequest v1beta1 (issue #15), against a real API server: the Dynamo
// platform's own DGDR CRD (test/crds/upstream/dynamo, copied unchanged from ai-dynamo/dynamo
// fbfa59ff: v1beta1 served and stored, v1alpha1 served) with stored v1beta1 requests exists
// first, among them one using every field where that CRD's v1beta1 schema differs from later
// releases'; then our CRD (v1beta1 storage + v1beta2, conversion webhook) is installed over it
// and the operator (webhooks, conversion, controllers) starts.
package coexistence_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/controller"
	ct "github.com/dgdr-operator/dgdr-operator/internal/controller/controllertest"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/poll"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/upstreamcrd"
	"github.com/dgdr-operator/dgdr-operator/internal/webhook"
)

const (
	ns   = "dynamo"
	wait = 20 * time.Second
)

var (
	env *testenv.Env
	k8s client.Client
	// before holds the pre-existing v1beta1 requests as read before our CRD was installed.
	before []*unstructured.Unstructured
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	var err error
	env, err = testenv.Start(testenv.Options{Webhooks: true, NoProjectCRDs: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the control plane:", err)
		return 1
	}
	defer env.Stop()
	k8s = env.Client
	if err := setup(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// setup plays the history: the Dynamo platform's CRD and requests, then our install.
func setup() error {
	ctx := context.Background()
	if err := installUpstreamCRD(); err != nil {
		return err
	}
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return err
	}
	for _, o := range upstreamRequests() {
		status := o.Object["status"]
		// Strict: every field is one the upstream schema declares (nothing silently pruned).
		if err := k8s.Create(ctx, o, client.FieldValidation(metav1.FieldValidationStrict)); err != nil {
			return fmt.Errorf("creating the v1beta1 request %s on the upstream CRD: %w", o.GetName(), err)
		}
		if status != nil {
			o.Object["status"] = status
			if err := k8s.Status().Update(ctx, o); err != nil {
				return fmt.Errorf("writing the status of %s: %w", o.GetName(), err)
			}
		}
		got := v1beta1Object()
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(o), got); err != nil {
			return err
		}
		before = append(before, got)
	}

	if err := env.InstallProjectCRDs(); err != nil {
		return fmt.Errorf("installing our CRDs over the Dynamo platform's: %w", err)
	}
	cfg := ct.Config()
	// This API server has no GPU Nodes: requests that name no SKU get this one.
	cfg.Defaults.GPUSKU = "h200_sxm"
	mgr, err := ct.NewManager(env, cfg)
	if err != nil {
		return err
	}
	if err := webhook.Setup(mgr, cfg); err != nil {
		return err
	}
	if err := controller.Setup(mgr, cfg); err != nil {
		return err
	}
	_, err = ct.Start(env, mgr)
	return err
}

// installUpstreamCRD installs the Dynamo platform's DGDR CRD exactly as upstream ships it.
func installUpstreamCRD() error {
	crd, err := upstreamcrd.DGDR()
	if err != nil {
		return err
	}
	_, err = envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{crd}})
	return err
}

// upstreamRequests are v1beta1 requests as the Dynamo operator's users write them against the
// upstream CRD (created with strict field validation, so each field is one the upstream schema
// declares); two carry a status as the Dynamo operator writes it. The first two use the fields
// that the upstream CRD and later releases spell alike; the last one (fbfa59ffShape) every field
// where they differ (TestUpstreamOnlyFieldsAndVersionsSurvive).
func upstreamRequests() []*unstructured.Unstructured {
	objs := []string{
		`{"metadata": {"name": "qwen", "labels": {"team": "a"}}, "spec": {"model": "Qwen/Qwen3-0.6B", "backend": "vllm",
		  "workload": {"isl": 3000, "osl": 500}, "sla": {"ttft": 200, "itl": 20.5}, "autoApply": false},
		  "status": {"phase": "Profiling", "profilingPhase": "SweepingDecode", "profilingJobName": "profile-qwen", "observedGeneration": 1,
		  "conditions": [{"type": "Succeeded", "status": "False", "reason": "SweepingDecode", "message": "profiling", "lastTransitionTime": "2026-01-02T03:04:05Z"}]}}`,
		`{"metadata": {"name": "llama"}, "spec": {"model": "meta-llama/Llama-3.1-8B-Instruct", "searchStrategy": "thorough",
		  "image": "nvcr.io/nvidia/ai-dynamo/dynamo-frontend:1.0.0"}}`,
		fbfa59ffShape,
	}
	var out []*unstructured.Unstructured
	for _, s := range objs {
		o := v1beta1Object()
		if err := json.Unmarshal([]byte(s), &o.Object); err != nil {
			panic(err)
		}
		o.SetAPIVersion(v1beta1.GroupVersion.String())
		o.SetKind("DynamoGraphDeploymentRequest")
		o.SetNamespace(ns)
		out = append(out, o)
	}
	return out
}

func v1beta1Object() *unstructured.Unstructured {
	o := &unstructured.Unstructured{}
	o.SetGroupVersionKind(v1beta1.GroupVersion.WithKind("DynamoGraphDeploymentRequest"))
	return o
}

// TestPreExistingRequestsUnchanged: after the install, every v1beta1 request reads back as
// v1beta1 exactly as before (same resourceVersion: nothing wrote it, not the operator, not
// defaulting) and as v1beta2 only through the envelopes, which hold its spec and status verbatim.
func TestPreExistingRequestsUnchanged(t *testing.T) {
	ctx := context.Background()
	for _, want := range before {
		t.Run(want.GetName(), func(t *testing.T) {
			got := v1beta1Object()
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(want), got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want.Object, got.Object); diff != "" {
				t.Errorf("v1beta1 view changed (-before +after):\n%s", diff)
			}

			v2 := &v1beta2.DynamoGraphDeploymentRequest{}
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(want), v2); err != nil {
				t.Fatalf("reading a v1beta1 request as v1beta2: %v", err)
			}
			if !v2.IsV1Beta1Native() {
				t.Fatalf("not envelope-backed: %+v", v2.Spec)
			}
			if diff := cmp.Diff(v1beta2.DynamoGraphDeploymentRequestSpec{V1Beta1: v2.Spec.V1Beta1}, v2.Spec); diff != "" {
				t.Errorf("native v1beta2 fields on a v1beta1 request (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(toMap(t, want.Object["spec"]), decode(t, v2.Spec.V1Beta1)); diff != "" {
				t.Errorf("spec.v1beta1 (-v1beta1 spec +envelope):\n%s", diff)
			}
			if status, ok := want.Object["status"]; ok {
				if diff := cmp.Diff(toMap(t, status), decode(t, v2.Status.V1Beta1)); diff != "" {
					t.Errorf("status.v1beta1 (-v1beta1 status +envelope):\n%s", diff)
				}
			} else if v2.Status.V1Beta1 != nil {
				t.Errorf("status.v1beta1 on a request without status: %s", v2.Status.V1Beta1.Raw)
			}
		})
	}
}

// TestNoRunForV1Beta1Requests: the operator runs (a v1beta2 request gets its Run), but it never
// creates a Run for a v1beta1 request, and it never writes one.
func TestNoRunForV1Beta1Requests(t *testing.T) {
	ctx := context.Background()
	d := builders.Request(ns, "probe").Obj()
	if err := k8s.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, wait, "a Run for the v1beta2 request", func() (bool, error) {
		return len(runs(t, d.Name)) == 1, nil
	})
	for _, o := range before {
		if r := runs(t, o.GetName()); len(r) != 0 {
			t.Errorf("Runs for the v1beta1 request %s: %v", o.GetName(), r)
		}
		got := v1beta1Object()
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(o), got); err != nil {
			t.Fatal(err)
		}
		if got.GetResourceVersion() != o.GetResourceVersion() {
			t.Errorf("%s was written after the install (resourceVersion %s → %s)", o.GetName(), o.GetResourceVersion(), got.GetResourceVersion())
		}
	}
}

func runs(t *testing.T, request string) []string {
	t.Helper()
	var list v1beta2.DynamoGraphDeploymentRunList
	if err := k8s.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabels{v1beta2.LabelRequestName: request}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range list.Items {
		names = append(names, r.Name)
	}
	return names
}

// TestV1Beta2RequestReadsThroughV1Beta1: a v1beta2 request created after the install is
// admitted (defaulted) as always and reads back through v1beta1 with only spec.v1beta2 and
// status.v1beta2, which hold the v1beta2 spec and status verbatim.
func TestV1Beta2RequestReadsThroughV1Beta1(t *testing.T) {
	ctx := context.Background()
	d := builders.Request(ns, "native").TTFT(500).ITL(30).Obj()
	if err := k8s.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	var v2 *v1beta2.DynamoGraphDeploymentRequest
	poll.Eventually(t, wait, "the request accepted", func() (bool, error) {
		v2 = &v1beta2.DynamoGraphDeploymentRequest{}
		err := k8s.Get(ctx, client.ObjectKeyFromObject(d), v2)
		return err == nil && v2.Status.ActiveRunRef != nil, err
	})
	if v2.Spec.Workload == nil || v2.Spec.Recommendation == nil {
		t.Errorf("not defaulted: %+v", v2.Spec)
	}

	v1 := v1beta1Object()
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(d), v1); err != nil {
		t.Fatalf("reading a v1beta2 request as v1beta1: %v", err)
	}
	spec, _ := v1.Object["spec"].(map[string]any)
	if len(spec) != 1 || spec["v1beta2"] == nil {
		t.Errorf("v1beta1 spec: want only v1beta2, got %v", spec)
	}
	status, _ := v1.Object["status"].(map[string]any)
	if len(status) != 1 || status["v1beta2"] == nil {
		t.Errorf("v1beta1 status: want only v1beta2, got %v", status)
	}
	if diff := cmp.Diff(toMap(t, v2.Spec), toMap(t, spec["v1beta2"])); diff != "" {
		t.Errorf("spec.v1beta2 (-v1beta2 spec +envelope):\n%s", diff)
	}
	// The status moves on while the Run progresses: compare with a v1beta2 read of the same
	// resourceVersion.
	same := &v1beta2.DynamoGraphDeploymentRequest{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(d), same); err != nil {
		t.Fatal(err)
	}
	if same.ResourceVersion == v1.GetResourceVersion() {
		if diff := cmp.Diff(toMap(t, same.Status), toMap(t, status["v1beta2"])); diff != "" {
			t.Errorf("status.v1beta2 (-v1beta2 status +envelope):\n%s", diff)
		}
	}
}

// TestV1Beta1WritesNotDefaulted: the Dynamo operator's users keep writing v1beta1; our webhooks
// see those writes (converted to v1beta2) and change nothing, and a v1beta2 client can still
// label such a request.
func TestV1Beta1WritesNotDefaulted(t *testing.T) {
	ctx := context.Background()
	o := upstreamRequests()[1].DeepCopy()
	o.SetName("written-later")
	if err := k8s.Create(ctx, o); err != nil {
		t.Fatal(err)
	}
	got := v1beta1Object()
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(o), got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(o.Object["spec"], got.Object["spec"]); diff != "" {
		t.Errorf("v1beta1 spec as stored (-written +stored):\n%s", diff)
	}
	if _, ok := got.Object["status"]; ok {
		t.Errorf("a status was written: %v", got.Object["status"])
	}

	v2 := &v1beta2.DynamoGraphDeploymentRequest{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(o), v2); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(v2.DeepCopy())
	v2.Labels = map[string]string{"seen-by": "v1beta2"}
	if err := k8s.Patch(ctx, v2, patch); err != nil {
		t.Fatalf("labelling a v1beta1 request through v1beta2: %v", err)
	}
	after := v1beta1Object()
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(o), after); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(got.Object["spec"], after.Object["spec"]); diff != "" {
		t.Errorf("spec changed by a label patch (-before +after):\n%s", diff)
	}
	if after.GetLabels()["seen-by"] != "v1beta2" {
		t.Errorf("labels: %v", after.GetLabels())
	}

	// Turning it into a v1beta2 request is refused: ownership never changes.
	v2 = &v1beta2.DynamoGraphDeploymentRequest{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(o), v2); err != nil {
		t.Fatal(err)
	}
	v2.Spec = v1beta2.DynamoGraphDeploymentRequestSpec{Model: v1beta2.ModelSpec{Name: "m"}}
	if err := k8s.Update(ctx, v2); err == nil {
		t.Errorf("a v1beta1 request became a v1beta2 request")
	}
}

func decode(t *testing.T, j *apiextensionsv1.JSON) any {
	t.Helper()
	if j == nil {
		return nil
	}
	var v any
	if err := json.Unmarshal(j.Raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func toMap(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestKubectlGetShowsBothKinds: `kubectl get dgdr` (the preferred version, v1beta2) lists both
// kinds of request: a v1beta2 request with its model, a v1beta1 request with its v1beta1 model
// and the Dynamo operator's phase, also one with boolean features (the fbfa59ff shape).
func TestKubectlGetShowsBothKinds(t *testing.T) {
	kubectl := filepath.Join(testenv.Root(), "bin", "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		t.Fatal("bin/kubectl missing: run `make tools` (make test builds it)")
	}
	ctx := context.Background()
	d := builders.Request(ns, "listed").Obj()
	if err := k8s.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["t"] = &clientcmdapi.Cluster{Server: env.Config.Host, CertificateAuthorityData: env.Config.CAData}
	cfg.AuthInfos["t"] = &clientcmdapi.AuthInfo{ClientCertificateData: env.Config.CertData, ClientKeyData: env.Config.KeyData}
	cfg.Contexts["t"] = &clientcmdapi.Context{Cluster: "t", AuthInfo: "t", Namespace: ns}
	cfg.CurrentContext = "t"
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(kubectl, "--kubeconfig", kubeconfig, "get", "dgdr").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl get dgdr: %v\n%s", err, out)
	}
	lines := map[string]string{}
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			lines[f[0]] = l
		}
	}
	for name, want := range map[string][]string{
		"NAME":           {"MODEL", "V1BETA1 MODEL", "V1BETA1 PHASE"},
		"listed":         {"meta-llama/Llama-3.1-8B-Instruct"},
		"qwen":           {"Qwen/Qwen3-0.6B", "Profiling"},
		"llama":          {"meta-llama/Llama-3.1-8B-Instruct"},
		"fbfa59ff-shape": {"Qwen/Qwen3-0.6B", "Deployed"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[name], w) {
				t.Errorf("kubectl get dgdr: row %s lacks %q:\n%s", name, w, out)
			}
		}
	}
}
