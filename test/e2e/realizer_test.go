//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/render/dgdv1beta1"
	"github.com/dgdr-operator/dgdr-operator/test/sandboxtest"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/dgdrealizer"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/manager"
)

// realizeTimeout bounds the realization: pods scheduled, each worker's profile computed and
// its mocker registered, the frontend listing the model.
const realizeTimeout = 3 * time.Minute

// realizedNamespace is a test namespace whose DynamoGraphDeployments the sandbox realizes (as
// every namespace not opting out), with the realizer's and the pods' logs printed when the test
// fails. At the end the namespace is deleted and the test waits (up to releaseTimeout) until its
// pods are gone: the sandbox's GPU Nodes are small (8 GPUs a product), and a deployment left
// behind would hold GPUs the next test's candidate needs.
func realizedNamespace(t *testing.T) string {
	t.Helper()
	ns := sandboxtest.Namespace(t, k8s, "")
	t.Cleanup(func() {
		if t.Failed() {
			sandboxtest.PrintTail(filepath.Join(manager.StateDir(root), "logs", manager.DGDRealizer+".log"), 30)
			logs, _ := filepath.Glob(filepath.Join(manager.StateDir(root), "pods", ns+"_*", "logs", "*.log"))
			for _, l := range logs {
				sandboxtest.PrintTail(l, 15)
			}
		}
		if os.Getenv("DGDR_E2E_KEEP") == "1" {
			return
		}
		releaseGPUs(t, ns)
	})
	return ns
}

// releaseTimeout bounds the wait for a deleted test namespace's pods to go.
const releaseTimeout = 2 * time.Minute

// releaseGPUs deletes the namespace ns and waits until none of its pods is left.
func releaseGPUs(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	if err := k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); client.IgnoreNotFound(err) != nil {
		t.Errorf("deleting namespace %s: %v", ns, err)
		return
	}
	waitFor(t, releaseTimeout, "the pods of the deleted namespace "+ns+" to go", func(ctx context.Context) (bool, string, error) {
		var l corev1.PodList
		if err := k8s.List(ctx, &l, client.InNamespace(ns)); err != nil {
			return false, "", err
		}
		return len(l.Items) == 0, fmt.Sprintf("%d pods left", len(l.Items)), nil
	})
}

// deploymentPods lists the pods the realizer runs for a DynamoGraphDeployment.
func deploymentPods(ctx context.Context, ns, dgd string) ([]corev1.Pod, error) {
	var l corev1.PodList
	err := k8s.List(ctx, &l, client.InNamespace(ns), client.MatchingLabels{dgdrealizer.LabelDeployment: dgd})
	return l.Items, err
}

// workerReplicas counts the worker pods a deployment asks for, and the served model name.
func workerReplicas(t *testing.T, dgd *unstructured.Unstructured) (int, string) {
	t.Helper()
	plan, err := dgdrealizer.PlanDeployment(dgd, 1, dgdrealizer.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	comps, _, _ := unstructured.NestedSlice(dgd.Object, "spec", "components")
	for _, c := range comps {
		cm, _ := c.(map[string]any)
		switch cm["type"] {
		case dgdv1beta1.ComponentWorker, dgdv1beta1.ComponentPrefill, dgdv1beta1.ComponentDecode:
			r, found, _ := unstructured.NestedInt64(cm, "replicas")
			if !found {
				r = 1
			}
			n += int(r)
		}
	}
	return n, plan.ModelName
}

// streamChat sends a streaming chat completion and returns the content of its chunks.
func streamChat(t *testing.T, url, model string) []string {
	t.Helper()
	body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"hello what is the time"}],"stream":true,"max_tokens":16}`, model)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("POST %s/v1/chat/completions: %s, Content-Type %q", url, resp.Status, resp.Header.Get("Content-Type"))
	}
	var content []string
	done := false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			done = true
			break
		}
		var chunk struct {
			Model   string `json:"model"`
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		if chunk.Model != model {
			t.Errorf("chunk of model %q, want %q", chunk.Model, model)
		}
		for _, c := range chunk.Choices {
			if c.Delta.Content != "" {
				content = append(content, c.Delta.Content)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if !done {
		t.Error("the stream ended without [DONE]")
	}
	return content
}

// TestAutoApplyRealizedOnDynamo: an autoApply request's DynamoGraphDeployment is realized by
// the real Dynamo frontend and mocker workers (one pod per worker replica, as the candidate
// asks), becomes Ready, the request's Deployed condition follows, and a streaming chat
// completion through the frontend returns content chunks. Deleting the request leaves the
// deployment serving (autoApply never deletes a deployment); deleting the deployment removes
// its pods and Service (owner references, real garbage collector).
func TestAutoApplyRealizedOnDynamo(t *testing.T) {
	ctx := context.Background()
	ns := realizedNamespace(t)
	env.CreateRequest(t, ns, fmt.Sprintf(autoApplyRequest, "served", "llama-served"))
	requireSucceededWithCandidates(t, waitRequestDone(t, ns, "served"))

	var dgd *unstructured.Unstructured
	waitFor(t, realizeTimeout, "the DynamoGraphDeployment to be Ready", func(ctx context.Context) (bool, string, error) {
		d, err := deployment(ctx, ns, "llama-served")
		if err != nil || d == nil {
			return false, "absent", err
		}
		dgd = d
		conds, _, _ := unstructured.NestedSlice(d.Object, "status", "conditions")
		state, _, _ := unstructured.NestedString(d.Object, "status", "state")
		for _, c := range conds {
			if cm, _ := c.(map[string]any); cm["type"] == "Ready" {
				return cm["status"] == string(metav1.ConditionTrue) && state == "successful", fmt.Sprintf("state %s, Ready %v", state, cm), nil
			}
		}
		return false, "no Ready condition", nil
	})
	cond := waitDeployed(t, ns, "served", v1beta2.ReasonDeploymentReady)
	if cond.Status != metav1.ConditionTrue {
		t.Errorf("Deployed = %+v", cond)
	}

	workers, model := workerReplicas(t, dgd)
	pods, err := deploymentPods(ctx, ns, "llama-served")
	if err != nil {
		t.Fatal(err)
	}
	byType := map[string]int{}
	var frontend *corev1.Pod
	for i := range pods {
		p := &pods[i]
		// The frontend asks for no GPU (the CPU Node); the workers land on the Node of the
		// searched product (h200_sxm), which the rendered deployment selects.
		wantNode := manager.H200Node.Name
		if p.Labels[dgdrealizer.LabelComponentType] == dgdv1beta1.ComponentFrontend {
			wantNode = manager.CPUNode.Name
		}
		if p.Status.Phase != corev1.PodRunning || p.Spec.NodeName != wantNode {
			t.Errorf("pod %s: phase %s on %q, want Running on %s", p.Name, p.Status.Phase, p.Spec.NodeName, wantNode)
		}
		if !metav1.IsControlledBy(p, dgd) {
			t.Errorf("pod %s is not controlled by the deployment: %v", p.Name, p.OwnerReferences)
		}
		byType[p.Labels[dgdrealizer.LabelComponentType]]++
		if p.Labels[dgdrealizer.LabelComponentType] == dgdv1beta1.ComponentFrontend {
			frontend = p
		}
	}
	if byType[dgdv1beta1.ComponentFrontend] != 1 || len(pods)-1 != workers {
		t.Fatalf("pods by component type %v, want 1 frontend and %d workers", byType, workers)
	}
	svc := &corev1.Service{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: dgdrealizer.FrontendServiceName("llama-served")}, svc); err != nil {
		t.Fatal(err)
	}
	port := svc.Spec.Ports[0].Port
	if frontend.Spec.Containers[0].Ports[0].ContainerPort != port {
		t.Errorf("frontend pod port %d, Service port %d", frontend.Spec.Containers[0].Ports[0].ContainerPort, port)
	}
	url := "http://" + net.JoinHostPort(frontend.Status.PodIP, strconv.Itoa(int(port)))
	content := streamChat(t, url, model)
	if len(content) < 2 {
		t.Errorf("streamed content chunks %q, want several", content)
	}

	// The request goes; its deployment keeps serving.
	req, err := getDGDR(ctx, ns, "served")
	if err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(ctx, req); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the request to be gone", func(ctx context.Context) (bool, string, error) {
		_, err := getDGDR(ctx, ns, "served")
		return client.IgnoreNotFound(err) == nil && err != nil, "present", client.IgnoreNotFound(err)
	})
	if content := streamChat(t, url, model); len(content) == 0 {
		t.Error("the deployment stopped serving when its request was deleted")
	}

	// The deployment goes: its pods and Service follow.
	if err := k8s.Delete(ctx, dgd); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the deployment's pods and Service to be gone", func(ctx context.Context) (bool, string, error) {
		pods, err := deploymentPods(ctx, ns, "llama-served")
		if err != nil {
			return false, "", err
		}
		err = k8s.Get(ctx, client.ObjectKeyFromObject(svc), &corev1.Service{})
		if client.IgnoreNotFound(err) != nil {
			return false, "", err
		}
		return len(pods) == 0 && err != nil, fmt.Sprintf("%d pods, Service error %v", len(pods), err), nil
	})
}
