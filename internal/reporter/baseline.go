package reporter

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path"
	"path/filepath"
	"time"

	kjson "sigs.k8s.io/json"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/internal/candidates"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
)

// DefaultBaselineGrace bounds how long the reporter waits for the baseline container once the
// search has ended. One prediction costs about one trial of the search, so a baseline still
// running then is stuck.
const DefaultBaselineGrace = 2 * time.Minute

// maxBaselineError is the API's cap on status.baseline.error.
const maxBaselineError = 2048

// PredictionFile is the file the baseline's predict command writes in its output directory.
const PredictionFile = output.PredictionFile

// containerExit is how a watched container ended.
type containerExit struct {
	code int
	err  error
}

// baselineCandidate returns the Candidate a Run's baseline evaluates, or "" for a Run without a
// baseline.
func baselineCandidate(run *v1beta2.DynamoGraphDeploymentRun) string {
	if a := run.Status.AISimulate; a != nil && a.Baseline != nil {
		return a.Baseline.Candidate
	}
	return ""
}

// awaitBaseline waits for the baseline container at most BaselineGrace after the search ended
// and returns what to publish as status.baseline. It returns an error only when ctx ends.
func (r *Reporter) awaitBaseline(ctx context.Context, candidate string, ended <-chan containerExit) (*v1beta2.BaselineStatus, error) {
	timer := time.NewTimer(r.BaselineGrace)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case e := <-ended:
		if e.err != nil {
			return baselineFailed(candidate, fmt.Sprintf("watching the baseline container: %v", e.err)), nil
		}
		r.Log.Info("baseline ended", "exitCode", e.code)
		return BaselineResult(candidate, e.code, r.BaselineDir), nil
	case <-timer.C:
		return baselineFailed(candidate, fmt.Sprintf("the baseline container had not terminated %s after the search ended", r.BaselineGrace)), nil
	}
}

// BaselineResult is status.baseline for a baseline container that exited with exitCode and
// wrote its prediction into dir: the prediction's metrics, or the reason there are none.
func BaselineResult(candidate string, exitCode int, dir string) *v1beta2.BaselineStatus {
	p, err := readPrediction(dir)
	switch {
	case exitCode != 0:
		msg := fmt.Sprintf("the baseline container exited with code %d", exitCode)
		if err == nil && p.PredictionStatus == predictionInvalid {
			msg += ": " + p.reason()
		}
		return baselineFailed(candidate, msg+"; see the baseline container's logs")
	case err != nil:
		return baselineFailed(candidate, err.Error())
	case p.PredictionStatus == predictionInvalid:
		return baselineFailed(candidate, "the baseline prediction is invalid: "+p.reason())
	case p.CompletedRequests == nil:
		return baselineFailed(candidate, baselinePredictionName+" has no completed_requests")
	case *p.CompletedRequests <= 0:
		return baselineFailed(candidate, "the baseline prediction completed no requests")
	}
	return baselineMetrics(candidate, p)
}

// baselineMetrics maps a valid prediction to status.baseline the way a search candidate's
// metrics are mapped (candidates.Metrics). The score stays empty: the request controller
// computes the objective.
func baselineMetrics(candidate string, p *prediction) *v1beta2.BaselineStatus {
	metrics := p.metrics()
	out := &v1beta2.BaselineStatus{Candidate: candidate, MeanTPOTMs: p.MeanTPOTMs, CompletedRequests: *p.CompletedRequests}
	var used int
	if p.GPUHours != nil && p.DurationMs != nil && *p.DurationMs > 0 {
		// AISimulate's average GPU count (sweeper/score.py _avg_gpu): the GPU count of a static
		// deployment.
		gpus := *p.GPUHours / (*p.DurationMs / 3.6e6)
		out.GPUs = &gpus
		used = int(math.Round(gpus))
		if tput, ok := metrics["output_throughput_tok_s"]; ok && gpus > 0 {
			if _, ok := metrics["output_throughput_tok_s_per_gpu"]; !ok {
				metrics["output_throughput_tok_s_per_gpu"] = tput / gpus
			}
		}
	}
	out.Metrics = candidates.Metrics(&output.Candidate{Metrics: metrics, UsedGPUs: used})
	return out
}

func baselineFailed(candidate, msg string) *v1beta2.BaselineStatus {
	if len(msg) > maxBaselineError {
		msg = msg[:maxBaselineError-len("…")] + "…"
	}
	return &v1beta2.BaselineStatus{Candidate: candidate, Error: msg}
}

// baselinePredictionName names prediction.json relative to the output volume in messages.
var baselinePredictionName = path.Join(path.Base(jobcontract.BaselineOutputDir), PredictionFile)

// readPrediction reads dir/prediction.json through the output caps and decodes it.
func readPrediction(dir string) (*prediction, error) {
	data, err := candidates.ReadCapped(filepath.Join(dir, PredictionFile), baselinePredictionName, jobcontract.MaxPredictionBytes)
	if err != nil {
		return nil, fmt.Errorf("reading the baseline's prediction: %w", err)
	}
	p, err := decodePrediction(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", baselinePredictionName, err)
	}
	return p, nil
}

// decodePrediction decodes prediction.json: the one place that knows its shape.
var decodePrediction = decodeFlatPrediction

const predictionInvalid = "invalid"

// prediction is what the baseline publishes from AISimulate's prediction.json. Serving metrics
// are null when no request completed.
type prediction struct {
	PredictionStatus  string   `json:"prediction_status"`
	StopReason        string   `json:"stop_reason"`
	Diagnostic        string   `json:"diagnostic"`
	CompletedRequests *int64   `json:"completed_requests"`
	GPUHours          *float64 `json:"gpu_hours"`
	DurationMs        *float64 `json:"duration_ms"`
	MeanTTFTMs        *float64 `json:"mean_ttft_ms"`
	MeanITLMs         *float64 `json:"mean_itl_ms"`
	MeanTPOTMs        *float64 `json:"mean_tpot_ms"`
	MeanE2EMs         *float64 `json:"mean_e2e_latency_ms"`
	Throughput        *float64 `json:"output_throughput_tok_s"`
	ThroughputPerGPU  *float64 `json:"output_throughput_tok_s_per_gpu"`
	ThroughputPerUser *float64 `json:"mean_output_token_throughput_per_user"`
	RequestsPerSecond *float64 `json:"request_throughput_rps"`
}

// decodeFlatPrediction decodes the real AISimulate's prediction.json: the flat summary `predict
// --format json` prints, plus diagnostics (ignored). Keys match case-sensitively.
func decodeFlatPrediction(data []byte) (*prediction, error) {
	// The summary is nested when AISimulate keeps the native report ({summary, ...}).
	var nested struct {
		Summary json.RawMessage `json:"summary"`
	}
	if kjson.UnmarshalCaseSensitivePreserveInts(data, &nested) == nil && len(nested.Summary) > 0 && nested.Summary[0] == '{' {
		data = nested.Summary
	}
	var p prediction
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &p); err != nil {
		return nil, fmt.Errorf("not a prediction report: %w", err)
	}
	return &p, nil
}

// metrics are the prediction's serving metrics under the keys of a recommendation's candidate
// metrics, for candidates.Metrics.
func (p *prediction) metrics() map[string]float64 {
	m := map[string]float64{}
	for k, v := range map[string]*float64{
		"mean_ttft_ms":                          p.MeanTTFTMs,
		"mean_itl_ms":                           p.MeanITLMs,
		"mean_tpot_ms":                          p.MeanTPOTMs,
		"mean_e2e_latency_ms":                   p.MeanE2EMs,
		"output_throughput_tok_s":               p.Throughput,
		"output_throughput_tok_s_per_gpu":       p.ThroughputPerGPU,
		"mean_output_token_throughput_per_user": p.ThroughputPerUser,
		"request_throughput_rps":                p.RequestsPerSecond,
	} {
		if v != nil {
			m[k] = *v
		}
	}
	return m
}

// reason says why AISimulate marked the prediction invalid.
func (p *prediction) reason() string {
	switch {
	case p.StopReason != "" && p.Diagnostic != "":
		return p.StopReason + ": " + p.Diagnostic
	case p.StopReason != "":
		return p.StopReason
	case p.Diagnostic != "":
		return p.Diagnostic
	}
	return "no reason given"
}
