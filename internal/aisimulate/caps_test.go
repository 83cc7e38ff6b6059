package aisimulate_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
)

func decodeDoc(t *testing.T, s string) map[string]any {
	t.Helper()
	doc, err := aisimulate.DecodeObject([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestCapsCheck(t *testing.T) {
	caps := aisimulate.Caps{MaxTrials: 500, MaxParallelism: 8}
	trials := aisimulate.OverridesPath.Child("optimizer", "max_trials").String()
	parallelism := aisimulate.OverridesPath.Child("optimizer", "parallelism").String()
	cases := []struct {
		name string
		doc  string
		caps aisimulate.Caps
		want []string // field paths of the Invalid errors
	}{
		{name: "within caps", doc: `{"optimizer":{"max_trials":320,"parallelism":8}}`, caps: caps},
		{name: "trials over", doc: `{"optimizer":{"max_trials":501,"parallelism":8}}`, caps: caps, want: []string{trials}},
		{name: "absent parallelism counts as AISimulate's default", doc: `{"optimizer":{"max_trials":10}}`, caps: caps, want: []string{parallelism}},
		{name: "absent optimizer counts as AISimulate's defaults", doc: `{}`, caps: aisimulate.Caps{MaxTrials: 100, MaxParallelism: 8}, want: []string{trials, parallelism}},
		{name: "both over", doc: `{"optimizer":{"max_trials":1000,"parallelism":64}}`, caps: caps, want: []string{trials, parallelism}},
		{name: "no caps", doc: `{"optimizer":{"max_trials":100000}}`},
		{name: "a wrong type is the rules' to report", doc: `{"optimizer":{"parallelism":"many"}}`, caps: caps},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, e := range tc.caps.Check(decodeDoc(t, tc.doc)) {
				if e.Type != field.ErrorTypeInvalid {
					t.Errorf("error type %s, want Invalid", e.Type)
				}
				got = append(got, e.Field)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("paths (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLowerClampsDerivedDefaultsToCaps: a request that leaves the optimizer alone always fits the
// caps, because the lowering writes the capped value (with a warning) instead of a derived or
// AISimulate default above it; a value the user wrote in inputOverrides is never clamped.
func TestLowerClampsDerivedDefaultsToCaps(t *testing.T) {
	kvRange := func() *v1beta2.DynamoGraphDeploymentRequestSpec {
		return &v1beta2.DynamoGraphDeploymentRequestSpec{
			Model:    v1beta2.ModelSpec{Name: "Qwen/Qwen3-8B"},
			Hardware: &v1beta2.HardwareSpec{GPU: &v1beta2.GPUSpec{SKU: "h200_sxm"}},
			Workload: &v1beta2.WorkloadSpec{Static: &v1beta2.StaticWorkload{Load: &v1beta2.LoadSpec{
				KVCapacityFraction: &v1beta2.KVCapacityFraction{Range: &v1beta2.FractionRange{Min: 0.2, Max: 1}},
			}}},
		}
	}
	withOverrides := func(spec *v1beta2.DynamoGraphDeploymentRequestSpec, o string) *v1beta2.DynamoGraphDeploymentRequestSpec {
		spec.AISimulate = &v1beta2.AISimulateSpec{InputOverrides: &runtime.RawExtension{Raw: []byte(o)}}
		return spec
	}
	cases := []struct {
		name         string
		spec         *v1beta2.DynamoGraphDeploymentRequestSpec
		caps         aisimulate.Caps
		wantOptim    map[string]any
		wantWarnings int
		wantCapErrs  int
	}{
		{name: "no caps keep the derived budget", spec: kvRange(),
			wantOptim: map[string]any{"max_trials": json.Number("320")}},
		{name: "derived budget above the trials cap is clamped", spec: kvRange(), caps: aisimulate.Caps{MaxTrials: 100},
			wantOptim: map[string]any{"max_trials": json.Number("100")}, wantWarnings: 1},
		{name: "AISimulate's default parallelism above the cap is written capped", spec: kvRange(), caps: aisimulate.Caps{MaxParallelism: 8},
			wantOptim: map[string]any{"max_trials": json.Number("320"), "parallelism": json.Number("8")}, wantWarnings: 1},
		{name: "caps at or above the defaults change nothing", spec: kvRange(), caps: aisimulate.Caps{MaxTrials: 320, MaxParallelism: 16},
			wantOptim: map[string]any{"max_trials": json.Number("320")}},
		{name: "an override within the caps wins and is not warned about", spec: withOverrides(kvRange(), `{"optimizer":{"parallelism":4}}`), caps: aisimulate.Caps{MaxParallelism: 8},
			wantOptim: map[string]any{"max_trials": json.Number("320"), "parallelism": json.Number("4")}},
		{name: "an override above the cap is the user's and is rejected", spec: withOverrides(kvRange(), `{"optimizer":{"max_trials":900}}`), caps: aisimulate.Caps{MaxTrials: 100},
			wantOptim: map[string]any{"max_trials": json.Number("900")}, wantCapErrs: 1},
		{name: "deleting the clamped value brings AISimulate's default back, which the cap check rejects", spec: withOverrides(kvRange(), `{"optimizer":{"parallelism":null}}`), caps: aisimulate.Caps{MaxParallelism: 8},
			wantOptim: map[string]any{"max_trials": json.Number("320")}, wantCapErrs: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in, errs := aisimulate.Lower(tc.spec, aisimulate.Options{Caps: tc.caps})
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			if diff := cmp.Diff(tc.wantOptim, in.Document["optimizer"]); diff != "" {
				t.Errorf("optimizer (-want +got):\n%s", diff)
			}
			if len(in.Warnings) != tc.wantWarnings {
				t.Errorf("warnings %q, want %d", in.Warnings, tc.wantWarnings)
			}
			if got := len(tc.caps.Check(in.Document)); got != tc.wantCapErrs {
				t.Errorf("cap errors %d, want %d", got, tc.wantCapErrs)
			}
		})
	}
}
