package fit

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/gpunodes"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
)

// TestStripNode: a cached Node keeps its name, labels, cordon and allocatable GPUs only.
func TestStripNode(t *testing.T) {
	gpus := resource.MustParse("8")
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{gpunodes.ProductLabel: "NVIDIA-H200"},
			Annotations: map[string]string{"a": "b"}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
		Spec: corev1.NodeSpec{Unschedulable: true, PodCIDR: "10.0.0.0/24"},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{gpunodes.GPUResource: gpus, corev1.ResourceCPU: resource.MustParse("64")},
			Images: []corev1.ContainerImage{{Names: []string{"big"}}}},
	}
	got, err := StripNode(n)
	if err != nil {
		t.Fatal(err)
	}
	want := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{gpunodes.ProductLabel: "NVIDIA-H200"}},
		Spec:       corev1.NodeSpec{Unschedulable: true},
		Status:     corev1.NodeStatus{Allocatable: corev1.ResourceList{gpunodes.GPUResource: gpus}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestStripCandidate: a cached Candidate keeps its graphDeployment and, of its parameters, the
// engine's hardware: what NeedsOf reads.
func TestStripCandidate(t *testing.T) {
	dgd := `{"apiVersion":"nvidia.com/v1beta1","kind":"DynamoGraphDeployment","spec":{"components":[{"name":"w","podTemplate":{"spec":{"containers":[{"name":"main","image":"x","resources":{"limits":{"nvidia.com/gpu":"4"}}}]}}}]}}`
	c := builders.Candidate("ns", "c").GPUs(8).GraphDeployment([]byte(dgd)).
		Parameters(`{"engine":{"hardware":"h200_sxm","model":"m","workers":{"aggregated":{}}},"traffic":{"stop":{"requests":1000}}}`).Obj()
	before, sku, err := gpunodes.NeedsOf(c)
	if err != nil {
		t.Fatal(err)
	}
	obj, _ := StripCandidate(c)
	stripped := obj.(*v1beta2.DynamoGraphDeploymentCandidate)
	after, strippedSKU, err := gpunodes.NeedsOf(stripped)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]any{before, sku, `{"engine":{"hardware":"h200_sxm"}}`}, []any{after, strippedSKU, string(stripped.Spec.Parameters.Raw)}); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
