package app_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/cmd/dgdrctl/app"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/config"
	runcontroller "github.com/dgdr-operator/dgdr-operator/internal/controller/run"
	"github.com/dgdr-operator/dgdr-operator/internal/webhook"
)

// TestLimitsVerdictsAgree: for every example request and a table of caps, `dgdrctl validate`
// (Admit), the validating webhook and the Run controller's check before the Job exists give the
// same verdict, and whatever is accepted runs within the caps (AISimulate's own defaults count).
// With limits.maxParallelism 8, a model-only request is accepted and its effective input
// carries parallelism 8, so AISimulate's default of 16 never applies.
func TestLimitsVerdictsAgree(t *testing.T) {
	files, err := filepath.Glob("../../../examples/*.yaml")
	if err != nil || len(files) < 10 {
		t.Fatalf("examples: %v (%d files)", err, len(files))
	}
	capsTable := []struct {
		name                      string
		maxTrials, maxParallelism int32
	}{
		{name: "shipped caps", maxTrials: config.DefaultMaxTrials, maxParallelism: config.DefaultMaxParallelism},
		{name: "no caps", maxTrials: 0, maxParallelism: 0},
		{name: "parallelism 8", maxTrials: 2000, maxParallelism: 8},
		{name: "trials 100", maxTrials: 100, maxParallelism: 64},
		{name: "trials 100 parallelism 1", maxTrials: 100, maxParallelism: 1},
		{name: "trials 1", maxTrials: 1, maxParallelism: 64},
	}
	accepted, rejected := 0, 0
	for _, row := range capsTable {
		cfg := config.Default()
		cfg.Defaults.GPUSKU = "h200_sxm"
		cfg.Limits.MaxTrials = ptr.To(row.maxTrials)
		cfg.Limits.MaxParallelism = ptr.To(row.maxParallelism)
		cfg.AutoApply.Enabled = true // examples/auto-apply.yaml; the caps are what this test compares
		caps := aisimulate.CapsFrom(cfg.Limits)
		wh := &webhook.RequestWebhook{Config: cfg}
		for _, f := range files {
			t.Run(row.name+"/"+filepath.Base(f), func(t *testing.T) {
				data, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				admitted, cliErrs, err := app.Admit(context.Background(), data, cfg)
				if err != nil {
					t.Fatal(err)
				}
				cliOK := len(cliErrs) == 0

				// The webhook and the controller see the object as admission defaulted it; a
				// request the CLI rejects is re-admitted without the final check to get it.
				req := admitted
				if !cliOK {
					noCaps := config.Default()
					noCaps.Defaults.GPUSKU = "h200_sxm"
					noCaps.Limits.MaxTrials, noCaps.Limits.MaxParallelism = ptr.To[int32](0), ptr.To[int32](0)
					noCaps.AutoApply.Enabled = true
					var errs field.ErrorList
					req, errs, err = app.Admit(context.Background(), data, noCaps)
					if err != nil || req == nil {
						t.Fatalf("admitting without caps: %v %v", err, errs)
					}
				}
				_, whErr := wh.ValidateCreate(context.Background(), req.Request.DeepCopy())
				webhookOK := whErr == nil

				in, lowerErrs := aisimulate.Lower(&req.Request.Spec, aisimulate.Options{Caps: caps})
				controllerOK := len(lowerErrs) == 0 && runcontroller.Preflight(in.Document, caps) == nil

				if cliOK != webhookOK || cliOK != controllerOK {
					t.Fatalf("verdicts differ: dgdrctl %v (%v), webhook %v (%v), controller %v (lowering %v)",
						cliOK, cliErrs, webhookOK, whErr, controllerOK, lowerErrs)
				}
				if strings.HasSuffix(f, "/model-only.yaml") && row.maxTrials != 1 && !cliOK { // a budget of 1 cannot cover two mode branches
					t.Errorf("a model-only request must fit every cap (the lowering writes capped values): %v", cliErrs)
				}
				if cliOK {
					accepted++
					if errs := caps.Check(admitted.Input.Document); len(errs) > 0 {
						t.Errorf("accepted but over the caps: %v", errs)
					}
					if strings.HasSuffix(f, "model-only.yaml") && row.maxParallelism == 8 {
						if got := admitted.Input.Document["optimizer"].(map[string]any)["parallelism"]; got != json.Number("8") {
							t.Errorf("model-only under maxParallelism 8: optimizer.parallelism %v, want 8", got)
						}
					}
				} else {
					rejected++
				}
			})
		}
	}
	if accepted == 0 || rejected == 0 {
		t.Errorf("the table must exercise both verdicts: %d accepted, %d rejected", accepted, rejected)
	}
}

// TestValidatePrintsCapWarnings: dgdrctl validate prints the admission warnings of a clamped
// default, as kubectl would print the webhook's.
func TestValidatePrintsCapWarnings(t *testing.T) {
	cfgFile := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfgFile, []byte("apiVersion: config.dgdr.nvidia.com/v1alpha1\nkind: OperatorConfiguration\ndefaults: {gpuSKU: h200_sxm}\nlimits: {maxParallelism: 8}\nplanner: {image: planner:1}\nreporter: {image: reporter:1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := run(t, "validate", "-f", "../../../examples/model-only.yaml", "--config", cfgFile)
	if code != 0 || !strings.Contains(out, "valid") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if !strings.Contains(errOut, "Warning: optimizer.parallelism is set to 8") {
		t.Errorf("stderr %q, want the clamping warning", errOut)
	}
}
