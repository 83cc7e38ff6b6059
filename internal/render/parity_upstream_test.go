package render_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"

	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/internal/render"
	"github.com/dgdr-operator/dgdr-operator/internal/upstreamtest"
)

// parityImages are the runtime images of Dynamo 1.6.1, the release whose profiler generates the
// upstream side.
var parityImages = map[string]string{
	"vllm":   "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.6.1",
	"sglang": "nvcr.io/nvidia/ai-dynamo/sglang-runtime:1.6.1",
	"trtllm": "nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:1.6.1",
}

// parityCandidate is one entry of testdata/parity/candidates.yaml.
type parityCandidate struct {
	Name            string         `json:"name"`
	GPUsPerNode     int            `json:"gpus_per_node"`
	TrustRemoteCode bool           `json:"trust_remote_code"`
	KVRouter        bool           `json:"kv_router"`
	Prediction      map[string]any `json:"prediction"`
}

// parityAllowed is one entry of testdata/parity/allowed.yaml: a difference the parity accepts.
type parityAllowed struct {
	// Path is a fact path pattern (path.Match: "*" matches one segment).
	Path string `json:"path"`
	// Candidates names the candidates the difference occurs in; ["*"] means every candidate.
	Candidates []string `json:"candidates"`
	// Ours and Upstream, when set, are the values the difference must have.
	Ours     *string `json:"ours,omitempty"`
	Upstream *string `json:"upstream,omitempty"`
	Reason   string  `json:"reason"`
}

// upstreamInput is one candidate as hack/upstream/dgd_parity.py reads it.
type upstreamInput struct {
	Name            string                    `json:"name"`
	Backend         string                    `json:"backend"`
	Mode            string                    `json:"mode"`
	Model           string                    `json:"model"`
	Image           string                    `json:"image"`
	System          string                    `json:"system"`
	GPUsPerNode     int                       `json:"gpus_per_node"`
	ISL             int                       `json:"isl"`
	OSL             int                       `json:"osl"`
	TrustRemoteCode bool                      `json:"trust_remote_code"`
	KVRouter        bool                      `json:"kv_router"`
	Workers         map[string]map[string]int `json:"workers"`
}

type upstreamOutput struct {
	Name     string          `json:"name"`
	DGD      json.RawMessage `json:"dgd"`
	Warnings []string        `json:"warnings"`
}

// parityDiff is one fact whose value differs.
type parityDiff struct {
	candidate, path, ours, upstream string
	allowed                         *parityAllowed
}

// absent is the value of a fact one side does not have.
const absent = "<absent>"

// TestParityWithUpstreamDGDGenerator renders every candidate of testdata/parity/candidates.yaml
// with render.Render and has ai-dynamo 1.6.1's profiler generate the DGD of the same picked
// configuration (hack/upstream/dgd_parity.py: rapid._generate_dgd_from_pick, which builds the
// DGD with the backend's config modifier build_dgd_config on the profiler's DGD template, then
// assemble_final_config and materialize_dgd, as run_profile does). Both DGDs are reduced to the
// facts that matter for a deployment (parityFacts) and compared. A difference must be listed in
// testdata/parity/allowed.yaml with its reason; the test fails on any other difference and on a
// listed difference that no longer occurs, and logs the table of all differences.
func TestParityWithUpstreamDGDGenerator(t *testing.T) {
	var candidates []parityCandidate
	readYAML(t, "testdata/parity/candidates.yaml", &candidates)
	var allowed []parityAllowed
	readYAML(t, "testdata/parity/allowed.yaml", &allowed)
	if len(candidates) < 10 {
		t.Fatalf("want at least 10 candidates, got %d", len(candidates))
	}
	for i, a := range allowed {
		if a.Path == "" || len(a.Candidates) == 0 || strings.TrimSpace(a.Reason) == "" {
			t.Fatalf("allowed.yaml entry %d needs path, candidates and reason: %+v", i, a)
		}
	}

	names := map[string]bool{}
	var inputs []upstreamInput
	ours := map[string]map[string]string{}
	for _, c := range candidates {
		if names[c.Name] {
			t.Fatalf("candidate %s twice", c.Name)
		}
		names[c.Name] = true
		in, opts := parityInput(t, c)
		inputs = append(inputs, in)
		dgd, _, err := render.Render(c.Prediction, opts)
		if err != nil {
			t.Fatalf("%s: render: %v", c.Name, err)
		}
		data, err := json.Marshal(dgd)
		if err != nil {
			t.Fatal(err)
		}
		ours[c.Name] = parityFacts(t, c.Name+" (ours)", data)
	}
	checkParityCoverage(t, inputs)
	for _, a := range allowed {
		for _, n := range a.Candidates {
			if n != "*" && !names[n] {
				t.Errorf("allowed.yaml %s names an unknown candidate %s", a.Path, n)
			}
		}
	}

	stdin, err := json.Marshal(inputs)
	if err != nil {
		t.Fatal(err)
	}
	var outs []upstreamOutput
	if err := json.Unmarshal(upstreamtest.RunPython(t, "dgd_parity.py", stdin), &outs); err != nil {
		t.Fatalf("dgd_parity.py output: %v", err)
	}
	if len(outs) != len(inputs) {
		t.Fatalf("dgd_parity.py answered %d candidates, want %d", len(outs), len(inputs))
	}

	var diffs []parityDiff
	for i, out := range outs {
		name := inputs[i].Name
		if out.Name != name {
			t.Fatalf("dgd_parity.py answer %d is %s, want %s", i, out.Name, name)
		}
		for _, w := range out.Warnings {
			t.Logf("%s: upstream warned: %s", name, w)
		}
		up := parityFacts(t, name+" (upstream)", out.DGD)
		checkNotVacuous(t, name, "ours", ours[name])
		checkNotVacuous(t, name, "upstream", up)
		diffs = append(diffs, diffFacts(name, ours[name], up)...)
	}

	// Every difference must be listed; every listing must still occur.
	used := make([]map[string]bool, len(allowed))
	for i := range used {
		used[i] = map[string]bool{}
	}
	for i := range diffs {
		d := &diffs[i]
		for j := range allowed {
			if allowedMatches(&allowed[j], d) {
				d.allowed = &allowed[j]
				used[j][d.candidate] = true
				break
			}
		}
	}
	logParityTable(t, diffs)
	for _, d := range diffs {
		if d.allowed == nil {
			t.Errorf("%s: %s differs and is not listed in testdata/parity/allowed.yaml: ours %q, upstream %q",
				d.candidate, d.path, d.ours, d.upstream)
		}
	}
	for j, a := range allowed {
		want := a.Candidates
		if slices.Contains(want, "*") {
			want = nil
			for _, c := range candidates {
				want = append(want, c.Name)
			}
		}
		for _, n := range want {
			if !used[j][n] {
				t.Errorf("allowed.yaml lists %s for %s, which no longer differs there (reason: %s): remove it from the list",
					a.Path, n, strings.TrimSpace(a.Reason))
			}
		}
	}
}

// checkNotVacuous fails when a side's facts lack what every deployment has: a Frontend, and
// workers with GPUs, an image and a model argument.
func checkNotVacuous(t *testing.T, candidate, side string, facts map[string]string) {
	t.Helper()
	if facts["frontend/image"] == "" {
		t.Errorf("%s (%s): no Frontend", candidate, side)
	}
	workers := 0
	for k, v := range facts {
		typ, fact, _ := strings.Cut(k, "/")
		if fact != "gpus" || typ == "frontend" {
			continue
		}
		workers++
		model := facts[typ+"/args/--model"] + facts[typ+"/args/--model-path"]
		if v == "0" || facts[typ+"/image"] == "" || model == "" || model == absent {
			t.Errorf("%s (%s): worker %s has gpus %q, image %q, model %q", candidate, side, typ, v, facts[typ+"/image"], model)
		}
	}
	if workers == 0 {
		t.Errorf("%s (%s): no worker", candidate, side)
	}
}

func readYAML(t *testing.T, file string, v any) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// parityInput is the candidate as dgd_parity.py reads it and the renderer's options for it.
func parityInput(t *testing.T, c parityCandidate) (upstreamInput, render.Options) {
	t.Helper()
	raw, err := json.Marshal(c.Prediction)
	if err != nil {
		t.Fatal(err)
	}
	var p output.PredictionConfig
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	e := p.Engine
	mode := map[string]string{render.ModeAggregated: "agg", render.ModeDisaggregated: "disagg"}[e.Mode]
	if mode == "" || e.Hardware == "" || c.GPUsPerNode == 0 {
		t.Fatalf("%s: needs engine.mode, engine.hardware and gpus_per_node", c.Name)
	}
	in := upstreamInput{
		Name: c.Name, Backend: e.Backend, Mode: mode, Model: e.Model, Image: parityImages[e.Backend],
		System: e.Hardware, GPUsPerNode: c.GPUsPerNode, TrustRemoteCode: c.TrustRemoteCode, KVRouter: c.KVRouter,
		Workers: map[string]map[string]int{},
	}
	if p.Traffic != nil && p.Traffic.Source.Type == output.SourceSynthetic {
		in.ISL, in.OSL = p.Traffic.Source.InputTokens, p.Traffic.Source.OutputTokens
	}
	for role, w := range e.Workers.All() {
		key := role
		if role == "aggregated" {
			key = "agg"
		}
		par := w.Parallelism
		in.Workers[key] = map[string]int{
			"tp": max(par.Tensor, 1), "pp": max(par.Pipeline, 1), "dp": max(par.AttentionData, 1),
			"moe_tp": max(par.MoETensor, 1), "moe_ep": max(par.MoEExpert, 1), "replicas": max(par.Replicas, 1),
			"max_batch_size": max(w.Scheduler.MaxSequences, 1),
		}
	}
	opts := render.Options{Name: c.Name, RuntimeImages: parityImages, GPUsPerNode: c.GPUsPerNode}
	if c.TrustRemoteCode {
		opts.Model = v1beta2.ModelSpec{RemoteCode: v1beta2.RemoteCodeAlwaysTrust}
	}
	if c.KVRouter {
		opts.Deployment = &v1beta2.DeploymentSpec{Router: &v1beta2.RouterSpec{Mode: v1beta2.RouterKV}}
	}
	return in, opts
}

// checkParityCoverage: every backend aggregated and disaggregated, an engine wider than a node,
// and an attention-DP MoE engine.
func checkParityCoverage(t *testing.T, inputs []upstreamInput) {
	t.Helper()
	seen := map[string]bool{}
	for _, in := range inputs {
		seen[in.Backend+"/"+in.Mode] = true
		for _, w := range in.Workers {
			if w["tp"]*w["pp"]*w["dp"] > in.GPUsPerNode {
				seen["multinode"] = true
			}
			if w["dp"] > 1 && w["moe_ep"] > 1 {
				seen["attention-dp-moe"] = true
			}
		}
	}
	for _, want := range []string{"vllm/agg", "vllm/disagg", "sglang/agg", "sglang/disagg", "trtllm/agg", "trtllm/disagg", "multinode", "attention-dp-moe"} {
		if !seen[want] {
			t.Errorf("no parity candidate covers %s", want)
		}
	}
}

// factsDGD is the part of a DGD (ours or upstream's) the parity reads.
type factsDGD struct {
	Spec struct {
		BackendFramework string `json:"backendFramework"`
		Components       []struct {
			Name      string `json:"name"`
			Type      string `json:"type"`
			Replicas  *int   `json:"replicas"`
			Multinode *struct {
				NodeCount int `json:"nodeCount"`
			} `json:"multinode"`
			SharedMemorySize any `json:"sharedMemorySize"`
			PodTemplate      struct {
				Spec struct {
					Containers []factsContainer `json:"containers"`
				} `json:"spec"`
			} `json:"podTemplate"`
		} `json:"components"`
	} `json:"spec"`
}

type factsContainer struct {
	Name    string   `json:"name"`
	Image   string   `json:"image"`
	Command []string `json:"command"`
	Args    []string `json:"args"`
	Env     []struct {
		Name      string          `json:"name"`
		Value     string          `json:"value"`
		ValueFrom json.RawMessage `json:"valueFrom"`
	} `json:"env"`
	EnvFrom   []json.RawMessage `json:"envFrom"`
	Resources struct {
		Limits map[string]any `json:"limits"`
	} `json:"resources"`
}

// frontendDefaultCommand is what the Dynamo operator runs in a Frontend whose main container sets
// neither command nor args (component_frontend.go: command python3, args -m dynamo.frontend).
const frontendDefaultCommand = "python3 -m dynamo.frontend"

// parityFacts reduces a DGD to the facts that matter for a deployment, as "path" → value:
//
//   - dgd/backendFramework;
//   - per component, keyed by its type (frontend, worker, prefill, decode; a Planner is not
//     compared): name, replicas (unset = 1), image, the command line (a worker's command; the
//     Frontend's command and args, where none means the operator's default), the env of main
//     (name=value, valueFrom as JSON), envFrom, nvidia.com/gpu per pod, the multinode nodeCount
//     (none = 1) and sharedMemorySize (none = the operator's default);
//   - per worker, the engine args that set the model, the served name, parallelism, the
//     disaggregation role and its KV transport, remote-code trust and KV events
//     (engineFacts).
func parityFacts(t *testing.T, what string, data []byte) map[string]string {
	t.Helper()
	var d factsDGD
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	facts := map[string]string{"dgd/backendFramework": orAbsent(d.Spec.BackendFramework)}
	backend := d.Spec.BackendFramework
	for _, c := range d.Spec.Components {
		if c.Type == "planner" {
			continue
		}
		var main *factsContainer
		for i := range c.PodTemplate.Spec.Containers {
			if c.PodTemplate.Spec.Containers[i].Name == "main" {
				main = &c.PodTemplate.Spec.Containers[i]
			}
		}
		if main == nil {
			t.Fatalf("%s: component %s has no container main", what, c.Name)
		}
		p := c.Type + "/"
		if _, dup := facts[p+"name"]; dup {
			t.Fatalf("%s: two components of type %q", what, c.Type)
		}
		if backend == "" {
			backend = workerBackend(main.Command, main.Args)
		}
		facts[p+"name"] = c.Name
		facts[p+"replicas"] = "1"
		if c.Replicas != nil {
			facts[p+"replicas"] = strconv.Itoa(*c.Replicas)
		}
		facts[p+"image"] = main.Image
		facts[p+"nodeCount"] = "1"
		if c.Multinode != nil {
			facts[p+"nodeCount"] = strconv.Itoa(c.Multinode.NodeCount)
		}
		facts[p+"sharedMemorySize"] = "operator default"
		if c.SharedMemorySize != nil {
			facts[p+"sharedMemorySize"] = fmt.Sprint(c.SharedMemorySize)
		}
		facts[p+"gpus"] = "0"
		if g, ok := main.Resources.Limits["nvidia.com/gpu"]; ok {
			facts[p+"gpus"] = fmt.Sprint(g)
		}
		for _, e := range main.Env {
			v := e.Value
			if len(e.ValueFrom) > 0 {
				v = compactJSON(e.ValueFrom)
			}
			facts[p+"env/"+e.Name] = v
		}
		var from []string
		for _, f := range main.EnvFrom {
			from = append(from, compactJSON(f))
		}
		facts[p+"envFrom"] = orAbsent(strings.Join(from, " "))
		if c.Type == "frontend" {
			cmd := strings.Join(append(slices.Clone(main.Command), main.Args...), " ")
			if cmd == "" {
				cmd = frontendDefaultCommand
			}
			facts[p+"command"] = cmd
			continue
		}
		facts[p+"command"] = strings.Join(main.Command, " ")
		for k, v := range engineFacts(t, what, backend, main.Args) {
			facts[p+"args/"+k] = v
		}
	}
	return facts
}

func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

func orAbsent(s string) string {
	if s == "" {
		return absent
	}
	return s
}

// workerBackend is the backend a worker runs (python3 -m dynamo.<backend>).
func workerBackend(command, args []string) string {
	for _, tok := range append(slices.Clone(command), args...) {
		if b, ok := strings.CutPrefix(tok, "dynamo."); ok && b != "frontend" {
			return b
		}
	}
	return ""
}

// parseArgs splits args into flag → value ("true" for a flag without a value; --flag=value is
// split). A repeated flag keeps its last value, as argparse does.
func parseArgs(args []string) map[string]string {
	out := map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			continue
		}
		if k, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(a, "--") {
			out[k] = v
			continue
		}
		if i+1 < len(args) && !strings.HasPrefix(args[i+1], "--") {
			out[a] = args[i+1]
			i++
			continue
		}
		out[a] = "true"
	}
	return out
}

// engineFacts are the worker args that matter, under one canonical spelling per backend
// (aliases as the engines and upstream's config modifiers spell them), with the engine's
// default where it is certain (tensor, pipeline and data-parallel degrees 1, SGLang's expert
// degree 1, flags off, the served name = the model):
//
//   - vLLM: --model, --served-model-name, --tensor-parallel-size (--tp, -tp),
//     --pipeline-parallel-size (--pp, -pp), --data-parallel-size (--dp, -dp),
//     --data-parallel-size-local, --enable-expert-parallel, --disaggregation-mode,
//     --kv-transfer-config, --trust-remote-code, --kv-events-config;
//   - SGLang: --model-path, --served-model-name, --tp (--tp-size, --tensor-parallel-size),
//     --pp-size (--pp, --pipeline-parallel-size), --dp (--dp-size, --data-parallel-size), --ep
//     (--ep-size, --expert-parallel-size), --enable-dp-attention, --disaggregation-mode,
//     --disaggregation-transfer-backend, --disaggregation-bootstrap-port, --host,
//     --trust-remote-code, --kv-events-config;
//   - TRT-LLM: --model (--model-path), --served-model-name, and the engine settings whether
//     given as a flag, as --trtllm.<key> or in --override-engine-args: --tensor-parallel-size,
//     --pipeline-parallel-size, --expert-parallel-size (moe_expert_parallel_size; no default:
//     TRT-LLM derives it), moe_tensor_parallel_size, --enable-attention-dp,
//     --disaggregation-mode, cache_transceiver_config.backend, trust_remote_code,
//     enable_chunked_prefill (off by default in TRT-LLM) and KV events (--publish-kv-events,
//     --publish-events-and-metrics).
func engineFacts(t *testing.T, what, backend string, args []string) map[string]string {
	t.Helper()
	a := parseArgs(args)
	out := map[string]string{}
	pick := func(def string, names ...string) string {
		v := ""
		for _, n := range names {
			if x, ok := a[n]; ok {
				v = x
			}
		}
		if v == "" {
			return def
		}
		return v
	}
	flag := func(names ...string) string { return pick("false", names...) }
	switch backend {
	case output.BackendVLLM:
		out["--model"] = pick(absent, "--model")
		out["--served-model-name"] = pick(out["--model"], "--served-model-name")
		out["--tensor-parallel-size"] = pick("1", "--tensor-parallel-size", "--tp", "-tp")
		out["--pipeline-parallel-size"] = pick("1", "--pipeline-parallel-size", "--pp", "-pp")
		out["--data-parallel-size"] = pick("1", "--data-parallel-size", "--dp", "-dp")
		out["--data-parallel-size-local"] = pick(absent, "--data-parallel-size-local")
		out["--enable-expert-parallel"] = flag("--enable-expert-parallel")
		out["--disaggregation-mode"] = pick(absent, "--disaggregation-mode")
		out["--kv-transfer-config"] = pick(absent, "--kv-transfer-config")
		out["--trust-remote-code"] = flag("--trust-remote-code")
		out["--kv-events-config"] = pick(absent, "--kv-events-config")
	case output.BackendSGLang:
		out["--model-path"] = pick(absent, "--model-path")
		out["--served-model-name"] = pick(out["--model-path"], "--served-model-name")
		out["--tp"] = pick("1", "--tp", "--tp-size", "--tensor-parallel-size")
		out["--pp-size"] = pick("1", "--pp-size", "--pp", "--pipeline-parallel-size")
		out["--dp"] = pick("1", "--dp", "--dp-size", "--data-parallel-size")
		out["--ep"] = pick("1", "--ep", "--ep-size", "--expert-parallel-size")
		out["--enable-dp-attention"] = flag("--enable-dp-attention")
		out["--disaggregation-mode"] = pick(absent, "--disaggregation-mode")
		out["--disaggregation-transfer-backend"] = pick(absent, "--disaggregation-transfer-backend")
		out["--disaggregation-bootstrap-port"] = pick(absent, "--disaggregation-bootstrap-port")
		out["--host"] = pick(absent, "--host")
		out["--trust-remote-code"] = flag("--trust-remote-code")
		out["--kv-events-config"] = pick(absent, "--kv-events-config")
	case output.BackendTRTLLM:
		// The engine settings: --override-engine-args, then --trtllm.<key> flags, then the
		// dedicated flags, each later source winning (as dynamo.trtllm applies them).
		eng := map[string]string{}
		if o, ok := a["--override-engine-args"]; ok {
			var m map[string]any
			if err := json.Unmarshal([]byte(o), &m); err != nil {
				t.Fatalf("%s: --override-engine-args %q: %v", what, o, err)
			}
			flatten("", m, eng)
		}
		for k, v := range a {
			if key, ok := strings.CutPrefix(k, "--trtllm."); ok {
				eng[key] = v
			}
		}
		for k, flagName := range map[string]string{
			"tensor_parallel_size": "--tensor-parallel-size", "pipeline_parallel_size": "--pipeline-parallel-size",
			"moe_expert_parallel_size": "--expert-parallel-size", "enable_attention_dp": "--enable-attention-dp",
		} {
			if v, ok := a[flagName]; ok {
				eng[k] = v
			}
		}
		get := func(k, def string) string {
			if v, ok := eng[k]; ok {
				return v
			}
			return def
		}
		out["--model"] = pick(absent, "--model", "--model-path")
		out["--served-model-name"] = pick(out["--model"], "--served-model-name")
		out["--tensor-parallel-size"] = get("tensor_parallel_size", "1")
		out["--pipeline-parallel-size"] = get("pipeline_parallel_size", "1")
		out["--expert-parallel-size"] = get("moe_expert_parallel_size", absent)
		out["moe_tensor_parallel_size"] = get("moe_tensor_parallel_size", absent)
		out["--enable-attention-dp"] = get("enable_attention_dp", "false")
		out["--disaggregation-mode"] = pick(absent, "--disaggregation-mode")
		out["cache_transceiver_config.backend"] = get("cache_transceiver_config.backend", absent)
		out["trust_remote_code"] = get("trust_remote_code", "false")
		out["enable_chunked_prefill"] = get("enable_chunked_prefill", "false")
		out["--publish-kv-events"] = flag("--publish-kv-events", "--publish-events-and-metrics")
	default:
		t.Fatalf("%s: worker of unknown backend %q", what, backend)
	}
	return out
}

// flatten writes a JSON object's leaves as dotted keys.
func flatten(prefix string, m map[string]any, out map[string]string) {
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			flatten(prefix+k+".", sub, out)
			continue
		}
		out[prefix+k] = fmt.Sprint(v)
	}
}

// diffFacts lists the facts whose values differ, sorted by path.
func diffFacts(candidate string, ours, upstream map[string]string) []parityDiff {
	keys := map[string]bool{}
	for k := range ours {
		keys[k] = true
	}
	for k := range upstream {
		keys[k] = true
	}
	var paths []string
	for k := range keys {
		paths = append(paths, k)
	}
	slices.Sort(paths)
	var out []parityDiff
	for _, p := range paths {
		o, ok := ours[p]
		if !ok {
			o = absent
		}
		u, ok := upstream[p]
		if !ok {
			u = absent
		}
		if o != u {
			out = append(out, parityDiff{candidate: candidate, path: p, ours: o, upstream: u})
		}
	}
	return out
}

func allowedMatches(a *parityAllowed, d *parityDiff) bool {
	if ok, _ := path.Match(a.Path, d.path); !ok {
		return false
	}
	if !slices.Contains(a.Candidates, "*") && !slices.Contains(a.Candidates, d.candidate) {
		return false
	}
	if a.Ours != nil && *a.Ours != d.ours {
		return false
	}
	if a.Upstream != nil && *a.Upstream != d.upstream {
		return false
	}
	return true
}

func logParityTable(t *testing.T, diffs []parityDiff) {
	t.Helper()
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "CANDIDATE\tFACT\tOURS\tUPSTREAM\tSTATUS")
	for _, d := range diffs {
		status := "NOT ALLOWED"
		if d.allowed != nil {
			status = "allowed: " + firstLine(d.allowed.Reason)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", d.candidate, d.path, clip(d.ours), clip(d.upstream), status)
	}
	w.Flush()
	t.Logf("differences between the rendered DGDs and upstream's (%d):\n%s", len(diffs), b.String())
}

// firstLine is the first sentence of a reason.
func firstLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if i := strings.Index(s, ". "); i > 0 {
		return s[:i]
	}
	return strings.TrimSuffix(s, ".")
}

func clip(s string) string {
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return s
}
