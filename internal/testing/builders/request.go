// Package builders makes the project's objects for tests: a DynamoGraphDeploymentRequest, Run or
// Candidate starts from a small valid object and each method sets one part, so that a test names
// only what it is about. Obj returns a deep copy, so one builder can make several objects.
package builders

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

// Model is the model of a request unless the test sets another: the examples' Llama.
const Model = "meta-llama/Llama-3.1-8B-Instruct"

// RequestWrapper builds a v1beta2 DynamoGraphDeploymentRequest.
type RequestWrapper struct {
	v1beta2.DynamoGraphDeploymentRequest
}

// Request starts a request of Model in namespace ns (empty: none, for code that needs no API
// server).
func Request(ns, name string) *RequestWrapper {
	w := &RequestWrapper{}
	w.Namespace, w.Name = ns, name
	w.Spec.Model.Name = Model
	return w
}

// Obj returns a copy of the request.
func (w *RequestWrapper) Obj() *v1beta2.DynamoGraphDeploymentRequest {
	return w.DeepCopy()
}

// Model sets spec.model.name.
func (w *RequestWrapper) Model(name string) *RequestWrapper {
	w.Spec.Model.Name = name
	return w
}

// Revision sets spec.model.revision.
func (w *RequestWrapper) Revision(rev string) *RequestWrapper {
	w.Spec.Model.Revision = rev
	return w
}

// UID sets metadata.uid (objects that never reach an API server).
func (w *RequestWrapper) UID(uid types.UID) *RequestWrapper {
	w.ObjectMeta.UID = uid
	return w
}

// Generation sets metadata.generation (objects that never reach an API server).
func (w *RequestWrapper) Generation(g int64) *RequestWrapper {
	w.ObjectMeta.Generation = g
	return w
}

// Label sets a label.
func (w *RequestWrapper) Label(k, v string) *RequestWrapper {
	w.Labels = with(w.Labels, k, v)
	return w
}

// Annotation sets an annotation.
func (w *RequestWrapper) Annotation(k, v string) *RequestWrapper {
	w.Annotations = with(w.Annotations, k, v)
	return w
}

// with sets k to v in m, making m when it is nil.
func with(m map[string]string, k, v string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[k] = v
	return m
}

func (w *RequestWrapper) gpu() *v1beta2.GPUSpec {
	if w.Spec.Hardware == nil {
		w.Spec.Hardware = &v1beta2.HardwareSpec{}
	}
	if w.Spec.Hardware.GPU == nil {
		w.Spec.Hardware.GPU = &v1beta2.GPUSpec{}
	}
	return w.Spec.Hardware.GPU
}

// GPUSKU sets spec.hardware.gpu.sku.
func (w *RequestWrapper) GPUSKU(sku string) *RequestWrapper {
	w.gpu().SKU = sku
	return w
}

// GPUBudget sets spec.hardware.gpu.budget.
func (w *RequestWrapper) GPUBudget(n int32) *RequestWrapper {
	w.gpu().Budget = &n
	return w
}

// MaxCandidates sets spec.recommendation.maxCandidates.
func (w *RequestWrapper) MaxCandidates(n int32) *RequestWrapper {
	if w.Spec.Recommendation == nil {
		w.Spec.Recommendation = &v1beta2.RecommendationSpec{}
	}
	w.Spec.Recommendation.MaxCandidates = &n
	return w
}

func (w *RequestWrapper) sla() *v1beta2.SLASpec {
	if w.Spec.SLA == nil {
		w.Spec.SLA = &v1beta2.SLASpec{}
	}
	return w.Spec.SLA
}

// TTFT sets spec.sla.ttftMs.
func (w *RequestWrapper) TTFT(ms float64) *RequestWrapper {
	w.sla().TTFTMs = &ms
	return w
}

// ITL sets spec.sla.itlMs.
func (w *RequestWrapper) ITL(ms float64) *RequestWrapper {
	w.sla().ITLMs = &ms
	return w
}

// Load sets spec.workload.static.load.
func (w *RequestWrapper) Load(load v1beta2.LoadSpec) *RequestWrapper {
	w.Spec.Workload = &v1beta2.WorkloadSpec{Static: &v1beta2.StaticWorkload{Load: load.DeepCopy()}}
	return w
}

// Trace sets spec.workload.trace.
func (w *RequestWrapper) Trace(trace v1beta2.TraceWorkload) *RequestWrapper {
	w.Spec.Workload = &v1beta2.WorkloadSpec{Trace: trace.DeepCopy()}
	return w
}

// Overrides sets spec.aisimulate.inputOverrides to a JSON document.
func (w *RequestWrapper) Overrides(jsonDoc string) *RequestWrapper {
	w.Spec.AISimulate = &v1beta2.AISimulateSpec{InputOverrides: &runtime.RawExtension{Raw: []byte(jsonDoc)}}
	return w
}

func (w *RequestWrapper) deployment() *v1beta2.DeploymentSpec {
	if w.Spec.Deployment == nil {
		w.Spec.Deployment = &v1beta2.DeploymentSpec{}
	}
	return w.Spec.Deployment
}

// AutoApply turns on spec.deployment.autoApply with the given deployment name (empty: the
// default name).
func (w *RequestWrapper) AutoApply(name string) *RequestWrapper {
	d := w.deployment()
	d.AutoApply = ptr.To(true)
	d.Name = name
	return w
}

// Verification sets spec.deployment.verification.
func (w *RequestWrapper) Verification(v *v1beta2.VerificationSpec) *RequestWrapper {
	w.deployment().Verification = v.DeepCopy()
	return w
}

// Capture turns on spec.deployment.capture onto the claim.
func (w *RequestWrapper) Capture(claim string) *RequestWrapper {
	w.deployment().Capture = &v1beta2.CaptureSpec{Enabled: ptr.To(true), ClaimName: claim}
	return w
}

// Research sets spec.research: a re-search every intervalMinutes, with at least minRequests
// in the window.
func (w *RequestWrapper) Research(intervalMinutes, minRequests int32) *RequestWrapper {
	w.Spec.Research = &v1beta2.ResearchSpec{IntervalMinutes: intervalMinutes, MinRequests: ptr.To(minRequests)}
	return w
}

// Objective sets spec.objective.target.
func (w *RequestWrapper) Objective(target v1beta2.ObjectiveTarget) *RequestWrapper {
	w.Spec.Objective = &v1beta2.ObjectiveSpec{Target: target}
	return w
}

// WorkersOverride sets spec.deployment.podTemplateOverrides.workers to a JSON patch document.
func (w *RequestWrapper) WorkersOverride(patch string) *RequestWrapper {
	w.deployment().PodTemplateOverrides = &v1beta2.PodTemplateOverrides{Workers: &runtime.RawExtension{Raw: []byte(patch)}}
	return w
}

// V1Beta1Request is a request of the Dynamo platform's v1beta1 API: a model and a backend.
func V1Beta1Request(ns, name, model string, backend v1beta1.BackendType) *v1beta1.DynamoGraphDeploymentRequest {
	d := &v1beta1.DynamoGraphDeploymentRequest{}
	d.Namespace, d.Name = ns, name
	d.Spec.Model, d.Spec.Backend = model, backend
	return d
}
