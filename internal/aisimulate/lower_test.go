package aisimulate_test

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/config/crd"
	"github.com/dgdr-operator/dgdr-operator/internal/admission"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/internal/pricing"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/golden"
)

// admit defaults a request the way admission does with the shipped configuration.
func admit(t *testing.T, dgdr *v1beta2.DynamoGraphDeploymentRequest) *v1beta2.DynamoGraphDeploymentRequest {
	t.Helper()
	if errs := admission.Default(dgdr, admission.DefaultingOptions{DefaultGPUSKU: "h200_sxm"}); len(errs) > 0 {
		t.Fatalf("defaulting: %v", errs)
	}
	return dgdr
}

// goldenPrices is the price list the golden cases are lowered with (objective.maxCostPerHour).
var goldenPrices = pricing.Prices{Currency: "USD", PerGPUHour: map[string]string{"h200_sxm": "3.50"}}

func lower(t *testing.T, dgdr *v1beta2.DynamoGraphDeploymentRequest) *aisimulate.Input {
	t.Helper()
	in, errs := aisimulate.Lower(&dgdr.Spec, aisimulate.Options{Prices: goldenPrices})
	if len(errs) > 0 {
		t.Fatalf("lowering: %v", errs)
	}
	return in
}

func readRequest(t *testing.T, path string) *v1beta2.DynamoGraphDeploymentRequest {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dgdr := &v1beta2.DynamoGraphDeploymentRequest{}
	if err := yaml.UnmarshalStrict(data, dgdr); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return dgdr
}

// TestGolden pins the effective input of every example and testdata request byte for byte
// (indented canonical JSON). Regenerate with UPDATE_GOLDEN=true go test ./internal/aisimulate.
func TestGolden(t *testing.T) {
	inputs, _ := filepath.Glob("../../examples/*.yaml")
	more, _ := filepath.Glob("testdata/requests/*.yaml")
	inputs = append(inputs, more...)
	if len(inputs) < 15 {
		t.Fatalf("expected at least 15 golden cases, found %d", len(inputs))
	}
	for _, path := range inputs {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		t.Run(name, func(t *testing.T) {
			in := lower(t, admit(t, readRequest(t, path)))
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, in.JSON, "", "  "); err != nil {
				t.Fatal(err)
			}
			pretty.WriteString("\n")
			golden.Assert(t, filepath.Join("testdata", "golden", name+".json"), pretty.Bytes())
		})
	}
}

func i32(v int32) *int32                 { return &v }
func f64(v float64) *float64             { return &v }
func raw(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }

func modelOnly() *v1beta2.DynamoGraphDeploymentRequest {
	return builders.Request("", "").Obj()
}

func withLoad(load v1beta2.LoadSpec) *v1beta2.DynamoGraphDeploymentRequest {
	return builders.Request("", "").Load(load).Obj()
}

func withRange() *v1beta2.DynamoGraphDeploymentRequest {
	return withLoad(v1beta2.LoadSpec{KVCapacityFraction: &v1beta2.KVCapacityFraction{Range: &v1beta2.FractionRange{Min: 0.1, Max: 1.0}}})
}

func parse(t *testing.T, s string) map[string]any {
	t.Helper()
	var v map[string]any
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("bad test JSON %s: %v", s, err)
	}
	return v
}

// TestAcceptanceTable checks every row of SPEC §4.3 exactly: the relevant part of the effective
// input equals the expected JSON, numbers compared as written. The real AISimulate's model
// requires a worker role per searchable mode, so every engine carries the underlay's roles, and
// the opt-out's traffic gives way to AISimulate's default (docs/design/lowering.md).
func TestAcceptanceTable(t *testing.T) {
	cases := []struct {
		name    string
		request func() *v1beta2.DynamoGraphDeploymentRequest
		// want maps a top-level or dotted path to its exact expected JSON; "!path" must be absent.
		want map[string]string
	}{
		{"model only", modelOnly, map[string]string{
			"engine":       `{"model":"meta-llama/Llama-3.1-8B-Instruct","hardware":"h200_sxm","workers":{"aggregated":{},"prefill":{},"decode":{}}}`,
			"optimization": `{}`,
			"traffic":      `{"source":{"type":"synthetic","input_tokens":1024,"output_tokens":128},"load":{"type":"concurrency","concurrency":10},"stop":{"requests":1000}}`,
		}},
		{"static opt-out", func() *v1beta2.DynamoGraphDeploymentRequest {
			d := modelOnly()
			d.Spec.Workload = &v1beta2.WorkloadSpec{Static: &v1beta2.StaticWorkload{}}
			return d
		}, map[string]string{"!traffic": ""}},
		{"requests per second", func() *v1beta2.DynamoGraphDeploymentRequest {
			return withLoad(v1beta2.LoadSpec{RequestsPerSecond: f64(20)})
		}, map[string]string{"traffic.load": `{"type":"poisson","requests_per_second":20}`}},
		{"kv capacity value", func() *v1beta2.DynamoGraphDeploymentRequest {
			return withLoad(v1beta2.LoadSpec{KVCapacityFraction: &v1beta2.KVCapacityFraction{Value: f64(0.5)}})
		}, map[string]string{"traffic.load": `{"type":"kv_capacity_fraction","fraction":0.5}`, "!optimizer": ""}},
		{"kv capacity range", withRange, map[string]string{
			"traffic.load": `{"type":"kv_capacity_fraction","fraction":{"range":{"min":0.1,"max":1}}}`,
			"optimizer":    `{"max_trials":320}`,
		}},
		{"sla ttft itl", func() *v1beta2.DynamoGraphDeploymentRequest {
			d := modelOnly()
			d.Spec.SLA = &v1beta2.SLASpec{TTFTMs: f64(500), ITLMs: f64(30)}
			return d
		}, map[string]string{"evaluation": `{"sla":{"ttft_ms":500,"itl_ms":30}}`, "optimization": `{"strict_sla":true}`}},
		{"override stop", func() *v1beta2.DynamoGraphDeploymentRequest {
			d := modelOnly()
			d.Spec.AISimulate = &v1beta2.AISimulateSpec{InputOverrides: raw(`{"traffic":{"stop":{"requests":null,"requests_per_load_unit":10}}}`)}
			return d
		}, map[string]string{"traffic.stop": `{"requests_per_load_unit":10}`}},
		{"range with max_trials deleted", func() *v1beta2.DynamoGraphDeploymentRequest {
			d := withRange()
			d.Spec.AISimulate = &v1beta2.AISimulateSpec{InputOverrides: raw(`{"optimizer":{"max_trials":null}}`)}
			return d
		}, map[string]string{"!optimizer.max_trials": ""}},
		{"override wins over derived strict_sla", func() *v1beta2.DynamoGraphDeploymentRequest {
			d := modelOnly()
			d.Spec.SLA = &v1beta2.SLASpec{E2EMs: f64(2000)}
			d.Spec.AISimulate = &v1beta2.AISimulateSpec{InputOverrides: raw(`{"optimization":{"strict_sla":false}}`)}
			return d
		}, map[string]string{"optimization": `{"strict_sla":false}`, "evaluation": `{"sla":{"e2e_ms":2000}}`}},
		{"override replaces a whole union object", func() *v1beta2.DynamoGraphDeploymentRequest {
			d := modelOnly()
			d.Spec.AISimulate = &v1beta2.AISimulateSpec{InputOverrides: raw(`{"traffic":{"load":{"type":"constant_rate","concurrency":null,"requests_per_second":12.5}}}`)}
			return d
		}, map[string]string{"traffic.load": `{"type":"constant_rate","requests_per_second":12.5}`}},
		{"override adds a section and keeps integer forms", func() *v1beta2.DynamoGraphDeploymentRequest {
			d := modelOnly()
			d.Spec.AISimulate = &v1beta2.AISimulateSpec{InputOverrides: raw(`{"optimizer":{"seed":7,"candidate_timeout_seconds":30.0}}`)}
			return d
		}, map[string]string{"optimizer": `{"seed":7,"candidate_timeout_seconds":30.0}`}},
		{"one backend and a budget", func() *v1beta2.DynamoGraphDeploymentRequest {
			d := modelOnly()
			d.Spec.Backends = []v1beta2.Backend{v1beta2.BackendSGLang}
			d.Spec.Hardware = &v1beta2.HardwareSpec{GPU: &v1beta2.GPUSpec{SKU: "b200_sxm", Budget: i32(8)}}
			return d
		}, map[string]string{"engine": `{"model":"meta-llama/Llama-3.1-8B-Instruct","hardware":"b200_sxm","backend":"sglang","workers":{"aggregated":{},"prefill":{},"decode":{}}}`,
			"optimization": `{"constraints":{"max_candidate_gpus":8}}`}},
		{"several backends become a choices domain", func() *v1beta2.DynamoGraphDeploymentRequest {
			d := modelOnly()
			d.Spec.Backends = []v1beta2.Backend{v1beta2.BackendTRTLLM, v1beta2.BackendVLLM}
			return d
		}, map[string]string{"engine.backend": `{"choices":["trtllm","vllm"]}`}},
		{"objective target in snake case", func() *v1beta2.DynamoGraphDeploymentRequest {
			d := modelOnly()
			d.Spec.Objective = &v1beta2.ObjectiveSpec{Target: v1beta2.TargetThroughputPerUser}
			return d
		}, map[string]string{"optimization": `{"target":"throughput_per_user"}`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := lower(t, admit(t, tc.request()))
			for path, want := range tc.want {
				absent := strings.HasPrefix(path, "!")
				got, found := lookup(in.Document, strings.Split(strings.TrimPrefix(path, "!"), "."))
				if absent {
					if found {
						t.Errorf("%s: want absent, got %v", path, got)
					}
					continue
				}
				if !found {
					t.Fatalf("%s: missing in %s", path, in.JSON)
				}
				if diff := cmp.Diff(parse(t, `{"v":`+want+`}`)["v"], got); diff != "" {
					t.Errorf("%s (-want +got):\n%s", path, diff)
				}
			}
		})
	}
}

func lookup(doc map[string]any, keys []string) (any, bool) {
	var cur any = doc
	for _, k := range keys {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}

func TestCanonicalAndDeterministic(t *testing.T) {
	a := lower(t, admit(t, readRequest(t, "../../examples/full.yaml")))
	b := lower(t, admit(t, readRequest(t, "../../examples/full.yaml")))
	if !bytes.Equal(a.JSON, b.JSON) || a.Hash != b.Hash {
		t.Fatalf("lowering is not deterministic")
	}
	if !strings.HasPrefix(a.Hash, "sha256:") || len(a.Hash) != len("sha256:")+64 {
		t.Fatalf("hash %q is not sha256:<hex>", a.Hash)
	}
	if bytes.ContainsAny(a.JSON, " \n") {
		t.Fatalf("canonical JSON has insignificant whitespace: %s", a.JSON)
	}
	// Keys come out sorted regardless of the override's key order.
	c, _ := aisimulate.Canonicalize([]byte(`{"b":1,"a":{"d":2.50,"c":3}}`))
	if got, want := string(c.JSON), `{"a":{"c":3,"d":2.50},"b":1}`; got != want {
		t.Fatalf("canonical = %s, want %s", got, want)
	}
	// Integers stay integers in the YAML rendering.
	y, err := a.YAML()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"input_tokens: 4096", "max_trials: 320", "max_candidate_gpus: 8", "requests: 1000"} {
		if !strings.Contains(string(y), want) {
			t.Errorf("YAML lacks %q:\n%s", want, y)
		}
	}
}

func TestUnderlayNeverHoldsUnionObjects(t *testing.T) {
	u := aisimulate.Underlay()
	for _, path := range [][]string{{"traffic", "source"}, {"traffic", "load"}, {"engine", "backend"}} {
		if _, found := lookup(u, path); found {
			t.Errorf("underlay holds union object %s", strings.Join(path, "."))
		}
	}
	if got, found := lookup(u, []string{"traffic", "stop", "requests"}); !found || got.(json.Number) != "1000" {
		t.Errorf("underlay traffic.stop.requests = %v, want 1000", got)
	}
	if got, found := lookup(u, []string{"optimization"}); !found || len(got.(map[string]any)) != 0 {
		t.Errorf("underlay optimization = %v, want {}", got)
	}
}

func TestLowerErrorsNameFields(t *testing.T) {
	ignore := cmpopts.IgnoreFields(field.Error{}, "Detail", "BadValue", "Origin", "CoveredByDeclarative")
	cases := []struct {
		name string
		spec func() *v1beta2.DynamoGraphDeploymentRequestSpec
		want field.ErrorList
	}{
		{"no sku", func() *v1beta2.DynamoGraphDeploymentRequestSpec { return &modelOnly().Spec },
			field.ErrorList{field.Required(field.NewPath("spec", "hardware", "gpu", "sku"), "")}},
		{"two load variants", func() *v1beta2.DynamoGraphDeploymentRequestSpec {
			d := admit(t, withLoad(v1beta2.LoadSpec{Concurrency: i32(1), RequestsPerSecond: f64(1)}))
			return &d.Spec
		}, field.ErrorList{field.Invalid(field.NewPath("spec", "workload", "static", "load"), nil, "")}},
		{"empty kv fraction", func() *v1beta2.DynamoGraphDeploymentRequestSpec {
			d := admit(t, withLoad(v1beta2.LoadSpec{KVCapacityFraction: &v1beta2.KVCapacityFraction{}}))
			return &d.Spec
		}, field.ErrorList{field.Required(field.NewPath("spec", "workload", "static", "load", "kvCapacityFraction"), "")}},
		{"overrides not an object", func() *v1beta2.DynamoGraphDeploymentRequestSpec {
			d := admit(t, modelOnly())
			d.Spec.AISimulate = &v1beta2.AISimulateSpec{InputOverrides: raw(`"x"`)}
			return &d.Spec
		}, field.ErrorList{field.Invalid(aisimulate.OverridesPath, nil, "")}},
		{"overrides too deep", func() *v1beta2.DynamoGraphDeploymentRequestSpec {
			d := admit(t, modelOnly())
			d.Spec.AISimulate = &v1beta2.AISimulateSpec{InputOverrides: raw(strings.Repeat(`{"a":`, 20) + "1" + strings.Repeat("}", 20))}
			return &d.Spec
		}, field.ErrorList{field.Invalid(aisimulate.OverridesPath, nil, "")}},
		{"overrides too large", func() *v1beta2.DynamoGraphDeploymentRequestSpec {
			d := admit(t, modelOnly())
			d.Spec.AISimulate = &v1beta2.AISimulateSpec{InputOverrides: raw(`{"a":"` + strings.Repeat("x", aisimulate.MaxOverridesBytes) + `"}`)}
			return &d.Spec
		}, field.ErrorList{field.TooLong(aisimulate.OverridesPath, nil, 0)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := aisimulate.Lower(tc.spec(), aisimulate.Options{})
			if diff := cmp.Diff(tc.want, errs, ignore); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMaxCostPerHourRefusals: objective.maxCostPerHour is refused at its path when the price
// list has no price for the SKU and when it buys no GPU.
func TestMaxCostPerHourRefusals(t *testing.T) {
	path := field.NewPath("spec", "objective", "maxCostPerHour")
	withMax := func(sku, max string) *v1beta2.DynamoGraphDeploymentRequestSpec {
		d := admit(t, builders.Request("", "").GPUSKU(sku).Obj())
		d.Spec.Objective = &v1beta2.ObjectiveSpec{MaxCostPerHour: max}
		return &d.Spec
	}
	for _, tc := range []struct {
		name   string
		spec   *v1beta2.DynamoGraphDeploymentRequestSpec
		prices pricing.Prices
		want   field.ErrorList
	}{
		{"no price list", withMax("h200_sxm", "40"), pricing.Prices{},
			field.ErrorList{field.Invalid(path, "40", "the operator configuration has no price per GPU-hour for GPU system h200_sxm (pricing.pricePerGPUHour)")}},
		{"no price for the SKU", withMax("a100_sxm", "40"), goldenPrices,
			field.ErrorList{field.Invalid(path, "40", "the operator configuration has no price per GPU-hour for GPU system a100_sxm (pricing.pricePerGPUHour)")}},
		{"below one GPU-hour", withMax("h200_sxm", "3.49"), goldenPrices,
			field.ErrorList{field.Invalid(path, "3.49", "buys no GPU: one GPU-hour of h200_sxm costs 3.50 USD")}},
		{"zero", withMax("h200_sxm", "0"), goldenPrices,
			field.ErrorList{field.Invalid(path, "0", "buys no GPU: one GPU-hour of h200_sxm costs 3.50 USD")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := aisimulate.Lower(tc.spec, aisimulate.Options{Prices: tc.prices})
			if diff := cmp.Diff(tc.want, errs, cmpopts.IgnoreFields(field.Error{}, "Origin", "CoveredByDeclarative")); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
	// Exactly one GPU-hour buys one GPU.
	in, errs := aisimulate.Lower(withMax("h200_sxm", "3.5"), aisimulate.Options{Prices: goldenPrices})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if diff := cmp.Diff(parse(t, `{"max_candidate_gpus": 1}`), in.Document["optimization"].(map[string]any)["constraints"]); diff != "" {
		t.Errorf("constraints (-want +got):\n%s", diff)
	}
}

// TestTraceLowering: a trace request lowers to a trace source at the fixed mount path, its
// replay mode and no request-count stop (AISimulate refuses one with a trace), in every variant;
// inputOverrides still applies last.
func TestTraceLowering(t *testing.T) {
	speed := 3.0
	conc := int32(16)
	vt := 120.0
	cm := &v1beta2.TraceSource{ConfigMap: &v1beta2.TraceConfigMapSource{Name: "traffic", Key: "t.jsonl"}}
	pvc := &v1beta2.TraceSource{PVC: &v1beta2.TracePVCSource{ClaimName: "archive", Path: "x/y.jsonl"}}
	cases := []struct {
		name      string
		trace     v1beta2.TraceWorkload
		overrides string
		want      map[string]any
	}{
		{"ConfigMap, recorded timestamps", v1beta2.TraceWorkload{Source: cm}, "", map[string]any{
			"source": map[string]any{"type": "trace", "format": "mooncake", "paths": []any{"/var/run/dgdr/trace/trace.jsonl"}},
			"load":   map[string]any{"type": "trace_timestamps", "speedup": 1.0}}},
		{"claim, sped up, time-bounded", v1beta2.TraceWorkload{Source: pvc, Replay: &v1beta2.TraceReplay{ArrivalSpeedupRatio: &speed}, MaxVirtualTimeSeconds: &vt}, "", map[string]any{
			"source": map[string]any{"type": "trace", "format": "mooncake", "paths": []any{"/var/run/dgdr/trace/x/y.jsonl"}},
			"load":   map[string]any{"type": "trace_timestamps", "speedup": 3.0},
			"stop":   map[string]any{"max_virtual_time_seconds": 120.0}}},
		{"closed loop", v1beta2.TraceWorkload{Source: cm, Replay: &v1beta2.TraceReplay{Concurrency: &conc}}, "", map[string]any{
			"source": map[string]any{"type": "trace", "format": "mooncake", "paths": []any{"/var/run/dgdr/trace/trace.jsonl"}},
			"load":   map[string]any{"type": "concurrency", "concurrency": 16.0}}},
		{"Dynamo's request trace, gzipped on a claim", v1beta2.TraceWorkload{Format: v1beta2.TraceFormatDynamo,
			Source: &v1beta2.TraceSource{PVC: &v1beta2.TracePVCSource{ClaimName: "archive", Path: "frontend/request-trace.000000.jsonl.gz"}}}, "", map[string]any{
			"source": map[string]any{"type": "trace", "format": "dynamo", "paths": []any{"/var/run/dgdr/trace/frontend/request-trace.000000.jsonl.gz"}},
			"load":   map[string]any{"type": "trace_timestamps", "speedup": 1.0}}},
		{"inputOverrides last", v1beta2.TraceWorkload{Source: cm}, `{"traffic":{"source":{"block_size":64},"stop":{"max_virtual_time_seconds":5}}}`, map[string]any{
			"source": map[string]any{"type": "trace", "format": "mooncake", "paths": []any{"/var/run/dgdr/trace/trace.jsonl"}, "block_size": 64.0},
			"load":   map[string]any{"type": "trace_timestamps", "speedup": 1.0},
			"stop":   map[string]any{"max_virtual_time_seconds": 5.0}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := builders.Request("", "").Trace(tc.trace)
			if tc.overrides != "" {
				b.Overrides(tc.overrides)
			}
			in := lower(t, admit(t, b.Obj()))
			var doc map[string]any
			if err := json.Unmarshal(in.JSON, &doc); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, doc["traffic"]); diff != "" {
				t.Errorf("traffic (-want +got):\n%s", diff)
			}
			if problems := aisimulate.CheckInput(in.Document); len(problems) > 0 {
				t.Errorf("the effective input breaks AISimulate's rules: %v", problems)
			}
		})
	}
}

// TestUnderlayGivesWay: the underlay's worker roles and request-count stop give way to what the
// final document cannot use (docs/design/lowering.md), decided before inputOverrides applies, so that
// applying the overrides again changes nothing.
func TestUnderlayGivesWay(t *testing.T) {
	optOut := func(overrides string) *v1beta2.DynamoGraphDeploymentRequest {
		d := modelOnly()
		d.Spec.Workload = &v1beta2.WorkloadSpec{Static: &v1beta2.StaticWorkload{}}
		if overrides != "" {
			d.Spec.AISimulate = &v1beta2.AISimulateSpec{InputOverrides: raw(overrides)}
		}
		return d
	}
	withOverrides := func(overrides string) *v1beta2.DynamoGraphDeploymentRequest {
		d := modelOnly()
		d.Spec.AISimulate = &v1beta2.AISimulateSpec{InputOverrides: raw(overrides)}
		return d
	}
	cases := []struct {
		name    string
		request *v1beta2.DynamoGraphDeploymentRequest
		want    map[string]string // dotted path → exact JSON; "!path": absent
	}{
		{"a disaggregated mode keeps prefill and decode", withOverrides(`{"engine":{"mode":"disaggregated"}}`),
			map[string]string{"engine.workers": `{"prefill":{},"decode":{}}`}},
		{"an aggregated mode keeps aggregated", withOverrides(`{"engine":{"mode":"aggregated"}}`),
			map[string]string{"engine.workers": `{"aggregated":{}}`}},
		{"a mode domain keeps the roles of its modes", withOverrides(`{"engine":{"mode":{"choices":["disaggregated"]}}}`),
			map[string]string{"engine.workers": `{"prefill":{},"decode":{}}`}},
		{"a role the user configures stays", withOverrides(`{"engine":{"mode":"disaggregated","workers":{"aggregated":{"context_length":4096}}}}`),
			map[string]string{"engine.workers.aggregated": `{"context_length":4096}`}},
		{"the opt-out alone takes AISimulate's default traffic", optOut(""), map[string]string{"!traffic": ""}},
		{"the opt-out with overridden traffic keeps the underlay's stop", optOut(`{"traffic":{"source":{"type":"synthetic"},"load":{"type":"concurrency","concurrency":4}}}`),
			map[string]string{"traffic.stop": `{"requests":1000}`}},
		{"an empty traffic override is the user's", optOut(`{"traffic":{}}`), map[string]string{"traffic": `{}`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := lower(t, admit(t, tc.request))
			for path, want := range tc.want {
				got, found := lookup(in.Document, strings.Split(strings.TrimPrefix(path, "!"), "."))
				if strings.HasPrefix(path, "!") {
					if found {
						t.Errorf("%s: want absent, got %v", path, got)
					}
					continue
				}
				if !found {
					t.Fatalf("%s: missing in %s", path, in.JSON)
				}
				if diff := cmp.Diff(parse(t, `{"v":`+want+`}`)["v"], got); diff != "" {
					t.Errorf("%s (-want +got):\n%s", path, diff)
				}
			}
			if tc.request.Spec.AISimulate == nil {
				return
			}
			again, err := jsonpatch.MergePatch(in.JSON, tc.request.Spec.AISimulate.InputOverrides.Raw)
			if err != nil {
				t.Fatal(err)
			}
			c, err := aisimulate.Canonicalize(again)
			if err != nil || !bytes.Equal(c.JSON, in.JSON) {
				t.Errorf("applying the overrides again changed the effective input:\n%s\n%s", in.JSON, again)
			}
		})
	}
}

// TestToYAMLWritesFloatsPyYAMLReads: a float the YAML writer prints with an exponent gets a
// decimal point and a signed exponent, so that PyYAML (YAML 1.1) reads a float, not a string.
func TestToYAMLWritesFloatsPyYAMLReads(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":1e-09}`:                     "a: 1.0e-09\n",
		`{"a":0.000000001}`:               "a: 1.0e-09\n",
		`{"a":1.5e-07,"b":[2.5e+30]}`:     "a: 1.5e-07\nb:\n- 2.5e+30\n",
		`{"a":1000000000000000000000}`:    "a: 1.0e+21\n",
		`{"a":0.5,"b":16384,"c":"1e-09"}`: "a: 0.5\nb: 16384\nc: \"1e-09\"\n",
	} {
		got, err := aisimulate.ToYAML([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("ToYAML(%s) = %q, want %q", in, got, want)
		}
	}
}

// TestAPIBackendsAreTheDocumentsBackends: spec.backends lowers to engine.backend as written, so
// the API's backends (its constants and the CRD's enum) are the documents' backends, in order.
func TestAPIBackendsAreTheDocumentsBackends(t *testing.T) {
	api := []string{string(v1beta2.BackendVLLM), string(v1beta2.BackendSGLang), string(v1beta2.BackendTRTLLM)}
	if diff := cmp.Diff(output.BackendNames(), api); diff != "" {
		t.Errorf("the API's backend constants (-documents +API):\n%s", diff)
	}
	data, err := fs.ReadFile(crd.Files, "bases/nvidia.com_dynamographdeploymentrequests.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Spec struct {
			Versions []struct {
				Name   string
				Schema struct {
					OpenAPIV3Schema struct {
						Properties map[string]struct {
							Properties map[string]struct {
								Items struct{ Enum []string }
							}
						}
					} `json:"openAPIV3Schema"`
				}
			}
		}
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, v := range doc.Spec.Versions {
		if v.Name != v1beta2.GroupVersion.Version {
			continue
		}
		found = true
		enum := v.Schema.OpenAPIV3Schema.Properties["spec"].Properties["backends"].Items.Enum
		if diff := cmp.Diff(output.BackendNames(), enum); diff != "" {
			t.Errorf("the CRD's spec.backends enum (-documents +CRD):\n%s", diff)
		}
	}
	if !found {
		t.Fatalf("the CRD has no version %s", v1beta2.GroupVersion.Version)
	}
}
