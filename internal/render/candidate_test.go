package render_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/render"
)

// TestRunOptions: the Run's spec.hardware.gpu.perNode decides multinode rendering; a Run without
// it (created before the field existed) falls back to the given node size. The GPU budget is
// spec.hardware.gpu.budget, 0 when unset.
func TestRunOptions(t *testing.T) {
	withPerNode := &v1beta2.DynamoGraphDeploymentRun{}
	withPerNode.Spec.Hardware = &v1beta2.HardwareSpec{GPU: &v1beta2.GPUSpec{SKU: "gb200", PerNode: ptr.To[int32](4), Budget: ptr.To[int32](16)}}
	type got struct{ PerNode, Budget int }
	cases := []struct {
		name string
		run  *v1beta2.DynamoGraphDeploymentRun
		want got
	}{
		{"perNode and budget", withPerNode, got{4, 16}},
		{"no hardware", &v1beta2.DynamoGraphDeploymentRun{}, got{8, 0}},
	}
	for _, tc := range cases {
		o := render.RunOptions(tc.run, "c", nil, 8, "")
		if diff := cmp.Diff(tc.want, got{o.GPUsPerNode, o.GPUBudget}); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}
