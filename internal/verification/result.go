package verification

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

// Reasons of a Failed verification (status.verification.reason).
const (
	ReasonNotConfigured       = "NotConfigured"
	ReasonNoModeledMetrics    = "NoModeledMetrics"
	ReasonFrontendUnreachable = "FrontendUnreachable"
	ReasonTimedOut            = "TimedOut"
	ReasonErrorRateExceeded   = "ErrorRateExceeded"
	ReasonNoRequestsCompleted = "NoRequestsCompleted"
	ReasonJobFailed           = "JobFailed"
	ReasonOutputRejected      = "OutputRejected"
	// ReasonPodFailedToStart: the verification pod could not start (podstart), or the Job
	// created none; the Job was deleted.
	ReasonPodFailedToStart = "PodFailedToStart"
)

// MaxResultBytes caps the result the operator reads: the kubelet's own cap on a termination
// message. Anything longer was not written by the launcher and is refused.
const MaxResultBytes = 4096

// AIPerf export keys read (profile_export_aiperf.json): each an object of statistics.
const (
	keyTTFT           = "time_to_first_token"
	keyITL            = "inter_token_latency"
	keyThroughput     = "output_token_throughput"
	keyCompleted      = "completed_request_count"
	keyRequestCount   = "request_count"
	keyErrorRate      = "request_error_rate"
	keyErrorSummary   = "error_summary"
	unitMilliseconds  = "ms"
	unitTokensPerSec  = "tokens/sec"
	unitPercent       = "%"
	unitRequestsCount = "requests"
)

// stat is one AIPerf metric: its unit and statistics.
type stat struct {
	Unit string   `json:"unit"`
	Avg  *float64 `json:"avg"`
	P50  *float64 `json:"p50"`
	P90  *float64 `json:"p90"`
	P99  *float64 `json:"p99"`
}

// errorCount is one entry of AIPerf's error_summary.
type errorCount struct {
	Count int64 `json:"count"`
}

// termination is the launcher's result (launcher.py).
type termination struct {
	ExitCode            *int                       `json:"exitCode"`
	AIPerfVersion       string                     `json:"aiperfVersion"`
	Errors              int64                      `json:"errors"`
	FrontendUnreachable bool                       `json:"frontendUnreachable"`
	TimedOut            bool                       `json:"timedOut"`
	Error               string                     `json:"error"`
	AIPerf              map[string]json.RawMessage `json:"aiperf"`
	Records             *recordCounts              `json:"records"`
}

// recordCounts are AIPerf's per-request records counted by the launcher when AIPerf wrote no
// summary (it writes none when no request succeeded).
type recordCounts struct {
	Succeeded  int64  `json:"succeeded"`
	Failed     int64  `json:"failed"`
	FirstError string `json:"firstError"`
}

// Outcome is what a finished verification Job measured, or why it measured nothing usable.
type Outcome struct {
	Observed *v1beta2.ObservedMetrics
	// FailReason is one of the Reason constants when nothing usable was measured.
	FailReason string
	Message    string
}

// ParseResult reads the launcher's termination message of a finished Job. gpus is the
// candidate's GPU count (throughput per GPU).
func ParseResult(msg []byte, gpus int32) Outcome {
	if len(msg) > MaxResultBytes {
		return Outcome{FailReason: ReasonOutputRejected, Message: fmt.Sprintf("the result is %d bytes, over the cap of %d", len(msg), MaxResultBytes)}
	}
	var t termination
	dec := json.NewDecoder(bytes.NewReader(msg))
	if err := dec.Decode(&t); err != nil {
		return Outcome{FailReason: ReasonOutputRejected, Message: "the result is not the launcher's JSON: " + err.Error()}
	}
	detail := clip(t.Error, 512)
	switch {
	case t.FrontendUnreachable:
		return Outcome{FailReason: ReasonFrontendUnreachable, Message: "the frontend did not answer GET /v1/models with the model: " + detail}
	case t.TimedOut:
		return Outcome{FailReason: ReasonTimedOut, Message: detail}
	case t.AIPerf == nil && t.Records != nil && t.Records.Succeeded >= 0 && t.Records.Failed >= 0:
		out := judgeErrors(&v1beta2.ObservedMetrics{Requests: t.Records.Succeeded, Errors: t.Records.Failed})
		if out.FailReason == "" {
			out = Outcome{FailReason: ReasonJobFailed}
		}
		out.Observed = nil
		out.Message = fmt.Sprintf("AIPerf wrote no summary (exit code %s): %d requests succeeded, %d failed; first error: %s",
			exitCode(t.ExitCode), t.Records.Succeeded, t.Records.Failed, clip(t.Records.FirstError, 256))
		return out
	case t.AIPerf == nil:
		return Outcome{FailReason: ReasonJobFailed, Message: fmt.Sprintf("AIPerf wrote no result (exit code %s): %s", exitCode(t.ExitCode), detail)}
	}
	obs, err := observedFrom(t.AIPerf, t.Errors, gpus)
	if err != nil {
		return Outcome{FailReason: ReasonOutputRejected, Message: err.Error()}
	}
	return judgeErrors(obs)
}

// ParseExport reads AIPerf's own export (profile_export_aiperf.json), as written by the
// version the launcher runs.
func ParseExport(data []byte, gpus int32) (*v1beta2.ObservedMetrics, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("the AIPerf export is not a JSON object: %w", err)
	}
	var errs []errorCount
	if raw, ok := doc[keyErrorSummary]; ok {
		if err := json.Unmarshal(raw, &errs); err != nil {
			return nil, fmt.Errorf("%s: %w", keyErrorSummary, err)
		}
	}
	var n int64
	for _, e := range errs {
		n += e.Count
	}
	return observedFrom(doc, n, gpus)
}

// observedFrom turns AIPerf statistics into observed metrics, checking units and values.
func observedFrom(doc map[string]json.RawMessage, errorCount int64, gpus int32) (*v1beta2.ObservedMetrics, error) {
	get := func(key, unit string) (*stat, error) {
		raw, ok := doc[key]
		if !ok {
			return nil, nil
		}
		var s stat
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("aiperf.%s: %w", key, err)
		}
		if s.Unit != unit {
			return nil, fmt.Errorf("aiperf.%s.unit is %q, want %q", key, s.Unit, unit)
		}
		for name, v := range map[string]*float64{"avg": s.Avg, "p50": s.P50, "p90": s.P90, "p99": s.P99} {
			if v != nil && (math.IsNaN(*v) || math.IsInf(*v, 0) || *v < 0) {
				return nil, fmt.Errorf("aiperf.%s.%s is %v, want a finite non-negative number", key, name, *v)
			}
		}
		return &s, nil
	}
	obs := &v1beta2.ObservedMetrics{Errors: errorCount}
	ttft, err := get(keyTTFT, unitMilliseconds)
	if err != nil {
		return nil, err
	}
	itl, err := get(keyITL, unitMilliseconds)
	if err != nil {
		return nil, err
	}
	tput, err := get(keyThroughput, unitTokensPerSec)
	if err != nil {
		return nil, err
	}
	completed, err := get(keyCompleted, unitRequestsCount)
	if err != nil {
		return nil, err
	}
	count, err := get(keyRequestCount, unitRequestsCount)
	if err != nil {
		return nil, err
	}
	errRate, err := get(keyErrorRate, unitPercent)
	if err != nil {
		return nil, err
	}
	obs.TTFTMs = percentiles(ttft)
	obs.ITLMs = percentiles(itl)
	if tput != nil && tput.Avg != nil {
		obs.Throughput = ptrTo(*tput.Avg)
		if gpus > 0 {
			obs.ThroughputPerGPU = ptrTo(*tput.Avg / float64(gpus))
		}
	}
	// completed_request_count counts successes and errors; request_count the successes.
	switch {
	case count != nil && count.Avg != nil:
		obs.Requests = int64(*count.Avg)
	case completed != nil && completed.Avg != nil:
		obs.Requests = max(0, int64(*completed.Avg)-errorCount)
	}
	if errRate != nil && errRate.Avg != nil && errorCount == 0 && *errRate.Avg > 0 {
		// The rate without a summary: derive the count from it.
		obs.Errors = int64(math.Round(*errRate.Avg / (100 - min(*errRate.Avg, 99.999)) * float64(obs.Requests)))
	}
	return obs, nil
}

// judgeErrors fails a measurement with too many errors or no completed request.
func judgeErrors(obs *v1beta2.ObservedMetrics) Outcome {
	total := obs.Requests + obs.Errors
	if obs.Requests == 0 {
		return Outcome{Observed: obs, FailReason: ReasonNoRequestsCompleted, Message: fmt.Sprintf("no request completed (%d failed)", obs.Errors)}
	}
	if rate := 100 * float64(obs.Errors) / float64(total); rate > MaxErrorRatePct {
		return Outcome{Observed: obs, FailReason: ReasonErrorRateExceeded,
			Message: fmt.Sprintf("%d of %d requests failed (%.1f%%, above %g%%)", obs.Errors, total, rate, MaxErrorRatePct)}
	}
	return Outcome{Observed: obs}
}

func percentiles(s *stat) *v1beta2.Percentiles {
	if s == nil || s.Avg == nil {
		return nil
	}
	return &v1beta2.Percentiles{Mean: copyPtr(s.Avg), P50: copyPtr(s.P50), P90: copyPtr(s.P90), P99: copyPtr(s.P99)}
}

// Judge compares each prediction with its observation: the means and the 90th and 99th
// percentiles alike. It returns the compared metrics and the names of those outside their
// tolerance (empty: the prediction held). A metric AIPerf did not measure is left out.
func Judge(p *Plan, obs *v1beta2.ObservedMetrics) ([]v1beta2.VerifiedMetric, []string) {
	var out []v1beta2.VerifiedMetric
	var outside []string
	for _, pr := range p.Predictions {
		observed := observedOf(obs, pr.Name)
		if observed == nil {
			continue
		}
		rel := 100 * math.Abs(*observed-pr.Value) / pr.Value
		held := rel <= pr.Tolerance
		out = append(out, v1beta2.VerifiedMetric{
			Name: pr.Name, Predicted: ptrTo(pr.Value), Observed: ptrTo(*observed),
			RelativeErrorPct: ptrTo(round(rel, 2)), BandPct: copyPtr(pr.BandPct),
			TolerancePct: ptrTo(pr.Tolerance), Held: ptrTo(held),
		})
		if !held {
			outside = append(outside, fmt.Sprintf("%s (observed %.4g, predicted %.4g: %.1f%% off, tolerance %g%%)", pr.Name, *observed, pr.Value, rel, pr.Tolerance))
		}
	}
	return out, outside
}

// observedOf is the measured value of the metric name: AIPerf's mean, or the percentile the
// name says; nil when AIPerf did not measure it.
func observedOf(obs *v1beta2.ObservedMetrics, name v1beta2.VerificationMetricName) *float64 {
	stat := func(p *v1beta2.Percentiles, get func(*v1beta2.Percentiles) *float64) *float64 {
		if p == nil {
			return nil
		}
		return get(p)
	}
	mean := func(p *v1beta2.Percentiles) *float64 { return p.Mean }
	p90 := func(p *v1beta2.Percentiles) *float64 { return p.P90 }
	p99 := func(p *v1beta2.Percentiles) *float64 { return p.P99 }
	switch name {
	case v1beta2.MetricTTFTMs:
		return stat(obs.TTFTMs, mean)
	case v1beta2.MetricTTFTP90Ms:
		return stat(obs.TTFTMs, p90)
	case v1beta2.MetricTTFTP99Ms:
		return stat(obs.TTFTMs, p99)
	case v1beta2.MetricITLMs:
		return stat(obs.ITLMs, mean)
	case v1beta2.MetricITLP90Ms:
		return stat(obs.ITLMs, p90)
	case v1beta2.MetricITLP99Ms:
		return stat(obs.ITLMs, p99)
	case v1beta2.MetricThroughputPerGPU:
		return obs.ThroughputPerGPU
	}
	return nil
}

func round(v float64, digits int) float64 {
	f := math.Pow(10, float64(digits))
	return math.Round(v*f) / f
}

func exitCode(c *int) string {
	if c == nil {
		return "unknown"
	}
	return fmt.Sprint(*c)
}

func clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "?")
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
