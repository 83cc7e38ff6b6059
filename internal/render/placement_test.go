package render

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// TestPinGPUProduct: a GPU role requires the searched system's products in every term of its
// required node affinity, keeping what the user's overrides added; an override selecting another
// product is refused, naming the field.
func TestPinGPUProduct(t *testing.T) {
	h200 := corev1.NodeSelectorRequirement{Key: GPUProductLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{"NVIDIA-H200", "NVIDIA-H200-SXM-141GB"}}
	zone := corev1.NodeSelectorRequirement{Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}
	required := func(terms ...corev1.NodeSelectorTerm) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
	}
	cases := []struct {
		name    string
		spec    corev1.PodSpec
		system  string
		want    *corev1.Affinity
		wantErr string
	}{
		{name: "no placement", system: "h200_sxm", want: required(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{h200}})},
		{name: "the user's terms each get the pin", system: "h200_sxm",
			spec: corev1.PodSpec{Affinity: required(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{zone}}), NodeSelector: map[string]string{GPUProductLabel: "NVIDIA-H200"}},
			want: required(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{zone, h200}})},
		{name: "a nodeSelector on another product", system: "h200_sxm",
			spec:    corev1.PodSpec{NodeSelector: map[string]string{GPUProductLabel: "NVIDIA-H100-80GB-HBM3"}},
			wantErr: `nodeSelector[nvidia.com/gpu.product]: "NVIDIA-H100-80GB-HBM3" is not a product of the searched GPU h200_sxm`},
		{name: "an affinity term on other products", system: "h200_sxm",
			spec: corev1.PodSpec{Affinity: required(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: GPUProductLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{"NVIDIA-A100-SXM4-80GB"}}}})},
			wantErr: "nodeSelectorTerms[0]: selects nvidia.com/gpu.product NVIDIA-A100-SXM4-80GB, none a product of the searched GPU h200_sxm"},
		{name: "a system without known labels stays unpinned", system: "b60"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := tc.spec.DeepCopy()
			err := pinGPUProduct(spec, tc.system)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, spec.Affinity); diff != "" {
				t.Errorf("affinity (-want +got):\n%s", diff)
			}
		})
	}
}
