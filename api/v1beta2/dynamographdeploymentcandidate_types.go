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

// ParetoRole is why a candidate of a Pareto front was published (docs/design/results.md, "A
// spread Pareto set").
// +kubebuilder:validation:Enum=max-throughput-per-gpu;knee;max-throughput-per-user;spread
type ParetoRole string

// Pareto roles.
const (
	// ParetoRoleMaxThroughputPerGPU is the end of the front with the most throughput per GPU.
	ParetoRoleMaxThroughputPerGPU ParetoRole = "max-throughput-per-gpu"
	// ParetoRoleKnee is the point farthest from the line between the two ends, on normalized axes.
	ParetoRoleKnee ParetoRole = "knee"
	// ParetoRoleMaxThroughputPerUser is the end of the front with the most throughput per user.
	ParetoRoleMaxThroughputPerUser ParetoRole = "max-throughput-per-user"
	// ParetoRoleSpread is a point chosen to close the widest gap left between the others.
	ParetoRoleSpread ParetoRole = "spread"
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
	// deployed as-is, for example with `dgdrctl promote`. Empty ({}) when the candidate is not
	// deployable (condition Deployable False, reason NotRenderable): the renderer cannot lower
	// a field of parameters, and deploying the rest would deploy something else than what was
	// predicted.
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
	// conditions of the candidate: Evaluated, Deployable and VersionSkew.
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

	// calibration is the prediction corrected by the calibration profile, per metric, next to
	// the uncalibrated one of metrics (which ranking and the views use). Absent when the Run
	// recorded no correction for the candidate's backend, mode and parallelism.
	// +optional
	Calibration *CandidateCalibration `json:"calibration,omitempty"`

	// display holds metrics rounded for `kubectl get` columns, written by the publisher with
	// metrics. Display only: metrics is the authoritative value.
	// +optional
	Display *CandidateDisplay `json:"display,omitempty"`

	// provisional is true while the candidate comes from a search that had not ended when it was
	// published: the reporter publishes the best candidates settled so far while the search runs
	// (docs/design/results.md). Its rank may still change, and it is deleted if it drops out of the top
	// maxCandidates. When the search ends the final ranking replaces the provisional one and this
	// field is cleared; a Run that was cancelled or whose deadline passed keeps its provisional
	// candidates with provisional true.
	// +optional
	Provisional bool `json:"provisional,omitempty"`

	// paretoRole says why this candidate was published when the Run's target is pareto:
	// max-throughput-per-gpu and max-throughput-per-user are the two ends of the front, knee the
	// point farthest from the line between them (on axes normalized to the front's range), spread
	// a point that closes the widest gap left between the others. Ranks then follow the front,
	// from the most throughput per GPU to the most throughput per user. Empty for other targets.
	// +optional
	ParetoRole ParetoRole `json:"paretoRole,omitempty"`

	// engineVersions are the engine version of the performance data the prediction used and
	// the engine version of the runtime image spec.graphDeployment runs (the VersionSkew
	// condition compares them).
	// +optional
	EngineVersions *CandidateEngineVersions `json:"engineVersions,omitempty"`

	// fitsCluster says whether the cluster's GPU Nodes of the candidate's SKU can hold it. The
	// operator writes it from its Node informer when the candidate is published and whenever
	// those Nodes change; absent until then (docs/design/results.md).
	// +optional
	FitsCluster *ClusterFit `json:"fitsCluster,omitempty"`
}

// CandidateEngineVersions are the engine versions behind a Candidate, of its backend (vLLM,
// SGLang or TensorRT-LLM).
type CandidateEngineVersions struct {
	// performanceData is the engine version of the performance data the prediction used:
	// engine.backend_version of spec.parameters, else the version the search recorded for the
	// candidate. Empty when neither says.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	PerformanceData string `json:"performanceData,omitempty"`

	// runtime is the engine version of the runtime image spec.graphDeployment runs: the
	// operator configuration's runtimeImages.<backend>.engineVersion. Empty when the
	// configuration does not say.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Runtime string `json:"runtime,omitempty"`
}

// CandidateDisplay are a Candidate's metrics rounded for printer columns, which cannot format
// numbers. Display only: status.metrics is authoritative.
type CandidateDisplay struct {
	// throughputPerGpu is metrics.throughputPerGpu rounded to whole tokens per second.
	// +optional
	ThroughputPerGPU *int64 `json:"throughputPerGpu,omitempty"`
	// throughputPerUser is metrics.throughputPerUser rounded to whole tokens per second.
	// +optional
	ThroughputPerUser *int64 `json:"throughputPerUser,omitempty"`
	// ttftMs is metrics.ttftMs with one fraction digit.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	TTFTMs string `json:"ttftMs,omitempty"`
	// itlMs is metrics.itlMs with one fraction digit.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	ITLMs string `json:"itlMs,omitempty"`
	// costPerHour is metrics.cost.perHour followed by its currency ("28.00 USD").
	// +optional
	// +kubebuilder:validation:MaxLength=40
	CostPerHour string `json:"costPerHour,omitempty"`
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
// +kubebuilder:printcolumn:name="Tok/s/GPU",type=integer,JSONPath=`.status.display.throughputPerGpu`
// +kubebuilder:printcolumn:name="Tok/s/User",type=integer,JSONPath=`.status.display.throughputPerUser`
// +kubebuilder:printcolumn:name="TTFT ms",type=string,JSONPath=`.status.display.ttftMs`
// +kubebuilder:printcolumn:name="ITL ms",type=string,JSONPath=`.status.display.itlMs`,priority=1
// +kubebuilder:printcolumn:name="Cost/h",type=string,JSONPath=`.status.display.costPerHour`
// +kubebuilder:printcolumn:name="Provisional",type=boolean,JSONPath=`.status.provisional`,priority=1
// +kubebuilder:printcolumn:name="Deployable",type=string,JSONPath=`.status.conditions[?(@.type=="Deployable")].status`,priority=1
// +kubebuilder:printcolumn:name="Version Skew",type=string,JSONPath=`.status.conditions[?(@.type=="VersionSkew")].status`,priority=1
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

// CandidateCalibration is a candidate's calibrated prediction.
type CandidateCalibration struct {
	// metrics are the calibrated metrics, one per corrected metric.
	// +required
	// +listType=map
	// +listMapKey=metric
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=3
	Metrics []CalibratedMetric `json:"metrics,omitempty"`
}

// CalibratedMetric is one predicted metric with its correction applied.
type CalibratedMetric struct {
	// metric is the corrected metric.
	// +required
	Metric CalibrationMetric `json:"metric,omitempty"`
	// predicted is the uncalibrated prediction, as in status.metrics.
	// +required
	// +kubebuilder:validation:Minimum=0.000001
	// +kubebuilder:validation:Maximum=1000000000
	Predicted *float64 `json:"predicted,omitempty"`
	// calibrated is predicted times ratio.
	// +required
	// +kubebuilder:validation:Minimum=0.000001
	// +kubebuilder:validation:Maximum=1000000000
	Calibrated *float64 `json:"calibrated,omitempty"`
	// ratio is the median of observed / predicted over the profile's observations.
	// +required
	// +kubebuilder:validation:Minimum=0.000001
	// +kubebuilder:validation:Maximum=1000000
	Ratio *float64 `json:"ratio,omitempty"`
	// spread is the median absolute deviation of those ratios from ratio.
	// +required
	// +kubebuilder:validation:Minimum=0
	Spread *float64 `json:"spread,omitempty"`
	// observations is the number of observations behind the correction.
	// +required
	// +kubebuilder:validation:Minimum=1
	Observations int32 `json:"observations,omitempty"`
}
