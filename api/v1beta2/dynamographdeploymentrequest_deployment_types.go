package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// RouterMode is how the Dynamo Frontend routes requests to workers.
// +kubebuilder:validation:Enum=RoundRobin;Random;KV
type RouterMode string

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

	// autoApply deploys the best candidate, or a cheaper one that scores nearly as well
	// (selection), when a search succeeds. It is equivalent to creating pods: admission refuses
	// it unless the operator configuration sets autoApply.enabled and the requesting user may
	// create and update dynamographdeployments and create pods in the namespace
	// (docs/operate/security.md). The operator creates the DynamoGraphDeployment named by name,
	// labelled dgdr.nvidia.com/name and dgdr.nvidia.com/namespace with the request's name and
	// namespace, or updates the one this request created before; it
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

	// selection chooses which of the candidates that score about as well as the best one
	// autoApply deploys. Admission materializes {tolerance: 2%}.
	// +optional
	Selection *SelectionSpec `json:"selection,omitempty"`
}

// SelectionSpec chooses the candidate autoApply deploys among the Run's ranked candidates.
type SelectionSpec struct {
	// tolerance is how far below the best candidate's score a candidate may be and still be
	// deployed instead of it, as a percentage of the best score: autoApply deploys, among the
	// candidates that fit the cluster and score at least best − tolerance × |best|, the one with
	// the fewest GPUs, then the lowest cost per hour, then the best ranked. The best candidate
	// is the first of the ranking that fits the cluster; the score is the search's
	// (status.metrics.score: spec.objective's target, higher is better). A percentage from 0% to
	// 100% with at most two decimals, such as 2% or 0.5%; 0% deploys the best candidate.
	// Admission materializes 2%. A pareto target has no single score to be close to: its first
	// candidate that fits is deployed whatever the tolerance.
	// +optional
	// +kubebuilder:validation:MaxLength=7
	// +kubebuilder:validation:XValidation:rule="self.matches('^(100|[1-9]?[0-9])([.][0-9]{1,2})?%$') && double(self.substring(0, size(self) - 1)) <= 100.0",message="must be a percentage from 0% to 100% with at most two decimals, such as 2% or 0.5%"
	Tolerance string `json:"tolerance,omitempty"`
}

// VerificationSpec configures the verification of a deployed candidate
// (docs/design/verification.md).
type VerificationSpec struct {
	// enabled runs one verification Job per deployed DynamoGraphDeployment generation.
	// Defaults to false.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// load is the traffic the Job offers. When omitted, the traffic the deployed candidate's
	// prediction was made at (its spec.parameters traffic): the concurrency or request rate the
	// search materialized (for a kvCapacityFraction workload, the concurrency it resolved for
	// this candidate) with its inputTokens and outputTokens; for a trace workload, the trace
	// itself, replayed at its recorded timestamps (sped up as searched) or at the searched
	// concurrency. A load set here, or one the Job cannot reproduce, is measured all the same
	// but recorded as differing from the prediction's (status.verification.loadAsPredicted) and
	// kept out of the calibration profile.
	// +optional
	Load *VerificationLoad `json:"load,omitempty"`

	// requests is how many requests the Job sends. Defaults to 100; a trace replay defaults to
	// every request of the trace (within maxDurationSeconds). Minimum 1, maximum 10000.
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

	// inputTokens is the prompt length of every request. When omitted, the prediction's (1024
	// when it replayed a trace). Minimum 1, maximum 2097152.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=2097152
	InputTokens *int32 `json:"inputTokens,omitempty"`

	// outputTokens is the generated length of every request. When omitted, the prediction's
	// (128 when it replayed a trace). Minimum 1, maximum 2097152.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=2097152
	OutputTokens *int32 `json:"outputTokens,omitempty"`
}

// VerificationTolerance is the allowed relative error per metric, in percent.
type VerificationTolerance struct {
	// ttftPct bounds the relative error of the mean time to first token, and of its p90 and
	// p99. Greater than 0, maximum 1000. When omitted, the candidate's errorBand.ttftP80Pct,
	// else 25.
	// +optional
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	TTFTPct *float64 `json:"ttftPct,omitempty"`

	// itlPct bounds the relative error of the mean inter-token latency, and of its p90 and p99.
	// Greater than 0, maximum 1000. When omitted, the candidate's errorBand.itlP80Pct, else 25.
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

	// candidate is the deployed DynamoGraphDeploymentCandidate: the Run's best that fits the
	// cluster, or a cheaper one within spec.deployment.selection.tolerance of it.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Candidate string `json:"candidate,omitempty"`

	// selection names the best candidate and the deployed one, and why that one was chosen.
	// +optional
	Selection *DeploymentSelection `json:"selection,omitempty"`
}

// DeploymentSelection is how autoApply chose the deployed candidate of a Run
// (spec.deployment.selection).
type DeploymentSelection struct {
	// best is the Run's best candidate that fits the cluster: the first of its ranking that
	// does.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Best string `json:"best,omitempty"`

	// chosen is the deployed candidate (status.deployment.candidate): best, or one with fewer
	// GPUs or a lower cost whose score is within tolerance of best's.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Chosen string `json:"chosen,omitempty"`

	// tolerance is the spec.deployment.selection.tolerance the choice was made with, such as 2%.
	// +optional
	// +kubebuilder:validation:MaxLength=7
	Tolerance string `json:"tolerance,omitempty"`

	// reason says why chosen was deployed, with the scores, GPUs and costs that decided it.
	// At most 1024 characters.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Reason string `json:"reason,omitempty"`
}

// VerificationPhase is where a verification is.
// +kubebuilder:validation:Enum=Running;Succeeded;Failed
type VerificationPhase string

// VerificationMetricName names a compared metric: the means ttftMs and itlMs and
// throughputPerGpu (the keys of calibration observations), and the 90th and 99th percentiles of
// the latencies (compared only).
// +kubebuilder:validation:Enum=ttftMs;itlMs;throughputPerGpu;ttftP90Ms;ttftP99Ms;itlP90Ms;itlP99Ms
type VerificationMetricName string

// VerificationStatus is one verification of a deployed DynamoGraphDeployment generation.
type VerificationStatus struct {
	// phase is Running, Succeeded (measured; PredictionHeld says how it compared) or Failed
	// (nothing usable was measured; reason says why).
	// +required
	Phase VerificationPhase `json:"phase,omitempty"`

	// reason is a CamelCase word saying why the phase is Failed (FrontendUnreachable,
	// TimedOut, ErrorRateExceeded, NoRequestsCompleted, JobFailed, OutputRejected,
	// NoModeledMetrics, NotConfigured, PodFailedToStart, ForeignJob).
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

	// jobUID is the UID of the verification Job the operator created, recorded when it created
	// it: only that Job is read, and any other Job of jobName fails the verification
	// (ForeignJob). Absent when the verification failed before a Job was created.
	// +optional
	JobUID types.UID `json:"jobUID,omitempty"`

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

	// load is the load the Job offers (spec.deployment.verification resolved): its concurrency
	// or request rate and, for synthetic requests, their token lengths. Absent when the
	// verification failed before it was resolved, and for a trace replayed at its timestamps
	// (trace says how).
	// +optional
	Load *VerificationLoad `json:"load,omitempty"`

	// trace is the recorded trace the Job replays instead of synthetic requests: the request's
	// trace, as the candidate's search replayed it. Absent for synthetic requests.
	// +optional
	Trace *VerificationTraceReplay `json:"trace,omitempty"`

	// loadAsPredicted is true when the Job offers the traffic the candidate's prediction was
	// made at, false when it offers another (loadDifference says how): an explicit
	// spec.deployment.verification.load that differs, a load above the verification's bound of
	// 10000, or traffic the Job cannot reproduce (sessions, cached prefixes, a re-search's window
	// of captured traffic). Such a measurement is compared all the same but never added to the
	// calibration profile. Absent when the verification failed before it was resolved.
	// +optional
	LoadAsPredicted *bool `json:"loadAsPredicted,omitempty"`

	// loadDifference says how the offered load differs from the prediction's; empty when
	// loadAsPredicted is true.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	LoadDifference string `json:"loadDifference,omitempty"`

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

	// metrics compare each predicted metric with the observed one: the means, and the 90th and
	// 99th percentiles of the latencies where the candidate predicts them.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=7
	Metrics []VerifiedMetric `json:"metrics,omitempty"`

	// calibration says whether the measurement became an observation of the calibration profile
	// of the request's namespace, and why not. Set once the phase is Succeeded.
	// +optional
	Calibration *VerificationCalibration `json:"calibration,omitempty"`
}

// VerificationCalibration says whether a verification became a calibration observation.
type VerificationCalibration struct {
	// recorded is true when the measurement was added to the calibration profile of the
	// request's namespace.
	// +required
	Recorded *bool `json:"recorded,omitempty"`

	// reason is a CamelCase word saying why it was not: DeploymentChanged (the deployment
	// measured is not the Candidate as the operator rendered and wrote it: edited since, or
	// changed during the measurement), LoadNotAsPredicted (measured at another load than the
	// prediction's), NoCalibrationKey (the Candidate's parameters name no key) or
	// NoComparedMetrics.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Reason string `json:"reason,omitempty"`

	// message says why, for people.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// VerificationTraceReplay is how a verification Job replays the request's trace. Each request
// keeps its recorded input and output lengths and prefix blocks.
type VerificationTraceReplay struct {
	// format of the trace: mooncake, or dynamo (converted to mooncake records by the Job).
	// +required
	Format TraceFormat `json:"format,omitempty"`

	// arrivalSpeedupRatio replays the trace's arrival timestamps divided by this factor; absent
	// when the trace is replayed closed-loop at load.concurrency. Greater than 0, maximum 1000.
	// +optional
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	ArrivalSpeedupRatio *float64 `json:"arrivalSpeedupRatio,omitempty"`

	// blockSize is the number of tokens of one prefix block of the trace's hash ids, as the
	// search read them. Absent: AIPerf's default for the format (512 for mooncake). Minimum 1,
	// maximum 1048576.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1048576
	BlockSize *int32 `json:"blockSize,omitempty"`
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
	// predicted is the candidate's modeled value (status.metrics of the Candidate: the mean, or
	// the percentile the name says, of status.metrics.percentiles).
	// +required
	Predicted *float64 `json:"predicted,omitempty"`
	// observed is the measured value (AIPerf's mean, or its percentile the name says).
	// +required
	Observed *float64 `json:"observed,omitempty"`
	// relativeErrorPct is |observed - predicted| / predicted, in percent.
	// +required
	RelativeErrorPct *float64 `json:"relativeErrorPct,omitempty"`
	// bandPct is the candidate's 80th percentile error band of this metric, in percent, when
	// it has one.
	// +optional
	BandPct *float64 `json:"bandPct,omitempty"`
	// tolerancePct is the allowed relative error (spec tolerance, else bandPct, else 25); a
	// percentile has its metric's.
	// +required
	TolerancePct *float64 `json:"tolerancePct,omitempty"`
	// held is true when relativeErrorPct is at most tolerancePct.
	// +required
	Held *bool `json:"held,omitempty"`
}
