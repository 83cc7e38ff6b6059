package webhook_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dgdr-operator/dgdr-operator/internal/config"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/poll"
	"github.com/dgdr-operator/dgdr-operator/internal/webhook"
)

// TestGPUDiscoveryFollowsNodeLabels: with gpuDiscovery on, admission takes the SKU the labelled
// Nodes agree on, read through the manager's client (a metadata informer, as webhook.Setup wires
// it), and follows label changes without restarting; Nodes that disagree fall back to the
// configured default; a product without an AISimulate system is refused, never replaced by the
// default.
func TestGPUDiscoveryFollowsNodeLabels(t *testing.T) {
	ctx := context.Background()
	cfg := config.Default()
	cfg.Defaults.GPUDiscovery = true
	w := &webhook.RequestWebhook{Config: cfg, Nodes: env.Manager.GetClient()}
	skuOf := func() string {
		dgdr := builders.Request("default", "discover").Model("Qwen/Qwen3-0.6B").Obj()
		if err := w.Default(ctx, dgdr); err != nil {
			return "error: " + err.Error()
		}
		if dgdr.Spec.Hardware == nil || dgdr.Spec.Hardware.GPU == nil {
			return ""
		}
		return dgdr.Spec.Hardware.GPU.SKU
	}
	var nodes []*corev1.Node
	for _, name := range []string{"gpu-a", "gpu-b"} {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{webhook.GPUProductLabel: "NVIDIA-B200"}}}
		if err := k8s.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k8s.Delete(ctx, n) })
		nodes = append(nodes, n)
	}
	waitSKU := func(want string) {
		t.Helper()
		poll.WaitFor(t, 10*time.Second, 50*time.Millisecond, "discovered SKU "+want, func(context.Context) (bool, string, error) {
			got := skuOf()
			return got == want, "discovered " + got, nil
		})
	}
	waitSKU("b200_sxm")

	nodes[1].Labels[webhook.GPUProductLabel] = "NVIDIA-H200"
	if err := k8s.Update(ctx, nodes[1]); err != nil {
		t.Fatal(err)
	}
	waitSKU(cfg.Defaults.GPUSKU) // the Nodes disagree: the configured default applies

	nodes[0].Labels[webhook.GPUProductLabel] = "NVIDIA-H200"
	if err := k8s.Update(ctx, nodes[0]); err != nil {
		t.Fatal(err)
	}
	cfg.Defaults.GPUSKU = "none"
	waitSKU("h200_sxm")

	// A product AISimulate has no system for is never replaced by the default SKU: the
	// request must name one.
	cfg.Defaults.GPUSKU = "h200_sxm"
	nodes[1].Labels[webhook.GPUProductLabel] = "NVIDIA-H100-PCIe"
	if err := k8s.Update(ctx, nodes[1]); err != nil {
		t.Fatal(err)
	}
	poll.WaitFor(t, 10*time.Second, 50*time.Millisecond, "a refusal naming the unsupported product", func(context.Context) (bool, string, error) {
		got := skuOf()
		return strings.HasPrefix(got, "error: ") && strings.Contains(got, "spec.hardware.gpu.sku") && strings.Contains(got, "NVIDIA-H100-PCIe"), got, nil
	})
}
