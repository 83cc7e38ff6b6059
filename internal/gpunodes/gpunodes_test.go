package gpunodes_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/gpunodes"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
)

func node(product string, gpus int64, cordoned bool) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{}}}
	if product != "" {
		n.Labels[gpunodes.ProductLabel] = product
	}
	n.Spec.Unschedulable = cordoned
	n.Status.Allocatable = corev1.ResourceList{gpunodes.GPUResource: *resource.NewQuantity(gpus, resource.DecimalSI)}
	return n
}

func TestFromNodes(t *testing.T) {
	inv := gpunodes.FromNodes([]corev1.Node{
		node("NVIDIA-H200", 8, false), node("NVIDIA-H200-SXM-141GB", 4, false), node("NVIDIA-H200", 8, true),
		node("NVIDIA-A100-SXM4-80GB", 8, false), node("NVIDIA-H100-NVL", 2, false), node("", 8, false),
		node("NVIDIA-H100-PCIe", 4, false), node("NVIDIA-L4", 8, false),
	})
	got := map[string]any{"products": inv.Products, "h200": inv.Pool("h200_sxm"), "a100": inv.Pool("a100_sxm"), "b200": inv.Pool("b200_sxm"),
		"h100_pcie": inv.Pool("h100_pcie"), "h100_sxm": inv.Pool("h100_sxm"), "l4": inv.Pool("l4")}
	want := map[string]any{
		// A cordoned Node names its product but adds no GPUs; an unlabelled one is no GPU Node;
		// the H100 NVL is none of the wheel's systems, and the PCIe H100 is not the SXM one.
		"products":  []string{"NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-NVL", "NVIDIA-H100-PCIe", "NVIDIA-H200", "NVIDIA-H200-SXM-141GB", "NVIDIA-L4"},
		"h200":      gpunodes.Pool{Nodes: 2, GPUs: 12, LargestNode: 8},
		"a100":      gpunodes.Pool{Nodes: 1, GPUs: 8, LargestNode: 8},
		"b200":      gpunodes.Pool{},
		"h100_pcie": gpunodes.Pool{Nodes: 1, GPUs: 4, LargestNode: 4},
		"h100_sxm":  gpunodes.Pool{},
		"l4":        gpunodes.Pool{Nodes: 1, GPUs: 8, LargestNode: 8},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestFit(t *testing.T) {
	pool := gpunodes.Pool{Nodes: 2, GPUs: 12, LargestNode: 8}
	cases := []struct {
		name  string
		needs gpunodes.Needs
		pool  gpunodes.Pool
		want  v1beta2.ClusterFit
	}{
		{"fits", gpunodes.Needs{GPUs: 12, LargestPod: 8}, pool, v1beta2.ClusterFit{Fits: ptr.To(true), SKU: "h200_sxm", GPUsNeeded: 12, GPUsAvailable: ptr.To[int64](12), GPUsPerNodeNeeded: 8, LargestNodeGPUs: 8, Nodes: 2,
			Message: "needs 12 of the 12 allocatable GPUs of 2 Nodes of h200_sxm"}},
		{"too many GPUs", gpunodes.Needs{GPUs: 16, LargestPod: 4}, pool, v1beta2.ClusterFit{Fits: ptr.To(false), SKU: "h200_sxm", GPUsNeeded: 16, GPUsAvailable: ptr.To[int64](12), GPUsPerNodeNeeded: 4, LargestNodeGPUs: 8, Nodes: 2,
			Message: "needs 16 GPUs; the 2 Nodes of h200_sxm have 12 allocatable"}},
		{"a pod larger than any node", gpunodes.Needs{GPUs: 10, LargestPod: 10}, pool, v1beta2.ClusterFit{Fits: ptr.To(false), SKU: "h200_sxm", GPUsNeeded: 10, GPUsAvailable: ptr.To[int64](12), GPUsPerNodeNeeded: 10, LargestNodeGPUs: 8, Nodes: 2,
			Message: "a pod needs 10 GPUs on one node; the largest Node of h200_sxm has 8 allocatable"}},
		{"no node of the SKU", gpunodes.Needs{GPUs: 1, LargestPod: 1}, gpunodes.Pool{}, v1beta2.ClusterFit{Fits: ptr.To(false), SKU: "h200_sxm", GPUsNeeded: 1, GPUsAvailable: ptr.To[int64](0), GPUsPerNodeNeeded: 1,
			Message: "the cluster has no schedulable Node of h200_sxm (label nvidia.com/gpu.product)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, gpunodes.Fit(tc.needs, "h200_sxm", tc.pool)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestBudgetWarning(t *testing.T) {
	pool := gpunodes.Pool{Nodes: 2, GPUs: 12, LargestNode: 8}
	got := []string{gpunodes.BudgetWarning(12, "h200_sxm", pool), gpunodes.BudgetWarning(13, "h200_sxm", pool), gpunodes.BudgetWarning(1, "b200_sxm", gpunodes.Pool{})}
	want := []string{"",
		"spec.hardware.gpu.budget: 13 GPUs exceed the 12 allocatable GPUs of the cluster's 2 schedulable Nodes of h200_sxm; candidates that need more will not fit (status.fitsCluster)",
		"spec.hardware.gpu.budget: 1 GPUs exceed the 0 allocatable GPUs of the cluster's 0 schedulable Nodes of b200_sxm; candidates that need more will not fit (status.fitsCluster)"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestNeedsOf(t *testing.T) {
	multinode := `{"apiVersion":"nvidia.com/v1beta1","kind":"DynamoGraphDeployment","spec":{"components":[
		{"name":"frontend","type":"frontend","podTemplate":{"spec":{"containers":[{"name":"main","image":"f"}]}}},
		{"name":"prefill","type":"prefill","replicas":1,"multinode":{"nodeCount":2},"podTemplate":{"spec":{"containers":[{"name":"main","image":"p","resources":{"limits":{"nvidia.com/gpu":"8"}}}]}}},
		{"name":"decode","type":"decode","replicas":2,"podTemplate":{"spec":{"containers":[{"name":"main","image":"d","resources":{"limits":{"nvidia.com/gpu":"4"}}}]}}}]}}`
	cases := []struct {
		name, dgd, params string
		want              gpunodes.Needs
		wantSKU, wantErr  string
	}{
		{"multinode prefill, two decode engines", multinode, `{"engine":{"hardware":"h200_sxm"}}`, gpunodes.Needs{GPUs: 24, LargestPod: 8}, "h200_sxm", ""},
		{"hardware per role", multinode, `{"engine":{"hardware":{"prefill":"h200_sxm","decode":"b200_sxm"}}}`, gpunodes.Needs{}, "", "spec.parameters.engine.hardware names no single GPU SKU"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := builders.Candidate("ns", "c").GPUs(24).GraphDeployment([]byte(tc.dgd)).Parameters(tc.params).Obj()
			needs, sku, err := gpunodes.NeedsOf(c)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if diff := cmp.Diff([]any{tc.want, tc.wantSKU, tc.wantErr}, []any{needs, sku, gotErr}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestChanged: only what a Node offers (product, cordon, allocatable GPUs) counts as a change.
func TestChanged(t *testing.T) {
	base := func() *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{gpunodes.ProductLabel: "NVIDIA-H200"}, ResourceVersion: "1"},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{gpunodes.GPUResource: resource.MustParse("8")}}}
	}
	cases := []struct {
		name   string
		change func(*corev1.Node)
		want   bool
	}{
		{"heartbeat", func(n *corev1.Node) { n.ResourceVersion = "2" }, false},
		{"product", func(n *corev1.Node) { n.Labels[gpunodes.ProductLabel] = "NVIDIA-B200" }, true},
		{"cordoned", func(n *corev1.Node) { n.Spec.Unschedulable = true }, true},
		{"allocatable GPUs", func(n *corev1.Node) { n.Status.Allocatable[gpunodes.GPUResource] = resource.MustParse("7") }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := base()
			tc.change(n)
			if got := gpunodes.Changed(base(), n); got != tc.want {
				t.Errorf("Changed = %v, want %v", got, tc.want)
			}
		})
	}
}
