package v1beta1_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta1"
)

// TestFeatureRoundTrip: a feature decodes any JSON value and encodes exactly that value (a
// boolean stays a boolean, an object keeps every key), inside FeaturesSpec as the API server
// hands it over.
func TestFeatureRoundTrip(t *testing.T) {
	for _, in := range []string{
		`{"planner":true,"kvRouter":false,"mocker":true}`,
		`{"planner":{"mode":"sla","nested":{"a":[1,"x",null],"z":null}},"kvRouter":{"enabled":true},"mocker":{"enabled":false}}`,
		`{"kvRouter":{}}`,
		`{"kvRouter":{"enabled":true,"mode":"approx"}}`,
		// Neither upstream shape, but the untyped schema admits them: kept, never an error.
		`{"planner":"yes","kvRouter":3,"mocker":[true]}`,
		`{}`,
	} {
		t.Run(in, func(t *testing.T) {
			var f v1beta1.FeaturesSpec
			if err := json.Unmarshal([]byte(in), &f); err != nil {
				t.Fatalf("decoding: %v", err)
			}
			out, err := json.Marshal(f)
			if err != nil {
				t.Fatalf("encoding: %v", err)
			}
			var want, got any
			if err := json.Unmarshal([]byte(in), &want); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("round trip (-in +out):\n%s", diff)
			}
		})
	}
}

func TestFeatureFields(t *testing.T) {
	var f v1beta1.FeaturesSpec
	if err := json.Unmarshal([]byte(`{"planner":true,"kvRouter":{"enabled":true},"mocker":null}`), &f); err != nil {
		t.Fatal(err)
	}
	if f.Planner == nil || f.Planner.Bool == nil || !*f.Planner.Bool || f.Planner.Raw != nil {
		t.Errorf("planner: %+v", f.Planner)
	}
	if f.KVRouter == nil || f.KVRouter.Bool != nil || string(f.KVRouter.Raw) != `{"enabled":true}` {
		t.Errorf("kvRouter: %+v", f.KVRouter)
	}
	if f.Mocker != nil {
		t.Errorf("mocker: null decodes as unset, got %+v", f.Mocker)
	}
	for in, want := range map[*v1beta1.Feature]string{
		v1beta1.BoolFeature(false):           `false`,
		v1beta1.BoolFeature(true):            `true`,
		v1beta1.RawFeature(`{"enabled":1}`):  `{"enabled":1}`,
		{}:                                   `null`,
		v1beta1.RawFeature(` {"a": [1, 2]}`): `{"a":[1,2]}`,
	} {
		got, err := json.Marshal(in)
		if err != nil || string(got) != want {
			t.Errorf("Marshal(%+v) = %s, %v; want %s", in, got, err, want)
		}
	}
	both := v1beta1.BoolFeature(true)
	both.Raw = []byte(`{}`)
	if _, err := json.Marshal(both); err == nil {
		t.Error("a feature with both Bool and Raw encoded")
	}
	cp := v1beta1.RawFeature(`{"a":1}`)
	dc := cp.DeepCopy()
	cp.Raw[1] = 'X'
	if string(dc.Raw) != `{"a":1}` {
		t.Errorf("DeepCopy shares Raw: %s", dc.Raw)
	}
}
