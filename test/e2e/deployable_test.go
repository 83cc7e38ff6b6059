//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	runctl "github.com/dgdr-operator/dgdr-operator/internal/controller/run"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
)

// deployableRequest is fastRequest with a token Secret, trusted remote code, the KV router and
// worker overrides (issue #13).
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
  backends: [vllm]
  hardware:
    gpu:
      budget: 8
  deployment:
    router: {mode: KV}
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

// TestDeployableCandidatePromoted: a request with a token Secret, remoteCode AlwaysTrust, the KV
// router and worker overrides runs to Succeeded (the search container got HF_TOKEN from the
// Secret), and dgdrctl promote creates a DynamoGraphDeployment carrying all of them.
func TestDeployableCandidatePromoted(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	secret := &corev1.Secret{}
	secret.Name, secret.Namespace = "hf-token", ns
	secret.StringData = map[string]string{"HF_TOKEN": "hf_not_a_real_token"}
	if err := k8s.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	d := createDGDR(t, ns, []byte(fmt.Sprintf(deployableRequest, "deployable")))
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
	if len(comps) < 2 {
		t.Fatalf("the promoted DynamoGraphDeployment has %d components", len(comps))
	}
	for _, c := range comps {
		data, _ := json.Marshal(c)
		s := string(data)
		switch c.(map[string]any)["type"] {
		case "frontend":
			if !strings.Contains(s, `{"name":"DYN_ROUTER_MODE","value":"kv"}`) {
				t.Errorf("the Frontend has no DYN_ROUTER_MODE=kv: %s", s)
			}
		default:
			for _, want := range []string{`"--trust-remote-code"`, `"--kv-events-config"`, `"secretKeyRef":{"key":"HF_TOKEN","name":"hf-token"}`,
				`{"name":"NCCL_DEBUG","value":"WARN"}`, `"tolerations":[{"effect":"NoSchedule","key":"nvidia.com/gpu","operator":"Exists"}]`} {
				if !strings.Contains(s, want) {
					t.Errorf("worker lacks %s: %s", want, s)
				}
			}
		}
	}
}
