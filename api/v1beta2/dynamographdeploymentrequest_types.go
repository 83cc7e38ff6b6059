package v1beta2

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Backend is an inference engine a candidate deployment may use.
// +kubebuilder:validation:Enum=vllm;sglang;trtllm
type Backend string

// Backends understood by AISimulate.
const (
	BackendVLLM   Backend = "vllm"
	BackendSGLang Backend = "sglang"
	BackendTRTLLM Backend = "trtllm"
)

// ObjectiveTarget is what the search optimizes.
// +kubebuilder:validation:Enum=throughput;throughputPerGpu;throughputPerUser;goodput;goodputPerGpu;ttft;e2eLatency;pareto
type ObjectiveTarget string

// Objective targets; each lowers to the snake_case AISimulate optimization.target.
const (
	TargetThroughput        ObjectiveTarget = "throughput"
	TargetThroughputPerGPU  ObjectiveTarget = "throughputPerGpu"
	TargetThroughputPerUser ObjectiveTarget = "throughputPerUser"
	TargetGoodput           ObjectiveTarget = "goodput"
	TargetGoodputPerGPU     ObjectiveTarget = "goodputPerGpu"
	TargetTTFT              ObjectiveTarget = "ttft"
	TargetE2ELatency        ObjectiveTarget = "e2eLatency"
	TargetPareto            ObjectiveTarget = "pareto"
)

// DynamoGraphDeploymentRequestSpec states the intent of a deployment search: a model, GPUs, a
// traffic shape, SLAs and an objective. It deliberately has no stop policy and no image or
// AISimulate version: the operator configuration owns the search image.
//
// A request created through nvidia.com/v1beta1 (owned by the Dynamo operator) appears here with
// only the v1beta1 envelope set; dgdr-operator never searches for it.
//
// +kubebuilder:validation:MinProperties=1
// +kubebuilder:validation:XValidation:rule="has(self.model) || has(self.v1beta1)",message="model is required",fieldPath=".model",reason="FieldValueRequired"
// +kubebuilder:validation:XValidation:rule="!has(self.v1beta1) || !(has(self.model) || has(self.backends) || has(self.hardware) || has(self.workload) || has(self.sla) || has(self.objective) || has(self.recommendation) || has(self.aisimulate) || has(self.deployment) || has(self.research))",message="v1beta1 is mutually exclusive with the native v1beta2 fields",fieldPath=".v1beta1",reason="FieldValueForbidden"
type DynamoGraphDeploymentRequestSpec struct {
	// model identifies the model to serve. Required unless v1beta1 is set.
	// +optional
	Model ModelSpec `json:"model,omitzero"`

	// backends restricts the inference engines the search may use. One entry pins the backend;
	// several entries let the search choose among them. When omitted, AISimulate's default
	// domain applies (vllm and sglang).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=3
	Backends []Backend `json:"backends,omitempty"`

	// hardware describes the GPUs candidates run on. Admission materializes hardware.gpu.sku.
	// +optional
	Hardware *HardwareSpec `json:"hardware,omitempty"`

	// workload describes the traffic the deployment must serve. When omitted (or without static),
	// admission materializes static: {inputTokens: 1024, outputTokens: 128, load: {concurrency: 10}}.
	// +optional
	Workload *WorkloadSpec `json:"workload,omitempty"`

	// sla bounds the mean latencies a candidate may have. Either e2eMs, or ttftMs and/or itlMs.
	// Any bound makes the search strict (optimization.strict_sla: true) unless overridden.
	// +optional
	SLA *SLASpec `json:"sla,omitempty"`

	// objective selects what the search optimizes.
	// +optional
	Objective *ObjectiveSpec `json:"objective,omitempty"`

	// recommendation controls how results are published.
	// +optional
	Recommendation *RecommendationSpec `json:"recommendation,omitempty"`

	// aisimulate holds the escape hatch into the AISimulate recommendation input.
	// +optional
	AISimulate *AISimulateSpec `json:"aisimulate,omitempty"`

	// deployment shapes the DynamoGraphDeployment rendered for every candidate: the Frontend's
	// router and pod template overrides per component role. It does not change the search.
	// Admission materializes deployment.router.mode.
	// +optional
	Deployment *DeploymentSpec `json:"deployment,omitempty"`

	// research searches again, on a schedule, over the traffic the deployment recorded
	// (spec.deployment.capture), and lets autoApply replace the deployment only when the new best
	// candidate beats the deployed one in the same simulation by spec.deployment.replaceMargin
	// (docs/design/keep-optimal.md). Admission requires deployment.autoApply and
	// deployment.capture.enabled. Off when omitted.
	// +optional
	Research *ResearchSpec `json:"research,omitempty"`

	// v1beta1 is the conversion envelope: the complete spec of a request created through
	// nvidia.com/v1beta1 (a Dynamo operator request), kept verbatim while the request is read
	// as v1beta2. It is mutually exclusive with every native field; dgdr-operator neither
	// defaults, validates nor reconciles a request that has it. Write it only by reading it
	// back unchanged.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	V1Beta1 *apiextensionsv1.JSON `json:"v1beta1,omitempty"`
}

// IsV1Beta1Native reports whether the request was created through nvidia.com/v1beta1: it is
// owned by the Dynamo operator and only readable here through spec.v1beta1.
func (r *DynamoGraphDeploymentRequest) IsV1Beta1Native() bool {
	return r.Spec.V1Beta1 != nil
}

// RemoteCodePolicy says whether the rendered engines may run code shipped with the model
// (Hugging Face trust_remote_code).
// +kubebuilder:validation:Enum=Never;TrustCacheAndRevision;AlwaysTrust
type RemoteCodePolicy string

// Remote code policies.
const (
	// RemoteCodeNever never passes the engine's trust flag.
	RemoteCodeNever RemoteCodePolicy = "Never"
	// RemoteCodeTrustCacheAndRevision passes the trust flag only for a model read from
	// model.cache at the pinned model.revision.
	RemoteCodeTrustCacheAndRevision RemoteCodePolicy = "TrustCacheAndRevision"
	// RemoteCodeAlwaysTrust always passes the trust flag.
	RemoteCodeAlwaysTrust RemoteCodePolicy = "AlwaysTrust"
)

// DefaultTokenSecretKey is the key of model.tokenSecretRef when none is given.
const DefaultTokenSecretKey = "HF_TOKEN"

// ModelSpec identifies a model.
// +kubebuilder:validation:XValidation:rule="!has(self.remoteCode) || self.remoteCode != 'TrustCacheAndRevision' || (has(self.revision) && has(self.cache))",message="remoteCode TrustCacheAndRevision requires model.revision and model.cache: remote code is trusted only from a pinned revision in the model cache",fieldPath=".remoteCode",reason="FieldValueInvalid"
type ModelSpec struct {
	// name is the Hugging Face model id, for example meta-llama/Llama-3.1-8B-Instruct:
	// [org/]name of letters, digits, "_", "-" and ".", each part starting and ending with a
	// letter, digit or "_", without "--" or "..", not ending in ".git", the name at most 96
	// characters. An absolute local path (a model directory in the images, e.g. /models/llama)
	// is admitted only when the operator configuration sets models.allowLocalPaths. Lowers to
	// engine.model (which inputOverrides may not set).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Name string `json:"name,omitempty"`

	// revision pins the Hugging Face revision (branch, tag or commit) used when rendering
	// deployments: letters, digits and "_.+/-", starting with a letter, digit or "_", without
	// "..", "//", a trailing "/" or "." or a ".lock" suffix. It does not change the search.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Revision string `json:"revision,omitempty"`

	// remoteCode says whether the rendered engines may run code shipped with the model
	// (the engine's trust-remote-code flag): Never (the default), TrustCacheAndRevision (only
	// with revision and cache set: the code is the pinned revision read from the cache) or
	// AlwaysTrust. It does not change the search.
	// +optional
	RemoteCode RemoteCodePolicy `json:"remoteCode,omitempty"`

	// cache is a pre-populated model cache. It is mounted read-only into the search container
	// and every rendered worker, and the engines load the model from it (HF_HOME points at it,
	// HF_HUB_OFFLINE=1).
	// +optional
	Cache *ModelCacheSpec `json:"cache,omitempty"`

	// tokenSecretRef names the Secret key holding a Hugging Face token. The search container and
	// every rendered worker get it as HF_TOKEN through a secretKeyRef; the value is never copied.
	// The requesting user must be allowed to get the Secret (checked at admission).
	// +optional
	TokenSecretRef *TokenSecretReference `json:"tokenSecretRef,omitempty"`
}

// ModelCacheSpec is where a model cache lives. pvc is the only source today.
// +kubebuilder:validation:MinProperties=1
type ModelCacheSpec struct {
	// pvc is a PersistentVolumeClaim in the request's namespace holding a Hugging Face cache
	// (the HF_HOME layout: hub/models--ORG--NAME/...).
	// +optional
	PVC *ModelCachePVC `json:"pvc,omitempty"`
}

// ModelCachePVC is a model cache on a PersistentVolumeClaim.
type ModelCachePVC struct {
	// claimName is the name of the PersistentVolumeClaim, in the request's namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ClaimName string `json:"claimName,omitempty"`

	// path is the directory inside the claim that holds the cache (mounted as a subPath). It
	// must be relative and must not contain "..". When omitted, the root of the claim.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Path string `json:"path,omitempty"`
}

// TokenSecretReference selects a key of a Secret in the request's namespace.
type TokenSecretReference struct {
	// name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`

	// key in the Secret whose value is the token. Admission defaults it to HF_TOKEN.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key,omitempty"`
}

// HardwareSpec describes the hardware candidates run on.
type HardwareSpec struct {
	// gpu describes the GPU type and budget.
	// +optional
	GPU *GPUSpec `json:"gpu,omitempty"`
}

// GPUSpec describes the GPU type and how many one candidate may use.
type GPUSpec struct {
	// sku is the AISimulate system id of the GPU, for example h200_sxm. Lowers to
	// engine.hardware. When omitted, admission writes the one GPU product the cluster's Nodes
	// carry, or the operator configuration's explicit default, into the object; without either
	// (no GPU Nodes, or several products) the request is refused here.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9][a-z0-9_]*$`
	SKU string `json:"sku,omitempty"`

	// budget is the maximum number of GPUs one candidate deployment may use. Lowers to
	// optimization.constraints.max_candidate_gpus. When omitted, AISimulate's default (32) applies.
	// Minimum 1, maximum 4096.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4096
	Budget *int32 `json:"budget,omitempty"`

	// perNode is the number of GPUs one node has. Rendered deployments never ask for more GPUs
	// per pod: a wider engine becomes multinode with perNode GPUs per pod. When omitted,
	// admission writes the SKU's node size from the catalogue (8 for HGX A100/H100/H200/B200,
	// 4 for GB200/GB300). Minimum 1, maximum 64.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	PerNode *int32 `json:"perNode,omitempty"`
}

// Trace formats.
const (
	// TraceFormatMooncake is JSONL, one request per line: timestamp (ms), input_length,
	// output_length and hash_ids (the prompt's prefix blocks).
	TraceFormatMooncake TraceFormat = "mooncake"
	// TraceFormatDynamo is Dynamo's request trace (dynamo.request.trace.v1), as a Dynamo
	// frontend writes it with DYN_REQUEST_TRACE: one record per line, of which the request_end
	// records are the requests (arrival, output_tokens, and the prompt's length and chained
	// block hashes). It holds no prompt or response text. A file on a claim whose path ends in
	// .gz is read through gzip.
	TraceFormatDynamo TraceFormat = "dynamo"
)

// SLASpec bounds mean latencies: e2eMs, or ttftMs and/or itlMs. Values are milliseconds, > 0.
// +kubebuilder:validation:MinProperties=1
// +kubebuilder:validation:XValidation:rule="!has(self.e2eMs) || (!has(self.ttftMs) && !has(self.itlMs))",message="e2eMs is mutually exclusive with ttftMs and itlMs"
type SLASpec struct {
	// ttftMs bounds the mean time to first token, in milliseconds. Lowers to
	// evaluation.sla.ttft_ms. Greater than 0, maximum 3600000.
	// +optional
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600000
	TTFTMs *float64 `json:"ttftMs,omitempty"`

	// itlMs bounds the mean inter-token latency, in milliseconds. Lowers to
	// evaluation.sla.itl_ms. Greater than 0, maximum 3600000.
	// +optional
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600000
	ITLMs *float64 `json:"itlMs,omitempty"`

	// e2eMs bounds the mean end-to-end request latency, in milliseconds. Lowers to
	// evaluation.sla.e2e_ms. Excludes ttftMs and itlMs. Greater than 0, maximum 3600000.
	// +optional
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600000
	E2EMs *float64 `json:"e2eMs,omitempty"`
}

// ObjectiveSpec selects what the search optimizes.
type ObjectiveSpec struct {
	// target is the optimization target. Lowers to optimization.target in snake_case. goodput
	// and goodputPerGpu need an SLA bound; pareto trades throughput per GPU against throughput
	// per user and publishes the Pareto front. When omitted, AISimulate's default (throughput) applies.
	// +optional
	Target ObjectiveTarget `json:"target,omitempty"`

	// maxCostPerHour bounds what a candidate may cost per hour, in the currency of the operator
	// configuration's pricing: a decimal string ("40", "40.50"). It lowers to the derived default
	// optimization.constraints.max_candidate_gpus = floor(maxCostPerHour / price per GPU-hour of
	// hardware.gpu.sku) (the smaller of that and hardware.gpu.budget), which inputOverrides may
	// replace. Refused when no price is configured for the SKU and when it buys no GPU.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=20
	// +kubebuilder:validation:Pattern=`^[0-9]{1,12}(\.[0-9]{1,6})?$`
	MaxCostPerHour string `json:"maxCostPerHour,omitempty"`
}

// RecommendationSpec controls how results are published.
type RecommendationSpec struct {
	// maxCandidates is the number of candidates published per Run, best first. It does not
	// limit the search itself. Defaults to 5; for objective.target pareto, to 10: the whole
	// front when it has at most 10 points, else a spread of 10 across it (both ends, the knee,
	// then the points that close the widest gaps). Minimum 1, maximum 20.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=20
	MaxCandidates *int32 `json:"maxCandidates,omitempty"`
}

// Router modes.
const (
	// RouterRoundRobin cycles through the workers (the Frontend's default).
	RouterRoundRobin RouterMode = "RoundRobin"
	// RouterRandom picks a worker at random.
	RouterRandom RouterMode = "Random"
	// RouterKV routes by KV-cache overlap; the workers publish KV events.
	RouterKV RouterMode = "KV"
)

// AISimulateSpec holds the escape hatch into the AISimulate recommendation input.
type AISimulateSpec struct {
	// inputOverrides is an RFC 7386 JSON Merge Patch applied last to the effective AISimulate
	// recommendation input, in AISimulate's own field names (snake_case). It wins over typed
	// fields and derived defaults; null deletes a key; objects merge; anything else replaces.
	// Derived defaults are not recalculated after it. Must be a JSON object of bounded size
	// (64 KiB) and depth (16).
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:Schemaless
	InputOverrides *runtime.RawExtension `json:"inputOverrides,omitempty"`
}

// RunReference names a DynamoGraphDeploymentRun in the same namespace.
type RunReference struct {
	// name of the Run.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`
}

// RunSummary mirrors the state of the most recent Run so that `kubectl get dgdr` shows it.
type RunSummary struct {
	// name of the Run.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`

	// phase of the Run (Pending, Running, Succeeded, Failed, Cancelled).
	// +optional
	Phase RunPhase `json:"phase,omitempty"`

	// reason of the Run's Completed condition, once terminal.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Reason string `json:"reason,omitempty"`

	// bestCandidate is the name of the best published candidate, if any.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	BestCandidate string `json:"bestCandidate,omitempty"`
}

// DynamoGraphDeploymentRequestStatus is the observed state of a request.
// +kubebuilder:validation:XValidation:rule="!has(self.v1beta1) || !(has(self.conditions) || has(self.observedGeneration) || has(self.activeRunRef) || has(self.recentRunRefs) || has(self.latestRun))",message="v1beta1 is mutually exclusive with the native v1beta2 status fields",fieldPath=".v1beta1",reason="FieldValueForbidden"
type DynamoGraphDeploymentRequestStatus struct {
	// conditions describe the reconciliation of the request. Accepted tells whether the
	// current generation was turned into a Run.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the last generation accepted into a Run.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// activeRunRef is the one non-terminal Run, if any.
	// +optional
	ActiveRunRef *RunReference `json:"activeRunRef,omitempty"`

	// recentRunRefs are terminal Runs, newest first, bounded by the operator's run retention.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	RecentRunRefs []RunReference `json:"recentRunRefs,omitempty"`

	// latestRun summarizes the newest Run for display.
	// +optional
	LatestRun *RunSummary `json:"latestRun,omitempty"`

	// deployment is what spec.deployment.autoApply last deployed; the Deployed condition says
	// whether it is ready.
	// +optional
	Deployment *DeploymentStatus `json:"deployment,omitempty"`

	// dgdName is the name of the DynamoGraphDeployment autoApply deployed (status.deployment.name),
	// where the Dynamo platform's v1beta1 request status names it, for tools built on that.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	DGDName string `json:"dgdName,omitempty"`

	// verification is the measurement of the deployed candidate (spec.deployment.verification);
	// the PredictionHeld condition says whether the prediction held.
	// +optional
	Verification *VerificationStatus `json:"verification,omitempty"`

	// research is the history of re-searches (spec.research), newest first; the
	// ImprovementAvailable condition gives the latest decision.
	// +optional
	Research *ResearchStatus `json:"research,omitempty"`

	// v1beta1 is the conversion envelope: the complete status the Dynamo operator wrote on a
	// request created through nvidia.com/v1beta1, kept verbatim while it is read as v1beta2.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	V1Beta1 *apiextensionsv1.JSON `json:"v1beta1,omitempty"`
}

// Re-search decisions.
const (
	// ResearchReplaced: the new best beat the deployed candidate; autoApply deploys it.
	ResearchReplaced ResearchDecision = "Replaced"
	// ResearchKept: the deployed candidate stays (BaselineStillBest).
	ResearchKept ResearchDecision = "Kept"
	// ResearchSkipped: the tick did not search (too little traffic, or another Run was active).
	ResearchSkipped ResearchDecision = "Skipped"
	// ResearchUndecided: the re-search ended without a comparison (it failed, or the baseline
	// could not be evaluated).
	ResearchUndecided ResearchDecision = "Undecided"
)

// DynamoGraphDeploymentRequest asks the operator to search for good Dynamo deployments of a
// model on given GPUs under a traffic shape and SLAs. Every accepted spec generation becomes one
// immutable DynamoGraphDeploymentRun.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=dgdr,categories=dynamo
// +kubebuilder:printcolumn:name="Model",type=string,JSONPath=`.spec.model.name`
// +kubebuilder:printcolumn:name="Active Run",type=string,JSONPath=`.status.activeRunRef.name`
// +kubebuilder:printcolumn:name="Latest",type=string,JSONPath=`.status.latestRun.phase`
// +kubebuilder:printcolumn:name="Best",type=string,JSONPath=`.status.latestRun.bestCandidate`
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.conditions[?(@.type=="Accepted")].status`,priority=1
// +kubebuilder:printcolumn:name="Deployed",type=string,JSONPath=`.status.conditions[?(@.type=="Deployed")].status`,priority=1
// +kubebuilder:printcolumn:name="DGD",type=string,JSONPath=`.status.dgdName`,priority=1
// +kubebuilder:printcolumn:name="V1beta1 Model",type=string,JSONPath=`.spec.v1beta1.model`
// +kubebuilder:printcolumn:name="V1beta1 Phase",type=string,JSONPath=`.status.v1beta1.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DynamoGraphDeploymentRequest struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the search intent.
	// +required
	Spec DynamoGraphDeploymentRequestSpec `json:"spec,omitzero"`

	// status is the observed state, written by the operator.
	// +optional
	Status DynamoGraphDeploymentRequestStatus `json:"status,omitempty"`
}

// DynamoGraphDeploymentRequestList is a list of DynamoGraphDeploymentRequest.
// +kubebuilder:object:root=true
type DynamoGraphDeploymentRequestList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DynamoGraphDeploymentRequest `json:"items"`
}

// Verification phases.
const (
	VerificationRunning   VerificationPhase = "Running"
	VerificationSucceeded VerificationPhase = "Succeeded"
	VerificationFailed    VerificationPhase = "Failed"
)

// Compared metrics.
const (
	MetricTTFTMs           VerificationMetricName = "ttftMs"
	MetricITLMs            VerificationMetricName = "itlMs"
	MetricThroughputPerGPU VerificationMetricName = "throughputPerGpu"
	MetricTTFTP90Ms        VerificationMetricName = "ttftP90Ms"
	MetricTTFTP99Ms        VerificationMetricName = "ttftP99Ms"
	MetricITLP90Ms         VerificationMetricName = "itlP90Ms"
	MetricITLP99Ms         VerificationMetricName = "itlP99Ms"
)
