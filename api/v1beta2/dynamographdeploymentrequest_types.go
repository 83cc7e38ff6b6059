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

// WorkloadSpec describes the traffic a deployment must serve: a synthetic static workload or a
// recorded trace.
// +kubebuilder:validation:XValidation:rule="!(has(self.static) && has(self.trace))",message="static and trace are mutually exclusive: a search replays either synthetic traffic or a trace",fieldPath=".trace",reason="FieldValueForbidden"
type WorkloadSpec struct {
	// static is a synthetic workload with fixed token lengths and one load variant. An explicitly
	// empty static ({}) is the opt-out from typed traffic: it stays empty and the lowering emits no
	// traffic source or load, so inputOverrides can describe the traffic instead. Admission adds
	// it (completed with defaults) unless trace is set.
	// +optional
	Static *StaticWorkload `json:"static,omitempty"`

	// trace replays the team's own recorded traffic: a mooncake JSONL trace from a ConfigMap or a
	// PersistentVolumeClaim, mounted read-only into the search container. Mutually exclusive with
	// static.
	// +optional
	Trace *TraceWorkload `json:"trace,omitempty"`
}

// TraceFormat is the format of a traffic trace.
// +kubebuilder:validation:Enum=mooncake;dynamo
type TraceFormat string

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

// TraceWorkload is a recorded trace to replay. Lowers to traffic.source {type: trace, paths,
// format}, traffic.load and traffic.stop (docs/design/lowering.md).
type TraceWorkload struct {
	// format of the trace file: mooncake or dynamo. Both are supported end to end (AISimulate and
	// the local recommender replay them; docs/design/aisim.md). Admission materializes mooncake.
	// +optional
	Format TraceFormat `json:"format,omitempty"`

	// source is where the trace file is: exactly one of configMap or pvc.
	// +required
	Source *TraceSource `json:"source,omitempty"`

	// replay is how the trace is replayed: exactly one of arrivalSpeedupRatio or concurrency.
	// Admission materializes {arrivalSpeedupRatio: 1} (the trace's own timestamps).
	// +optional
	Replay *TraceReplay `json:"replay,omitempty"`

	// maxVirtualTimeSeconds stops the replay after this much simulated time. Lowers to
	// traffic.stop.max_virtual_time_seconds. When omitted the whole trace is replayed. Minimum
	// 0.001, maximum 604800 (a week).
	// +optional
	// +kubebuilder:validation:Minimum=0.001
	// +kubebuilder:validation:Maximum=604800
	MaxVirtualTimeSeconds *float64 `json:"maxVirtualTimeSeconds,omitempty"`
}

// TraceSource is where a trace file is, in the request's namespace.
// +kubebuilder:validation:XValidation:rule="has(self.configMap) != has(self.pvc)",message="exactly one of configMap or pvc must be set"
type TraceSource struct {
	// configMap holds a small trace (a ConfigMap holds at most 1 MiB) under one key.
	// +optional
	ConfigMap *TraceConfigMapSource `json:"configMap,omitempty"`

	// pvc holds a large trace as a file on a PersistentVolumeClaim.
	// +optional
	PVC *TracePVCSource `json:"pvc,omitempty"`
}

// TraceConfigMapSource is a trace stored under one key of a ConfigMap.
type TraceConfigMapSource struct {
	// name of the ConfigMap.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`

	// key of the ConfigMap whose value is the trace (JSONL).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key,omitempty"`
}

// TracePVCSource is a trace file on a PersistentVolumeClaim.
type TracePVCSource struct {
	// claimName is the PersistentVolumeClaim.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ClaimName string `json:"claimName,omitempty"`

	// path of the trace file inside the claim: relative, without ".." elements.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Path string `json:"path,omitempty"`
}

// TraceReplay is how a trace is replayed.
// +kubebuilder:validation:XValidation:rule="has(self.arrivalSpeedupRatio) != has(self.concurrency)",message="exactly one of arrivalSpeedupRatio or concurrency must be set"
type TraceReplay struct {
	// arrivalSpeedupRatio replays the trace's arrival timestamps, compressed by this factor (2
	// offers twice the rate). Lowers to traffic.load {type: trace_timestamps, speedup}. Minimum
	// 0.001, maximum 1000.
	// +optional
	// +kubebuilder:validation:Minimum=0.001
	// +kubebuilder:validation:Maximum=1000
	ArrivalSpeedupRatio *float64 `json:"arrivalSpeedupRatio,omitempty"`

	// concurrency replays the trace's requests closed-loop with this many in flight, ignoring
	// its timestamps. Lowers to traffic.load {type: concurrency, concurrency}. Minimum 1,
	// maximum 100000.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	Concurrency *int32 `json:"concurrency,omitempty"`
}

// StaticWorkload is a synthetic workload. Admission completes a non-empty static with
// inputTokens 1024, outputTokens 128 and load {concurrency: 10} where missing.
type StaticWorkload struct {
	// inputTokens is the prompt length of every request. Lowers to traffic.source.input_tokens.
	// Defaults to 1024 (when static is not empty). Minimum 1, maximum 2097152.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=2097152
	InputTokens *int32 `json:"inputTokens,omitempty"`

	// outputTokens is the generated length of every request. Lowers to
	// traffic.source.output_tokens. Defaults to 128 (when static is not empty). Minimum 1, maximum 2097152.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=2097152
	OutputTokens *int32 `json:"outputTokens,omitempty"`

	// load is how requests arrive: exactly one of concurrency, requestsPerSecond or
	// kvCapacityFraction. Defaults to {concurrency: 10} (when static is not empty).
	// +optional
	Load *LoadSpec `json:"load,omitempty"`
}

// LoadSpec is a field-discriminated union: exactly one variant must be set whenever load exists.
// +kubebuilder:validation:XValidation:rule="(has(self.concurrency) ? 1 : 0) + (has(self.requestsPerSecond) ? 1 : 0) + (has(self.kvCapacityFraction) ? 1 : 0) == 1",message="exactly one of concurrency, requestsPerSecond or kvCapacityFraction must be set"
type LoadSpec struct {
	// concurrency keeps this many requests in flight (closed loop). Lowers to
	// traffic.load {type: concurrency, concurrency: N}. Minimum 1, maximum 1000000.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000
	Concurrency *int32 `json:"concurrency,omitempty"`

	// requestsPerSecond is an open-loop Poisson arrival rate. Lowers to
	// traffic.load {type: poisson, requests_per_second: R}. Must be greater than 0.
	// +optional
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000000
	RequestsPerSecond *float64 `json:"requestsPerSecond,omitempty"`

	// kvCapacityFraction sizes a closed-loop concurrency per candidate as a fraction of its
	// KV-cache capacity. Lowers to traffic.load {type: kv_capacity_fraction, fraction: ...}.
	// +optional
	KVCapacityFraction *KVCapacityFraction `json:"kvCapacityFraction,omitempty"`
}

// KVCapacityFraction is either one value or a range the search explores.
// +kubebuilder:validation:XValidation:rule="has(self.value) != has(self.range)",message="exactly one of value or range must be set"
type KVCapacityFraction struct {
	// value is the fraction of KV-cache capacity to load. Greater than 0; may exceed 1
	// (oversubscription). Maximum 100.
	// +optional
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	Value *float64 `json:"value,omitempty"`

	// range lets the search explore fractions between min and max. A native range also sets
	// the search budget (optimizer.max_trials) to 320 unless overridden.
	// +optional
	Range *FractionRange `json:"range,omitempty"`
}

// FractionRange is a closed interval 0 < min ≤ max.
// +kubebuilder:validation:XValidation:rule="self.min <= self.max",message="min must be less than or equal to max"
type FractionRange struct {
	// min is the lower bound. Greater than 0, maximum 100.
	// +required
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	Min float64 `json:"min,omitempty"`

	// max is the upper bound. Greater than 0, at least min, maximum 100.
	// +required
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	Max float64 `json:"max,omitempty"`
}

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

// RouterMode is how the Dynamo Frontend routes requests to workers.
// +kubebuilder:validation:Enum=RoundRobin;Random;KV
type RouterMode string

// Router modes.
const (
	// RouterRoundRobin cycles through the workers (the Frontend's default).
	RouterRoundRobin RouterMode = "RoundRobin"
	// RouterRandom picks a worker at random.
	RouterRandom RouterMode = "Random"
	// RouterKV routes by KV-cache overlap; the workers publish KV events.
	RouterKV RouterMode = "KV"
)

// DeploymentSpec shapes the rendered DynamoGraphDeployments.
type DeploymentSpec struct {
	// router configures the Frontend's request routing.
	// +optional
	Router *RouterSpec `json:"router,omitempty"`

	// podTemplateOverrides are strategic merge patches of the rendered components' pod
	// templates, per role. Each is at most limits.maxPodTemplateOverrideBytes of the operator
	// configuration (32 KiB by default). A user who may not create pods in the namespace may
	// override only tolerations, nodeSelector, affinity, the main container's resources and
	// literal env values, and pod labels and annotations (docs/operate/security.md).
	// +optional
	PodTemplateOverrides *PodTemplateOverrides `json:"podTemplateOverrides,omitempty"`

	// planner adds Dynamo's SLA Planner to every rendered deployment, so it scales the workers
	// at run time. Admission materializes {enabled: false}.
	// +optional
	Planner *PlannerSpec `json:"planner,omitempty"`

	// autoApply deploys the best candidate when a search succeeds. It is equivalent to creating
	// pods: admission refuses it unless the operator configuration sets autoApply.enabled and
	// the requesting user may create and update dynamographdeployments and create pods in the
	// namespace (docs/operate/security.md). The operator creates the
	// DynamoGraphDeployment named by name, or updates the one this request created before; it
	// never changes one it did not create (condition Deployed=False, reason Conflict). The
	// request's Deployed condition then follows the DynamoGraphDeployment's readiness.
	// Admission materializes false (v1beta1 defaults to true: a v1beta2 request is a search
	// first, and deploying GPUs must be asked for; docs/design/results.md).
	// +optional
	AutoApply *bool `json:"autoApply,omitempty"`

	// name of the DynamoGraphDeployment that autoApply creates or updates, in the request's
	// namespace: a DNS-1123 subdomain of at most 63 characters (Dynamo derives Service names and
	// label values from it). Admission materializes the request's name.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name,omitempty"`

	// verification measures the deployed candidate once its DynamoGraphDeployment is ready: a
	// Job drives the frontend's OpenAI-compatible endpoint with AIPerf at the modeled load and
	// status.verification compares what it observed with what the search predicted. Off unless
	// enabled; it only acts with autoApply.
	// +optional
	Verification *VerificationSpec `json:"verification,omitempty"`

	// capture makes the rendered deployment's Frontend record Dynamo's request trace of the
	// traffic it serves onto a PersistentVolumeClaim of the request's namespace: one JSON record
	// per finished request with token counts, timings and prefix hashes, never prompt or
	// completion text (docs/design/results.md, "Request capture"). Off unless enabled.
	// +optional
	Capture *CaptureSpec `json:"capture,omitempty"`

	// replaceMargin is how much better, on the objective, the best candidate of a re-search
	// (spec.research) must be than the deployed candidate evaluated under the same window
	// before autoApply replaces the deployment: a percentage from 0% to 100%. A candidate that
	// meets the SLA where the deployed one misses it is always better. Admission materializes
	// 10% when spec.research is set.
	// +optional
	// +kubebuilder:validation:MaxLength=4
	// +kubebuilder:validation:Pattern=`^(100|[1-9]?[0-9])%$`
	ReplaceMargin string `json:"replaceMargin,omitempty"`
}

// ResearchSpec schedules searches over the deployment's captured traffic.
type ResearchSpec struct {
	// intervalMinutes is the time between two re-searches, in minutes: ticks fall on multiples
	// of it since the Unix epoch (docs/design/keep-optimal.md). Required. At least the operator
	// configuration's research.minInterval (an hour by default; admission checks it), at most
	// 43200 (30 days).
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=43200
	IntervalMinutes int32 `json:"intervalMinutes,omitempty"`

	// windowMinutes is how much of the most recent captured traffic a re-search replays, in
	// minutes, ending at the tick. Admission materializes intervalMinutes. Minimum 1, maximum
	// 10080 (7 days).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10080
	WindowMinutes *int32 `json:"windowMinutes,omitempty"`

	// minRequests is the fewest captured requests in the window that are worth a search; a
	// tick with fewer ends its Run InsufficientTraffic without searching. Admission
	// materializes 100. Minimum 1, maximum 10000000.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000000
	MinRequests *int32 `json:"minRequests,omitempty"`
}

// CaptureSpec configures the request trace that the rendered Frontend writes.
// +kubebuilder:validation:XValidation:rule="!has(self.enabled) || !self.enabled || has(self.claimName)",message="claimName is required when capture is enabled",fieldPath=".claimName",reason="FieldValueRequired"
type CaptureSpec struct {
	// enabled makes the Frontend write its request trace to the claim. Defaults to false.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// claimName is the PersistentVolumeClaim, in the request's namespace, that the Frontend
	// mounts read-write and writes the trace to: a DNS-1123 subdomain of at most 253
	// characters. Required when enabled. The claim must exist when the deployment starts and
	// be writable by every Frontend pod (ReadWriteMany when they may run on different nodes);
	// each Frontend pod writes its own directory on it, named after the pod.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ClaimName string `json:"claimName,omitempty"`

	// rotation bounds the trace's segments by size. Admission materializes its defaults when
	// capture is set.
	// +optional
	Rotation *CaptureRotation `json:"rotation,omitempty"`
}

// CaptureRotation bounds the captured trace's segments. The Frontend closes a gzip segment and
// starts the next one when the segment's records reach maxSegmentMiB; it deletes none itself
// (it has no age-based retention): maxAgeHours is enforced by the re-searches.
type CaptureRotation struct {
	// maxSegmentMiB is the uncompressed size at which the Frontend rolls over to a new gzip
	// segment (the Frontend's DYN_REQUEST_TRACE_JSONL_GZ_ROLL_BYTES). Defaults to 64. Minimum
	// 1, maximum 4096.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4096
	MaxSegmentMiB *int32 `json:"maxSegmentMiB,omitempty"`

	// maxAgeHours bounds the age of the kept traffic: at every re-search tick (spec.research),
	// the re-search deletes the complete segments all of whose requests arrived more than
	// maxAgeHours before the tick; a segment still being written is never deleted. It needs
	// spec.research, whose re-searches are its only reader, and must cover
	// spec.research.windowMinutes. Unset, nothing is deleted. Minimum 1, maximum 8760 (a year).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=8760
	MaxAgeHours *int32 `json:"maxAgeHours,omitempty"`
}

// VerificationSpec configures the verification of a deployed candidate
// (docs/design/verification.md).
type VerificationSpec struct {
	// enabled runs one verification Job per deployed DynamoGraphDeployment generation.
	// Defaults to false.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// load is the traffic the Job offers. When omitted, the deployed candidate's modeled
	// operating point: spec.workload.static's concurrency or requestsPerSecond (a
	// kvCapacityFraction or trace workload falls back to concurrency 1) and its inputTokens
	// and outputTokens (1024 and 128 without a static workload).
	// +optional
	Load *VerificationLoad `json:"load,omitempty"`

	// requests is how many requests the Job sends. Defaults to 100. Minimum 1, maximum 10000.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	Requests *int32 `json:"requests,omitempty"`

	// maxDurationSeconds bounds the measurement: the Job's activeDeadlineSeconds is this plus a
	// fixed 120 s for the pod's start, and AIPerf stops sending after it. Defaults to 300.
	// Minimum 10, maximum 3600.
	// +optional
	// +kubebuilder:validation:Minimum=10
	// +kubebuilder:validation:Maximum=3600
	MaxDurationSeconds *int32 `json:"maxDurationSeconds,omitempty"`

	// tolerance is the relative error allowed per metric before PredictionHeld turns False.
	// A metric without one gets the candidate's error band (status.metrics.errorBand: the 80th
	// percentile error of ttftMs and itlMs), else 25%.
	// +optional
	Tolerance *VerificationTolerance `json:"tolerance,omitempty"`
}

// VerificationLoad is the load of a verification: exactly one of concurrency or
// requestsPerSecond, and optionally the token lengths.
// +kubebuilder:validation:XValidation:rule="has(self.concurrency) != has(self.requestsPerSecond)",message="exactly one of concurrency or requestsPerSecond must be set"
type VerificationLoad struct {
	// concurrency keeps this many streaming requests in flight. Minimum 1, maximum 10000.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	Concurrency *int32 `json:"concurrency,omitempty"`

	// requestsPerSecond sends requests at this rate. Greater than 0, maximum 10000.
	// +optional
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	RequestsPerSecond *float64 `json:"requestsPerSecond,omitempty"`

	// inputTokens is the prompt length of every request. When omitted, the workload's.
	// Minimum 1, maximum 2097152.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=2097152
	InputTokens *int32 `json:"inputTokens,omitempty"`

	// outputTokens is the generated length of every request. When omitted, the workload's.
	// Minimum 1, maximum 2097152.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=2097152
	OutputTokens *int32 `json:"outputTokens,omitempty"`
}

// VerificationTolerance is the allowed relative error per metric, in percent.
type VerificationTolerance struct {
	// ttftPct bounds the relative error of the mean time to first token. Greater than 0,
	// maximum 1000. When omitted, the candidate's errorBand.ttftP80Pct, else 25.
	// +optional
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	TTFTPct *float64 `json:"ttftPct,omitempty"`

	// itlPct bounds the relative error of the mean inter-token latency. Greater than 0,
	// maximum 1000. When omitted, the candidate's errorBand.itlP80Pct, else 25.
	// +optional
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	ITLPct *float64 `json:"itlPct,omitempty"`

	// throughputPerGpuPct bounds the relative error of the output throughput per GPU. Greater
	// than 0, maximum 1000. When omitted, 25 (the error band covers latencies only).
	// +optional
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	ThroughputPerGPUPct *float64 `json:"throughputPerGpuPct,omitempty"`
}

// PlannerSpec configures the rendered Planner component.
type PlannerSpec struct {
	// enabled renders a Planner component (type planner, the operator's Planner image, running
	// python3 -m dynamo.planner) configured from the request's SLA and model and the candidate's
	// backend, mode and per-worker GPUs, and lets it own the workers' replicas (scalingAdapter).
	// With sla.ttftMs and sla.itlMs it scales for those targets (optimization_target sla, with
	// the Planner's rapid pre-deployment sweep); otherwise it scales on load alone. Admission
	// materializes false. docs/design/results.md lists the exact configuration.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
}

// RouterSpec configures the Frontend's request routing.
type RouterSpec struct {
	// mode is RoundRobin (the default), Random or KV. It renders the Frontend's DYN_ROUTER_MODE
	// (round-robin, random, kv); KV also makes the workers publish KV-cache events.
	// +optional
	Mode RouterMode `json:"mode,omitempty"`
}

// PodTemplateOverrides are strategic merge patches of a core/v1 PodTemplateSpec (containers,
// env, volumes and volume mounts merge by name; the engine container is "main"), applied to the
// rendered components in the order all, then frontend, workers or planner, then prefill or
// decode. Each must be a JSON object that decodes as a PodTemplateSpec patch; admission rejects
// anything else.
type PodTemplateOverrides struct {
	// all is applied to every component.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:Schemaless
	All *runtime.RawExtension `json:"all,omitempty"`

	// frontend is applied to the Frontend.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:Schemaless
	Frontend *runtime.RawExtension `json:"frontend,omitempty"`

	// workers is applied to every worker component (aggregated, prefill and decode).
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:Schemaless
	Workers *runtime.RawExtension `json:"workers,omitempty"`

	// prefill is applied to the prefill component of disaggregated candidates.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:Schemaless
	Prefill *runtime.RawExtension `json:"prefill,omitempty"`

	// decode is applied to the decode component of disaggregated candidates.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:Schemaless
	Decode *runtime.RawExtension `json:"decode,omitempty"`

	// planner is applied to the Planner component (with planner.enabled).
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:Schemaless
	Planner *runtime.RawExtension `json:"planner,omitempty"`
}

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

// DeploymentStatus is the DynamoGraphDeployment autoApply created or updated.
type DeploymentStatus struct {
	// name of the DynamoGraphDeployment, in the request's namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`

	// run is the Run whose search found the deployed candidate.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Run string `json:"run,omitempty"`

	// candidate is the deployed DynamoGraphDeploymentCandidate (the Run's best).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Candidate string `json:"candidate,omitempty"`
}

// ResearchDecision is what a re-search led to.
// +kubebuilder:validation:Enum=Replaced;Kept;Skipped;Undecided
type ResearchDecision string

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

// ResearchStatus is the re-search history of a request.
type ResearchStatus struct {
	// nextTime is when the next re-search is due.
	// +optional
	NextTime *metav1.Time `json:"nextTime,omitempty"`

	// history holds the latest re-searches, newest first, at most 10.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	History []ResearchRecord `json:"history,omitempty"`
}

// ResearchRecord is one re-search tick and what it decided.
type ResearchRecord struct {
	// run is the re-search Run.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Run string `json:"run,omitempty"`

	// windowStart is the earliest arrival time of the replayed traffic.
	// +required
	WindowStart *metav1.Time `json:"windowStart,omitempty"`

	// windowEnd is the arrival time the replayed traffic stops before: the tick.
	// +required
	WindowEnd *metav1.Time `json:"windowEnd,omitempty"`

	// requests is how many captured requests the window held, when known.
	// +optional
	Requests int64 `json:"requests,omitempty"`

	// deployedCandidate is the candidate that was deployed when the Run was created.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	DeployedCandidate string `json:"deployedCandidate,omitempty"`

	// baselineObjective is the deployed candidate's objective under the window, in the unit of
	// spec.objective.target, when evaluated.
	// +optional
	BaselineObjective *float64 `json:"baselineObjective,omitempty"`

	// bestCandidate is the re-search's best candidate, when it has one.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	BestCandidate string `json:"bestCandidate,omitempty"`

	// bestObjective is the best candidate's objective, in the same unit.
	// +optional
	BestObjective *float64 `json:"bestObjective,omitempty"`

	// decision is what the re-search led to.
	// +required
	Decision ResearchDecision `json:"decision,omitempty"`

	// reason is a CamelCase reason for the decision (the ImprovementAvailable reasons, or the
	// Run's Completed reason).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Reason string `json:"reason,omitempty"`

	// message explains the decision with both numbers.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

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

// VerificationPhase is where a verification is.
// +kubebuilder:validation:Enum=Running;Succeeded;Failed
type VerificationPhase string

// Verification phases.
const (
	VerificationRunning   VerificationPhase = "Running"
	VerificationSucceeded VerificationPhase = "Succeeded"
	VerificationFailed    VerificationPhase = "Failed"
)

// VerificationMetricName names a compared metric: the keys of calibration observations.
// +kubebuilder:validation:Enum=ttftMs;itlMs;throughputPerGpu
type VerificationMetricName string

// Compared metrics.
const (
	MetricTTFTMs           VerificationMetricName = "ttftMs"
	MetricITLMs            VerificationMetricName = "itlMs"
	MetricThroughputPerGPU VerificationMetricName = "throughputPerGpu"
)

// VerificationStatus is one verification of a deployed DynamoGraphDeployment generation.
type VerificationStatus struct {
	// phase is Running, Succeeded (measured; PredictionHeld says how it compared) or Failed
	// (nothing usable was measured; reason says why).
	// +required
	Phase VerificationPhase `json:"phase,omitempty"`

	// reason is a CamelCase word saying why the phase is Failed (FrontendUnreachable,
	// TimedOut, ErrorRateExceeded, NoRequestsCompleted, JobFailed, OutputRejected,
	// NoModeledMetrics, NotConfigured, PodFailedToStart).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Reason string `json:"reason,omitempty"`

	// message says what happened, for people.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`

	// jobName is the verification Job.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	JobName string `json:"jobName,omitempty"`

	// deployment is the DynamoGraphDeployment measured.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Deployment string `json:"deployment,omitempty"`

	// deploymentGeneration is the metadata.generation of the DynamoGraphDeployment measured.
	// +required
	// +kubebuilder:validation:Minimum=1
	DeploymentGeneration int64 `json:"deploymentGeneration,omitempty"`

	// run is the Run whose search found the candidate.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Run string `json:"run,omitempty"`

	// candidate is the deployed DynamoGraphDeploymentCandidate whose prediction is verified.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Candidate string `json:"candidate,omitempty"`

	// load is the load the Job offers (spec.deployment.verification resolved); absent when the
	// verification failed before it was resolved.
	// +optional
	Load *VerificationLoad `json:"load,omitempty"`

	// requests is the number of requests the Job sends, as resolved.
	// +optional
	// +kubebuilder:validation:Minimum=1
	Requests int32 `json:"requests,omitempty"`

	// maxDurationSeconds bounds the measurement, as resolved.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxDurationSeconds int32 `json:"maxDurationSeconds,omitempty"`

	// measuredAt is when the Job's measurement ended.
	// +optional
	MeasuredAt *metav1.Time `json:"measuredAt,omitempty"`

	// observed is what AIPerf measured.
	// +optional
	Observed *ObservedMetrics `json:"observed,omitempty"`

	// metrics compare each predicted metric with the observed one.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=3
	Metrics []VerifiedMetric `json:"metrics,omitempty"`
}

// ObservedMetrics are AIPerf's measurement. Latencies in milliseconds, throughputs in output
// tokens per second.
type ObservedMetrics struct {
	// ttftMs is the time to first token.
	// +optional
	TTFTMs *Percentiles `json:"ttftMs,omitempty"`
	// itlMs is the inter-token latency.
	// +optional
	ITLMs *Percentiles `json:"itlMs,omitempty"`
	// throughput is the output token throughput of the whole deployment.
	// +optional
	Throughput *float64 `json:"throughput,omitempty"`
	// throughputPerGpu is throughput divided by the candidate's GPUs.
	// +optional
	ThroughputPerGPU *float64 `json:"throughputPerGpu,omitempty"`
	// requests is the number of requests that completed.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Requests int64 `json:"requests,omitempty"`
	// errors is the number of requests that failed.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Errors int64 `json:"errors,omitempty"`
}

// Percentiles of a latency, in milliseconds.
type Percentiles struct {
	// mean is the average.
	// +required
	Mean *float64 `json:"mean,omitempty"`
	// p50 is the median.
	// +optional
	P50 *float64 `json:"p50,omitempty"`
	// p90 is the 90th percentile.
	// +optional
	P90 *float64 `json:"p90,omitempty"`
	// p99 is the 99th percentile.
	// +optional
	P99 *float64 `json:"p99,omitempty"`
}

// VerifiedMetric compares one predicted metric with its observation.
type VerifiedMetric struct {
	// name of the metric.
	// +required
	Name VerificationMetricName `json:"name,omitempty"`
	// predicted is the candidate's modeled value (status.metrics of the Candidate; latencies
	// are means).
	// +required
	Predicted *float64 `json:"predicted,omitempty"`
	// observed is the measured value (the mean for latencies).
	// +required
	Observed *float64 `json:"observed,omitempty"`
	// relativeErrorPct is |observed - predicted| / predicted, in percent.
	// +required
	RelativeErrorPct *float64 `json:"relativeErrorPct,omitempty"`
	// bandPct is the candidate's 80th percentile error band of this metric, in percent, when
	// it has one.
	// +optional
	BandPct *float64 `json:"bandPct,omitempty"`
	// tolerancePct is the allowed relative error (spec tolerance, else bandPct, else 25).
	// +required
	TolerancePct *float64 `json:"tolerancePct,omitempty"`
	// held is true when relativeErrorPct is at most tolerancePct.
	// +required
	Held *bool `json:"held,omitempty"`
}
