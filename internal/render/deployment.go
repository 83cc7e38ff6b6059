package render

import (
	"encoding/json"
	"fmt"
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/internal/podpatch"
	"github.com/dgdr-operator/dgdr-operator/internal/render/dgdv1beta1"
)

// EnvRouterMode is the Dynamo Frontend's router mode variable.
const EnvRouterMode = "DYN_ROUTER_MODE"

// routerModeValue is DYN_ROUTER_MODE for a router mode, "" for none.
func routerModeValue(d *v1beta2.DeploymentSpec) string {
	if d == nil || d.Router == nil {
		return ""
	}
	switch d.Router.Mode {
	case v1beta2.RouterRoundRobin:
		return "round-robin"
	case v1beta2.RouterRandom:
		return "random"
	case v1beta2.RouterKV:
		return "kv"
	}
	return ""
}

// kvRouting reports whether workers must publish KV-cache events.
func kvRouting(d *v1beta2.DeploymentSpec) bool {
	return d != nil && d.Router != nil && d.Router.Mode == v1beta2.RouterKV
}

// overridesFor returns the pod template overrides of a component type in application order:
// all, then frontend or workers, then prefill or decode.
func overridesFor(d *v1beta2.DeploymentSpec, componentType string) [][]byte {
	if d == nil || d.PodTemplateOverrides == nil {
		return nil
	}
	o := d.PodTemplateOverrides
	chain := []*runtime.RawExtension{o.All}
	switch componentType {
	case dgdv1beta1.ComponentFrontend:
		chain = append(chain, o.Frontend)
	case dgdv1beta1.ComponentWorker:
		chain = append(chain, o.Workers)
	case dgdv1beta1.ComponentPrefill:
		chain = append(chain, o.Workers, o.Prefill)
	case dgdv1beta1.ComponentDecode:
		chain = append(chain, o.Workers, o.Decode)
	case dgdv1beta1.ComponentPlanner:
		chain = append(chain, o.Planner)
	}
	var out [][]byte
	for _, p := range chain {
		if p != nil && len(p.Raw) > 0 {
			out = append(out, p.Raw)
		}
	}
	return out
}

// applyOverrides applies the component's pod template overrides to its pod template.
func applyOverrides(c *dgdv1beta1.Component, d *v1beta2.DeploymentSpec) error {
	patches := overridesFor(d, c.Type)
	if len(patches) == 0 {
		return nil
	}
	tmpl := &corev1.PodTemplateSpec{Spec: c.PodTemplate.Spec}
	if m := c.PodTemplate.Metadata; m != nil {
		tmpl.Labels, tmpl.Annotations = m.Labels, m.Annotations
	}
	out, err := podpatch.Apply(tmpl, patches...)
	if err != nil {
		return err
	}
	c.PodTemplate.Spec = out.Spec
	c.PodTemplate.Metadata = nil
	if len(out.Labels) > 0 || len(out.Annotations) > 0 {
		c.PodTemplate.Metadata = &dgdv1beta1.PodMetadata{Labels: out.Labels, Annotations: out.Annotations}
	}
	return nil
}

// PlannerCommand is how the Planner image starts the Planner.
var PlannerCommand = []string{"python3", "-m", "dynamo.planner"}

// Planner settings the renderer fixes (docs/design/results.md), all the defaults of ai-dynamo 1.6.1:
// the two adjustment loops (SLAPlannerDefaults), the interpolation granularities of the
// rapid-mode AIC sweep (the profiler's DEFAULT_PREFILL/DECODE_INTERPOLATION_GRANULARITY), and the
// request lengths the Planner assumes when it knows none (SLAPlannerDefaults.isl/osl), used for a
// trace, whose lengths the renderer cannot see.
const (
	plannerThroughputIntervalSeconds = 180
	plannerLoadIntervalSeconds       = 5
	plannerPrefillGranularity        = 16
	plannerDecodeGranularity         = 6
	plannerDefaultISL                = 3000
	plannerDefaultOSL                = 150
	// plannerTraceSweepContext is the profiler's sweep_max_context_length when it knows neither
	// the model's context length nor the ISL.
	plannerTraceSweepContext = 8192
	// plannerMinSweepContext is the smallest sweep_max_context_length the rendered config uses:
	// the Planner's AIC sweep needs more than 612 tokens (prefill: a 512-token chat-template
	// margin plus 100; decode: a 500-token OSL plus 100) and fails at run time below that.
	plannerMinSweepContext = 1024
)

// plannerEnabled reports whether spec.deployment.planner.enabled is true.
func plannerEnabled(d *v1beta2.DeploymentSpec) bool {
	return d != nil && d.Planner != nil && d.Planner.Enabled != nil && *d.Planner.Enabled
}

// plannerSLA reports whether the Planner scales for SLA targets: both TTFT and ITL are set.
func plannerSLA(s *v1beta2.SLASpec) bool {
	return s != nil && s.TTFTMs != nil && s.ITLMs != nil
}

// plannerConfig is the Planner's --config (dynamo.planner.config.planner_config.PlannerConfig
// of ai-dynamo 1.6.1, every key by its field name) for a rendered deployment: the backend and
// mode of the candidate, the GPU budget (spec.hardware.gpu.budget, or the deployment's own GPUs:
// the Planner never grows a deployment beyond what the search was allowed to use) and the GPUs
// of one engine per role; then either
//   - SLA scaling when the request sets both TTFT and ITL: optimization_target sla with ttft_ms
//     and itl_ms, throughput and load scaling, and the rapid pre-deployment sweep with the
//     aic_interpolation the Planner runs at start-up (plannerAIC), or
//   - load scaling alone otherwise: optimization_target throughput (the Planner's static queue
//     and KV-utilization thresholds, which need no thresholds of ours) and no sweep.
//
// hack/upstream/planner_config_judge.py validates every variant with the real PlannerConfig
// (planner_upstream_test.go): accepted, no warning, no ignored key, no deprecated alias.
func plannerConfig(p *output.PredictionConfig, backend, mode string, opts Options, roles []role, engineGPUs map[string]int, totalGPUs int) (string, error) {
	e := &p.Engine
	cfg := map[string]any{
		"environment":                            "kubernetes",
		"backend":                                backend,
		"model_name":                             e.Model,
		"throughput_adjustment_interval_seconds": plannerThroughputIntervalSeconds,
		"load_adjustment_interval_seconds":       plannerLoadIntervalSeconds,
		"min_endpoint":                           1,
		"max_gpu_budget":                         totalGPUs,
		"enable_load_scaling":                    true,
		"enable_throughput_scaling":              false,
		"optimization_target":                    "throughput",
		"pre_deployment_sweeping_mode":           "none",
	}
	if opts.GPUBudget > 0 {
		cfg["max_gpu_budget"] = opts.GPUBudget
	}
	switch mode {
	case ModeDisaggregated:
		cfg["mode"] = "disagg"
		cfg["prefill_engine_num_gpu"] = engineGPUs["prefill"]
		cfg["decode_engine_num_gpu"] = engineGPUs["decode"]
	default:
		cfg["mode"] = "agg"
		cfg["decode_engine_num_gpu"] = engineGPUs["aggregated"]
	}
	if s := opts.SLA; plannerSLA(s) {
		aic, err := plannerAIC(p, backend, roles)
		if err != nil {
			return "", err
		}
		cfg["optimization_target"] = "sla"
		cfg["ttft_ms"] = *s.TTFTMs
		cfg["itl_ms"] = *s.ITLMs
		cfg["enable_throughput_scaling"] = true
		cfg["pre_deployment_sweeping_mode"] = "rapid"
		cfg["aic_interpolation"] = aic
	}
	data, err := json.Marshal(cfg)
	return string(data), err
}

// plannerAIC is the Planner's aic_interpolation (AICInterpolationSpec): what it needs to run
// AISimulate's (AI Configurator's) interpolation sweep for the chosen candidate at start-up and
// seed its performance models with it. Without it the Planner warns that rapid mode has no
// aic_interpolation and starts from live measurements only.
//   - hf_id: the model; system: the candidate's GPU SKU (engine.hardware, an AISimulate system
//     name such as h200_sxm); backend: the candidate's;
//   - isl/osl: the candidate's traffic (plannerRequestLengths);
//   - sweep_max_context_length: plannerSweepContext;
//   - the profiler's default interpolation granularities;
//   - prefill_pick/decode_pick (PickedParallelConfig): the per-role parallelism of the
//     candidate. An aggregated candidate has one engine; the Planner's aggregated mode sweeps it
//     through decode_pick, and prefill_pick (required by the schema) is the same engine.
func plannerAIC(p *output.PredictionConfig, backend string, roles []role) (map[string]any, error) {
	e := &p.Engine
	if e.Hardware == "" {
		return nil, fmt.Errorf("engine.hardware is empty: the Planner's SLA scaling needs the candidate's GPU SKU (aic_interpolation.system)")
	}
	var source output.Source
	if p.Traffic != nil {
		source = p.Traffic.Source
	}
	isl, osl, known := plannerRequestLengths(source)
	var prefill, decode output.Parallelism
	for _, r := range roles {
		switch r.key {
		case "prefill":
			prefill = r.w.Parallelism
		case "decode":
			decode = r.w.Parallelism
		default:
			prefill, decode = r.w.Parallelism, r.w.Parallelism
		}
	}
	return map[string]any{
		"hf_id":                             e.Model,
		"system":                            e.Hardware,
		"backend":                           backend,
		"isl":                               isl,
		"osl":                               osl,
		"sweep_max_context_length":          plannerSweepContext(e, roles, isl, osl, known),
		"prefill_interpolation_granularity": plannerPrefillGranularity,
		"decode_interpolation_granularity":  plannerDecodeGranularity,
		"prefill_pick":                      pickedParallelConfig(prefill),
		"decode_pick":                       pickedParallelConfig(decode),
	}, nil
}

// pickedParallelConfig is the Planner's PickedParallelConfig of a role: AISimulate's tensor,
// pipeline, attention_data, moe_tensor and moe_expert are AI Configurator's tp, pp, dp (attention
// DP), moe_tp and moe_ep; an unset degree is 1.
func pickedParallelConfig(par output.Parallelism) map[string]int {
	return map[string]int{
		"tp":     max(par.Tensor, 1),
		"pp":     max(par.Pipeline, 1),
		"dp":     max(par.AttentionData, 1),
		"moe_tp": max(par.MoETensor, 1),
		"moe_ep": max(par.MoEExpert, 1),
	}
}

// plannerRequestLengths is the ISL and OSL of the candidate's traffic and whether they are
// known: a synthetic source's input_tokens and output_tokens (AISimulate's defaults when
// absent); a session's mean prompt per turn (each turn's prompt carries the conversation so far:
// new + (turns-1)/2 × (new + output)) and its output per turn; for a trace, whose requests the
// renderer never reads, or any other source, the Planner's own defaults.
func plannerRequestLengths(s output.Source) (isl, osl int, known bool) {
	switch s.Type {
	case "", "synthetic":
		return positiveInt(s.InputTokens, aisimulate.DefaultInputTokens), positiveInt(s.OutputTokens, aisimulate.DefaultOutputTokens), true
	case "synthetic-session":
		in := positiveInt(s.NewInputTokensPerTurn, aisimulate.DefaultInputTokens)
		out := positiveInt(s.OutputTokensPerTurn, aisimulate.DefaultOutputTokens)
		turns := aisimulate.DefaultSessionTurns
		if s.Session != nil {
			turns = positiveInt(s.Session.Turns, aisimulate.DefaultSessionTurns)
		}
		return in + (turns-1)*(in+out)/2, out, true
	}
	return plannerDefaultISL, plannerDefaultOSL, false
}

// plannerSweepContext is the aic_interpolation sweep_max_context_length, the longest context the
// Planner's sweep covers: the engines' explicit context length (the smallest over the roles)
// when the candidate sets one; otherwise, as the profiler does without the model's context
// length, twice the ISL (at least ISL + OSL, the longest context a request of the traffic
// reaches), or 8192 when the lengths are unknown (a trace); never below plannerMinSweepContext.
func plannerSweepContext(e *output.Engine, roles []role, isl, osl int, known bool) int {
	n := 0
	for _, r := range roles {
		if cl := contextLength(e, r.w); cl > 0 && (n == 0 || cl < n) {
			n = cl
		}
	}
	switch {
	case n > 0:
	case known:
		n = max(2*isl, isl+osl)
	default:
		n = plannerTraceSweepContext
	}
	return max(n, plannerMinSweepContext)
}

// positiveInt is v when it is a positive integer the Planner takes (an int32), else def.
func positiveInt(v, def int) int {
	if v >= 1 && v <= math.MaxInt32 {
		return v
	}
	return def
}

// planner renders the Planner component.
func planner(image, config string) dgdv1beta1.Component {
	main := dgdv1beta1Container(image, PlannerCommand, []string{"--config", config}, 0)
	return dgdv1beta1.Component{
		Name:        "Planner",
		Type:        dgdv1beta1.ComponentPlanner,
		Replicas:    ptr.To(int32(1)),
		PodTemplate: dgdv1beta1.PodTemplate{Spec: podSpec(main)},
	}
}
