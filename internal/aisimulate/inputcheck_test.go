package aisimulate_test

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
)

func checkFile(t *testing.T, path string) []aisimulate.Problem {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := aisimulate.DecodeDocument(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return aisimulate.CheckInput(doc)
}

// TestCorpusValid: every valid document of the team's corpus passes.
func TestCorpusValid(t *testing.T) {
	files, _ := filepath.Glob("testdata/inputs/valid/*.yaml")
	if len(files) < 10 {
		t.Fatalf("corpus too small: %d", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			if ps := checkFile(t, f); len(ps) > 0 {
				t.Errorf("unexpected problems: %v", ps)
			}
		})
	}
}

// TestCorpusInvalid: every invalid document is rejected at the path its first line names. Two
// headers exist:
//
//	# path: engine.workers.decode.hardware   every problem is at exactly this path (compared, not the wording)
//	# want: traffic.stop                      a problem at this path, among others (older, looser files)
func TestCorpusInvalid(t *testing.T) {
	files, _ := filepath.Glob("testdata/inputs/invalid/*.yaml")
	if len(files) < 70 {
		t.Fatalf("corpus too small: %d", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, _ := os.ReadFile(f)
			line, _ := bufio.NewReader(bytes.NewReader(data)).ReadString('\n')
			line = strings.TrimSpace(line)
			ps := checkFile(t, f)
			got := problemPaths(ps)
			switch {
			case strings.HasPrefix(line, "# path:"):
				want := []string{strings.TrimSpace(strings.TrimPrefix(line, "# path:"))}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("problem paths (-want +got):\n%s\nproblems: %v", diff, ps)
				}
			case strings.HasPrefix(line, "# want:"):
				want := strings.TrimSpace(strings.TrimPrefix(line, "# want:"))
				if !contains(got, want) {
					t.Errorf("want a problem at %s, got %v", want, ps)
				}
			default:
				t.Fatalf("the first line must be '# path: <field path>' or '# want: <field path>', got %q", line)
			}
		})
	}
}

// problemPaths returns the distinct paths of ps, sorted.
func problemPaths(ps []aisimulate.Problem) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range ps {
		if k := p.PathString(); !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// TestAdmittedTypedSpecsAlwaysValidate is a property: any request admission accepts, without
// inputOverrides, lowers to an input the bundled schema and cross-field rules accept.
func TestAdmittedTypedSpecsAlwaysValidate(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	skus := aisimulate.KnownSKUs()
	targets := []v1beta2.ObjectiveTarget{"", "throughput", "throughputPerGpu", "throughputPerUser", "goodput", "goodputPerGpu", "ttft", "e2eLatency", "pareto"}
	backends := []v1beta2.Backend{"vllm", "sglang", "trtllm"}
	for i := 0; i < 2000; i++ {
		d := modelOnly()
		s := &d.Spec
		if r.Intn(2) == 0 {
			s.Hardware = &v1beta2.HardwareSpec{GPU: &v1beta2.GPUSpec{SKU: skus[r.Intn(len(skus))]}}
			if r.Intn(2) == 0 {
				s.Hardware.GPU.Budget = i32(int32(1 + r.Intn(64)))
			}
		}
		if n := r.Intn(4); n > 0 {
			perm := r.Perm(3)
			for _, k := range perm[:n] {
				s.Backends = append(s.Backends, backends[k])
			}
		}
		switch r.Intn(4) {
		case 0: // omitted workload
		case 1:
			s.Workload = &v1beta2.WorkloadSpec{Static: &v1beta2.StaticWorkload{}}
		default:
			st := &v1beta2.StaticWorkload{}
			if r.Intn(2) == 0 {
				st.InputTokens = i32(int32(1 + r.Intn(100000)))
			}
			if r.Intn(2) == 0 {
				st.OutputTokens = i32(int32(1 + r.Intn(10000)))
			}
			switch r.Intn(5) {
			case 0:
			case 1:
				st.Load = &v1beta2.LoadSpec{Concurrency: i32(int32(1 + r.Intn(1000)))}
			case 2:
				st.Load = &v1beta2.LoadSpec{RequestsPerSecond: f64(0.001 + r.Float64()*100)}
			case 3:
				st.Load = &v1beta2.LoadSpec{KVCapacityFraction: &v1beta2.KVCapacityFraction{Value: f64(0.01 + r.Float64()*3)}}
			case 4:
				lo := 0.01 + r.Float64()
				st.Load = &v1beta2.LoadSpec{KVCapacityFraction: &v1beta2.KVCapacityFraction{Range: &v1beta2.FractionRange{Min: lo, Max: lo + r.Float64()}}}
			}
			if st.InputTokens == nil && st.OutputTokens == nil && st.Load == nil {
				st.InputTokens = i32(7)
			}
			s.Workload = &v1beta2.WorkloadSpec{Static: st}
		}
		switch r.Intn(4) {
		case 1:
			s.SLA = &v1beta2.SLASpec{TTFTMs: f64(1 + r.Float64()*1000)}
		case 2:
			s.SLA = &v1beta2.SLASpec{TTFTMs: f64(1 + r.Float64()*1000), ITLMs: f64(0.5 + r.Float64()*50)}
		case 3:
			s.SLA = &v1beta2.SLASpec{E2EMs: f64(1 + r.Float64()*10000)}
		}
		target := targets[r.Intn(len(targets))]
		if (target == "goodput" || target == "goodputPerGpu") && s.SLA == nil {
			continue // admission rejects it; not an admitted request
		}
		if target != "" {
			s.Objective = &v1beta2.ObjectiveSpec{Target: target}
		}
		admit(t, d)
		in := lower(t, d)
		if ps := aisimulate.CheckInput(in.Document); len(ps) > 0 {
			t.Fatalf("admitted spec %+v lowers to an invalid input %s: %v", s, in.JSON, ps)
		}
	}
}

func BenchmarkLowerAndCheck(b *testing.B) {
	data, _ := os.ReadFile("../../examples/full.yaml")
	d := &v1beta2.DynamoGraphDeploymentRequest{}
	if err := yaml.UnmarshalStrict(data, d); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		in, errs := aisimulate.Lower(&d.Spec, aisimulate.Options{})
		if len(errs) > 0 {
			b.Fatal(errs)
		}
		if ps := aisimulate.CheckInput(in.Document); len(ps) > 0 {
			b.Fatal(ps)
		}
	}
}

// TestGoldenLoweringsValidate: every golden lowering of the examples is a valid recommend input
// (a stricter bundled validator must never reject what the operator itself emits).
func TestGoldenLoweringsValidate(t *testing.T) {
	files, _ := filepath.Glob("testdata/golden/*.json")
	if len(files) == 0 {
		t.Fatal("no golden lowerings")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			ps, err := aisimulate.CheckInputJSON(data)
			if err != nil {
				t.Fatal(err)
			}
			if len(ps) > 0 {
				t.Errorf("golden lowering rejected: %v", ps)
			}
		})
	}
}

// TestSchemaProblemsArePrecise: the schema's problems name the field to change and only the
// reading of a union the value means: the null branch of an optional field, the branches of
// another JSON type and the non-selected branches of a discriminated union (traffic.source by
// type) report nothing.
func TestSchemaProblemsArePrecise(t *testing.T) {
	const engine = `engine: {mode: aggregated, model: m, hardware: h200_sxm, workers: {aggregated: %s}}
optimization: {}
`
	for _, tc := range []struct {
		name, doc string
		want      []string
	}{
		{"unknown field of an optional section", fmt.Sprintf(engine, "{gpus: 2}"),
			[]string{"engine.workers.aggregated.gpus: unknown field (AISimulate rejects fields it does not define)"}},
		{"traffic without source", fmt.Sprintf(engine, "{}") + "traffic: {load: {concurrency: 4}, stop: {requests: 1}}\n",
			[]string{"traffic.source: required field missing"}},
		{"source without its tag", fmt.Sprintf(engine, "{}") + "traffic: {source: {input_tokens: 8}, load: {concurrency: 4}, stop: {requests: 1}}\n",
			[]string{"traffic.source.type: required field missing"}},
		{"unknown tag", fmt.Sprintf(engine, "{}") + "traffic: {source: {type: sessions}, load: {concurrency: 4}, stop: {requests: 1}}\n",
			[]string{"traffic.source.type: value must be one of 'synthetic', 'synthetic-session', 'trace'"}},
		{"field of another source type", fmt.Sprintf(engine, "{}") + "traffic: {source: {type: trace, paths: [/t], input_tokens: 8}, load: {type: trace_timestamps}}\n",
			[]string{"traffic.source.input_tokens: unknown field (AISimulate rejects fields it does not define)"}},
		{"trace without paths", fmt.Sprintf(engine, "{}") + "traffic: {source: {type: trace}, load: {type: trace_timestamps}}\n",
			[]string{"traffic.source.paths: required field missing"}},
		{"bound of a value that could be a domain", fmt.Sprintf(engine, "{}") + "traffic: {source: {type: synthetic}, load: {concurrency: 0}, stop: {requests: 1}}\n",
			[]string{"traffic.load.concurrency: must be > 0, got 0"}},
		{"bound inside a domain", fmt.Sprintf(engine, "{}") + "traffic: {source: {type: synthetic}, load: {concurrency: {choices: [2, 0]}}, stop: {requests: 1}}\n",
			[]string{"traffic.load.concurrency.choices.1: must be > 0, got 0"}},
		{"no branch takes the type", fmt.Sprintf(engine, "{kv_cache: {block_size: [16]}}"),
			[]string{"engine.workers.aggregated.kv_cache.block_size: got array, want integer or object"}},
		{"a float for a strict integer", fmt.Sprintf(engine, "{kv_cache: {block_size: 16.0}}"),
			[]string{"engine.workers.aggregated.kv_cache.block_size: must be written as an integer, got 16.0 (AISimulate's integer fields are strict)"}},
		{"an explicit null of an optional field", fmt.Sprintf(engine, "{kv_cache: {block_size: null, host_offload: null}}"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := aisimulate.DecodeDocument([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range aisimulate.CheckInput(doc) {
				got = append(got, p.String())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

// TestValidateSchemaIsTheSchemaAlone: ValidateSchema, the generated-schema check that P1 weighs
// admission's own work against, judges what the schema says and nothing of the cross-field
// rules: a document only a rule refuses passes it, one the schema refuses does not, and a valid
// document passes both.
func TestValidateSchemaIsTheSchemaAlone(t *testing.T) {
	const model = `engine: {model: meta-llama/Llama-3.1-8B-Instruct, hardware: h200_sxm, workers: {aggregated: {}, prefill: {}, decode: {}}}
optimization: {}
`
	cases := []struct {
		name              string
		doc               string
		schemaOK, checkOK bool
	}{
		{"valid", model, true, true},
		{"refused by a rule (common.py SlaConfig._validate_form)", model + "evaluation: {sla: {e2e_ms: 100, ttft_ms: 10}}\n", true, false},
		{"refused by the schema (unknown field)", model + "evaluation: {sla: {e2e_ms: 100, p99_ms: 10}}\n", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := aisimulate.DecodeDocument([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			got := struct{ SchemaOK, CheckOK bool }{aisimulate.ValidateSchema(doc) == nil, len(aisimulate.CheckInput(doc)) == 0}
			want := struct{ SchemaOK, CheckOK bool }{tc.schemaOK, tc.checkOK}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
