package reporter

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path"
	"path/filepath"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/internal/apiretry"
	"github.com/dgdr-operator/dgdr-operator/internal/candidates"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/internal/searchoutput"
)

// maxBaselineError is the API's cap on status.baseline.error.
const maxBaselineError = 2048

// PredictionFile is the file the baseline's predict command writes in its output directory.
const PredictionFile = output.PredictionFile

// baselineCandidate returns the Candidate a Run's baseline evaluates, or "" for a Run without a
// baseline.
func baselineCandidate(run *v1beta2.DynamoGraphDeploymentRun) string {
	if a := run.Status.AISimulate; a != nil && a.Baseline != nil {
		return a.Baseline.Candidate
	}
	return ""
}

// PublishBaseline is the reporter of a re-search's baseline Job: it waits for the baseline
// container (Watcher) to end, reads its prediction from OutputDir and publishes it, or why
// there is none, as the Run's status.baseline. It returns what it published; an error when
// there is no baseline to publish (the Run records none) or the write failed.
func (r *Reporter) PublishBaseline(ctx context.Context) (*v1beta2.BaselineStatus, error) {
	r.defaults()
	if r.Watcher == nil {
		return nil, errors.New("no baseline watcher configured")
	}
	run, err := r.getRun(ctx)
	if err != nil {
		return nil, err
	}
	candidate := baselineCandidate(run)
	if candidate == "" {
		return nil, fmt.Errorf("the Run %s/%s records no baseline (status.aisimulate.baseline)", r.Namespace, r.RunName)
	}
	code, err := r.Watcher.Wait(ctx)
	if err != nil {
		return nil, fmt.Errorf("waiting for the baseline to end: %w", err)
	}
	r.Log.Info("baseline ended", "exitCode", code)
	var target v1beta2.ObjectiveTarget
	if o := run.Spec.Objective; o != nil {
		target = o.Target
	}
	b := BaselineResult(candidate, target, code, r.OutputDir)
	err = apiretry.Do(ctx, r.APIRetryTimeout, r.logRetry("publishing the baseline"), func() error {
		return r.patchStatus(ctx, run, statusPatch{Baseline: b})
	})
	if err != nil {
		return nil, fmt.Errorf("patching status.baseline of Run %s: %w", run.Name, err)
	}
	r.Log.Info("published the baseline", "candidate", b.Candidate, "error", b.Error)
	return b, nil
}

// BaselineResult is status.baseline for a baseline container that exited with exitCode and
// wrote its prediction into dir: the prediction's metrics and its score for the Run's objective
// target, or the reason there are none.
func BaselineResult(candidate string, target v1beta2.ObjectiveTarget, exitCode int, dir string) *v1beta2.BaselineStatus {
	p, err := readPrediction(dir)
	completed, hasCompleted := 0.0, false
	if err == nil {
		completed, hasCompleted = p.Metric(output.KeyCompletedRequests)
	}
	switch {
	case exitCode != 0:
		msg := fmt.Sprintf("the baseline container exited with code %d", exitCode)
		if err == nil && p.Status == output.PredictionInvalid {
			msg += ": " + invalidReason(p)
		}
		return baselineFailed(candidate, msg+"; see the baseline container's logs")
	case err != nil:
		return baselineFailed(candidate, err.Error())
	case p.Status == output.PredictionInvalid:
		return baselineFailed(candidate, "the baseline prediction is invalid: "+invalidReason(p))
	case !hasCompleted || completed <= 0:
		return baselineFailed(candidate, "the baseline prediction completed no requests")
	}
	return baselineMetrics(candidate, target, p)
}

// baselineMetrics maps a valid prediction to status.baseline the way a search candidate's
// metrics are mapped (candidates.Metrics), with the score AISimulate's recommend would give it.
func baselineMetrics(candidate string, target v1beta2.ObjectiveTarget, p *output.Prediction) *v1beta2.BaselineStatus {
	report := p.Report()
	completed, _ := p.Metric(output.KeyCompletedRequests)
	out := &v1beta2.BaselineStatus{Candidate: candidate, CompletedRequests: int64(completed)}
	if v, ok := p.Metric(output.KeyMeanTPOT); ok {
		out.MeanTPOTMs = &v
	}
	var used int
	// AISimulate's average GPU count (sweeper/score.py _avg_gpu): the GPU count of a static
	// deployment.
	if gpus := report.AvgGPUs(); gpus > 0 {
		out.GPUs = &gpus
		used = int(math.Round(gpus))
		if tput, ok := report[output.KeyOutputThroughput]; ok {
			if _, ok := report[output.KeyOutputThroughputPerGPU]; !ok {
				report[output.KeyOutputThroughputPerGPU] = tput / gpus
			}
		}
	}
	rec := &output.Candidate{Metrics: report, UsedGPUs: used}
	if name, ok := aisimulate.TargetName(orDefaultTarget(target)); ok && name != output.TargetPareto {
		if score, err := output.Score(name, report, output.GPUs{Provisioned: used, Basis: output.TimeAveragedGPUs}); err == nil && !math.IsInf(score, 0) && !math.IsNaN(score) {
			rec.Score = &score
		}
	}
	out.Metrics = candidates.Metrics(rec)
	return out
}

func orDefaultTarget(t v1beta2.ObjectiveTarget) v1beta2.ObjectiveTarget {
	if t == "" {
		return v1beta2.TargetThroughputPerGPU
	}
	return t
}

// invalidReason says why AISimulate marked a prediction invalid.
func invalidReason(p *output.Prediction) string {
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

func baselineFailed(candidate, msg string) *v1beta2.BaselineStatus {
	if len(msg) > maxBaselineError {
		msg = msg[:maxBaselineError-len("…")] + "…"
	}
	return &v1beta2.BaselineStatus{Candidate: candidate, Error: msg}
}

// baselinePredictionName names prediction.json relative to the output volume in messages.
var baselinePredictionName = path.Join(path.Base(jobcontract.BaselineOutputDir), PredictionFile)

// readPrediction reads dir/prediction.json through the output caps and decodes it.
func readPrediction(dir string) (*output.Prediction, error) {
	data, err := searchoutput.ReadCapped(filepath.Join(dir, PredictionFile), baselinePredictionName, searchoutput.MaxPredictionBytes)
	if err != nil {
		return nil, fmt.Errorf("reading the baseline's prediction: %w", err)
	}
	p, err := output.ParsePrediction(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", baselinePredictionName, err)
	}
	return p, nil
}
