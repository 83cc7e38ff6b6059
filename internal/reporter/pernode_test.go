package reporter

import (
	"testing"

	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

// TestGPUsPerNode: the Run's spec.hardware.gpu.perNode decides multinode rendering; a Run
// without it (created before the field existed) falls back to --gpus-per-node.
func TestGPUsPerNode(t *testing.T) {
	withPerNode := &v1beta2.DynamoGraphDeploymentRun{}
	withPerNode.Spec.Hardware = &v1beta2.HardwareSpec{GPU: &v1beta2.GPUSpec{SKU: "gb200", PerNode: ptr.To[int32](4)}}
	cases := []struct {
		name string
		run  *v1beta2.DynamoGraphDeploymentRun
		want int
	}{
		{"perNode", withPerNode, 4},
		{"no hardware", &v1beta2.DynamoGraphDeploymentRun{}, 8},
	}
	for _, tc := range cases {
		if got := gpusPerNode(tc.run, 8); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}
