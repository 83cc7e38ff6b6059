//go:build e2e

package e2e

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

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	runctl "github.com/dgdr-operator/dgdr-operator/internal/controller/run"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
)

// deployableRequest is fastRequest with a token Secret, a model cache claim, trusted remote
// code, the KV router, the SLA Planner and worker overrides (issue #13).
const deployableRequest = `
apiVersion: nvidia.com/v1beta2
kind: DynamoGraphDeploymentRequest
metadata:
  name: %s
spec:
  model:
    name: meta-llama/Llama-3.1-8B-Instruct
    remoteCode: AlwaysTrust
    tokenSecretRef: {name: hf-token}
    cache:
      pvc: {claimName: model-cache, path: hf}
  backends: [vllm]
  hardware:
    gpu:
      budget: 8
  sla: {ttftMs: 2000, itlMs: 100}
  deployment:
    router: {mode: KV}
    planner: {enabled: true}
    podTemplateOverrides:
      workers:
        spec:
          tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
          containers: [{name: main, env: [{name: NCCL_DEBUG, value: WARN}]}]
  aisimulate:
    inputOverrides:
      optimizer:
        max_trials: 32
`

// TestDeployableCandidatePromoted: a request with a token Secret, a model cache claim, remoteCode
// AlwaysTrust, the KV router, the Planner and worker overrides runs to Succeeded (the search
// container got HF_TOKEN from the Secret and the cache claim read-only), and dgdrctl promote
// creates a DynamoGraphDeployment carrying all of them.
func TestDeployableCandidatePromoted(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	secret := &corev1.Secret{}
	secret.Name, secret.Namespace = "hf-token", ns
	secret.StringData = map[string]string{"HF_TOKEN": "hf_not_a_real_token"}
	if err := k8s.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	createCacheClaim(t, ns, "model-cache")
	d := env.CreateRequest(t, ns, fmt.Sprintf(deployableRequest, "deployable"))
	r := waitRequestDone(t, ns, d.Name)
	requireSucceededWithCandidates(t, r)

	// The search container read the token from the Secret, never as a value.
	var jobs unstructured.UnstructuredList
	jobs.SetGroupVersionKind(schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "JobList"})
	if err := k8s.List(ctx, &jobs, client.InNamespace(ns), client.MatchingLabels{runctl.LabelComponent: "search"}); err != nil || len(jobs.Items) == 0 {
		t.Fatalf("listing search Jobs: %v (%d)", err, len(jobs.Items))
	}
	containers, _, _ := unstructured.NestedSlice(jobs.Items[0].Object, "spec", "template", "spec", "containers")
	found := false
	for _, c := range containers {
		m := c.(map[string]any)
		if m["name"] != jobcontract.SearchContainer {
			continue
		}
		data, _ := json.Marshal(m["env"])
		found = strings.Contains(string(data), `{"name":"HF_TOKEN","valueFrom":{"secretKeyRef":{"key":"HF_TOKEN","name":"hf-token"}}}`)
	}
	if !found {
		t.Errorf("the search container has no HF_TOKEN from the Secret: %v", containers)
	}
	podVolumes, _, _ := unstructured.NestedSlice(jobs.Items[0].Object, "spec", "template", "spec", "volumes")
	if data, _ := json.Marshal(podVolumes); !strings.Contains(string(data), `"persistentVolumeClaim":{"claimName":"model-cache","readOnly":true}`) {
		t.Errorf("the search pod does not mount the cache claim read-only: %s", data)
	}

	best := r.Status.CandidateRefs[0].Name
	out, err := exec.Command(filepath.Join(root, "bin", "dgdrctl"), "promote", best, "--name", "llama-deployable", "-n", ns, "--kubeconfig", kubeconfig).CombinedOutput()
	if err != nil {
		t.Fatalf("dgdrctl promote: %v\n%s", err, out)
	}
	dgd := &unstructured.Unstructured{}
	dgd.SetGroupVersionKind(schema.GroupVersionKind{Group: "nvidia.com", Version: "v1beta1", Kind: "DynamoGraphDeployment"})
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "llama-deployable"}, dgd); err != nil {
		t.Fatalf("the promoted DynamoGraphDeployment: %v (dgdrctl said: %s)", err, out)
	}
	comps, _, _ := unstructured.NestedSlice(dgd.Object, "spec", "components")
	if len(comps) < 3 {
		t.Fatalf("the promoted DynamoGraphDeployment has %d components", len(comps))
	}
	planners := 0
	defer func() {
		if planners != 1 {
			t.Errorf("%d Planner components, want 1", planners)
		}
	}()
	for _, c := range comps {
		data, _ := json.Marshal(c)
		s := string(data)
		switch c.(map[string]any)["type"] {
		case "frontend":
			if !strings.Contains(s, `{"name":"DYN_ROUTER_MODE","value":"kv"}`) {
				t.Errorf("the Frontend has no DYN_ROUTER_MODE=kv: %s", s)
			}
		case "planner":
			planners++
			for _, want := range []string{`"dynamo.planner"`, `\"optimization_target\":\"sla\"`, `\"ttft_ms\":2000`, `\"itl_ms\":100`, `\"aic_interpolation\"`, `\"max_gpu_budget\":8`} {
				if !strings.Contains(s, want) {
					t.Errorf("the Planner lacks %s: %s", want, s)
				}
			}
		default:
			for _, want := range []string{`"--trust-remote-code"`, `"--kv-events-config"`, `"secretKeyRef":{"key":"HF_TOKEN","name":"hf-token"}`,
				`{"name":"NCCL_DEBUG","value":"WARN"}`, `"tolerations":[{"effect":"NoSchedule","key":"nvidia.com/gpu","operator":"Exists"}]`,
				`"scalingAdapter":{}`, `"claimName":"model-cache"`, `{"name":"HF_HOME"`} {
				if !strings.Contains(s, want) {
					t.Errorf("worker lacks %s: %s", want, s)
				}
			}
		}
	}
}

// createCacheClaim creates a claim bound to a hostPath PersistentVolume holding an (empty)
// Hugging Face cache directory, as an admin would pre-populate one; the sandbox node agent
// serves hostPath-backed claims.
func createCacheClaim(t *testing.T, ns, name string) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "hf", "hub"), 0o777); err != nil {
		t.Fatal(err)
	}
	size := resource.MustParse("1Gi")
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}},
			ClaimRef:                      &corev1.ObjectReference{Namespace: ns, Name: name},
		},
	}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany},
			StorageClassName: ptr.To(""),
			VolumeName:       pv.Name,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
		},
	}
	for _, obj := range []client.Object{pv, pvc} {
		if err := k8s.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), pv) })
	waitFor(t, time.Minute, "claim "+name+" bound", func(ctx context.Context) (bool, string, error) {
		var got corev1.PersistentVolumeClaim
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(pvc), &got); err != nil {
			return false, "", err
		}
		return got.Status.Phase == corev1.ClaimBound, string(got.Status.Phase), nil
	})
}
