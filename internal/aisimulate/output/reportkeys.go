package output

// Keys of AISimulate's flat replay report (predict.py run_prediction; sweeper/score.py reads
// them): prediction.json and a candidate record's metrics. They are spelled here only; every
// reader and writer of a report names them through these constants (a layout test holds the
// rest of the tree to it).
const (
	KeyRequests          = "num_requests"
	KeyCompletedRequests = "completed_requests"
	KeyTTFTSamples       = "num_ttft_samples"
	KeyTPOTSamples       = "num_tpot_samples"
	KeyITLSamples        = "num_itl_samples"
	KeyE2ELatencySamples = "num_e2e_latency_samples"
	KeyInputTokens       = "total_input_tokens"
	KeyOutputTokens      = "total_output_tokens"
	// KeyDurationMs is the replay's duration; with KeyGPUHours it gives the time-averaged GPU
	// count (Report.AvgGPUs).
	KeyDurationMs = "duration_ms"
	// KeyGPUHours is the provisioned GPUs integrated over the replay.
	KeyGPUHours = "gpu_hours"

	KeyRequestThroughput = "request_throughput_rps"
	KeyInputThroughput   = "input_throughput_tok_s"
	KeyOutputThroughput  = "output_throughput_tok_s"
	KeyTotalThroughput   = "total_throughput_tok_s"
	// KeyOutputThroughputPerGPU is the local recommender's own key (output throughput over the
	// used GPUs); AISimulate's records have none.
	KeyOutputThroughputPerGPU = "output_throughput_tok_s_per_gpu"
	// KeyThroughputPerUser is the mean output token rate one request sees.
	KeyThroughputPerUser = StatMean + "_" + DistThroughputPerUser

	// The goodput keys are present only when the replay had an SLA.
	KeyGoodputCompleted         = "goodput_completed_requests"
	KeyGoodputRequestThroughput = "goodput_request_throughput_rps"
	KeyGoodputOutputThroughput  = "goodput_output_throughput_tok_s"

	KeyMeanTTFT       = StatMean + "_" + DistTTFT
	KeyMeanTPOT       = StatMean + "_" + DistTPOT
	KeyMeanITL        = StatMean + "_" + DistITL
	KeyMeanE2ELatency = StatMean + "_" + DistE2ELatency

	KeyPrefixCacheReusedRatio               = "prefix_cache_reused_ratio"
	KeyFirstAdmissionPrefixCacheReusedRatio = "first_admission_prefix_cache_reused_ratio"
	KeyCommittedPrefillTokens               = "committed_prefill_tokens"

	// The simulator's own speed.
	KeyWallTimeMs                     = "wall_time_ms"
	KeyProcessedTokens                = "processed_tokens"
	KeyProcessedTokensPerSecond       = "processed_tokens_per_s"
	KeyProcessedOutputTokensPerSecond = "processed_output_tokens_per_s"

	KeyPowerW        = "power_w"
	KeyPowerCoverage = "power_coverage"
)

// Distributions the report gives statistics of (StatKey), named as the error band names its
// metrics (ErrorBand.Metrics).
const (
	DistTTFT       = "ttft_ms"
	DistTTST       = "ttst_ms"
	DistTPOT       = "tpot_ms"
	DistITL        = "itl_ms"
	DistE2ELatency = "e2e_latency_ms"
	// DistThroughputPerUser is the output token rate each request saw.
	DistThroughputPerUser = "output_token_throughput_per_user"
)

// Statistics of a distribution (StatKey). A prediction has StatsOfPrediction; a local
// recommender's candidate record has mean, p50, p90 and p99.
const (
	StatMean   = "mean"
	StatMin    = "min"
	StatMax    = "max"
	StatMedian = "median"
	StatP50    = "p50"
	StatP75    = "p75"
	StatP90    = "p90"
	StatP95    = "p95"
	StatP99    = "p99"
	StatStd    = "std"
)

// StatsOfPrediction are the statistics a prediction reports of each distribution (AISimulate's
// detail.py), in its order.
var StatsOfPrediction = []string{StatMean, StatMin, StatMax, StatMedian, StatP75, StatP90, StatP95, StatP99, StatStd}

// StatKey is the key of statistic stat of distribution dist, e.g. p90_ttft_ms.
func StatKey(stat, dist string) string { return stat + "_" + dist }

// GPUsPerWorkerKey is the GPUs of one worker of side (prefill or decode; an aggregated worker
// counts as decode).
func GPUsPerWorkerKey(side string) string { return side + "_gpus_per_worker" }

// WorkerSecondsKey is the worker-seconds of side (prefill or decode).
func WorkerSecondsKey(side string) string { return side + "_worker_seconds" }

// Report is a flat replay report without its null values (Prediction.Report), or a candidate
// record's metrics: the numbers AISimulate scores.
type Report map[string]float64

// AvgGPUs is AISimulate's time-averaged provisioned GPU count (sweeper/score.py _avg_gpu):
// gpu_hours over the duration in hours, the GPU count of a static deployment. 0 when either is
// missing or not positive.
func (r Report) AvgGPUs() float64 {
	hours, ms := r[KeyGPUHours], r[KeyDurationMs]
	if hours <= 0 || ms <= 0 {
		return 0
	}
	return hours / (ms / msPerHour)
}

const msPerHour = 3.6e6

// GPUHours is the gpu_hours of gpus GPUs provisioned for durationMs.
func GPUHours(gpus, durationMs float64) float64 { return gpus * durationMs / msPerHour }
