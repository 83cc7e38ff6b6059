package builders

import (
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

// RunWrapper builds a DynamoGraphDeploymentRun.
type RunWrapper struct {
	v1beta2.DynamoGraphDeploymentRun
}

// Run starts a Run with an empty spec; From or WithSpec give it one.
func Run(ns, name string) *RunWrapper {
	w := &RunWrapper{}
	w.Namespace, w.Name = ns, name
	return w
}

// Obj returns a copy of the Run.
func (w *RunWrapper) Obj() *v1beta2.DynamoGraphDeploymentRun {
	return w.DeepCopy()
}

// From makes the Run the request controller would create for generation of req: req's spec,
// and the labels naming req, its UID and the generation.
func (w *RunWrapper) From(req *v1beta2.DynamoGraphDeploymentRequest, generation int64) *RunWrapper {
	w.Spec = *req.Spec.DeepCopy()
	return w.Label(v1beta2.LabelRequestName, req.Name).
		Label(v1beta2.LabelRequestUID, string(req.UID)).
		Label(v1beta2.LabelRequestGeneration, strconv.FormatInt(generation, 10))
}

// WithSpec sets the spec.
func (w *RunWrapper) WithSpec(spec v1beta2.DynamoGraphDeploymentRequestSpec) *RunWrapper {
	w.Spec = *spec.DeepCopy()
	return w
}

// Label sets a label.
func (w *RunWrapper) Label(k, v string) *RunWrapper {
	w.Labels = with(w.Labels, k, v)
	return w
}

// Annotation sets an annotation.
func (w *RunWrapper) Annotation(k, v string) *RunWrapper {
	w.Annotations = with(w.Annotations, k, v)
	return w
}

// UID sets metadata.uid (objects that never reach an API server).
func (w *RunWrapper) UID(uid types.UID) *RunWrapper {
	w.ObjectMeta.UID = uid
	return w
}

// Created sets metadata.creationTimestamp (objects that never reach an API server).
func (w *RunWrapper) Created(at time.Time) *RunWrapper {
	w.CreationTimestamp = metav1.NewTime(at)
	return w
}

// Phase sets status.phase.
func (w *RunWrapper) Phase(phase v1beta2.RunPhase) *RunWrapper {
	w.Status.Phase = phase
	return w
}

// Completed sets the status condition Completed.
func (w *RunWrapper) Completed(status metav1.ConditionStatus, reason, message string) *RunWrapper {
	meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: v1beta2.ConditionCompleted, Status: status, Reason: reason, Message: message})
	return w
}

func (w *RunWrapper) aisimulate() *v1beta2.AISimulateStatus {
	if w.Status.AISimulate == nil {
		w.Status.AISimulate = &v1beta2.AISimulateStatus{}
	}
	return w.Status.AISimulate
}

// Input sets status.aisimulate.input, the effective input (a JSON document).
func (w *RunWrapper) Input(jsonDoc string) *RunWrapper {
	w.aisimulate().Input = &runtime.RawExtension{Raw: []byte(jsonDoc)}
	return w
}

// InputHash sets status.aisimulate.inputHash.
func (w *RunWrapper) InputHash(hash string) *RunWrapper {
	w.aisimulate().InputHash = hash
	return w
}
