// Package render turns one concrete AISimulate prediction configuration (a
// recommendations/NNNN.yaml document of a search) into a deployable DynamoGraphDeployment
// (nvidia.com/v1beta1). It is pure: no I/O, no clocks, deterministic output.
//
// Rules (see docs/design/results.md):
//   - aggregated → a Frontend and one worker component (type worker); disaggregated → a
//     Frontend, a prefill and a decode component;
//   - every component has a container "main" with the backend's runtime image; workers run
//     `python3 -m dynamo.<backend>` with every engine flag as separate args tokens (the Dynamo
//     operator parses parallel sizes from args and never from `--flag=value`);
//   - nvidia.com/gpu limits (and requests) = GPUs per pod; an engine wider than a node becomes
//     multinode {nodeCount} with a full node of GPUs per pod;
//   - replicas come from parallelism.replicas of each role;
//   - model access (Options.Model): the engine's trust flag exactly when remoteCode allows it,
//     the cache claim mounted read-only with HF_HOME on it, HF_TOKEN from the token Secret —
//     in every worker (internal/modelaccess);
//   - capture (spec.deployment.capture): the Frontend alone mounts the capture claim and
//     writes its request trace there (capture.go);
//   - placement: every worker component requires Nodes of the GPU product it was searched for
//     (nvidia.com/gpu.product In the catalogue's labels of its system, placement.go).
package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	kjson "sigs.k8s.io/json"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/internal/modelaccess"
	"github.com/dgdr-operator/dgdr-operator/internal/render/dgdv1beta1"
)

// Modes as AISimulate spells them.
const (
	ModeAggregated    = output.ModeAggregated
	ModeDisaggregated = output.ModeDisaggregated
)

// DefaultGPUsPerNode is used when Options.GPUsPerNode is 0.
const DefaultGPUsPerNode = 8

// SGLangBootstrapPort is the disaggregation bootstrap port both SGLang roles use.
const SGLangBootstrapPort = 12345

// Options are the deployment facts that are not part of the prediction configuration.
type Options struct {
	// Name is the DynamoGraphDeployment metadata.name (optional).
	Name string
	// Namespace is the metadata.namespace (optional; normally chosen at creation).
	Namespace string
	// ModelRevision pins the Hugging Face revision (vLLM and SGLang --revision; recorded as an
	// annotation for TRT-LLM, which has no revision flag).
	ModelRevision string
	// RuntimeImages maps a backend (vllm, sglang, trtllm) to its Dynamo runtime image. Required
	// for the candidate's backend.
	RuntimeImages map[string]string
	// GPUsPerNode is the node size used to decide multinode layouts (default 8).
	GPUsPerNode int
	// Labels are copied to metadata.labels.
	Labels map[string]string
	// Model is the request's model access: remoteCode decides the engine's trust flag, cache
	// is mounted read-only into every worker (HF_HOME), tokenSecretRef becomes HF_TOKEN (a
	// secretKeyRef). Its name, when set, is the model the engines serve, whatever the
	// prediction's engine.model says (the typed spec decides the model; inputOverrides may not
	// set engine.model). Its revision is not read (see ModelRevision).
	Model v1beta2.ModelSpec
	// Deployment is the request's spec.deployment: the Frontend's router mode (DYN_ROUTER_MODE;
	// KV also makes every worker publish KV events), the Planner, the pod template overrides
	// per role and the Frontend's request capture. nil renders the Frontend's defaults, no
	// Planner, no overrides and no capture.
	Deployment *v1beta2.DeploymentSpec
	// PlannerImage is the image of the Planner component (the operator configuration's
	// planner.image); required when Deployment enables the Planner.
	PlannerImage string
	// SLA is the request's spec.sla: TTFT and ITL targets make the Planner scale for them.
	SLA *v1beta2.SLASpec
	// GPUBudget is the request's spec.hardware.gpu.budget (0: none), the Planner's GPU ceiling.
	GPUBudget int
	// RequestUID is the UID of the request the deployment is rendered for: the Frontend's capture
	// goes to its directory of the claim (CaptureDirectory). Required with a capture.
	RequestUID string
}

// Summary describes the rendered deployment.
type Summary struct {
	Backend string
	Mode    string
	// GPUs is the total number of GPUs of the deployment (all roles, all replicas).
	GPUs int
}

// Render renders doc (a decoded recommendations/NNNN.yaml) with opts. A document with a field
// the renderer cannot lower is a *NotRenderableError naming every such field.
func Render(doc map[string]any, opts Options) (*dgdv1beta1.DynamoGraphDeployment, Summary, error) {
	d, err := Decode(doc)
	if err != nil {
		return nil, Summary{}, err
	}
	return d.Render(opts)
}

// Document is a decoded prediction configuration document.
type Document struct {
	// Parameters is the document as JSON with sorted keys: what a Candidate publishes as
	// spec.parameters.
	Parameters json.RawMessage
	// Typed is the typed document that rendering and the calibration read.
	Typed *output.PredictionConfig
	// Unknown are the paths of the fields output.PredictionConfig does not name: never
	// rendered, so refused.
	Unknown []string
}

// Decode decodes a prediction configuration document (a decoded recommendations/NNNN.yaml)
// once: into its JSON with sorted keys and from that the typed document. A field the typed
// document does not name is listed in Unknown (rendering refuses it); a value of the wrong type
// is an error.
func Decode(doc map[string]any) (*Document, error) {
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	var p output.PredictionConfig
	strict, err := kjson.UnmarshalStrict(raw, &p)
	if err != nil {
		return nil, fmt.Errorf("decoding the prediction configuration: %w", err)
	}
	d := &Document{Parameters: raw, Typed: &p}
	for _, e := range strict {
		var fe kjson.FieldError
		if errors.As(e, &fe) {
			d.Unknown = append(d.Unknown, fe.FieldPath())
		}
	}
	slices.Sort(d.Unknown)
	return d, nil
}

// Render renders the document with opts.
func (d *Document) Render(opts Options) (*dgdv1beta1.DynamoGraphDeployment, Summary, error) {
	return renderPrediction(d.Typed, d.Unknown, opts)
}

// role is one worker component to render.
type role struct {
	key       string // aggregated, prefill, decode
	component string // component type
	name      string // component name
	w         *output.Worker
}

// renderPrediction renders a decoded prediction whose fields unknown the typed document does
// not name.
func renderPrediction(p *output.PredictionConfig, unknown []string, opts Options) (*dgdv1beta1.DynamoGraphDeployment, Summary, error) {
	if opts.Model.Name != "" && p.Engine.Model != opts.Model.Name {
		typed := *p
		typed.Engine.Model = opts.Model.Name
		p = &typed
	}
	e := p.Engine
	backend := e.Backend
	if backend == "" {
		backend = output.BackendVLLM
	}
	mode := e.Mode
	if mode == "" {
		mode = ModeAggregated
	}
	if e.Model == "" {
		return nil, Summary{}, fmt.Errorf("engine.model is empty")
	}
	image := opts.RuntimeImages[backend]
	if image == "" {
		return nil, Summary{}, fmt.Errorf("no runtime image configured for backend %q", backend)
	}
	gpusPerNode := opts.GPUsPerNode
	if gpusPerNode <= 0 {
		gpusPerNode = DefaultGPUsPerNode
	}

	var roles []role
	switch mode {
	case ModeAggregated:
		w := e.Workers.Aggregated
		if w == nil {
			return nil, Summary{}, fmt.Errorf("aggregated configuration has no engine.workers.aggregated")
		}
		roles = []role{{key: "aggregated", component: dgdv1beta1.ComponentWorker, name: workerName(backend, ""), w: w}}
	case ModeDisaggregated:
		pw, dw := e.Workers.Prefill, e.Workers.Decode
		if pw == nil || dw == nil {
			return nil, Summary{}, fmt.Errorf("disaggregated configuration needs engine.workers.prefill and engine.workers.decode")
		}
		roles = []role{
			{key: "prefill", component: dgdv1beta1.ComponentPrefill, name: workerName(backend, "prefill"), w: pw},
			{key: "decode", component: dgdv1beta1.ComponentDecode, name: workerName(backend, "decode"), w: dw},
		}
	default:
		return nil, Summary{}, fmt.Errorf("mode %q cannot be rendered (aggregated and disaggregated only)", mode)
	}
	if refused := refusals(p, backend, mode, unknown); len(refused) > 0 {
		return nil, Summary{}, &NotRenderableError{Refusals: refused}
	}

	dgd := &dgdv1beta1.DynamoGraphDeployment{
		APIVersion: dgdv1beta1.APIVersion,
		Kind:       dgdv1beta1.Kind,
		Metadata:   dgdv1beta1.Metadata{Name: opts.Name, Namespace: opts.Namespace, Labels: copyMap(opts.Labels)},
		Spec: dgdv1beta1.DynamoGraphDeploymentSpec{
			BackendFramework: backend,
			Components:       []dgdv1beta1.Component{frontend(image, routerModeValue(opts.Deployment))},
		},
	}
	if opts.ModelRevision != "" {
		dgd.Metadata.Annotations = map[string]string{AnnotationModelRevision: opts.ModelRevision}
	}

	total := 0
	engineGPUs := map[string]int{}
	// systems is the GPU each worker component was searched for: its role's, else the engine's.
	systems := map[string]string{}
	withPlanner := plannerEnabled(opts.Deployment)
	for _, r := range roles {
		system, nodeGPUs := e.Hardware, gpusPerNode
		if r.w.Hardware != "" && r.w.Hardware != e.Hardware {
			// A role searched on another GPU than the request's runs on that GPU's nodes.
			system = r.w.Hardware
			if n, ok := aisimulate.GPUsPerNode(system); ok {
				nodeGPUs = int(n)
			}
		}
		c, gpus, err := renderWorker(backend, mode, &e, r, image, opts, nodeGPUs)
		if err != nil {
			return nil, Summary{}, fmt.Errorf("engine.workers.%s: %w", r.key, err)
		}
		systems[c.Name] = system
		total += gpus
		engineGPUs[r.key] = gpus / int(*c.Replicas)
		if withPlanner {
			c.ScalingAdapter = &dgdv1beta1.ScalingAdapter{} // the Planner owns the replicas
		}
		dgd.Spec.Components = append(dgd.Spec.Components, c)
	}
	if withPlanner {
		if opts.PlannerImage == "" {
			return nil, Summary{}, fmt.Errorf("spec.deployment.planner.enabled needs the Planner image (the operator configuration's planner.image)")
		}
		config, err := plannerConfig(p, backend, mode, opts, roles, engineGPUs, total)
		if err != nil {
			return nil, Summary{}, err
		}
		dgd.Spec.Components = append(dgd.Spec.Components, planner(opts.PlannerImage, config))
	}
	for i := range dgd.Spec.Components {
		c := &dgd.Spec.Components[i]
		if err := applyOverrides(c, opts.Deployment); err != nil {
			return nil, Summary{}, fmt.Errorf("spec.deployment.podTemplateOverrides of %s: %w", c.Name, err)
		}
		if c.Type == dgdv1beta1.ComponentFrontend && captureEnabled(opts.Deployment) {
			if opts.RequestUID == "" {
				return nil, Summary{}, fmt.Errorf("spec.deployment.capture needs the request's UID (the Run's %s label): the capture goes to the request's directory of the claim", v1beta2.LabelRequestUID)
			}
			applyCapture(c, opts.Deployment.Capture, opts.RequestUID)
		}
		if system := systems[c.Name]; system != "" {
			if err := pinGPUProduct(&c.PodTemplate.Spec, system); err != nil {
				return nil, Summary{}, fmt.Errorf("spec.deployment.podTemplateOverrides of %s: %w", c.Name, err)
			}
		}
	}
	return dgd, Summary{Backend: backend, Mode: mode, GPUs: total}, nil
}

// AnnotationModelRevision records the pinned model revision on the rendered object.
const AnnotationModelRevision = "nvidia.com/dgdr-model-revision"

func workerName(backend, r string) string {
	switch backend {
	case output.BackendVLLM:
		switch r {
		case "prefill":
			return "VllmPrefillWorker"
		case "decode":
			return "VllmDecodeWorker"
		}
		return "VllmWorker"
	case output.BackendSGLang:
		if r == "" {
			return "SGLangWorker"
		}
		return r
	default:
		if r == "" {
			return "TRTLLMWorker"
		}
		return r
	}
}

func frontend(image, routerMode string) dgdv1beta1.Component {
	// The Dynamo operator injects the frontend command, port, probes and env; setting only the
	// image (and the router mode as env, never as args that would replace the injected ones)
	// keeps us compatible across Dynamo releases.
	main := dgdv1beta1Container(image, nil, nil, 0)
	if routerMode != "" {
		main.Env = []corev1.EnvVar{{Name: EnvRouterMode, Value: routerMode}}
	}
	return dgdv1beta1.Component{
		Name:        "Frontend",
		Type:        dgdv1beta1.ComponentFrontend,
		Replicas:    ptr.To(int32(1)),
		PodTemplate: dgdv1beta1.PodTemplate{Spec: podSpec(main)},
	}
}

// contextLength returns the explicit context length of a role (role override first), or 0 for
// "max"/unset.
func contextLength(e *output.Engine, w *output.Worker) int {
	for _, v := range []*intstr.IntOrString{w.ContextLength, e.ContextLength} {
		switch {
		case v == nil:
		case v.Type == intstr.Int && v.IntVal > 0:
			return int(v.IntVal)
		case v.Type == intstr.String:
			if n, err := strconv.Atoi(v.StrVal); err == nil && n > 0 {
				return n
			}
		}
	}
	return 0
}

func renderWorker(backend, mode string, e *output.Engine, r role, image string, opts Options, gpusPerNode int) (dgdv1beta1.Component, int, error) {
	revision := opts.ModelRevision
	trust := modelaccess.TrustsRemoteCode(&opts.Model)
	kvEvents := kvRouting(opts.Deployment)
	par := r.w.Parallelism
	// An unset (zero) count or degree means 1.
	replicas := max(par.Replicas, 1)
	tp := max(par.Tensor, 1)
	pp := max(par.Pipeline, 1)
	dp := max(par.AttentionData, 1)
	ep := max(par.MoEExpert, 1)
	engineGPUs := tp * pp * dp

	perPod := engineGPUs
	var multinode *dgdv1beta1.Multinode
	if engineGPUs > gpusPerNode {
		if engineGPUs%gpusPerNode != 0 {
			return dgdv1beta1.Component{}, 0, fmt.Errorf("%d GPUs per engine do not split evenly over nodes of %d GPUs", engineGPUs, gpusPerNode)
		}
		perPod = gpusPerNode
		multinode = &dgdv1beta1.Multinode{NodeCount: int32(engineGPUs / gpusPerNode)}
	}

	var args []string
	var err error
	switch backend {
	case output.BackendVLLM:
		args = vllmArgs(e, r, tp, pp, dp, ep, revision, trust, kvEvents)
	case output.BackendSGLang:
		args = sglangArgs(e, r, tp, pp, dp, ep, revision, trust, kvEvents)
	case output.BackendTRTLLM:
		args, err = trtllmArgs(e, r, tp, pp, dp, ep, trust, kvEvents)
	default:
		err = fmt.Errorf("unknown backend %q", backend)
	}
	if err != nil {
		return dgdv1beta1.Component{}, 0, err
	}
	command := []string{"python3", "-m", "dynamo." + backend}
	main := dgdv1beta1Container(image, command, args, perPod)
	main.Env = modelaccess.Env(&opts.Model)
	main.VolumeMounts = modelaccess.Mounts(&opts.Model)
	spec := podSpec(main)
	spec.Volumes = modelaccess.Volumes(&opts.Model)
	c := dgdv1beta1.Component{
		Name:        r.name,
		Type:        r.component,
		Replicas:    ptr.To(int32(replicas)),
		Multinode:   multinode,
		PodTemplate: dgdv1beta1.PodTemplate{Spec: spec},
	}
	if mode == ModeDisaggregated || engineGPUs >= gpusPerNode {
		q := sharedMemory
		c.SharedMemorySize = &q
	}
	return c, engineGPUs * replicas, nil
}

// flags accumulates args as separate tokens.
type flags []string

func (f *flags) add(name string, value ...string) { *f = append(*f, name); *f = append(*f, value...) }
func (f *flags) num(name string, v int)           { f.add(name, strconv.Itoa(v)) }
func (f *flags) numIf(name string, v int) {
	if v > 0 {
		f.num(name, v)
	}
}
func (f *flags) frac(name string, v *float64) {
	if v != nil && *v > 0 {
		f.add(name, strconv.FormatFloat(*v, 'f', -1, 64))
	}
}

func prefixCachingOff(w *output.Worker) bool {
	return w.KVCache.PrefixCaching != nil && !*w.KVCache.PrefixCaching
}

func vllmArgs(e *output.Engine, r role, tp, pp, dp, ep int, revision string, trust, kvEvents bool) []string {
	var f flags
	f.add("--model", e.Model)
	if revision != "" {
		f.add("--revision", revision)
	}
	if trust {
		f.add("--trust-remote-code")
	}
	f.num("--tensor-parallel-size", tp)
	if pp > 1 {
		f.num("--pipeline-parallel-size", pp)
	}
	if dp > 1 {
		f.num("--data-parallel-size", dp)
	}
	if ep > 1 {
		f.add("--enable-expert-parallel")
	}
	f.numIf("--max-num-batched-tokens", r.w.Scheduler.MaxBatchedTokens)
	f.numIf("--max-num-seqs", r.w.Scheduler.MaxSequences)
	f.numIf("--max-model-len", contextLength(e, r.w))
	f.numIf("--block-size", r.w.KVCache.BlockSize)
	f.frac("--gpu-memory-utilization", r.w.KVCache.Capacity.MemoryFraction)
	if prefixCachingOff(r.w) {
		f.add("--no-enable-prefix-caching")
	}
	if b := r.w.KVCache.Capacity.Blocks; b != nil {
		f.num("--num-gpu-blocks-override", *b)
	}
	if spec := e.Speculation; len(spec) > 0 && string(spec) != "null" {
		var s speculation
		_ = json.Unmarshal(spec, &s) // refusals checked it
		f.add("--speculative-config", fmt.Sprintf(`{"method":"ngram","num_speculative_tokens":%d,"prompt_lookup_max":%d,"prompt_lookup_min":%d}`,
			s.NumSpeculativeTokens, NgramPromptLookup, NgramPromptLookup))
	}
	if h := r.w.KVCache.HostOffload; len(h) > 0 && string(h) != "null" {
		gib, _ := hostOffloadGiB(r.w, output.BackendVLLM, ModeAggregated) // refusals checked it
		f.add("--kv-offloading-backend", "native")
		f.add("--kv-offloading-size", strconv.FormatFloat(gib, 'f', -1, 64))
	}
	if r.key != "aggregated" {
		f.add("--disaggregation-mode", r.key)
		// Mandatory on prefill; recommended with the same value on decode.
		f.add("--kv-transfer-config", `{"kv_connector":"NixlConnector","kv_role":"kv_both"}`)
	}
	if kvEvents {
		f.add("--kv-events-config", `{"publisher":"zmq","topic":"kv-events","endpoint":"tcp://*:20080","enable_kv_cache_events":true}`)
	}
	return f
}

func sglangArgs(e *output.Engine, r role, tp, pp, dp, ep int, revision string, trust, kvEvents bool) []string {
	var f flags
	f.add("--model-path", e.Model)
	f.add("--served-model-name", e.Model)
	if revision != "" {
		f.add("--revision", revision)
	}
	// With DP attention SGLang's --tp is the width of the whole engine and --dp splits it into
	// attention ranks.
	f.num("--tp", tp*dp)
	if pp > 1 {
		f.num("--pp-size", pp)
	}
	if dp > 1 {
		f.num("--dp", dp)
		f.add("--enable-dp-attention")
	}
	if ep > 1 {
		f.num("--ep", ep)
	}
	if n := r.w.Scheduler.MaxBatchedTokens; n > 0 {
		f.num("--chunked-prefill-size", n)
		f.num("--max-prefill-tokens", n)
	}
	f.numIf("--max-running-requests", r.w.Scheduler.MaxSequences)
	f.numIf("--context-length", contextLength(e, r.w))
	f.numIf("--page-size", r.w.KVCache.BlockSize)
	f.frac("--mem-fraction-static", r.w.KVCache.Capacity.MemoryFraction)
	if prefixCachingOff(r.w) {
		f.add("--disable-radix-cache")
	}
	if trust {
		f.add("--trust-remote-code")
	}
	f.add("--skip-tokenizer-init")
	if r.key != "aggregated" {
		f.add("--disaggregation-mode", r.key)
		f.add("--disaggregation-transfer-backend", "nixl")
		f.num("--disaggregation-bootstrap-port", SGLangBootstrapPort)
		f.add("--host", "0.0.0.0")
	}
	if kvEvents {
		f.add("--kv-events-config", `{"publisher":"zmq","topic":"kv-events","endpoint":"tcp://*:5557"}`)
	}
	return f
}

func trtllmArgs(e *output.Engine, r role, tp, pp, dp, ep int, trust, kvEvents bool) ([]string, error) {
	var f flags
	f.add("--model-path", e.Model)
	f.add("--served-model-name", e.Model)
	// TRT-LLM attention DP uses the tensor-parallel group as attention ranks: the engine is
	// tp*dp wide with --enable-attention-dp.
	if dp > 1 && tp > 1 {
		return nil, fmt.Errorf("TRT-LLM cannot combine tensor %d with attention_data %d", tp, dp)
	}
	f.num("--tensor-parallel-size", tp*dp)
	if pp > 1 {
		f.num("--pipeline-parallel-size", pp)
	}
	if ep > 1 {
		f.num("--expert-parallel-size", ep)
	}
	if dp > 1 {
		f.add("--enable-attention-dp")
	}
	f.numIf("--max-batch-size", r.w.Scheduler.MaxSequences)
	f.numIf("--max-num-tokens", r.w.Scheduler.MaxBatchedTokens)
	f.numIf("--max-seq-len", contextLength(e, r.w))
	f.numIf("--kv-block-size", r.w.KVCache.BlockSize)
	f.frac("--free-gpu-memory-fraction", r.w.KVCache.Capacity.MemoryFraction)
	if kvEvents {
		// The spelling older and newer dynamo.trtllm releases both accept.
		f.add("--publish-events-and-metrics")
	}
	// Engine settings without a CLI flag go into one inline override document. Chunked prefill
	// is always on: the prediction's max_batched_tokens is a per-step budget that prompts are
	// chunked into (as vLLM and SGLang do by default), and TensorRT-LLM, whose default is off,
	// refuses a prompt longer than --max-num-tokens without it. ai-dynamo's profiler enables it
	// on every TRT-LLM worker it generates too (enable_trtllm_chunked_prefill).
	override := map[string]any{"enable_chunked_prefill": true}
	if trust {
		// dynamo.trtllm has no trust flag of its own; the LLM API's trust_remote_code is set
		// through the inline override document.
		override["trust_remote_code"] = true
	}
	if prefixCachingOff(r.w) {
		override["kv_cache_config"] = map[string]any{"enable_block_reuse": false}
	}
	if r.key != "aggregated" {
		f.add("--disaggregation-mode", r.key)
		override["cache_transceiver_config"] = map[string]any{"backend": "DEFAULT"}
		if r.key == "prefill" {
			override["disable_overlap_scheduler"] = true
		}
	}
	data, err := json.Marshal(override) // map keys are sorted: deterministic
	if err != nil {
		return nil, err
	}
	f.add("--override-engine-args", string(data))
	return f, nil
}

func copyMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}
