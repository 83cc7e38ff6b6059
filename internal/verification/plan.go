// Package verification measures a deployed candidate: it resolves what to measure from the
// request and the candidate (Resolve), builds the Job that drives the frontend with AIPerf
// (BuildJob), reads the Job's result (ParseResult) and compares it with the prediction (Judge).
// Everything here is pure; the request's deployment reconciler (internal/controller/deployment)
// does the I/O.
package verification

import (
	"fmt"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/specdefaults"
)

// Bounds of a verification (its defaults: internal/specdefaults).
const (
	// MaxErrorRatePct is the share of failed requests above which a verification is Failed
	// (reason ErrorRateExceeded): the latencies of the others say little then.
	MaxErrorRatePct float64 = 5
	// StartGraceSeconds is added to maxDurationSeconds for the Job's deadline: the pod's start
	// and the frontend probe.
	StartGraceSeconds int64 = 120
	// MaxLoad bounds a predicted concurrency or request rate taken over from the candidate, as
	// spec.deployment.verification.load bounds an explicit one.
	MaxLoad = 10000
)

// Enabled tells whether the request asks for verification (with autoApply, which deploys).
func Enabled(dgdr *v1beta2.DynamoGraphDeploymentRequest) bool {
	d := dgdr.Spec.Deployment
	return d != nil && d.Verification != nil && d.Verification.Enabled != nil && *d.Verification.Enabled
}

// Prediction is what the search predicted for one metric.
type Prediction struct {
	Name      v1beta2.VerificationMetricName
	Value     float64
	BandPct   *float64
	Tolerance float64
}

// Plan is one verification resolved: what to offer and what to expect.
type Plan struct {
	// Load is the concurrency or request rate offered and, for synthetic requests, their token
	// lengths; a trace replayed at its timestamps has neither concurrency nor rate.
	Load v1beta2.VerificationLoad
	// Trace is the trace replayed instead of synthetic requests.
	Trace *TraceReplay
	// Requests is how many requests are sent; 0 replays the whole trace.
	Requests           int32
	MaxDurationSeconds int32
	// GPUs of the candidate, to turn the observed throughput into throughput per GPU.
	GPUs        int32
	Predictions []Prediction
	// LoadAsPredicted tells whether the Job offers the traffic the prediction was made at;
	// LoadDifference says how it differs otherwise.
	LoadAsPredicted bool
	LoadDifference  string
}

// Resolve completes the request's verification settings with the traffic of the candidate's
// prediction (its spec.parameters; searched says what its Run replayed) and its error band. It
// fails when the candidate has no predicted metric to compare.
func Resolve(dgdr *v1beta2.DynamoGraphDeploymentRequest, cand *v1beta2.DynamoGraphDeploymentCandidate, searched Searched) (*Plan, error) {
	spec := &v1beta2.VerificationSpec{}
	if d := dgdr.Spec.Deployment; d != nil && d.Verification != nil {
		spec = d.Verification
	}
	p := &Plan{
		MaxDurationSeconds: valueOr(spec.MaxDurationSeconds, specdefaults.VerificationMaxDurationSeconds),
		GPUs:               cand.Spec.GPUs,
	}
	resolveLoad(p, dgdr, cand, spec.Load, searched)
	switch {
	case spec.Requests != nil:
		p.Requests = *spec.Requests
	case p.Trace == nil:
		p.Requests = specdefaults.VerificationRequests
	}
	m := cand.Status.Metrics
	if m == nil {
		return nil, fmt.Errorf("candidate %s has no predicted metrics (status.metrics)", cand.Name)
	}
	var tol v1beta2.VerificationTolerance
	if spec.Tolerance != nil {
		tol = *spec.Tolerance
	}
	var ttftBand, itlBand *float64
	if b := m.ErrorBand; b != nil {
		ttftBand, itlBand = copyPtr(b.TTFTP80Pct), copyPtr(b.ITLP80Pct)
	}
	add := func(name v1beta2.VerificationMetricName, value *float64, band, explicit *float64) {
		if value == nil || *value <= 0 {
			return
		}
		t := specdefaults.VerificationTolerancePct
		switch {
		case explicit != nil:
			t = *explicit
		case band != nil && *band > 0:
			t = *band
		}
		p.Predictions = append(p.Predictions, Prediction{Name: name, Value: *value, BandPct: band, Tolerance: t})
	}
	var pct v1beta2.CandidatePercentiles
	if m.Percentiles != nil {
		pct = *m.Percentiles
	}
	// A percentile is judged with its metric's tolerance.
	add(v1beta2.MetricTTFTMs, m.TTFTMs, ttftBand, tol.TTFTPct)
	add(v1beta2.MetricTTFTP90Ms, p90(pct.TTFTMs), ttftBand, tol.TTFTPct)
	add(v1beta2.MetricTTFTP99Ms, p99(pct.TTFTMs), ttftBand, tol.TTFTPct)
	add(v1beta2.MetricITLMs, m.ITLMs, itlBand, tol.ITLPct)
	add(v1beta2.MetricITLP90Ms, p90(pct.ITLMs), itlBand, tol.ITLPct)
	add(v1beta2.MetricITLP99Ms, p99(pct.ITLMs), itlBand, tol.ITLPct)
	add(v1beta2.MetricThroughputPerGPU, m.ThroughputPerGPU, nil, tol.ThroughputPerGPUPct)
	if len(p.Predictions) == 0 {
		return nil, fmt.Errorf("candidate %s predicts none of ttftMs, itlMs, throughputPerGpu", cand.Name)
	}
	return p, nil
}

func p90(l *v1beta2.LatencyPercentiles) *float64 {
	if l == nil {
		return nil
	}
	return l.P90
}

func p99(l *v1beta2.LatencyPercentiles) *float64 {
	if l == nil {
		return nil
	}
	return l.P99
}

// CalibrationMetrics are the compared metrics the calibration profile keeps: the means and
// the throughput per GPU (v1beta2.CalibrationMetric), not the percentiles.
func CalibrationMetrics(metrics []v1beta2.VerifiedMetric) []v1beta2.VerifiedMetric {
	var out []v1beta2.VerifiedMetric
	for _, m := range metrics {
		switch v1beta2.CalibrationMetric(m.Name) {
		case v1beta2.CalibrationMetricTTFTMs, v1beta2.CalibrationMetricITLMs, v1beta2.CalibrationMetricThroughputPerGPU:
			out = append(out, m)
		}
	}
	return out
}

func valueOr[T any](p *T, def T) T {
	if p != nil {
		return *p
	}
	return def
}

func copyPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func ptrTo[T any](v T) *T { return &v }
