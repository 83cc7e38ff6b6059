package aisimulate_test

import (
	"bytes"
	"encoding/json"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
)

// FuzzMergePatch applies arbitrary inputOverrides. Invariants: no panic; a lowered input is a
// canonical JSON object whose hash matches; the merge step is idempotent (RFC 7386 patches are);
// every rejection names the inputOverrides field.
func FuzzMergePatch(f *testing.F) {
	for _, s := range []string{`{}`, `{"traffic":{"stop":{"requests":null,"requests_per_load_unit":10}}}`,
		`{"optimizer":{"max_trials":null}}`, `{"traffic":{"load":{"type":"constant_rate","concurrency":null,"requests_per_second":1.5}}}`,
		`{"engine":null}`, `[1]`, `"x"`, `null`, `{"a":[{"b":null}]}`, `{"optimization":{"target":"pareto"},"x":1e400}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, patch []byte) {
		spec := v1beta2.DynamoGraphDeploymentRequestSpec{
			Model:      v1beta2.ModelSpec{Name: "m"},
			Hardware:   &v1beta2.HardwareSpec{GPU: &v1beta2.GPUSpec{SKU: "h200_sxm"}},
			AISimulate: &v1beta2.AISimulateSpec{InputOverrides: &runtime.RawExtension{Raw: patch}},
		}
		in, errs := aisimulate.Lower(&spec, aisimulate.Options{})
		if len(errs) > 0 {
			for _, e := range errs {
				if e.Field != aisimulate.OverridesPath.String() {
					t.Fatalf("rejection at %q, want %s", e.Field, aisimulate.OverridesPath)
				}
			}
			return
		}
		if aisimulate.Hash(in.JSON) != in.Hash {
			t.Fatal("hash does not match the canonical JSON")
		}
		re, err := aisimulate.Canonicalize(in.JSON)
		if err != nil || !bytes.Equal(re.JSON, in.JSON) {
			t.Fatalf("output is not canonical: %v", err)
		}
		if len(patch) == 0 {
			return // no override at all
		}
		twice, err := jsonpatch.MergePatch(in.JSON, patch)
		if err != nil {
			t.Fatalf("re-applying the patch: %v", err)
		}
		c, err := aisimulate.Canonicalize(twice)
		if err != nil || !bytes.Equal(c.JSON, in.JSON) {
			t.Fatalf("merge patch is not idempotent:\n%s\n%s", in.JSON, twice)
		}
		_ = aisimulate.CheckInput(in.Document) // must not panic on any lowered document
		if !json.Valid(in.JSON) {
			t.Fatal("invalid JSON")
		}
	})
}

// FuzzCheckInput feeds arbitrary documents to the effective-input validator: no panic, and every
// problem has a message.
func FuzzCheckInput(f *testing.F) {
	for _, s := range []string{`{"engine":{"model":"m","hardware":"h"},"optimization":{}}`,
		`{"traffic":{"load":{"type":"poisson","concurrency":1}}}`, `{"engine":{"workers":{"aggregated":{"kv_cache":{"block_size":1.0}}}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ps, err := aisimulate.CheckInputJSON(data)
		if err != nil {
			return
		}
		for _, p := range ps {
			if p.Message == "" {
				t.Fatalf("problem without a message at %s", p.PathString())
			}
		}
	})
}
