package admission_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/admission"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
)

// TestValidateSystems: admission accepts the systems of the pinned AISimulate and no other, and
// refuses, at the field the user wrote, a search the wheel cannot run for want of performance
// data, unless the request brings its own.
func TestValidateSystems(t *testing.T) {
	opts := admission.Options{Caps: aisimulate.Caps{MaxTrials: 1000, MaxParallelism: 32}, AutoApplyEnabled: true, MaxPodTemplateOverrideBytes: 32 << 10}
	sku := field.NewPath("spec", "hardware", "gpu", "sku")
	op := field.NewPath("spec", "aisimulate", "inputOverrides")
	type problem struct {
		Field string
		Type  field.ErrorType
		// In is a part of the detail.
		In string
	}
	cases := []struct {
		name      string
		sku       string
		backends  []v1beta2.Backend
		overrides string
		want      []problem
	}{
		{"h200_sxm", "h200_sxm", nil, "", nil},
		{"a100_sxm: older performance data", "a100_sxm", nil, "", nil},
		{"rtx_pro_6000_server", "rtx_pro_6000_server", nil, "", nil},
		{"b60 with vLLM among the default backends", "b60", nil, "", nil},
		// Systems the operator listed once but the pinned AISimulate has no spec of.
		{"gb10", "gb10", nil, "", []problem{{sku.String(), field.ErrorTypeNotSupported, "h100_pcie"}}},
		{"h20_3e", "h20_3e", nil, "", []problem{{sku.String(), field.ErrorTypeNotSupported, ""}}},
		{"rtx_5090", "rtx_5090", nil, "", []problem{{sku.String(), field.ErrorTypeNotSupported, ""}}},
		// The wheel's estimate-only specs: known, but without performance data.
		{"h100_pcie", "h100_pcie", nil, "", []problem{{sku.String(), field.ErrorTypeInvalid, "no performance data for h100_pcie (its spec is estimate-only)"}}},
		{"a100_pcie", "a100_pcie", nil, "", []problem{{sku.String(), field.ErrorTypeInvalid, "no performance data for a100_pcie"}}},
		{"a30", "a30", nil, "", []problem{{sku.String(), field.ErrorTypeInvalid, "no performance data for a30"}}},
		{"l4", "l4", nil, "", []problem{{sku.String(), field.ErrorTypeInvalid, "no performance data for l4"}}},
		{"l4 with its own performance data", "l4", nil, `{"engine":{"systems_paths":["/perf/l4"]}}`, nil},
		{"b60 with SGLang only", "b60", []v1beta2.Backend{v1beta2.BackendSGLang}, "", []problem{{"spec.backends", field.ErrorTypeInvalid, "for b60 only with vllm, not with sglang"}}},
		{"prefill on an estimate-only system", "h200_sxm", nil,
			`{"engine":{"mode":"disaggregated","workers":{"prefill":{"hardware":"h100_pcie"},"decode":{}}}}`,
			[]problem{{op.Child("engine", "workers", "prefill", "hardware").String(), field.ErrorTypeInvalid, "no performance data for h100_pcie"}}},
		{"decode on an unknown system", "h200_sxm", nil,
			`{"engine":{"mode":"disaggregated","workers":{"prefill":{},"decode":{"hardware":"gb10"}}}}`,
			[]problem{{op.Child("engine", "workers", "decode", "hardware").String(), field.ErrorTypeInvalid, `"gb10" is not a system of the pinned AISimulate`}}},
		{"prefill and decode on two systems with data", "h200_sxm", nil,
			`{"engine":{"mode":"disaggregated","workers":{"prefill":{"hardware":"h100_sxm"},"decode":{}}}}`, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := newRequest().sku(tc.sku).obj()
			d.Spec.Backends = tc.backends
			if tc.overrides != "" {
				d.Spec.AISimulate = &v1beta2.AISimulateSpec{InputOverrides: &runtime.RawExtension{Raw: []byte(tc.overrides)}}
			}
			_ = admission.Default(d, admission.DefaultingOptions{})
			_, errs := admission.Validate(d, opts)
			var got []problem
			for _, e := range errs {
				p := problem{Field: e.Field, Type: e.Type}
				for _, w := range tc.want {
					if w.Field == e.Field && strings.Contains(e.Detail, w.In) {
						p.In = w.In
					}
				}
				got = append(got, p)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s\nerrors: %v", diff, errs)
			}
		})
	}
}

// TestUnknownSKURatchets: a request stored with a SKU an older release accepted stays editable
// (a finalizer or label update must not be refused), with a warning; changing to an unknown SKU
// is refused.
func TestUnknownSKURatchets(t *testing.T) {
	opts := admission.Options{Caps: aisimulate.Caps{MaxTrials: 1000, MaxParallelism: 32}, AutoApplyEnabled: true, MaxPodTemplateOverrideBytes: 32 << 10}
	stored := func(sku string) *v1beta2.DynamoGraphDeploymentRequest {
		d := newRequest().sku(sku).obj()
		_ = admission.Default(d, admission.DefaultingOptions{})
		return d
	}
	old := stored("gb10")
	edited := old.DeepCopy()
	edited.Labels = map[string]string{"team": "a"}
	_, warnings, errs := admission.ValidateUpdate(old, edited, opts)
	if len(errs) > 0 {
		t.Fatalf("an update keeping the stored SKU: %v", errs)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], `"gb10" is not a system of the pinned AISimulate`) {
		t.Errorf("warnings %q, want one naming gb10", warnings)
	}
	// An edit of another part of the spec keeps the stored problem a warning too (the old
	// object's own effective input is checked then).
	respecified := old.DeepCopy()
	respecified.Spec.Recommendation.MaxCandidates = ptr.To(int32(3))
	_, warnings, errs = admission.ValidateUpdate(old, respecified, opts)
	if len(errs) > 0 {
		t.Fatalf("a spec edit keeping the stored SKU: %v", errs)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], `"gb10" is not a system of the pinned AISimulate`) {
		t.Errorf("warnings %q of a spec edit, want one naming gb10", warnings)
	}

	changed := stored("h200_sxm")
	changed.Spec.Hardware.GPU.SKU = "rtx_5090"
	if _, _, errs := admission.ValidateUpdate(stored("h200_sxm"), changed, opts); len(errs) != 1 || errs[0].Type != field.ErrorTypeNotSupported || errs[0].Field != "spec.hardware.gpu.sku" {
		t.Errorf("an update to an unknown SKU: %v, want it refused at spec.hardware.gpu.sku", errs)
	}
}
