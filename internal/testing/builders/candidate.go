package builders

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

// CandidateWrapper builds a DynamoGraphDeploymentCandidate.
type CandidateWrapper struct {
	v1beta2.DynamoGraphDeploymentCandidate
}

// Candidate starts an aggregated vLLM Candidate on one GPU, with a graphDeployment that names
// only its kind and empty parameters.
func Candidate(ns, name string) *CandidateWrapper {
	w := &CandidateWrapper{}
	w.Namespace, w.Name = ns, name
	w.Spec = v1beta2.DynamoGraphDeploymentCandidateSpec{Backend: v1beta2.BackendVLLM, Mode: v1beta2.ModeAggregated, GPUs: 1,
		GraphDeployment: runtime.RawExtension{Raw: []byte(`{"kind":"DynamoGraphDeployment"}`)},
		Parameters:      runtime.RawExtension{Raw: []byte(`{}`)}}
	return w
}

// Obj returns a copy of the Candidate.
func (w *CandidateWrapper) Obj() *v1beta2.DynamoGraphDeploymentCandidate {
	return w.DeepCopy()
}

// OwnedBy makes the Candidate one its reporter publishes for run: controlled by run, and
// labelled with run's name and UID.
func (w *CandidateWrapper) OwnedBy(run *v1beta2.DynamoGraphDeploymentRun) *CandidateWrapper {
	w.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(run, v1beta2.GroupVersion.WithKind("DynamoGraphDeploymentRun"))}
	return w.Label(v1beta2.LabelRunName, run.Name).Label(v1beta2.LabelRunUID, string(run.UID))
}

// Label sets a label.
func (w *CandidateWrapper) Label(k, v string) *CandidateWrapper {
	w.Labels = with(w.Labels, k, v)
	return w
}

// GPUs sets spec.gpus.
func (w *CandidateWrapper) GPUs(n int32) *CandidateWrapper {
	w.Spec.GPUs = n
	return w
}

// GraphDeployment sets spec.graphDeployment to a JSON document.
func (w *CandidateWrapper) GraphDeployment(jsonDoc []byte) *CandidateWrapper {
	w.Spec.GraphDeployment = runtime.RawExtension{Raw: jsonDoc}
	return w
}

// Parameters sets spec.parameters to a JSON document.
func (w *CandidateWrapper) Parameters(jsonDoc string) *CandidateWrapper {
	w.Spec.Parameters = runtime.RawExtension{Raw: []byte(jsonDoc)}
	return w
}
