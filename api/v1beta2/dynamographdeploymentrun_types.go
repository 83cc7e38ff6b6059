package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// RunPhase is a concise display state; the Completed condition is authoritative.
// +kubebuilder:validation:Enum=Pending;Running;Succeeded;Failed;Cancelled
type RunPhase string

// Run phases.
const (
	RunPhasePending   RunPhase = "Pending"
	RunPhaseRunning   RunPhase = "Running"
	RunPhaseSucceeded RunPhase = "Succeeded"
	RunPhaseFailed    RunPhase = "Failed"
	RunPhaseCancelled RunPhase = "Cancelled"
)

// AISimulateStatus records the exact input the search ran with.
type AISimulateStatus struct {
	// input is the exact effective AISimulate recommendation input document, as passed to the
	// search. Controller-owned output, written once; never an override surface.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:Schemaless
	Input *runtime.RawExtension `json:"input,omitempty"`

	// inputHash is "sha256:" followed by the hex sha256 of the canonical JSON of input.
	// +optional
	// +kubebuilder:validation:MaxLength=80
	InputHash string `json:"inputHash,omitempty"`

	// trace records the trace the search replays (spec.workload.trace), as found when the search
	// Job was created. The effective input names the file at its mount path.
	// +optional
	Trace *TraceSourceStatus `json:"trace,omitempty"`

	// baseline is the exact AISimulate prediction input that evaluates the deployed candidate
	// under this re-search's traffic (a re-search Run only): the deployed Candidate's
	// spec.parameters with traffic and evaluation taken from input. Controller-owned, written
	// once together with input.
	// +optional
	Baseline *BaselineInputStatus `json:"baseline,omitempty"`
}

// BaselineInputStatus records what a re-search's baseline evaluation runs.
type BaselineInputStatus struct {
	// candidate is the deployed DynamoGraphDeploymentCandidate whose parameters are evaluated.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Candidate string `json:"candidate,omitempty"`

	// input is the AISimulate prediction input document.
	// +required
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:Schemaless
	Input *runtime.RawExtension `json:"input,omitempty"`

	// inputHash is "sha256:" followed by the hex sha256 of the canonical JSON of input.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=80
	InputHash string `json:"inputHash,omitempty"`
}

// TraceSourceStatus is the trace source a Run used.
type TraceSourceStatus struct {
	// configMap is the ConfigMap the trace came from, with the version that was checked.
	// +optional
	ConfigMap *TraceConfigMapStatus `json:"configMap,omitempty"`

	// pvc is the claim the trace file is on (its content is read only by the search).
	// +optional
	PVC *TracePVCSource `json:"pvc,omitempty"`

	// window is the slice of the captured traffic a re-search Run replays (spec.research).
	// +optional
	Window *TraceWindowStatus `json:"window,omitempty"`
}

// TraceWindowStatus is the captured traffic a re-search replays: the requests of the capture
// claim that arrived in [start, end). The operator records the claim and the bounds before the
// Job exists; the search pod's input container cuts the window and reports what it found.
type TraceWindowStatus struct {
	// claimName is the capture claim (spec.deployment.capture.claimName).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ClaimName string `json:"claimName,omitempty"`

	// start is the earliest arrival time included.
	// +required
	Start *metav1.Time `json:"start,omitempty"`

	// end is the arrival time the window stops before (the tick).
	// +required
	End *metav1.Time `json:"end,omitempty"`

	// requests is how many captured requests arrived in the window.
	// +optional
	Requests *int64 `json:"requests,omitempty"`

	// sha256 is "sha256:" followed by the hex sha256 of the window file the search replayed.
	// +optional
	// +kubebuilder:validation:MaxLength=71
	SHA256 string `json:"sha256,omitempty"`

	// segments is how many trace segments the window was cut from.
	// +optional
	Segments int32 `json:"segments,omitempty"`

	// pods is how many Frontend pods' directories held them.
	// +optional
	Pods int32 `json:"pods,omitempty"`

	// skippedSegments is how many files named like segments were not read: not a regular file (a
	// symbolic link, a FIFO, a directory), unreadable, or not a gzip stream. Segments still being
	// written are not counted. Absent when none.
	// +optional
	// +kubebuilder:validation:Minimum=0
	SkippedSegments int32 `json:"skippedSegments,omitempty"`

	// skippedDirectories is how many entries of the request's directory of the claim were not
	// read as a Frontend pod's directory: not a directory (a symbolic link among them), or
	// unreadable. Absent when none.
	// +optional
	// +kubebuilder:validation:Minimum=0
	SkippedDirectories int32 `json:"skippedDirectories,omitempty"`

	// skippedLines is how many lines of the segments read were skipped because they could not be
	// placed in time (not a request-trace record, no valid arrival, or longer than 16 MiB).
	// Absent when none.
	// +optional
	// +kubebuilder:validation:Minimum=0
	SkippedLines int64 `json:"skippedLines,omitempty"`
}

// TraceConfigMapStatus identifies the ConfigMap content a Run's search replays.
type TraceConfigMapStatus struct {
	// name of the ConfigMap.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`

	// key holding the trace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key,omitempty"`

	// resourceVersion of the ConfigMap when the search Job was created.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	ResourceVersion string `json:"resourceVersion,omitempty"`

	// sha256 is "sha256:" followed by the hex sha256 of the key's value.
	// +required
	// +kubebuilder:validation:MinLength=71
	// +kubebuilder:validation:MaxLength=71
	SHA256 string `json:"sha256,omitempty"`
}

// JobReference names the search Job of a Run.
type JobReference struct {
	// name of the Job.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name,omitempty"`

	// uid of the Job.
	// +optional
	UID types.UID `json:"uid,omitempty"`
}

// RunProgress counts settled trials of the search, written by the reporter.
type RunProgress struct {
	// budget is the trial budget of the search (optimizer.max_trials), when known.
	// +optional
	Budget int64 `json:"budget,omitempty"`
	// settled is the number of trials that reached an outcome.
	// +optional
	Settled int64 `json:"settled,omitempty"`
	// feasible is the number of feasible candidates.
	// +optional
	Feasible int64 `json:"feasible,omitempty"`
	// infeasible is the number of candidates rejected by constraints.
	// +optional
	Infeasible int64 `json:"infeasible,omitempty"`
	// failed is the number of candidates whose evaluation failed.
	// +optional
	Failed int64 `json:"failed,omitempty"`
	// timedOut is the number of candidates whose evaluation timed out.
	// +optional
	TimedOut int64 `json:"timedOut,omitempty"`
	// unsupported is the number of candidates the simulator does not support.
	// +optional
	Unsupported int64 `json:"unsupported,omitempty"`
	// published is the number of Candidates published.
	// +optional
	Published int32 `json:"published,omitempty"`
}

// CandidateMetrics are the predicted metrics of a candidate. Latencies are means in
// milliseconds (percentiles holds their distributions); throughputs are output tokens per
// second.
type CandidateMetrics struct {
	// score is the signed objective value (higher is better; latency targets are negated).
	// +optional
	Score *float64 `json:"score,omitempty"`
	// ttftMs is the mean time to first token.
	// +optional
	TTFTMs *float64 `json:"ttftMs,omitempty"`
	// itlMs is the mean inter-token latency.
	// +optional
	ITLMs *float64 `json:"itlMs,omitempty"`
	// e2eMs is the mean end-to-end latency.
	// +optional
	E2EMs *float64 `json:"e2eMs,omitempty"`
	// throughput is the output token throughput of the whole deployment.
	// +optional
	Throughput *float64 `json:"throughput,omitempty"`
	// throughputPerGpu is throughput divided by GPUs used.
	// +optional
	ThroughputPerGPU *float64 `json:"throughputPerGpu,omitempty"`
	// throughputPerUser is the output token rate one request sees.
	// +optional
	ThroughputPerUser *float64 `json:"throughputPerUser,omitempty"`
	// requestsPerSecond is the completed request rate.
	// +optional
	RequestsPerSecond *float64 `json:"requestsPerSecond,omitempty"`
	// gpus is the number of GPUs the candidate uses.
	// +optional
	GPUs int32 `json:"gpus,omitempty"`
	// cost is what the candidate costs at the price the Run recorded (status.pricing of the
	// Run); absent when the operator configuration has no price for the Run's GPU system.
	// +optional
	Cost *CandidateCost `json:"cost,omitempty"`
	// errorBand is the recommender's expected error on the latency figures above, measured
	// out of sample against real serving runs (the local recommender writes one; AISimulate's
	// output has none).
	// +optional
	ErrorBand *MetricsErrorBand `json:"errorBand,omitempty"`
	// percentiles are the predicted distributions of ttftMs, itlMs and e2eMs (their p50, p90
	// and p99), where the search reports them: AISimulate's and the local recommender's records
	// do. Information only: the request's sla bounds the means (AISimulate 0.13 has no
	// percentile SLA), and verification compares p90 and p99 with the measured ones.
	// +optional
	Percentiles *CandidatePercentiles `json:"percentiles,omitempty"`
	// powerW is the predicted mean power of one GPU while it runs forward passes, in watts
	// (AISimulate's power_w). AISimulate publishes it only when its energy data covers at least
	// 90% of the forward passes; absent otherwise, and from the local recommender, which models
	// no power. Minimum 0.
	// +optional
	// +kubebuilder:validation:Minimum=0
	PowerW *float64 `json:"powerW,omitempty"`
}

// CandidatePercentiles are the predicted latency distributions of a candidate, in milliseconds.
type CandidatePercentiles struct {
	// ttftMs is the time to first token.
	// +optional
	TTFTMs *LatencyPercentiles `json:"ttftMs,omitempty"`
	// itlMs is the inter-token latency (the time per output token where the search reports no
	// inter-token latency, as for metrics.itlMs).
	// +optional
	ITLMs *LatencyPercentiles `json:"itlMs,omitempty"`
	// e2eMs is the end-to-end latency of a request.
	// +optional
	E2EMs *LatencyPercentiles `json:"e2eMs,omitempty"`
}

// LatencyPercentiles are percentiles of a predicted latency, in milliseconds. Each is absent
// when the search did not report it.
type LatencyPercentiles struct {
	// p50 is the median. Minimum 0.
	// +optional
	// +kubebuilder:validation:Minimum=0
	P50 *float64 `json:"p50,omitempty"`
	// p90 is the 90th percentile. Minimum 0.
	// +optional
	// +kubebuilder:validation:Minimum=0
	P90 *float64 `json:"p90,omitempty"`
	// p99 is the 99th percentile. Minimum 0.
	// +optional
	// +kubebuilder:validation:Minimum=0
	P99 *float64 `json:"p99,omitempty"`
}

// CandidateCost is what a candidate costs: amounts are decimal strings in currency, computed
// exactly from the recorded price per GPU-hour.
type CandidateCost struct {
	// currency is the ISO 4217 code of the amounts.
	// +required
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=3
	Currency string `json:"currency,omitempty"`
	// perHour is gpus times the price per GPU-hour, rounded to the currency's minor unit
	// (2 fraction digits for USD).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	PerHour string `json:"perHour,omitempty"`
	// perMillionOutputTokens is perHour divided by the output tokens one hour produces at the
	// modeled throughput, times one million, with two more fraction digits than perHour. Absent
	// when no throughput was modeled.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	PerMillionOutputTokens string `json:"perMillionOutputTokens,omitempty"`
}

// CalibrationMetric names a predicted metric the calibration profile corrects.
// +kubebuilder:validation:Enum=ttftMs;itlMs;throughputPerGpu
type CalibrationMetric string

// The metrics the calibration profile corrects, named as in CandidateMetrics.
const (
	CalibrationMetricTTFTMs           CalibrationMetric = "ttftMs"
	CalibrationMetricITLMs            CalibrationMetric = "itlMs"
	CalibrationMetricThroughputPerGPU CalibrationMetric = "throughputPerGpu"
)

// RunCalibration is what the calibration profile said about the Run's GPU system and model when
// the Run's effective input was recorded.
type RunCalibration struct {
	// minObservations is the number of observations a correction needed to be recorded (the
	// operator configuration's calibration.minObservations).
	// +required
	// +kubebuilder:validation:Minimum=1
	MinObservations int32 `json:"minObservations,omitempty"`
	// corrections are the profile's corrections for the Run's system and model, one per backend,
	// mode, parallelism and metric; at most 64, those with the most observations.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Corrections []CalibrationCorrection `json:"corrections,omitempty"`
}

// CalibrationCorrection is the correction of one metric for one backend, mode and parallelism:
// the observed value is expected to be the predicted one times ratio.
type CalibrationCorrection struct {
	// backend is the inference engine (vllm, sglang, trtllm).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	Backend string `json:"backend,omitempty"`
	// mode is the serving mode (aggregated, disaggregated).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	Mode string `json:"mode,omitempty"`
	// parallelism is the canonical per-role parallelism, e.g. "prefill:tp2,decode:tp4" or
	// "agg:tp4".
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Parallelism string `json:"parallelism,omitempty"`
	// metric is the corrected metric.
	// +required
	Metric CalibrationMetric `json:"metric,omitempty"`
	// ratio is the median of observed / predicted over the observations.
	// +required
	// +kubebuilder:validation:Minimum=0.000001
	// +kubebuilder:validation:Maximum=1000000
	Ratio *float64 `json:"ratio,omitempty"`
	// spread is the median absolute deviation of those ratios from ratio.
	// +required
	// +kubebuilder:validation:Minimum=0
	Spread *float64 `json:"spread,omitempty"`
	// observations is the number of observations behind ratio.
	// +required
	// +kubebuilder:validation:Minimum=1
	Observations int32 `json:"observations,omitempty"`
	// profile says which profile the observations are from: Namespace, the Run's namespace's
	// own, or Cluster, those of the namespaces the operator configuration trusts
	// (calibration.trustedNamespaces), used for a key and metric the namespace's profile has too
	// few observations of. Absent on Runs recorded before profiles were per namespace.
	// +optional
	Profile CalibrationProfile `json:"profile,omitempty"`
}

// CalibrationProfile names a calibration profile a correction comes from.
// +kubebuilder:validation:Enum=Namespace;Cluster
type CalibrationProfile string

// Calibration profiles.
const (
	CalibrationProfileNamespace CalibrationProfile = "Namespace"
	CalibrationProfileCluster   CalibrationProfile = "Cluster"
)

// RunPricing is the price of the Run's GPU system in the operator configuration when the Run's
// effective input was recorded.
type RunPricing struct {
	// system is the AISimulate GPU system id the price is for (the spec's hardware.gpu.sku).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	System string `json:"system,omitempty"`
	// currency is the ISO 4217 code of the price.
	// +required
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=3
	Currency string `json:"currency,omitempty"`
	// pricePerGPUHour is the price of one GPU for one hour, a decimal string.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	PricePerGPUHour string `json:"pricePerGPUHour,omitempty"`
}

// MetricsErrorBand is an estimator's expected relative error on a candidate's latency metrics:
// half of the measured calibration runs were within the median, four in five within the 80th
// percentile (docs/design/aisim.md).
type MetricsErrorBand struct {
	// basis says what the band was measured on, and whether it is extrapolated.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Basis string `json:"basis,omitempty"`
	// extrapolated is true when the candidate lies outside what the measurements cover (another
	// GPU, a MoE model): the band is then a floor, not an estimate.
	// +optional
	Extrapolated bool `json:"extrapolated,omitempty"`
	// ttftPct is the median absolute error of ttftMs, in percent.
	// +optional
	TTFTPct *float64 `json:"ttftPct,omitempty"`
	// ttftP80Pct is the 80th percentile absolute error of ttftMs, in percent.
	// +optional
	TTFTP80Pct *float64 `json:"ttftP80Pct,omitempty"`
	// itlPct is the median absolute error of itlMs (time per output token), in percent.
	// +optional
	ITLPct *float64 `json:"itlPct,omitempty"`
	// itlP80Pct is the 80th percentile absolute error of itlMs, in percent.
	// +optional
	ITLP80Pct *float64 `json:"itlP80Pct,omitempty"`
}

// RecommendationSummary is a compact summary of the search result.
type RecommendationSummary struct {
	// bestCandidate is the name of the best published Candidate.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	BestCandidate string `json:"bestCandidate,omitempty"`
	// metrics of the best candidate.
	// +optional
	Metrics *CandidateMetrics `json:"metrics,omitempty"`
	// implementation is the recommender that produced the result (aisimulate or aisim).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Implementation string `json:"implementation,omitempty"`
	// implementationVersion is the version of the recommender.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	ImplementationVersion string `json:"implementationVersion,omitempty"`
	// view is top_n for scalar targets or pareto_front for pareto.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	View string `json:"view,omitempty"`
	// evaluated is the number of candidates evaluated.
	// +optional
	Evaluated int64 `json:"evaluated,omitempty"`
	// feasible is the number of feasible candidates.
	// +optional
	Feasible int64 `json:"feasible,omitempty"`
	// provisional is true while the summary, candidateRefs and the Candidates they name come from
	// a search that has not ended (the best candidates settled so far). The reporter clears it
	// when it publishes the final ranking; a Run that was cancelled or whose deadline passed keeps
	// what was published with provisional true.
	// +optional
	Provisional bool `json:"provisional,omitempty"`
	// infeasibleReasons counts the candidates that were not feasible (infeasible, failed, timed
	// out, unsupported, resource limited) by the recommender's reason category, most frequent
	// first. At most 16 categories are listed; the rest are counted under "other".
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	InfeasibleReasons []ReasonCount `json:"infeasibleReasons,omitempty"`
}

// ReasonCount is the number of candidates that were not feasible for one reason category.
type ReasonCount struct {
	// category is the recommender's reason category (kv_capacity, sla_constraint, gpu_budget,
	// ...), "unknown" when the recommender gave none.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Category string `json:"category,omitempty"`
	// count is the number of candidates, at least 1 (categories without candidates are not
	// listed).
	// +required
	// +kubebuilder:validation:Minimum=1
	Count int64 `json:"count,omitempty"`
}

// RunArtifacts names the Run-owned ConfigMap that keeps the search's raw output.
type RunArtifacts struct {
	// configMapName is the ConfigMap holding the gzip-compressed recommendation.json and
	// execution-events.jsonl of the search (binaryData keys recommendation.json.gz and
	// execution-events.jsonl.gz). It is controlled by the Run and deleted with it.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ConfigMapName string `json:"configMapName,omitempty"`
	// truncated is true when a file did not fit the ConfigMap's cap (1,000 KiB of compressed
	// data, under the API server's 1 MiB limit for a ConfigMap) and was cut at a line boundary;
	// the kept part ends with a line saying how much was kept.
	// +optional
	Truncated bool `json:"truncated,omitempty"`
}

// CandidateReference names a DynamoGraphDeploymentCandidate in the same namespace.
type CandidateReference struct {
	// name of the Candidate.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`
}

// DynamoGraphDeploymentRunStatus is the observed state of a Run.
type DynamoGraphDeploymentRunStatus struct {
	// conditions of the Run: Completed (the terminal outcome; its reason says how the Run
	// ended) and Queued (why a Run waits).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// phase is a concise display state; the Completed condition is authoritative.
	// +optional
	Phase RunPhase `json:"phase,omitempty"`

	// message is a human-readable explanation of the current state.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Message string `json:"message,omitempty"`

	// aisimulate records the effective input of the search.
	// +optional
	AISimulate *AISimulateStatus `json:"aisimulate,omitempty"`

	// pricing is the price per GPU-hour of the Run's GPU system in the operator configuration,
	// recorded once together with status.aisimulate.input, before the search Job exists. The
	// reporter computes every Candidate's status.metrics.cost from it, so a later change of the
	// price list never changes what this Run's candidates cost. Absent when the configuration
	// has no price for the system.
	// +optional
	Pricing *RunPricing `json:"pricing,omitempty"`

	// calibration is the calibration profile's corrections in effect for the Run's GPU system
	// and model (docs/design/results.md, "Calibration"): those with at least minObservations
	// observations, recorded once together with status.aisimulate.input. The reporter applies
	// them to every Candidate's status.calibration, so a later change of the profile never
	// changes what this Run's candidates predict. Absent when no correction is in effect.
	// +optional
	Calibration *RunCalibration `json:"calibration,omitempty"`

	// baseline is the deployed candidate's predicted metrics under this re-search's traffic
	// (status.aisimulate.baseline), written by the reporter of the baseline Job; by the operator
	// (error only) when the baseline Job ended without it. A re-search Run whose search succeeded
	// ends only once it is written.
	// +optional
	Baseline *BaselineStatus `json:"baseline,omitempty"`

	// jobRef names the search Job.
	// +optional
	JobRef *JobReference `json:"jobRef,omitempty"`

	// baselineJobRef names a re-search's baseline Job, which predicts the deployed candidate
	// under the window the search replays (status.aisimulate.baseline); created once the
	// search's input container has cut the window.
	// +optional
	BaselineJobRef *JobReference `json:"baselineJobRef,omitempty"`

	// startTime is when the search Job was created.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// completionTime is when the Run became terminal.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// lastProgressTime is when the reporter last published progress.
	// +optional
	LastProgressTime *metav1.Time `json:"lastProgressTime,omitempty"`

	// progress counts settled trials.
	// +optional
	Progress *RunProgress `json:"progress,omitempty"`

	// candidateRefs are the published Candidates, best first (Pareto order for pareto).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=20
	CandidateRefs []CandidateReference `json:"candidateRefs,omitempty"`

	// recommendation summarizes the result.
	// +optional
	Recommendation *RecommendationSummary `json:"recommendation,omitempty"`

	// artifacts names the Run-owned object that keeps the search's raw output
	// (recommendation.json and the events ledger, compressed and size-capped), written by the
	// reporter when the search ends or is stopped. `dgdrctl results RUN --raw` prints it.
	// +optional
	Artifacts *RunArtifacts `json:"artifacts,omitempty"`
}

// BaselineStatus is the baseline evaluation's result.
type BaselineStatus struct {
	// candidate is the evaluated Candidate (status.aisimulate.baseline.candidate).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Candidate string `json:"candidate,omitempty"`

	// metrics are the predicted metrics in the Candidates' form (score is the objective).
	// +optional
	Metrics *CandidateMetrics `json:"metrics,omitempty"`

	// meanTpotMs is the mean time per output token, which AISimulate's SLA check compares with
	// sla.itlMs.
	// +optional
	MeanTPOTMs *float64 `json:"meanTpotMs,omitempty"`

	// gpus is the deployment's average GPU count over the replay (gpu_hours / duration).
	// +optional
	GPUs *float64 `json:"gpus,omitempty"`

	// completedRequests is how many requests the replay completed.
	// +optional
	CompletedRequests int64 `json:"completedRequests,omitempty"`

	// error says why the baseline could not be evaluated; metrics are then absent.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Error string `json:"error,omitempty"`
}

// DynamoGraphDeploymentRun is one immutable execution of a DynamoGraphDeploymentRequest
// generation. Created only by the operator; its spec is an exact copy of the admitted request
// spec and never changes.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=dgdrrun,categories=dynamo
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Completed")].reason`
// +kubebuilder:printcolumn:name="Settled",type=integer,JSONPath=`.status.progress.settled`
// +kubebuilder:printcolumn:name="Candidates",type=integer,JSONPath=`.status.progress.published`
// +kubebuilder:printcolumn:name="Best",type=string,JSONPath=`.status.recommendation.bestCandidate`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.spec) || self.spec == oldSelf.spec",message="spec is immutable"
type DynamoGraphDeploymentRun struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the accepted typed search input: an exact copy of the request spec. Immutable.
	// +required
	Spec DynamoGraphDeploymentRequestSpec `json:"spec,omitzero"`

	// status is the observed state, written by the operator and the reporter.
	// +optional
	Status DynamoGraphDeploymentRunStatus `json:"status,omitempty"`
}

// DynamoGraphDeploymentRunList is a list of DynamoGraphDeploymentRun.
// +kubebuilder:object:root=true
type DynamoGraphDeploymentRunList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DynamoGraphDeploymentRun `json:"items"`
}
