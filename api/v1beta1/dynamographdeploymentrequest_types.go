package v1beta1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// BackendType is the inference backend a v1beta1 request profiles and deploys.
// +kubebuilder:validation:Enum=auto;sglang;trtllm;vllm
type BackendType string

// Backends of the v1beta1 API.
const (
	BackendAuto   BackendType = "auto"
	BackendSGLang BackendType = "sglang"
	BackendTRTLLM BackendType = "trtllm"
	BackendVLLM   BackendType = "vllm"
)

// SearchStrategy is how deep the Dynamo profiler searches.
// +kubebuilder:validation:Enum=rapid;thorough
type SearchStrategy string

// Search strategies of the v1beta1 API.
const (
	SearchStrategyRapid    SearchStrategy = "rapid"
	SearchStrategyThorough SearchStrategy = "thorough"
)

// GPUSKU is a GPU type the Dynamo profiler knows.
// +kubebuilder:validation:Enum=vr_nvl72;gb200;gb200_sxm;gb10;b300_sxm;b200_sxm;h200_sxm;h100_sxm;h100_pcie;a100_sxm;a100_pcie;a30;l40s;l40;l4;v100_sxm;v100_pcie;t4;mi200;mi300
type GPUSKU string

// OptimizationType is what SLA-based profiling optimizes, as sla.optimizationType spells it.
// +kubebuilder:validation:Enum=latency;throughput
type OptimizationType string

// Optimization types of the v1beta1 API.
const (
	OptimizationLatency    OptimizationType = "latency"
	OptimizationThroughput OptimizationType = "throughput"
)

// LegacyOptimizationType is what SLA-based profiling optimizes, as sla.optimization_type of the
// Dynamo platform's CRD at ai-dynamo/dynamo fbfa59ff spells it (with hybrid, which
// optimizationType does not have).
// +kubebuilder:validation:Enum=hybrid;latency;throughput
type LegacyOptimizationType string

// Optimization types of sla.optimization_type.
const (
	LegacyOptimizationHybrid     LegacyOptimizationType = "hybrid"
	LegacyOptimizationLatency    LegacyOptimizationType = "latency"
	LegacyOptimizationThroughput LegacyOptimizationType = "throughput"
)

// Phase is the lifecycle phase the Dynamo operator reports for a v1beta1 request.
// +kubebuilder:validation:Enum=Pending;Profiling;Ready;Deploying;Deployed;Failed
type Phase string

// Phases of the v1beta1 API.
const (
	PhasePending   Phase = "Pending"
	PhaseProfiling Phase = "Profiling"
	PhaseReady     Phase = "Ready"
	PhaseDeploying Phase = "Deploying"
	PhaseDeployed  Phase = "Deployed"
	PhaseFailed    Phase = "Failed"
)

// ProfilingPhase is the step of the Dynamo profiling pipeline while phase is Profiling.
// +kubebuilder:validation:Enum=Initializing;SweepingPrefill;SweepingDecode;SelectingConfig;BuildingCurves;GeneratingDGD;Done
type ProfilingPhase string

// Optional booleans are pointers (unlike upstream's Go types; the schema is the same) so that an
// explicit false survives the trip through the spec.v1beta1 envelope of v1beta2 verbatim.
//
// Two shapes of this schema are in the field, and both are accepted and kept here
// (docs/operate/coexistence.md): the Dynamo platform's CRD at ai-dynamo/dynamo fbfa59ff
// (test/crds/upstream/dynamo) with sla.optimization_type, modelCache.pvcPath and boolean
// features, and later releases with sla.optimizationType, modelCache.pvcModelPath/pvcMountPath,
// hardware and objects under features. A field of one shape is never mapped onto the other's:
// each is its own field, so that a stored request reads back exactly as the Dynamo operator
// wrote it. For the same reason the schema declares no defaults (fbfa59ff defaults none of the
// nested fields later releases default): defaulting is the Dynamo operator's.

// DynamoGraphDeploymentRequestSpec is the v1beta1 request: a model, optional hardware, workload
// and SLA targets for the Dynamo profiler. Exactly one of the native fields (model and the
// rest) and the v1beta2 envelope is set.
//
// +kubebuilder:validation:MinProperties=1
// +kubebuilder:validation:XValidation:rule="has(self.v1beta2) != has(self.model)",message="exactly one of model (a native v1beta1 request) or v1beta2 (a native v1beta2 request) must be set"
// +kubebuilder:validation:XValidation:rule="!has(self.v1beta2) || !(has(self.backend) || has(self.image) || has(self.runtimeVersionOverride) || has(self.modelCache) || has(self.hardware) || has(self.workload) || has(self.sla) || has(self.overrides) || has(self.features) || has(self.searchStrategy) || has(self.autoApply))",message="v1beta2 is mutually exclusive with the native v1beta1 fields"
type DynamoGraphDeploymentRequestSpec struct {
	// model is the model to deploy: a Hugging Face id such as Qwen/Qwen3-0.6B or a private
	// model name. Required for a native v1beta1 request; unset when v1beta2 is set.
	// +optional
	// +kubebuilder:validation:MinLength=1
	Model string `json:"model,omitempty"`

	// backend is the inference backend to profile and deploy: auto, sglang, trtllm or vllm.
	// The Dynamo operator defaults it to auto on create.
	// +optional
	Backend BackendType `json:"backend,omitempty"`

	// image is the profiler (Planner) image of the profiling Job. The Dynamo operator defaults
	// it from its own version on create.
	// +optional
	Image string `json:"image,omitempty"`

	// runtimeVersionOverride is the Dynamo runtime version (major.minor.patch) of generated
	// deployment components that set none, for images whose tag is not that version.
	// +optional
	// +kubebuilder:validation:Pattern=`^(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})$`
	RuntimeVersionOverride string `json:"runtimeVersionOverride,omitempty"`

	// modelCache points at a PersistentVolumeClaim holding pre-downloaded model weights.
	// +optional
	ModelCache *ModelCacheSpec `json:"modelCache,omitempty"`

	// hardware describes the GPUs to profile on; fields left out are discovered from the
	// cluster's GPU nodes by the Dynamo operator.
	// +optional
	Hardware *HardwareSpec `json:"hardware,omitempty"`

	// workload describes the expected traffic.
	// +optional
	Workload *WorkloadSpec `json:"workload,omitempty"`

	// sla holds the latency targets that drive profiling.
	// +optional
	SLA *SLASpec `json:"sla,omitempty"`

	// overrides customize the profiling Job and the generated DynamoGraphDeployment.
	// +optional
	Overrides *OverridesSpec `json:"overrides,omitempty"`

	// features switch optional Dynamo platform features on in the generated deployment.
	// +optional
	Features *FeaturesSpec `json:"features,omitempty"`

	// searchStrategy is the profiling depth: rapid (a fast sweep) or thorough. The Dynamo
	// operator defaults it to rapid on create.
	// +optional
	SearchStrategy SearchStrategy `json:"searchStrategy,omitempty"`

	// autoApply creates the DynamoGraphDeployment when profiling completes; when false the
	// generated spec is only recorded in the status. The Dynamo operator defaults it to true on
	// create.
	// +optional
	AutoApply *bool `json:"autoApply,omitempty"`

	// v1beta2 is the conversion envelope: the complete spec of a request created through
	// nvidia.com/v1beta2, kept verbatim while the request is read or stored as v1beta1. It is
	// mutually exclusive with every native field. Write it only by reading it back unchanged.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	V1Beta2 *apiextensionsv1.JSON `json:"v1beta2,omitempty"`
}

// ModelCacheSpec references a PersistentVolumeClaim with pre-downloaded model weights.
type ModelCacheSpec struct {
	// pvcName is the PersistentVolumeClaim in the request's namespace.
	// +optional
	PVCName string `json:"pvcName,omitempty"`

	// pvcPath is the subpath within the claim where the model is stored, in the shape of the
	// Dynamo platform's CRD at ai-dynamo/dynamo fbfa59ff. Later releases write pvcModelPath
	// instead; the two are kept apart, neither is derived from the other.
	// +optional
	PVCPath string `json:"pvcPath,omitempty"`

	// pvcModelPath is the model directory inside the claim, relative (models/Llama-3.1-405B)
	// or an absolute container path under pvcMountPath.
	// +optional
	PVCModelPath string `json:"pvcModelPath,omitempty"`

	// pvcMountPath is where the claim is mounted in the containers. The Dynamo operator uses
	// /opt/model-cache when it is unset (later releases' CRDs default it; this schema does not,
	// so that a request of the fbfa59ff shape reads back as stored).
	// +optional
	PVCMountPath string `json:"pvcMountPath,omitempty"`
}

// HardwareSpec describes the GPUs of a v1beta1 request. gpuSku selects nodes; the other fields
// override what discovery would find.
type HardwareSpec struct {
	// gpuSku selects the GPU type; when omitted the most common GPU of the cluster is used.
	// gb200_sxm is a deprecated spelling of gb200.
	// +optional
	GPUSKU GPUSKU `json:"gpuSku,omitempty"`

	// vramMb is the memory per GPU in MiB; discovered when omitted.
	// +optional
	VRAMMB *float64 `json:"vramMb,omitempty"`

	// totalGpus is the GPU budget for profiling and deployment; when omitted, the GPUs of the
	// discovered nodes, capped at 32.
	// +optional
	TotalGPUs *int32 `json:"totalGpus,omitempty"`

	// numGpusPerNode is the number of GPUs per node; discovered when omitted.
	// +optional
	NumGPUsPerNode *int32 `json:"numGpusPerNode,omitempty"`

	// interconnect describes the GPU-to-GPU link within a node, for example pcie or nvlink.
	// It is a description used for planning; it configures nothing.
	// +optional
	Interconnect string `json:"interconnect,omitempty"`

	// rdma tells whether RDMA networking is available for Dynamo data movement. It is a
	// description used for planning; it configures nothing.
	// +optional
	RDMA *bool `json:"rdma,omitempty"`
}

// WorkloadSpec is the traffic of a v1beta1 request.
type WorkloadSpec struct {
	// isl is the input sequence length in tokens. Later releases' CRDs default it to 4000; this
	// schema does not (the fbfa59ff shape has no default), the Dynamo profiler assumes its own.
	// +optional
	ISL *int32 `json:"isl,omitempty"`

	// osl is the output sequence length in tokens. Later releases' CRDs default it to 1000;
	// this schema does not (the fbfa59ff shape has no default), the Dynamo profiler assumes its
	// own.
	// +optional
	OSL *int32 `json:"osl,omitempty"`

	// concurrency is the target number of requests in flight; mutually exclusive with
	// requestRate.
	// +optional
	Concurrency *float64 `json:"concurrency,omitempty"`

	// requestRate is the target request rate in requests per second; mutually exclusive with
	// concurrency.
	// +optional
	RequestRate *float64 `json:"requestRate,omitempty"`
}

// SLASpec holds the latency targets of a v1beta1 request, in milliseconds.
type SLASpec struct {
	// ttft is the time-to-first-token target in milliseconds (the profiler assumes 2000 when
	// unset).
	// +optional
	TTFT *float64 `json:"ttft,omitempty"`

	// itl is the inter-token latency target in milliseconds (the profiler assumes 30 when
	// unset).
	// +optional
	ITL *float64 `json:"itl,omitempty"`

	// e2eLatency is the end-to-end request latency target in milliseconds, an alternative to
	// ttft and itl.
	// +optional
	E2ELatency *float64 `json:"e2eLatency,omitempty"`

	// optimizationType is what profiling optimizes: latency or throughput.
	// +optional
	OptimizationType *OptimizationType `json:"optimizationType,omitempty"`

	// optimization_type is what profiling optimizes in the shape of the Dynamo platform's CRD at
	// ai-dynamo/dynamo fbfa59ff: hybrid, latency or throughput. Later releases write
	// optimizationType instead; the two are kept apart, neither is derived from the other.
	// +optional
	LegacyOptimizationType *LegacyOptimizationType `json:"optimization_type,omitempty"`
}

// OverridesSpec customizes the profiling Job and the generated DynamoGraphDeployment.
type OverridesSpec struct {
	// profilingJob is a batch/v1 JobSpec merged into the profiling Job the Dynamo operator
	// generates. It is kept as an opaque object here: the Dynamo operator validates it.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:Schemaless
	ProfilingJob *runtime.RawExtension `json:"profilingJob,omitempty"`

	// trustRemoteCode lets generated vLLM and SGLang workers run custom code from the model
	// repository (--trust-remote-code). Unset means false (later releases' CRDs default it to
	// false; this schema does not, so that a request of the fbfa59ff shape reads back as
	// stored).
	// +optional
	TrustRemoteCode *bool `json:"trustRemoteCode,omitempty"`

	// dgd is a partial DynamoGraphDeployment (apiVersion nvidia.com/v1alpha1 or v1beta1, kind
	// DynamoGraphDeployment) merged into the generated deployment.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:EmbeddedResource
	DGD *runtime.RawExtension `json:"dgd,omitempty"`
}

// FeaturesSpec switches optional Dynamo platform features on in the generated deployment. Each
// feature is a boolean (the fbfa59ff shape) or an object (later releases), kept as stored
// (Feature).
//
// The schema of each feature is untyped with x-kubernetes-preserve-unknown-fields: a structural
// schema gives every node one type and forbids type inside anyOf/oneOf (the only exception is
// x-kubernetes-int-or-string, for integers and strings), and kube-apiserver cannot compile a CEL
// rule on an untyped node nor refer to one from its parent ("unable to convert structural schema
// to CEL declarations", "undefined field"). So the API server accepts any JSON value here, and
// Feature decodes any JSON value, so that no stored request can become undecodable.
type FeaturesSpec struct {
	// planner enables the Planner: true or false in the fbfa59ff shape; in later releases the
	// raw Planner configuration, whose presence enables it.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	Planner *Feature `json:"planner,omitempty"`

	// kvRouter enables KV-cache-aware routing: true or false in the fbfa59ff shape,
	// {enabled: true} in later releases.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	KVRouter *Feature `json:"kvRouter,omitempty"`

	// mocker deploys simulated workers instead of real inference workers: true or false in
	// the fbfa59ff shape, {enabled: true} in later releases.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	Mocker *Feature `json:"mocker,omitempty"`
}

// DynamoGraphDeploymentRequestStatus is the state the Dynamo operator reports for a v1beta1
// request, or, under v1beta2, the status of a native v1beta2 request.
//
// +kubebuilder:validation:XValidation:rule="!has(self.v1beta2) || !(has(self.phase) || has(self.profilingPhase) || has(self.dgdName) || has(self.profilingJobName) || has(self.conditions) || has(self.profilingResults) || has(self.deploymentInfo) || has(self.observedGeneration))",message="v1beta2 is mutually exclusive with the native v1beta1 status fields"
type DynamoGraphDeploymentRequestStatus struct {
	// conditions are Succeeded (the aggregate), Validation, Profiling, SpecGenerated and
	// DeploymentReady.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// phase is the lifecycle phase: Pending, Profiling, Ready, Deploying, Deployed or Failed.
	// +optional
	Phase Phase `json:"phase,omitempty"`

	// profilingPhase is the profiling step while phase is Profiling.
	// +optional
	ProfilingPhase ProfilingPhase `json:"profilingPhase,omitempty"`

	// dgdName is the name of the generated or created DynamoGraphDeployment.
	// +optional
	DGDName string `json:"dgdName,omitempty"`

	// profilingJobName is the name of the profiling Job.
	// +optional
	ProfilingJobName string `json:"profilingJobName,omitempty"`

	// profilingResults holds the configuration profiling selected.
	// +optional
	ProfilingResults *ProfilingResults `json:"profilingResults,omitempty"`

	// deploymentInfo tracks the deployed DynamoGraphDeployment.
	// +optional
	DeploymentInfo *DeploymentInfo `json:"deploymentInfo,omitempty"`

	// observedGeneration is the last generation the Dynamo operator observed.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// v1beta2 is the conversion envelope: the complete status of a request created through
	// nvidia.com/v1beta2, kept verbatim while the request is read or stored as v1beta1.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	V1Beta2 *apiextensionsv1.JSON `json:"v1beta2,omitempty"`
}

// ProfilingResults is the output of profiling.
type ProfilingResults struct {
	// pareto is kept for status objects written by older profilers; it is no longer filled.
	// +optional
	// +listType=atomic
	Pareto []ParetoConfig `json:"pareto,omitempty"`

	// selectedConfig is the deployment configuration profiling selected for the SLA targets.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:Schemaless
	SelectedConfig *runtime.RawExtension `json:"selectedConfig,omitempty"`
}

// ParetoConfig is one Pareto point of an older profiler.
type ParetoConfig struct {
	// config is the deployment configuration of the point.
	// +required
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:Schemaless
	Config runtime.RawExtension `json:"config"`
}

// DeploymentInfo tracks a deployed DynamoGraphDeployment.
type DeploymentInfo struct {
	// replicas is the desired number of replicas.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// availableReplicas is the number of available replicas.
	// +optional
	AvailableReplicas *int32 `json:"availableReplicas,omitempty"`
}

// DynamoGraphDeploymentRequest is the Dynamo platform's v1beta1 deployment request: it asks the
// Dynamo operator to profile a model and deploy the selected configuration. It is the storage
// version and the conversion hub of the DGDR CRD; dgdr-operator never reconciles a v1beta1-native
// request. A request created through v1beta2 appears here with spec.v1beta2 and status.v1beta2.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:resource:shortName=dgdr,categories=dynamo
// +kubebuilder:printcolumn:name="Model",type=string,JSONPath=`.spec.model`
// +kubebuilder:printcolumn:name="Backend",type=string,JSONPath=`.spec.backend`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Profiling",type=string,JSONPath=`.status.profilingPhase`
// +kubebuilder:printcolumn:name="DGD",type=string,JSONPath=`.status.dgdName`
// +kubebuilder:printcolumn:name="V1beta2 Model",type=string,JSONPath=`.spec.v1beta2.model.name`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DynamoGraphDeploymentRequest struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the request, native or a v1beta2 envelope.
	// +required
	Spec DynamoGraphDeploymentRequestSpec `json:"spec,omitzero"`

	// status is the observed state, native or a v1beta2 envelope.
	// +optional
	Status DynamoGraphDeploymentRequestStatus `json:"status,omitzero"`
}

// DynamoGraphDeploymentRequestList is a list of DynamoGraphDeploymentRequest.
// +kubebuilder:object:root=true
type DynamoGraphDeploymentRequestList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DynamoGraphDeploymentRequest `json:"items"`
}

// Hub marks v1beta1 as the conversion hub of DynamoGraphDeploymentRequest.
func (*DynamoGraphDeploymentRequest) Hub() {}
