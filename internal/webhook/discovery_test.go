package webhook_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/config"
	"github.com/dgdr-operator/dgdr-operator/internal/gpunodes"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/poll"
	"github.com/dgdr-operator/dgdr-operator/internal/webhook"
)

// gpuNode creates a Node of product with gpus allocatable nvidia.com/gpu, deleted when the test
// ends.
func gpuNode(t *testing.T, name, product string, gpus int64) *corev1.Node {
	t.Helper()
	ctx := context.Background()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{webhook.GPUProductLabel: product}}}
	if err := k8s.Create(ctx, n); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(ctx, n) })
	n.Status.Allocatable = corev1.ResourceList{gpunodes.GPUResource: *resource.NewQuantity(gpus, resource.DecimalSI)}
	n.Status.Capacity = n.Status.Allocatable
	if err := k8s.Status().Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestMissingSKUFollowsTheClusterGPUs: a request without spec.hardware.gpu.sku is defaulted
// from the cluster's GPU Nodes (read from the real API server through the manager's Node
// informer and a gpunodes.Tracker, as webhook.Setup wires it) or from an explicit
// defaults.gpuSKU, and refused otherwise: no GPU nodes and no default, two products, a product
// without an AISimulate system. New, relabelled and deleted Nodes are followed without a
// restart.
func TestMissingSKUFollowsTheClusterGPUs(t *testing.T) {
	ctx := context.Background()
	cfg := config.Default()
	w, err := webhook.NewRequestWebhook(env.Manager, cfg)
	if err != nil {
		t.Fatal(err)
	}
	skuOf := func() string {
		dgdr := builders.Request("default", "discover").Model("Qwen/Qwen3-0.6B").Obj()
		if err := w.Default(ctx, dgdr); err != nil {
			return "error: " + err.Error()
		}
		return dgdr.Spec.Hardware.GPU.SKU
	}
	waitFor := func(what string, ok func(got string) bool) {
		t.Helper()
		poll.WaitFor(t, 10*time.Second, 50*time.Millisecond, what, func(context.Context) (bool, string, error) {
			got := skuOf()
			return ok(got), got, nil
		})
	}
	refusal := func(parts ...string) func(string) bool {
		return func(got string) bool {
			if !strings.HasPrefix(got, "error: ") || !strings.Contains(got, "spec.hardware.gpu.sku") {
				return false
			}
			for _, p := range parts {
				if !strings.Contains(got, p) {
					return false
				}
			}
			return true
		}
	}
	is := func(want string) func(string) bool { return func(got string) bool { return got == want } }

	waitFor("a refusal: no GPU nodes", refusal("no GPU nodes found"))
	cfg.Defaults.GPUSKU = "h100_sxm"
	waitFor("the explicit default without GPU nodes", is("h100_sxm"))

	a := gpuNode(t, "gpu-a", "NVIDIA-B200", 8)
	b := gpuNode(t, "gpu-b", "NVIDIA-B200", 8)
	waitFor("the one discovered product", is("b200_sxm"))

	b.Labels[webhook.GPUProductLabel] = "NVIDIA-H200"
	if err := k8s.Update(ctx, b); err != nil {
		t.Fatal(err)
	}
	waitFor("a refusal listing both products", refusal("NVIDIA-B200 (b200_sxm), NVIDIA-H200 (h200_sxm)"))

	b.Labels[webhook.GPUProductLabel] = "NVIDIA-H100-80GB-HBM3"
	if err := k8s.Update(ctx, b); err != nil {
		t.Fatal(err)
	}
	waitFor("the configured default, one of the two products", is("h100_sxm"))

	a.Labels[webhook.GPUProductLabel] = "NVIDIA-H100-NVL"
	if err := k8s.Update(ctx, a); err != nil {
		t.Fatal(err)
	}
	waitFor("a refusal naming the unsupported product", refusal("NVIDIA-H100-NVL (no AISimulate system)"))

	if err := k8s.Delete(ctx, a); err != nil {
		t.Fatal(err)
	}
	waitFor("the one product left once the other Node is deleted", is("h100_sxm"))

	cfg.Defaults.GPUDiscovery = ptr.To(false)
	waitFor("the explicit default with discovery off", is("h100_sxm"))
}

// TestServedAdmissionDefaultsFromGPUNodes goes through the API server and the served webhooks
// (explicit defaults.gpuSKU h200_sxm, discovery on): one product is stored as the request's
// SKU; of two, the default is taken when it is one of them, and otherwise they are refused at
// spec.hardware.gpu.sku, naming both; and a budget beyond the allocatable GPUs of the SKU's Nodes
// is accepted with a warning.
func TestServedAdmissionDefaultsFromGPUNodes(t *testing.T) {
	ctx := context.Background()
	gpuNode(t, "served-a100-1", "NVIDIA-A100-SXM4-80GB", 8)
	gpuNode(t, "served-a100-2", "NVIDIA-A100-SXM4-80GB", 4)
	var warnings []string
	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandler = warningRecorder(func(msg string) { warnings = append(warnings, msg) })
	c, err := client.New(cfg, client.Options{Scheme: k8s.Scheme()})
	if err != nil {
		t.Fatal(err)
	}

	var stored *v1beta2.DynamoGraphDeploymentRequest
	poll.WaitFor(t, 10*time.Second, 100*time.Millisecond, "a request stored with the discovered SKU", func(context.Context) (bool, string, error) {
		warnings = nil
		stored = builders.Request("default", "served-discovery").Model("Qwen/Qwen3-0.6B").GPUBudget(16).Obj()
		if err := c.Create(ctx, stored); err != nil {
			return false, err.Error(), nil
		}
		t.Cleanup(func() { _ = k8s.Delete(ctx, stored) })
		if sku := stored.Spec.Hardware.GPU.SKU; sku != "a100_sxm" {
			_ = k8s.Delete(ctx, stored)
			return false, "stored sku " + sku, nil
		}
		return true, "", nil
	})
	if len(warnings) != 1 || !strings.Contains(warnings[0], "16 GPUs exceed the 12 allocatable GPUs of the cluster's 2 schedulable Nodes of a100_sxm") {
		t.Errorf("warnings %q, want one saying the budget exceeds the 12 GPUs of a100_sxm", warnings)
	}

	h200 := gpuNode(t, "served-h200", "NVIDIA-H200", 8)
	poll.WaitFor(t, 10*time.Second, 100*time.Millisecond, "the configured default among two products", func(context.Context) (bool, string, error) {
		dgdr := builders.Request("default", "served-mixed").Model("Qwen/Qwen3-0.6B").Obj()
		if err := k8s.Create(ctx, dgdr); err != nil {
			return false, err.Error(), nil
		}
		_ = k8s.Delete(ctx, dgdr)
		return dgdr.Spec.Hardware.GPU.SKU == "h200_sxm", "stored sku " + dgdr.Spec.Hardware.GPU.SKU, nil
	})

	h200.Labels[webhook.GPUProductLabel] = "NVIDIA-B200"
	if err := k8s.Update(ctx, h200); err != nil {
		t.Fatal(err)
	}
	poll.WaitFor(t, 10*time.Second, 100*time.Millisecond, "a refusal listing both products", func(context.Context) (bool, string, error) {
		dgdr := builders.Request("default", "served-mixed").Model("Qwen/Qwen3-0.6B").Obj()
		err := k8s.Create(ctx, dgdr)
		if err == nil {
			_ = k8s.Delete(ctx, dgdr)
			return false, "accepted with sku " + dgdr.Spec.Hardware.GPU.SKU, nil
		}
		ok := apierrors.IsInvalid(err) && strings.Contains(err.Error(), "spec.hardware.gpu.sku") &&
			strings.Contains(err.Error(), "NVIDIA-A100-SXM4-80GB (a100_sxm), NVIDIA-B200 (b200_sxm)")
		return ok, err.Error(), nil
	})
}

// warningRecorder passes every API warning to record.
type warningRecorder func(msg string)

func (r warningRecorder) HandleWarningHeader(_ int, _ string, msg string) { r(msg) }
