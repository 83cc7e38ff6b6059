package render

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
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

// Planner settings the renderer fixes (docs/results.md): Dynamo's own defaults for the two
// adjustment loops.
const (
	plannerThroughputIntervalSeconds = 180
	plannerLoadIntervalSeconds       = 5
)

// plannerEnabled reports whether spec.deployment.planner.enabled is true.
func plannerEnabled(d *v1beta2.DeploymentSpec) bool {
	return d != nil && d.Planner != nil && d.Planner.Enabled != nil && *d.Planner.Enabled
}

// plannerConfig is the Planner's --config for a rendered deployment: the backend and mode of the
// candidate, SLA scaling (the request's TTFT and ITL, with AI Configurator's rapid
// pre-deployment sweep) when both are set and load-based scaling otherwise, the GPU budget
// (spec.hardware.gpu.budget, or the deployment's own GPUs: the Planner never grows a deployment
// beyond what the search was allowed to use), and the GPUs of one prefill and one decode
// engine.
func plannerConfig(backend, mode, model string, opts Options, engineGPUs map[string]int, totalGPUs int) (string, error) {
	cfg := map[string]any{
		"environment":                    "kubernetes",
		"backend":                        backend,
		"model_name":                     model,
		"throughput_adjustment_interval": plannerThroughputIntervalSeconds,
		"load_adjustment_interval":       plannerLoadIntervalSeconds,
		"min_endpoint":                   1,
		"max_gpu_budget":                 totalGPUs,
		"enable_load_scaling":            true,
		"enable_throughput_scaling":      false,
		"optimization_target":            "throughput",
		"pre_deployment_sweeping_mode":   "none",
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
	if s := opts.SLA; s != nil && s.TTFTMs != nil && s.ITLMs != nil {
		cfg["optimization_target"] = "sla"
		cfg["ttft"] = *s.TTFTMs
		cfg["itl"] = *s.ITLMs
		cfg["enable_throughput_scaling"] = true
		cfg["pre_deployment_sweeping_mode"] = "rapid"
	}
	data, err := json.Marshal(cfg)
	return string(data), err
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
