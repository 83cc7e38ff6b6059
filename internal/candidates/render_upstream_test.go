package candidates_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/admission"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/internal/candidates"
	"github.com/dgdr-operator/dgdr-operator/internal/config"
	"github.com/dgdr-operator/dgdr-operator/internal/render/dgdv1beta1"
	"github.com/dgdr-operator/dgdr-operator/internal/upstreamtest"
)

// searchRequest is a request small enough for seconds with the real AISimulate: Qwen3-8B (a model
// config AISimulate bundles, so it runs offline), vLLM on H200, at most 2 GPUs, 3 trials; the
// overrides are added to its inputOverrides.
const searchRequest = `apiVersion: nvidia.com/v1beta2
kind: DynamoGraphDeploymentRequest
metadata: {name: qwen, namespace: default}
spec:
  model: {name: Qwen/Qwen3-8B}
  backends: [vllm]
  hardware: {gpu: {sku: h200_sxm, budget: 2}}
  sla: {ttftMs: 300, itlMs: 25}
  aisimulate:
    inputOverrides:
      optimizer: {max_trials: 3}
`

// realCandidates lowers searchRequest with overrides (YAML, indented under inputOverrides) as
// the operator does, has the real `aisimulate recommend` search it, and returns the Candidates
// the reporter publishes of its output, rendered with the operator's default runtime images (the
// Dynamo 1.6.1 bundle).
func realCandidates(t *testing.T, overrides string) []v1beta2.DynamoGraphDeploymentCandidate {
	t.Helper()
	dgdr := &v1beta2.DynamoGraphDeploymentRequest{}
	if err := yaml.UnmarshalStrict([]byte(searchRequest+overrides), dgdr); err != nil {
		t.Fatal(err)
	}
	if errs := admission.Default(dgdr, admission.DefaultingOptions{}); len(errs) > 0 {
		t.Fatalf("defaulting: %v", errs)
	}
	in, errs := aisimulate.Lower(&dgdr.Spec, aisimulate.Options{})
	if len(errs) > 0 {
		t.Fatalf("lowering: %v", errs)
	}
	dir := t.TempDir()
	data, err := in.YAML()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "input.yaml"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	upstreamtest.RunAISimulate(t, dir, "recommend", "-c", "input.yaml", "--output-dir", "out", "--format", "json")
	out := filepath.Join(dir, "out")
	sweep, err := output.ReadSweepResult(out)
	if err != nil {
		t.Fatal(err)
	}
	run := &v1beta2.DynamoGraphDeploymentRun{ObjectMeta: metav1.ObjectMeta{Name: "qwen-run-1", Namespace: "default", UID: "run-uid"}, Spec: dgdr.Spec}
	cands, err := candidates.FromResult(run, out, sweep, candidates.Options{RuntimeImages: config.DefaultRuntimeImages,
		GPUsPerNode: 8, Now: func() time.Time { return time.Unix(0, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(cands) == 0 {
		t.Fatal("the search published no Candidate")
	}
	return cands
}

// judgeInput and judgeVerdict are hack/upstream/vllm_args_judge.py's.
type judgeInput struct {
	Name string   `json:"name"`
	Args []string `json:"args"`
}

type argsVerdict struct {
	Name               string   `json:"name"`
	OK                 bool     `json:"ok"`
	Error              string   `json:"error"`
	DisaggregationMode string   `json:"disaggregation_mode"`
	EngineArgs         []string `json:"engine_args"`
}

// vllmEngineFlags are the vLLM engine flags the renderer writes, each a flag of vLLM 0.31.0's
// EngineArgs.add_cli_args (vllm/engine/arg_utils.py), the engine of the Dynamo 1.6.1 vLLM runtime.
// vLLM is not in the pinned venv (its parser needs torch), so these are checked here.
var vllmEngineFlags = []string{"--model", "--revision", "--trust-remote-code", "--tensor-parallel-size",
	"--pipeline-parallel-size", "--data-parallel-size", "--enable-expert-parallel", "--max-num-batched-tokens",
	"--max-num-seqs", "--max-model-len", "--block-size", "--gpu-memory-utilization", "--no-enable-prefix-caching",
	"--num-gpu-blocks-override", "--speculative-config", "--kv-offloading-backend", "--kv-offloading-size",
	"--kv-transfer-config", "--kv-events-config"}

// judgeWorkerArgs has ai-dynamo 1.6.1's own vLLM worker parser read every worker's arguments of
// cands, and returns each worker's engine arguments (what dynamo.vllm hands to vLLM) by
// "<candidate>/<component>". The Dynamo side must accept them with the component's
// disaggregation mode, and leave only flags of vllmEngineFlags.
func judgeWorkerArgs(t *testing.T, cands []v1beta2.DynamoGraphDeploymentCandidate) map[string][]string {
	t.Helper()
	var items []judgeInput
	modes := map[string]string{}
	for _, c := range cands {
		var dgd dgdv1beta1.DynamoGraphDeployment
		if err := json.Unmarshal(c.Spec.GraphDeployment.Raw, &dgd); err != nil {
			t.Fatal(err)
		}
		for _, comp := range dgd.Spec.Components {
			main := comp.PodTemplate.Spec.Containers[0]
			if !slices.Equal(main.Command, []string{"python3", "-m", "dynamo.vllm"}) {
				continue
			}
			name := c.Name + "/" + comp.Name
			items = append(items, judgeInput{Name: name, Args: main.Args})
			modes[name] = map[string]string{dgdv1beta1.ComponentWorker: "agg", dgdv1beta1.ComponentPrefill: "prefill",
				dgdv1beta1.ComponentDecode: "decode"}[comp.Type]
		}
	}
	if len(items) == 0 {
		t.Fatal("no vLLM worker rendered")
	}
	stdin, err := json.Marshal(items)
	if err != nil {
		t.Fatal(err)
	}
	var verdicts []argsVerdict
	if err := json.Unmarshal(upstreamtest.RunPython(t, "vllm_args_judge.py", stdin), &verdicts); err != nil {
		t.Fatal(err)
	}
	if len(verdicts) != len(items) {
		t.Fatalf("the judge answered %d workers of %d", len(verdicts), len(items))
	}
	out := map[string][]string{}
	for _, v := range verdicts {
		if !v.OK {
			t.Errorf("%s: ai-dynamo's vLLM worker refuses the arguments: %s", v.Name, v.Error)
			continue
		}
		if v.DisaggregationMode != modes[v.Name] {
			t.Errorf("%s: ai-dynamo reads disaggregation mode %q, want %q", v.Name, v.DisaggregationMode, modes[v.Name])
		}
		for _, a := range v.EngineArgs {
			if strings.HasPrefix(a, "--") && !slices.Contains(vllmEngineFlags, a) {
				t.Errorf("%s: %s is no vLLM 0.31 engine flag the renderer knows", v.Name, a)
			}
		}
		out[v.Name] = v.EngineArgs
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

// TestRealSearchWithNgramSpeculationDeploysIt: a request whose inputOverrides add ngram
// speculation is searched by the real AISimulate 0.13, which predicts every candidate with it;
// every Candidate deploys it: Deployable, and each vLLM worker runs --speculative-config with the
// searched number of speculative tokens, as ai-dynamo 1.6.1's worker parser hands it to vLLM.
// Each Candidate records the performance data's engine version (vLLM 0.24.0, which AISimulate
// writes into the recommendation) and the 1.6.1 runtime image's (0.31.0): VersionSkew is True.
func TestRealSearchWithNgramSpeculationDeploysIt(t *testing.T) {
	cands := realCandidates(t, `      engine:
        speculation: {kind: ngram, num_speculative_tokens: 3, acceptance_rates: [0.6, 0.4, 0.2]}
`)
	for _, c := range cands {
		if d := meta.FindStatusCondition(c.Status.Conditions, v1beta2.ConditionDeployable); d == nil || d.Status != metav1.ConditionTrue {
			t.Errorf("%s is not deployable: %+v", c.Name, d)
		}
		var params output.PredictionConfig
		if err := json.Unmarshal(c.Spec.Parameters.Raw, &params); err != nil {
			t.Fatal(err)
		}
		if len(params.Engine.Speculation) == 0 {
			t.Errorf("%s: AISimulate predicted it without speculation", c.Name)
		}
		if diff := cmp.Diff(&v1beta2.CandidateEngineVersions{PerformanceData: "0.24.0", Runtime: "0.31.0"}, c.Status.EngineVersions); diff != "" {
			t.Errorf("%s: engine versions (-want +got):\n%s", c.Name, diff)
		}
		if s := meta.FindStatusCondition(c.Status.Conditions, v1beta2.ConditionVersionSkew); s == nil || s.Status != metav1.ConditionTrue || s.Reason != v1beta2.ReasonEngineVersionsDiffer {
			t.Errorf("%s: VersionSkew %+v", c.Name, s)
		}
	}
	for name, args := range judgeWorkerArgs(t, cands) {
		var spec map[string]any
		if err := json.Unmarshal([]byte(flagValue(args, "--speculative-config")), &spec); err != nil {
			t.Errorf("%s: --speculative-config: %v in %q", name, err, args)
			continue
		}
		want := map[string]any{"method": "ngram", "num_speculative_tokens": 3.0, "prompt_lookup_max": 5.0, "prompt_lookup_min": 5.0}
		if diff := cmp.Diff(want, spec); diff != "" {
			t.Errorf("%s: --speculative-config (-want +got):\n%s", name, diff)
		}
	}
}

// TestRealSearchWithHostOffloadDeploysItWhereVLLMCan: the real AISimulate searches host (G2)
// KV offload and writes the KV size per token it infers from the model into each
// recommendation. An aggregated vLLM Candidate deploys it: vLLM's native CPU offload, sized as
// AISimulate counted it (num_host_blocks blocks of block_size tokens of bytes_per_token bytes on
// each tensor-parallel rank), as ai-dynamo 1.6.1's worker parser hands it to vLLM. A
// disaggregated one cannot (vLLM's offload flag replaces the NIXL connector): it is published,
// Evaluated, with an empty graphDeployment and Deployable False naming the field — never
// deployed without the offload it was predicted with.
func TestRealSearchWithHostOffloadDeploysItWhereVLLMCan(t *testing.T) {
	aggregated := realCandidates(t, `      engine:
        mode: aggregated
        workers:
          aggregated: {kv_cache: {host_offload: {num_host_blocks: 4096}}}
          prefill: null
          decode: null
`)
	for _, c := range aggregated {
		if d := meta.FindStatusCondition(c.Status.Conditions, v1beta2.ConditionDeployable); d == nil || d.Status != metav1.ConditionTrue {
			t.Errorf("%s is not deployable: %+v", c.Name, d)
		}
	}
	args := judgeWorkerArgs(t, aggregated)
	for _, c := range aggregated {
		var params output.PredictionConfig
		if err := json.Unmarshal(c.Spec.Parameters.Raw, &params); err != nil {
			t.Fatal(err)
		}
		w := params.Engine.Workers.Aggregated
		bpt := w.KVCache.BytesPerToken
		if bpt == nil || bpt.IntValue() == 0 {
			t.Fatalf("%s: AISimulate wrote bytes_per_token %v", c.Name, bpt)
		}
		gib := float64(4096) * float64(w.KVCache.BlockSize) * float64(bpt.IntValue()) * float64(max(w.Parallelism.Tensor, 1)) / (1 << 30)
		a := args[c.Name+"/VllmWorker"]
		got := []string{flagValue(a, "--kv-offloading-backend"), flagValue(a, "--kv-offloading-size")}
		if diff := cmp.Diff([]string{"native", strconv.FormatFloat(gib, 'f', -1, 64)}, got); diff != "" {
			t.Errorf("%s: offload flags (-want +got):\n%s", c.Name, diff)
		}
	}

	disaggregated := realCandidates(t, `      engine:
        mode: disaggregated
        workers:
          aggregated: null
          decode: {kv_cache: {host_offload: {num_host_blocks: 4096}}}
`)
	for _, c := range disaggregated {
		if e := meta.FindStatusCondition(c.Status.Conditions, v1beta2.ConditionEvaluated); e == nil || e.Status != metav1.ConditionTrue {
			t.Errorf("%s: Evaluated %+v", c.Name, e)
		}
		d := meta.FindStatusCondition(c.Status.Conditions, v1beta2.ConditionDeployable)
		if d == nil || d.Status != metav1.ConditionFalse || d.Reason != v1beta2.ReasonNotRenderable ||
			!strings.Contains(d.Message, "engine.workers.decode.kv_cache.host_offload") {
			t.Errorf("%s: Deployable %+v, want False, NotRenderable, naming engine.workers.decode.kv_cache.host_offload", c.Name, d)
		}
		if string(c.Spec.GraphDeployment.Raw) != "{}" {
			t.Errorf("%s: graphDeployment %s, want {}", c.Name, c.Spec.GraphDeployment.Raw)
		}
	}
}
