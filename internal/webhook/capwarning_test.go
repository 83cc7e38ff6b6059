package webhook_test

import (
	"context"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	dgdradmission "github.com/dgdr-operator/dgdr-operator/internal/admission"
	"github.com/dgdr-operator/dgdr-operator/internal/config"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
	"github.com/dgdr-operator/dgdr-operator/internal/webhook"
)

// TestCapClampingIsWarned: under limits.maxParallelism 8 a model-only request is accepted, and
// the webhook says that the effective input carries parallelism 8 instead of AISimulate's 16.
func TestCapClampingIsWarned(t *testing.T) {
	cfg := config.Default()
	cfg.Limits.MaxParallelism = ptr.To[int32](8)
	wh := &webhook.RequestWebhook{Config: cfg}
	dgdr := builders.Request("default", "model-only").Model("Qwen/Qwen3-8B").Obj()
	if errs := dgdradmission.Default(dgdr, dgdradmission.DefaultingOptions{DefaultGPUSKU: "h200_sxm"}); len(errs) > 0 {
		t.Fatal(errs)
	}
	warnings, err := wh.ValidateCreate(context.Background(), dgdr)
	if err != nil {
		t.Fatalf("a model-only request must fit the caps: %v", err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "optimizer.parallelism is set to 8") {
		t.Errorf("warnings %q, want one naming optimizer.parallelism set to 8", warnings)
	}
	updated := dgdr.DeepCopy()
	updated.Spec.Model.Revision = "main"
	warnings, err = wh.ValidateUpdate(context.Background(), dgdr, updated)
	if err != nil || len(warnings) != 1 {
		t.Errorf("update: warnings %q, err %v; want the same single warning", warnings, err)
	}
}
