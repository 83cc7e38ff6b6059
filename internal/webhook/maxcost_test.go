package webhook_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
)

// TestMaxCostPerHourIsAdmitted: with a price for its SKU, a request with maxCostPerHour is stored
// as written, and lowered under the webhooks' configuration it searches at most
// floor(9 / 2.00) = 4 GPUs.
func TestMaxCostPerHourIsAdmitted(t *testing.T) {
	ctx := context.Background()
	obj := fromYAML(t, "max-cost", "  hardware: {gpu: {sku: a100_sxm}}\n  objective: {maxCostPerHour: \"9\"}\n")
	if err := k8s.Create(ctx, obj); err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Cleanup(func() { _ = k8s.Delete(ctx, obj) })
	got := &v1beta2.DynamoGraphDeploymentRequest{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.Objective == nil || got.Spec.Objective.MaxCostPerHour != "9" {
		t.Fatalf("stored objective %+v, want maxCostPerHour 9", got.Spec.Objective)
	}
	in, errs := aisimulate.Lower(&got.Spec, aisimulate.OptionsFrom(operatorConfig))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	want := map[string]any{"max_candidate_gpus": json.Number("4")}
	if diff := cmp.Diff(want, in.Document["optimization"].(map[string]any)["constraints"]); diff != "" {
		t.Errorf("constraints (-want +got):\n%s", diff)
	}
}
