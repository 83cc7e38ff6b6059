package v1beta2_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/randfill"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

// filler fills requests with random native fields; envelopes stay nil (the round trips create
// them), opaque documents are small random JSON objects and times have second precision, as they
// have on the wire.
func filler(f *randfill.Filler) *randfill.Filler {
	return f.NilChance(0.3).NumElements(0, 3).MaxDepth(6).Funcs(
		func(j **apiextensionsv1.JSON, _ randfill.Continue) { *j = nil },
		func(r *runtime.RawExtension, c randfill.Continue) { r.Raw = randomObject(c) },
		// A feature is a boolean (the fbfa59ff shape) or an object (later releases), never both.
		func(f *v1beta1.Feature, c randfill.Continue) {
			if c.Bool() {
				*f = *v1beta1.BoolFeature(c.Bool())
			} else {
				*f = v1beta1.Feature{Raw: randomObject(c)}
			}
		},
		func(t *metav1.Time, c randfill.Continue) { *t = metav1.Unix(c.Int63n(1<<32), 0) },
		func(m *metav1.ObjectMeta, c randfill.Continue) {
			m.Name, m.Namespace = c.String(20), c.String(20)
			m.Generation = c.Int63()
			c.Fill(&m.Labels)
			c.Fill(&m.Annotations)
		},
	)
}

// randomObject is a compact JSON object with nested objects, numbers, strings and nulls (an
// inputOverrides null deletes a key, so nulls must survive).
func randomObject(c randfill.Continue) []byte {
	obj := map[string]any{}
	for i := range c.Intn(4) {
		key := fmt.Sprintf("k%d", i)
		switch c.Intn(5) {
		case 0:
			obj[key] = nil
		case 1:
			obj[key] = c.Int63n(1 << 40)
		case 2:
			obj[key] = c.Float64()
		case 3:
			obj[key] = c.String(8)
		default:
			obj[key] = map[string]any{"n": c.Intn(10), "z": nil}
		}
	}
	b, err := json.Marshal(obj)
	if err != nil {
		panic(err)
	}
	return b
}

// normalize returns obj as the API server would hand it over: decoded from its JSON.
func normalize[T any](t testing.TB, obj *T) *T {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	out := new(T)
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// roundTripV1Beta2 checks v1beta2 → v1beta1 → v1beta2 on a native v1beta2 request.
func roundTripV1Beta2(t testing.TB, f *randfill.Filler) {
	in := &v1beta2.DynamoGraphDeploymentRequest{}
	f.Fill(in)
	in = normalize(t, in)

	hub := &v1beta1.DynamoGraphDeploymentRequest{}
	if err := in.ConvertTo(hub); err != nil {
		t.Fatalf("ConvertTo: %v", err)
	}
	if hasNativeV1Beta1(hub) {
		t.Fatalf("a native v1beta2 request has native v1beta1 fields: %+v", hub.Spec)
	}
	out := &v1beta2.DynamoGraphDeploymentRequest{}
	if err := out.ConvertFrom(normalize(t, hub)); err != nil {
		t.Fatalf("ConvertFrom: %v", err)
	}
	if diff := cmp.Diff(in, out, cmpopts.IgnoreTypes(metav1.TypeMeta{})); diff != "" {
		t.Fatalf("v1beta2 → v1beta1 → v1beta2 (-in +out):\n%s", diff)
	}
}

// roundTripV1Beta1 checks v1beta1 → v1beta2 → v1beta1 on a native v1beta1 request, and that the
// envelope-backed v1beta2 view survives v1beta2 → v1beta1 → v1beta2 as well.
func roundTripV1Beta1(t testing.TB, f *randfill.Filler) {
	in := &v1beta1.DynamoGraphDeploymentRequest{}
	f.Fill(in)
	in = normalize(t, in)

	spoke := &v1beta2.DynamoGraphDeploymentRequest{}
	if err := spoke.ConvertFrom(in); err != nil {
		t.Fatalf("ConvertFrom: %v", err)
	}
	spoke = normalize(t, spoke)
	if native := (v1beta2.DynamoGraphDeploymentRequestSpec{V1Beta1: spoke.Spec.V1Beta1}); !cmp.Equal(spoke.Spec, native) {
		t.Fatalf("a native v1beta1 request has native v1beta2 spec fields: %+v", spoke.Spec)
	}
	out := &v1beta1.DynamoGraphDeploymentRequest{}
	if err := spoke.ConvertTo(out); err != nil {
		t.Fatalf("ConvertTo: %v", err)
	}
	if diff := cmp.Diff(in, normalize(t, out), cmpopts.IgnoreTypes(metav1.TypeMeta{})); diff != "" {
		t.Fatalf("v1beta1 → v1beta2 → v1beta1 (-in +out):\n%s", diff)
	}
	back := &v1beta2.DynamoGraphDeploymentRequest{}
	if err := back.ConvertFrom(normalize(t, out)); err != nil {
		t.Fatalf("ConvertFrom: %v", err)
	}
	if diff := cmp.Diff(spoke, normalize(t, back), cmpopts.IgnoreTypes(metav1.TypeMeta{})); diff != "" {
		t.Fatalf("envelope-backed v1beta2 → v1beta1 → v1beta2 (-in +out):\n%s", diff)
	}
}

func hasNativeV1Beta1(r *v1beta1.DynamoGraphDeploymentRequest) bool {
	spec, status := r.Spec, r.Status
	spec.V1Beta2, status.V1Beta2 = nil, nil
	return !cmp.Equal(spec, v1beta1.DynamoGraphDeploymentRequestSpec{}) ||
		!cmp.Equal(status, v1beta1.DynamoGraphDeploymentRequestStatus{}, cmpopts.EquateEmpty())
}

func TestRoundTripV1Beta2(t *testing.T) {
	for seed := range int64(500) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { roundTripV1Beta2(t, filler(randfill.NewWithSeed(seed))) })
	}
}

func TestRoundTripV1Beta1(t *testing.T) {
	for seed := range int64(500) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { roundTripV1Beta1(t, filler(randfill.NewWithSeed(seed))) })
	}
}

func FuzzRoundTripV1Beta2(f *testing.F) {
	f.Add([]byte("seed"))
	f.Fuzz(func(t *testing.T, data []byte) { roundTripV1Beta2(t, filler(randfill.NewFromGoFuzz(data))) })
}

func FuzzRoundTripV1Beta1(f *testing.F) {
	f.Add([]byte("seed"))
	f.Fuzz(func(t *testing.T, data []byte) { roundTripV1Beta1(t, filler(randfill.NewFromGoFuzz(data))) })
}

// TestConversionSeesBothWays pins the shape users see: a native v1beta2 request appears to
// v1beta1 clients under spec.v1beta2 / status.v1beta2, a native v1beta1 request to v1beta2
// clients under spec.v1beta1 / status.v1beta1, each verbatim.
func TestConversionSeesBothWays(t *testing.T) {
	native2 := &v1beta2.DynamoGraphDeploymentRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "llama", Namespace: "ns"},
		Spec:       v1beta2.DynamoGraphDeploymentRequestSpec{Model: v1beta2.ModelSpec{Name: "meta-llama/Llama-3.1-8B-Instruct"}},
		Status:     v1beta2.DynamoGraphDeploymentRequestStatus{ObservedGeneration: 2},
	}
	hub := &v1beta1.DynamoGraphDeploymentRequest{}
	if err := native2.ConvertTo(hub); err != nil {
		t.Fatal(err)
	}
	want := &v1beta1.DynamoGraphDeploymentRequest{
		ObjectMeta: native2.ObjectMeta,
		Spec:       v1beta1.DynamoGraphDeploymentRequestSpec{V1Beta2: &apiextensionsv1.JSON{Raw: []byte(`{"model":{"name":"meta-llama/Llama-3.1-8B-Instruct"}}`)}},
		Status:     v1beta1.DynamoGraphDeploymentRequestStatus{V1Beta2: &apiextensionsv1.JSON{Raw: []byte(`{"observedGeneration":2}`)}},
	}
	if diff := cmp.Diff(want, hub, cmpopts.IgnoreTypes(metav1.TypeMeta{})); diff != "" {
		t.Errorf("v1beta2 as v1beta1 (-want +got):\n%s", diff)
	}

	native1 := &v1beta1.DynamoGraphDeploymentRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "qwen", Namespace: "ns"},
		Spec:       v1beta1.DynamoGraphDeploymentRequestSpec{Model: "Qwen/Qwen3-0.6B", Backend: v1beta1.BackendVLLM},
		Status:     v1beta1.DynamoGraphDeploymentRequestStatus{Phase: v1beta1.PhaseProfiling},
	}
	spoke := &v1beta2.DynamoGraphDeploymentRequest{}
	if err := spoke.ConvertFrom(native1); err != nil {
		t.Fatal(err)
	}
	want2 := &v1beta2.DynamoGraphDeploymentRequest{
		ObjectMeta: native1.ObjectMeta,
		Spec:       v1beta2.DynamoGraphDeploymentRequestSpec{V1Beta1: &apiextensionsv1.JSON{Raw: []byte(`{"model":"Qwen/Qwen3-0.6B","backend":"vllm"}`)}},
		Status:     v1beta2.DynamoGraphDeploymentRequestStatus{V1Beta1: &apiextensionsv1.JSON{Raw: []byte(`{"phase":"Profiling"}`)}},
	}
	if diff := cmp.Diff(want2, spoke, cmpopts.IgnoreTypes(metav1.TypeMeta{})); diff != "" {
		t.Errorf("v1beta1 as v1beta2 (-want +got):\n%s", diff)
	}
	if !spoke.IsV1Beta1Native() || native2.IsV1Beta1Native() {
		t.Errorf("IsV1Beta1Native: v1beta1-native %v, v1beta2-native %v", spoke.IsV1Beta1Native(), native2.IsV1Beta1Native())
	}
}

// TestConversionKeepsBothUpstreamShapes: v1beta1 requests of both shapes the Dynamo platform has
// stored (its CRD at ai-dynamo/dynamo fbfa59ff, and later releases) decode, reach v1beta2 in the
// envelope exactly as written (a boolean feature stays a boolean, snake-case and older field
// names stay under their own names) and come back to v1beta1 unchanged.
func TestConversionKeepsBothUpstreamShapes(t *testing.T) {
	for name, spec := range map[string]string{
		"fbfa59ff": `{"model":"Qwen/Qwen3-0.6B","backend":"vllm","image":"nvcr.io/nvidia/ai-dynamo/dynamo-frontend:0.7.0",
			"sla":{"ttft":200,"itl":20.5,"optimization_type":"hybrid"},"workload":{"isl":3000},
			"features":{"planner":true,"kvRouter":false,"mocker":true},"modelCache":{"pvcName":"models","pvcPath":"qwen"},
			"overrides":{"profilingJob":{"backoffLimit":2,"template":{"spec":{"containers":[{"name":"profiler"}]}}},
			  "dgd":{"apiVersion":"nvidia.com/v1alpha1","kind":"DynamoGraphDeployment","spec":{}}},
			"searchStrategy":"thorough","autoApply":false}`,
		"later releases": `{"model":"Qwen/Qwen3-0.6B","backend":"auto","runtimeVersionOverride":"1.2.0",
			"sla":{"e2eLatency":1500,"optimizationType":"throughput"},"workload":{"isl":4000,"osl":1000,"concurrency":8.5},
			"hardware":{"gpuSku":"h100_sxm","vramMb":81559,"totalGpus":16,"numGpusPerNode":8,"interconnect":"nvlink","rdma":false},
			"features":{"planner":{"mode":"sla","min_endpoint":1,"nested":{"a":[1,"x",null]}},"kvRouter":{"enabled":true},"mocker":{"enabled":false}},
			"modelCache":{"pvcName":"models","pvcModelPath":"models/qwen","pvcMountPath":"/opt/model-cache"},
			"overrides":{"trustRemoteCode":false},"searchStrategy":"rapid","autoApply":true}`,
		"both shapes at once": `{"model":"m","sla":{"optimization_type":"latency","optimizationType":"latency"},
			"features":{"planner":false,"kvRouter":{"enabled":false}},"modelCache":{"pvcPath":"a","pvcModelPath":"b"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			var want any
			if err := json.Unmarshal([]byte(spec), &want); err != nil {
				t.Fatal(err)
			}
			hub := &v1beta1.DynamoGraphDeploymentRequest{}
			if err := json.Unmarshal([]byte(`{"spec":`+spec+`}`), hub); err != nil {
				t.Fatalf("decoding the v1beta1 request: %v", err)
			}
			spoke := &v1beta2.DynamoGraphDeploymentRequest{}
			if err := spoke.ConvertFrom(hub); err != nil {
				t.Fatalf("ConvertFrom: %v", err)
			}
			var got any
			if err := json.Unmarshal(spoke.Spec.V1Beta1.Raw, &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("spec.v1beta1 (-written +envelope):\n%s", diff)
			}
			back := &v1beta1.DynamoGraphDeploymentRequest{}
			if err := normalize(t, spoke).ConvertTo(back); err != nil {
				t.Fatalf("ConvertTo: %v", err)
			}
			raw, err := json.Marshal(back.Spec)
			if err != nil {
				t.Fatal(err)
			}
			got = nil
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("v1beta1 → v1beta2 → v1beta1 (-written +read):\n%s", diff)
			}
		})
	}
}

func envelope(s string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(s)} }

// TestConvertToEnvelopeErrors: a v1beta2 request whose v1beta1 envelope is empty, malformed or
// mixed with native fields does not convert, and the error names the envelope.
func TestConvertToEnvelopeErrors(t *testing.T) {
	cases := []struct {
		name string
		spec v1beta2.DynamoGraphDeploymentRequestSpec
		stat v1beta2.DynamoGraphDeploymentRequestStatus
		want field.ErrorList
	}{
		{"no bytes", v1beta2.DynamoGraphDeploymentRequestSpec{V1Beta1: envelope("")}, v1beta2.DynamoGraphDeploymentRequestStatus{},
			field.ErrorList{field.Required(field.NewPath("spec", "v1beta1"), "")}},
		{"null", v1beta2.DynamoGraphDeploymentRequestSpec{V1Beta1: envelope("null")}, v1beta2.DynamoGraphDeploymentRequestStatus{},
			field.ErrorList{field.Required(field.NewPath("spec", "v1beta1"), "")}},
		{"empty object", v1beta2.DynamoGraphDeploymentRequestSpec{V1Beta1: envelope("{}")}, v1beta2.DynamoGraphDeploymentRequestStatus{},
			field.ErrorList{field.Required(field.NewPath("spec", "v1beta1"), "")}},
		{"mixed with model", v1beta2.DynamoGraphDeploymentRequestSpec{Model: v1beta2.ModelSpec{Name: "m"}, V1Beta1: envelope(`{"model":"m"}`)}, v1beta2.DynamoGraphDeploymentRequestStatus{},
			field.ErrorList{field.Forbidden(field.NewPath("spec", "v1beta1"), "")}},
		{"mixed with backends", v1beta2.DynamoGraphDeploymentRequestSpec{Backends: []v1beta2.Backend{v1beta2.BackendVLLM}, V1Beta1: envelope(`{"model":"m"}`)}, v1beta2.DynamoGraphDeploymentRequestStatus{},
			field.ErrorList{field.Forbidden(field.NewPath("spec", "v1beta1"), "")}},
		{"unknown field", v1beta2.DynamoGraphDeploymentRequestSpec{V1Beta1: envelope(`{"model":"m","bogus":1}`)}, v1beta2.DynamoGraphDeploymentRequestStatus{},
			field.ErrorList{field.Invalid(field.NewPath("spec", "v1beta1"), nil, "")}},
		{"not an object", v1beta2.DynamoGraphDeploymentRequestSpec{V1Beta1: envelope(`["m"]`)}, v1beta2.DynamoGraphDeploymentRequestStatus{},
			field.ErrorList{field.Invalid(field.NewPath("spec", "v1beta1"), nil, "")}},
		{"envelope in the envelope", v1beta2.DynamoGraphDeploymentRequestSpec{V1Beta1: envelope(`{"v1beta2":{"model":{"name":"m"}}}`)}, v1beta2.DynamoGraphDeploymentRequestStatus{},
			field.ErrorList{field.Invalid(field.NewPath("spec", "v1beta1"), nil, "")}},
		{"status mixed with conditions", v1beta2.DynamoGraphDeploymentRequestSpec{V1Beta1: envelope(`{"model":"m"}`)},
			v1beta2.DynamoGraphDeploymentRequestStatus{ObservedGeneration: 1, V1Beta1: envelope(`{"phase":"Pending"}`)},
			field.ErrorList{field.Forbidden(field.NewPath("status", "v1beta1"), "")}},
		{"status empty", v1beta2.DynamoGraphDeploymentRequestSpec{V1Beta1: envelope(`{"model":"m"}`)},
			v1beta2.DynamoGraphDeploymentRequestStatus{V1Beta1: envelope(`{}`)},
			field.ErrorList{field.Required(field.NewPath("status", "v1beta1"), "")}},
		{"spec and status", v1beta2.DynamoGraphDeploymentRequestSpec{V1Beta1: envelope(`null`)},
			v1beta2.DynamoGraphDeploymentRequestStatus{V1Beta1: envelope(`{"phase":7}`)},
			field.ErrorList{field.Required(field.NewPath("spec", "v1beta1"), ""), field.Invalid(field.NewPath("status", "v1beta1"), nil, "")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := &v1beta2.DynamoGraphDeploymentRequest{Spec: tc.spec, Status: tc.stat}
			err := in.ConvertTo(&v1beta1.DynamoGraphDeploymentRequest{})
			if diff := cmp.Diff(tc.want, fieldErrors(t, err), ignoreWording); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestConvertFromEnvelopeErrors is the mirror image for the v1beta2 envelope of the hub.
func TestConvertFromEnvelopeErrors(t *testing.T) {
	cases := []struct {
		name string
		spec v1beta1.DynamoGraphDeploymentRequestSpec
		stat v1beta1.DynamoGraphDeploymentRequestStatus
		want field.ErrorList
	}{
		{"null", v1beta1.DynamoGraphDeploymentRequestSpec{V1Beta2: envelope("null")}, v1beta1.DynamoGraphDeploymentRequestStatus{},
			field.ErrorList{field.Required(field.NewPath("spec", "v1beta2"), "")}},
		{"empty object", v1beta1.DynamoGraphDeploymentRequestSpec{V1Beta2: envelope(" {} ")}, v1beta1.DynamoGraphDeploymentRequestStatus{},
			field.ErrorList{field.Required(field.NewPath("spec", "v1beta2"), "")}},
		{"mixed with model", v1beta1.DynamoGraphDeploymentRequestSpec{Model: "m", V1Beta2: envelope(`{"model":{"name":"m"}}`)}, v1beta1.DynamoGraphDeploymentRequestStatus{},
			field.ErrorList{field.Forbidden(field.NewPath("spec", "v1beta2"), "")}},
		{"unknown field", v1beta1.DynamoGraphDeploymentRequestSpec{V1Beta2: envelope(`{"model":{"name":"m"},"image":"x"}`)}, v1beta1.DynamoGraphDeploymentRequestStatus{},
			field.ErrorList{field.Invalid(field.NewPath("spec", "v1beta2"), nil, "")}},
		{"trailing data", v1beta1.DynamoGraphDeploymentRequestSpec{V1Beta2: envelope(`{"model":{"name":"m"}} {}`)}, v1beta1.DynamoGraphDeploymentRequestStatus{},
			field.ErrorList{field.Invalid(field.NewPath("spec", "v1beta2"), nil, "")}},
		{"status mixed with phase", v1beta1.DynamoGraphDeploymentRequestSpec{V1Beta2: envelope(`{"model":{"name":"m"}}`)},
			v1beta1.DynamoGraphDeploymentRequestStatus{Phase: v1beta1.PhaseFailed, V1Beta2: envelope(`{"observedGeneration":1}`)},
			field.ErrorList{field.Forbidden(field.NewPath("status", "v1beta2"), "")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := &v1beta1.DynamoGraphDeploymentRequest{Spec: tc.spec, Status: tc.stat}
			err := (&v1beta2.DynamoGraphDeploymentRequest{}).ConvertFrom(in)
			if diff := cmp.Diff(tc.want, fieldErrors(t, err), ignoreWording); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

var ignoreWording = cmpopts.IgnoreFields(field.Error{}, "Detail", "BadValue")

// fieldErrors unpacks the aggregate a conversion returns.
func fieldErrors(t *testing.T, err error) field.ErrorList {
	t.Helper()
	if err == nil {
		return nil
	}
	var agg utilerrors.Aggregate
	if !errors.As(err, &agg) {
		t.Fatalf("want a field error aggregate, got %T: %v", err, err)
	}
	var out field.ErrorList
	for _, e := range agg.Errors() {
		var fe *field.Error
		if !errors.As(e, &fe) {
			t.Fatalf("want *field.Error, got %T: %v", e, e)
		}
		if !strings.Contains(fe.Error(), fe.Field) {
			t.Errorf("error %q does not name %s", fe.Error(), fe.Field)
		}
		out = append(out, fe)
	}
	return out
}
