package webhook_test

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

// TestParetoMaxCandidatesDefault: through the real API server, a Pareto request is stored with
// maxCandidates 10 (the whole front, up to 10), any other with 5, and a value given is kept.
func TestParetoMaxCandidatesDefault(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name, spec string
		want       int32
	}{
		{"pareto-default", "  objective: {target: pareto}\n", 10},
		{"pareto-given", "  objective: {target: pareto}\n  recommendation: {maxCandidates: 3}\n", 3},
		{"throughput-default", "  objective: {target: throughputPerGpu}\n", 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := fromYAML(t, tc.name, "  hardware: {gpu: {sku: h200_sxm}}\n"+tc.spec)
			if err := k8s.Create(ctx, obj); err != nil {
				t.Fatal(err)
			}
			got := &v1beta2.DynamoGraphDeploymentRequest{}
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
				t.Fatal(err)
			}
			if r := got.Spec.Recommendation; r == nil || r.MaxCandidates == nil || *r.MaxCandidates != tc.want {
				t.Errorf("stored recommendation %+v, want maxCandidates %d", r, tc.want)
			}
		})
	}
}
