package render

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

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
