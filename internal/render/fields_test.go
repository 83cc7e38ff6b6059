package render_test

import (
	"encoding/json"
	"errors"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/internal/render"
	"github.com/dgdr-operator/dgdr-operator/internal/render/dgdv1beta1"
)

// predictionField is a field of the typed prediction document: its JSON path (engine.workers.*
// for every language role) and its Go type.
type predictionField struct {
	path string
	typ  reflect.Type
}

// predictionFields walks the typed prediction document (output.PredictionConfig) by reflection
// and returns every field, down to the first path render.Fields has an entry for (an entry for a
// section covers it). A field of no entry and no subfields is returned with its path too, so
// that the caller sees it has none.
func predictionFields() []predictionField {
	var out []predictionField
	var walk func(prefix string, t reflect.Type)
	walk = func(prefix string, t reflect.Type) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			path := name
			if prefix != "" {
				path = prefix + "." + name
			}
			ft := f.Type
			if _, ok := render.Fields[path]; ok || !isSection(ft) {
				out = append(out, predictionField{path, ft})
				continue
			}
			if ft == reflect.TypeFor[output.Workers]() {
				// The language roles share one set of fields; the encoder pool is one entry.
				walk(path+".*", reflect.TypeFor[output.Worker]())
				out = append(out, predictionField{path + ".encoder", reflect.TypeFor[*output.Worker]()})
				continue
			}
			walk(path, ft)
		}
	}
	walk("", reflect.TypeFor[output.PredictionConfig]())
	return out
}

// isSection tells a struct (or pointer to one) with fields of its own from a value.
func isSection(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind() == reflect.Struct && t != reflect.TypeFor[intstr.IntOrString]()
}

// TestEveryPredictionField: every field of the typed prediction document has a disposition in
// render.Fields (rendered, refused, or modelled: a fact of the prediction with no deployment
// counterpart), and every entry of render.Fields is a field of the document. A field added to
// output.PredictionConfig fails this test until it is rendered or refused.
func TestEveryPredictionField(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range predictionFields() {
		seen[f.path] = true
		if _, ok := render.Fields[f.path]; !ok {
			t.Errorf("%s (%s) is neither rendered, refused nor modelled: add it to render.Fields", f.path, f.typ)
		}
	}
	for path, d := range render.Fields {
		if !seen[path] {
			t.Errorf("render.Fields lists %s (%s), which the typed prediction document has not", path, d)
		}
		switch d {
		case render.Rendered, render.Refused, render.Modelled:
		default:
			t.Errorf("render.Fields[%s] = %q", path, d)
		}
	}
	if len(seen) < 60 {
		t.Errorf("walked only %d fields", len(seen))
	}
}

// sample is a value of Go type t as a prediction document writes it, other than the zero value.
func sample(t reflect.Type) any {
	switch t {
	case reflect.TypeFor[json.RawMessage]():
		return map[string]any{"kind": "sample"}
	case reflect.TypeFor[*intstr.IntOrString]():
		return 7
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "sample"
	case reflect.Bool:
		return true
	case reflect.Int, reflect.Int64:
		return 7
	case reflect.Float64:
		return 0.5
	case reflect.Slice:
		return []any{"sample"}
	case reflect.Struct:
		return map[string]any{"replicas": 1}
	}
	panic("no sample of " + t.String())
}

// setPath sets the value at a dotted path of doc, creating maps on the way.
func setPath(doc map[string]any, path string, v any) {
	keys := strings.Split(path, ".")
	m := doc
	for _, k := range keys[:len(keys)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[keys[len(keys)-1]] = v
}

// notRenderable renders doc and returns the refused paths (nil when it rendered).
func notRenderable(t *testing.T, doc map[string]any, opts render.Options) []string {
	t.Helper()
	if opts.RuntimeImages == nil {
		opts.RuntimeImages = testImages
	}
	_, _, err := render.Render(doc, opts)
	var refused *render.NotRenderableError
	switch {
	case errors.As(err, &refused):
		return refused.Paths()
	case err != nil:
		t.Fatalf("render: %v", err)
	}
	return nil
}

// TestRefusedFieldsAreRefused sets each refused field of render.Fields, alone, in a document that
// renders, and requires the document to be NotRenderable naming exactly that field.
func TestRefusedFieldsAreRefused(t *testing.T) {
	base := readDoc(t, filepath.Join("testdata", "input", "vllm-agg.yaml"))
	if got := notRenderable(t, base, render.Options{}); got != nil {
		t.Fatalf("the base document is not renderable: %v", got)
	}
	n := 0
	for _, f := range predictionFields() {
		if render.Fields[f.path] != render.Refused {
			continue
		}
		n++
		path := strings.Replace(f.path, ".*.", ".aggregated.", 1)
		t.Run(path, func(t *testing.T) {
			doc := cloneDoc(t, base)
			setPath(doc, path, sample(f.typ))
			if diff := cmp.Diff([]string{path}, notRenderable(t, doc, render.Options{})); diff != "" {
				t.Errorf("refused paths (-want +got):\n%s", diff)
			}
		})
	}
	if n < 20 {
		t.Errorf("only %d refused fields", n)
	}
}

func cloneDoc(t *testing.T, doc map[string]any) map[string]any {
	t.Helper()
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRenderOrRefuse: the values of rendered fields that a backend or mode cannot lower are
// refused, naming the field; the ones it can lower render; a field the typed document does not
// know is refused.
func TestRenderOrRefuse(t *testing.T) {
	ngram := map[string]any{"kind": "ngram", "num_speculative_tokens": 3, "acceptance_rates": []any{0.6, 0.4, 0.2}, "seed": 42}
	offload := map[string]any{"num_host_blocks": 4096, "d2h_bandwidth_gbps": 32.0}
	cases := []struct {
		name  string
		input string
		set   map[string]any
		want  []string
	}{
		{"ngram on vLLM", "vllm-agg", map[string]any{"engine.speculation": ngram}, nil},
		{"ngram on disaggregated vLLM", "vllm-disagg", map[string]any{"engine.speculation": ngram}, nil},
		{"ngram on SGLang", "sglang-agg", map[string]any{"engine.speculation": ngram}, []string{"engine.speculation"}},
		{"ngram on TRT-LLM", "trtllm-agg", map[string]any{"engine.speculation": ngram}, []string{"engine.speculation"}},
		{"eagle3 on vLLM", "vllm-agg", map[string]any{"engine.speculation": map[string]any{"kind": "eagle3", "expected_accepted_tokens": 1.5}}, []string{"engine.speculation"}},
		{"MTP", "vllm-agg", map[string]any{"engine.nextn": 1}, []string{"engine.nextn"}},
		{"no MTP", "vllm-agg", map[string]any{"engine.nextn": 0, "engine.enable_eplb": false, "engine.enable_chunked_prefill": true}, nil},
		{"EPLB", "vllm-agg", map[string]any{"engine.enable_eplb": true}, []string{"engine.enable_eplb"}},
		{"unchunked prefill", "vllm-agg", map[string]any{"engine.enable_chunked_prefill": false}, []string{"engine.enable_chunked_prefill"}},
		{"vLLM's prefill interval", "vllm-agg", map[string]any{"engine.workers.aggregated.scheduler.prefill_schedule_interval": 1,
			"engine.workers.aggregated.scheduler.prefill_decode_interval": 0}, nil},
		{"another prefill interval", "vllm-agg", map[string]any{"engine.workers.aggregated.scheduler.prefill_schedule_interval": 2},
			[]string{"engine.workers.aggregated.scheduler.prefill_schedule_interval"}},
		{"SGLang's prefill-decode interval", "sglang-agg", map[string]any{"engine.workers.aggregated.scheduler.prefill_decode_interval": 3},
			[]string{"engine.workers.aggregated.scheduler.prefill_decode_interval"}},
		{"fixed blocks on vLLM", "vllm-agg", map[string]any{"engine.workers.aggregated.kv_cache.capacity": map[string]any{"type": "fixed", "blocks": 5000}}, nil},
		{"fixed blocks on SGLang", "sglang-agg", map[string]any{"engine.workers.aggregated.kv_cache.capacity": map[string]any{"type": "fixed", "blocks": 5000}},
			[]string{"engine.workers.aggregated.kv_cache.capacity.blocks"}},
		{"fixed bytes", "vllm-agg", map[string]any{"engine.workers.aggregated.kv_cache.capacity": map[string]any{"type": "fixed", "bytes": 1 << 30}},
			[]string{"engine.workers.aggregated.kv_cache.capacity.bytes"}},
		{"host offload with bytes per token", "vllm-agg", map[string]any{"engine.workers.aggregated.kv_cache.host_offload": offload,
			"engine.workers.aggregated.kv_cache.bytes_per_token": 73728}, nil},
		{"host offload, bytes per token auto", "vllm-agg", map[string]any{"engine.workers.aggregated.kv_cache.host_offload": offload,
			"engine.workers.aggregated.kv_cache.bytes_per_token": "auto"}, []string{"engine.workers.aggregated.kv_cache.host_offload"}},
		{"shared host offload", "vllm-agg", map[string]any{"engine.workers.aggregated.kv_cache.host_offload": map[string]any{"num_host_blocks": 10, "scope": "cluster_shared"},
			"engine.workers.aggregated.kv_cache.bytes_per_token": 73728}, []string{"engine.workers.aggregated.kv_cache.host_offload"}},
		{"host offload on disaggregated vLLM", "vllm-disagg", map[string]any{"engine.workers.decode.kv_cache.host_offload": offload,
			"engine.workers.decode.kv_cache.bytes_per_token": 73728}, []string{"engine.workers.decode.kv_cache.host_offload"}},
		{"host offload on SGLang", "sglang-agg", map[string]any{"engine.workers.aggregated.kv_cache.host_offload": offload,
			"engine.workers.aggregated.kv_cache.bytes_per_token": 73728}, []string{"engine.workers.aggregated.kv_cache.host_offload"}},
		{"G3 offload", "vllm-agg", map[string]any{"engine.workers.aggregated.kv_cache.g3_offload": map[string]any{"scope": "worker_local", "num_g3_blocks": 10}},
			[]string{"engine.workers.aggregated.kv_cache.g3_offload"}},
		{"a prefill role of an aggregated deployment", "vllm-agg", map[string]any{"engine.workers.prefill": map[string]any{"parallelism": map[string]any{"tensor": 1}}},
			[]string{"engine.workers.prefill"}},
		{"several at once", "sglang-disagg", map[string]any{"engine.speculation": ngram, "engine.kvcache_quant_mode": "fp8", "engine.workers.decode.state_cache": map[string]any{}},
			[]string{"engine.workers.decode.state_cache", "engine.kvcache_quant_mode", "engine.speculation"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc := readDoc(t, filepath.Join("testdata", "input", tc.input+".yaml"))
			for _, k := range slices.Sorted(maps.Keys(tc.set)) {
				setPath(doc, k, tc.set[k])
			}
			if diff := cmp.Diff(tc.want, notRenderable(t, doc, render.Options{})); diff != "" {
				t.Errorf("refused paths (-want +got):\n%s", diff)
			}
		})
	}
}

// workerArgs renders doc and returns each worker component's args by component name.
func workerArgs(t *testing.T, doc map[string]any, opts render.Options) map[string][]string {
	t.Helper()
	if opts.RuntimeImages == nil {
		opts.RuntimeImages = testImages
	}
	dgd, _, err := render.Render(doc, opts)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, c := range dgd.Spec.Components {
		if c.Type != dgdv1beta1.ComponentFrontend && c.Type != dgdv1beta1.ComponentPlanner {
			out[c.Name] = c.PodTemplate.Spec.Containers[0].Args
		}
	}
	return out
}

// flagValue is the value after flag in args ("" when absent).
func flagValue(args []string, flag string) string {
	if i := slices.Index(args, flag); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

// TestNgramSpeculationIsRendered: ngram speculation becomes vLLM's --speculative-config on every
// worker, as vLLM 0.31's SpeculativeConfig reads it.
func TestNgramSpeculationIsRendered(t *testing.T) {
	for _, input := range []string{"vllm-agg", "vllm-disagg"} {
		doc := readDoc(t, filepath.Join("testdata", "input", input+".yaml"))
		setPath(doc, "engine.speculation", map[string]any{"kind": "ngram", "num_speculative_tokens": 4, "acceptance_rates": []any{0.5, 0.4, 0.3, 0.2}})
		args := workerArgs(t, doc, render.Options{})
		if len(args) == 0 {
			t.Fatalf("%s: no worker", input)
		}
		for name, a := range args {
			var got map[string]any
			if err := json.Unmarshal([]byte(flagValue(a, "--speculative-config")), &got); err != nil {
				t.Fatalf("%s %s: --speculative-config: %v in %q", input, name, err, a)
			}
			want := map[string]any{"method": "ngram", "num_speculative_tokens": 4.0, "prompt_lookup_max": 5.0, "prompt_lookup_min": 5.0}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s %s: --speculative-config (-want +got):\n%s", input, name, diff)
			}
		}
	}
}

// TestHostOffloadIsRendered: a vLLM aggregated worker's host offload becomes vLLM's native CPU
// offload with the buffer AISimulate sized: num_host_blocks blocks of block_size tokens of
// bytes_per_token bytes on each of the engine's tensor-parallel ranks.
func TestHostOffloadIsRendered(t *testing.T) {
	doc := readDoc(t, filepath.Join("testdata", "input", "vllm-agg.yaml")) // tensor 2, block_size 32
	setPath(doc, "engine.workers.aggregated.kv_cache.host_offload", map[string]any{"num_host_blocks": 16384, "d2h_bandwidth_gbps": 64.0})
	setPath(doc, "engine.workers.aggregated.kv_cache.bytes_per_token", 65536)
	a := workerArgs(t, doc, render.Options{})["VllmWorker"]
	// 16384 × 32 × 65536 × 2 bytes = 64 GiB.
	got := []string{flagValue(a, "--kv-offloading-backend"), flagValue(a, "--kv-offloading-size")}
	if diff := cmp.Diff([]string{"native", "64"}, got); diff != "" {
		t.Errorf("offload flags (-want +got):\n%s\nargs %q", diff, a)
	}
}

// TestFixedKVBlocksAreRendered: a fixed KV capacity of vLLM becomes --num-gpu-blocks-override.
func TestFixedKVBlocksAreRendered(t *testing.T) {
	doc := readDoc(t, filepath.Join("testdata", "input", "vllm-agg.yaml"))
	setPath(doc, "engine.workers.aggregated.kv_cache.capacity", map[string]any{"type": "fixed", "blocks": 5000})
	a := workerArgs(t, doc, render.Options{})["VllmWorker"]
	if got := flagValue(a, "--num-gpu-blocks-override"); got != "5000" {
		t.Errorf("--num-gpu-blocks-override = %q in %q", got, a)
	}
	if slices.Contains(a, "--gpu-memory-utilization") {
		t.Errorf("a fixed capacity renders no memory fraction: %q", a)
	}
}

// TestPerRoleHardware: a role searched on another GPU than engine.hardware selects that GPU's
// products and is laid out on that GPU's nodes (GB200 trays hold 4 GPUs: an engine of 8 spans
// two), while the other role keeps the request's node size.
func TestPerRoleHardware(t *testing.T) {
	doc := readDoc(t, filepath.Join("testdata", "input", "vllm-disagg.yaml"))
	setPath(doc, "engine.hardware", "h200_sxm")
	setPath(doc, "engine.workers.prefill.hardware", "gb200")
	setPath(doc, "engine.workers.prefill.parallelism", map[string]any{"replicas": 1, "tensor": 8})
	setPath(doc, "engine.workers.decode.parallelism", map[string]any{"replicas": 1, "tensor": 8})
	dgd, sum, err := render.Render(doc, render.Options{RuntimeImages: testImages})
	if err != nil {
		t.Fatal(err)
	}
	type shape struct {
		Nodes    int32
		PerPod   int64
		Products []string
	}
	got := map[string]shape{}
	for _, c := range dgd.Spec.Components {
		if c.Type == dgdv1beta1.ComponentFrontend {
			continue
		}
		s := shape{Nodes: 1}
		if c.Multinode != nil {
			s.Nodes = c.Multinode.NodeCount
		}
		q := c.PodTemplate.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"]
		s.PerPod = q.Value()
		for _, term := range c.PodTemplate.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, r := range term.MatchExpressions {
				if r.Key == render.GPUProductLabel {
					s.Products = r.Values
				}
			}
		}
		got[c.Name] = s
	}
	want := map[string]shape{
		"VllmPrefillWorker": {Nodes: 2, PerPod: 4, Products: []string{"NVIDIA-GB200"}},
		"VllmDecodeWorker":  {Nodes: 1, PerPod: 8, Products: []string{"NVIDIA-H200", "NVIDIA-H200-SXM-141GB"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("roles (-want +got):\n%s", diff)
	}
	if sum.GPUs != 16 {
		t.Errorf("GPUs = %d, want 16", sum.GPUs)
	}
}
