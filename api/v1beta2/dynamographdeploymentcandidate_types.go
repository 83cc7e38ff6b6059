package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// DeploymentMode is how a candidate splits prefill and decode.
// +kubebuilder:validation:Enum=aggregated;disaggregated
type DeploymentMode string

// Deployment modes.
const (
	ModeAggregated    DeploymentMode = "aggregated"
	ModeDisaggregated DeploymentMode = "disaggregated"
)

// DynamoGraphDeploymentCandidateSpec is one ranked, deployable result of a Run. Immutable.
type DynamoGraphDeploymentCandidateSpec struct {
	// backend of the candidate.
	// +required
	Backend Backend `json:"backend,omitempty"`

	// mode of the candidate.
	// +required
	Mode DeploymentMode `json:"mode,omitempty"`

	// gpus is the total number of GPUs the candidate uses. Minimum 1.
	// +required
	// +kubebuilder:validation:Minimum=1
	GPUs int32 `json:"gpus,omitempty"`

	// graphDeployment is a complete DynamoGraphDeployment (nvidia.com/v1beta1) spec that can be
	// deployed as-is, for example with `dgdrctl promote`.
	// +required
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:Schemaless
	GraphDeployment runtime.RawExtension `json:"graphDeployment"`

	// parameters is the concrete AISimulate configuration of this point, a document that
	// `aisimulate predict` (or `aisim predict`) accepts to replay it.
	// +required
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:Schemaless
	Parameters runtime.RawExtension `json:"parameters"`
}

// DynamoGraphDeploymentCandidateStatus is the evaluation of a candidate.
type DynamoGraphDeploymentCandidateStatus struct {
	// conditions of the candidate: Evaluated.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// rank is the 1-based position among the Run's published candidates, best first.
	// +optional
	// +kubebuilder:validation:Minimum=1
	Rank int32 `json:"rank,omitempty"`

	// candidateID is the recommender's id of this candidate (candidate-NNNNNN).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	CandidateID string `json:"candidateID,omitempty"`

	// metrics are the predicted metrics.
	// +optional
	Metrics *CandidateMetrics `json:"metrics,omitempty"`

	// provisional is true while the candidate comes from a search that had not ended when it was
	// published: the reporter publishes the best candidates settled so far while the search runs
	// (docs/design/results.md). Its rank may still change, and it is deleted if it drops out of the top
	// maxCandidates. When the search ends the final ranking replaces the provisional one and this
	// field is cleared; a Run that was cancelled or whose deadline passed keeps its provisional
	// candidates with provisional true.
	// +optional
	Provisional bool `json:"provisional,omitempty"`

	// fitsCluster says whether the cluster's GPU Nodes of the candidate's SKU can hold it. The
	// operator writes it from its Node informer when the candidate is published and whenever
	// those Nodes change; absent until then (docs/design/results.md).
	// +optional
	FitsCluster *ClusterFit `json:"fitsCluster,omitempty"`
}

// ClusterFit compares what a candidate needs with the allocatable nvidia.com/gpu of the
// schedulable Nodes whose nvidia.com/gpu.product label maps to the candidate's GPU SKU. It counts
// allocatable GPUs, not the ones other workloads leave free: a candidate that fits may still wait
// for GPUs in use.
type ClusterFit struct {
	// fits is true when those Nodes have at least gpusNeeded GPUs in all and the largest of them
	// holds the candidate's largest pod (gpusPerNodeNeeded <= largestNodeGPUs).
	// +required
	Fits *bool `json:"fits,omitempty"`

	// sku is the GPU SKU (AISimulate system id) the Nodes were matched on.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	SKU string `json:"sku,omitempty"`

	// gpusNeeded is the candidate's total GPUs (spec.gpus).
	// +required
	// +kubebuilder:validation:Minimum=1
	GPUsNeeded int32 `json:"gpusNeeded,omitempty"`

	// gpusAvailable is the allocatable nvidia.com/gpu summed over the matching Nodes.
	// +required
	// +kubebuilder:validation:Minimum=0
	GPUsAvailable *int64 `json:"gpusAvailable,omitempty"`

	// gpusPerNodeNeeded is the GPUs of the candidate's largest pod: one node's share of a
	// multinode engine, otherwise one engine. Every pod must land on one node.
	// +optional
	GPUsPerNodeNeeded int32 `json:"gpusPerNodeNeeded,omitempty"`

	// largestNodeGPUs is the allocatable nvidia.com/gpu of the largest matching Node.
	// +optional
	LargestNodeGPUs int64 `json:"largestNodeGPUs,omitempty"`

	// nodes is the number of matching Nodes.
	// +optional
	Nodes int32 `json:"nodes,omitempty"`

	// message says why the candidate does not fit, or what it takes of the cluster.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// DynamoGraphDeploymentCandidate is a ranked, deployable result of a Run, published by the
// Run's reporter and owned by the Run.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=dgdc,categories=dynamo
// +kubebuilder:printcolumn:name="Rank",type=integer,JSONPath=`.status.rank`
// +kubebuilder:printcolumn:name="Backend",type=string,JSONPath=`.spec.backend`
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.mode`
// +kubebuilder:printcolumn:name="GPUs",type=integer,JSONPath=`.spec.gpus`
// +kubebuilder:printcolumn:name="Tok/s/GPU",type=number,JSONPath=`.status.metrics.throughputPerGpu`
// +kubebuilder:printcolumn:name="Provisional",type=boolean,JSONPath=`.status.provisional`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.spec) || self.spec == oldSelf.spec",message="spec is immutable"
type DynamoGraphDeploymentCandidate struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the deployable candidate. Immutable.
	// +required
	Spec DynamoGraphDeploymentCandidateSpec `json:"spec,omitzero"`

	// status is the evaluation of the candidate.
	// +optional
	Status DynamoGraphDeploymentCandidateStatus `json:"status,omitempty"`
}

// DynamoGraphDeploymentCandidateList is a list of DynamoGraphDeploymentCandidate.
// +kubebuilder:object:root=true
type DynamoGraphDeploymentCandidateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DynamoGraphDeploymentCandidate `json:"items"`
}
