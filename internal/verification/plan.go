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
	// MaxLoad bounds a modeled concurrency or request rate taken over from the workload, as
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
	Load               v1beta2.VerificationLoad
	Requests           int32
	MaxDurationSeconds int32
	// GPUs of the candidate, to turn the observed throughput into throughput per GPU.
	GPUs        int32
	Predictions []Prediction
}

// Resolve completes the request's verification settings with the candidate's modeled operating
// point and error band. It fails when the candidate has no predicted metric to compare.
func Resolve(dgdr *v1beta2.DynamoGraphDeploymentRequest, cand *v1beta2.DynamoGraphDeploymentCandidate) (*Plan, error) {
	spec := &v1beta2.VerificationSpec{}
	if d := dgdr.Spec.Deployment; d != nil && d.Verification != nil {
		spec = d.Verification
	}
	p := &Plan{
		Requests:           valueOr(spec.Requests, specdefaults.VerificationRequests),
		MaxDurationSeconds: valueOr(spec.MaxDurationSeconds, specdefaults.VerificationMaxDurationSeconds),
		GPUs:               cand.Spec.GPUs,
		Load:               modeledLoad(dgdr),
	}
	if l := spec.Load; l != nil {
		p.Load.Concurrency, p.Load.RequestsPerSecond = copyPtr(l.Concurrency), copyPtr(l.RequestsPerSecond)
		if l.InputTokens != nil {
			p.Load.InputTokens = copyPtr(l.InputTokens)
		}
		if l.OutputTokens != nil {
			p.Load.OutputTokens = copyPtr(l.OutputTokens)
		}
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
	add(v1beta2.MetricTTFTMs, m.TTFTMs, ttftBand, tol.TTFTPct)
	add(v1beta2.MetricITLMs, m.ITLMs, itlBand, tol.ITLPct)
	add(v1beta2.MetricThroughputPerGPU, m.ThroughputPerGPU, nil, tol.ThroughputPerGPUPct)
	if len(p.Predictions) == 0 {
		return nil, fmt.Errorf("candidate %s predicts none of ttftMs, itlMs, throughputPerGpu", cand.Name)
	}
	return p, nil
}

// modeledLoad is the operating point the search modeled: the static workload's load and token
// lengths. A kvCapacityFraction or trace load has no fixed request load: concurrency 1.
func modeledLoad(dgdr *v1beta2.DynamoGraphDeploymentRequest) v1beta2.VerificationLoad {
	l := v1beta2.VerificationLoad{InputTokens: ptrTo(specdefaults.InputTokens), OutputTokens: ptrTo(specdefaults.OutputTokens)}
	var static *v1beta2.StaticWorkload
	if w := dgdr.Spec.Workload; w != nil {
		static = w.Static
	}
	if static != nil {
		if static.InputTokens != nil {
			l.InputTokens = copyPtr(static.InputTokens)
		}
		if static.OutputTokens != nil {
			l.OutputTokens = copyPtr(static.OutputTokens)
		}
		if ld := static.Load; ld != nil {
			switch {
			case ld.Concurrency != nil:
				l.Concurrency = copyPtr(ld.Concurrency)
			case ld.RequestsPerSecond != nil:
				l.RequestsPerSecond = copyPtr(ld.RequestsPerSecond)
			}
		}
	}
	if l.Concurrency == nil && l.RequestsPerSecond == nil {
		l.Concurrency = ptrTo[int32](1)
	}
	// The workload's bounds are wider than a verification's.
	if l.Concurrency != nil && *l.Concurrency > MaxLoad {
		l.Concurrency = ptrTo(int32(MaxLoad))
	}
	if l.RequestsPerSecond != nil && *l.RequestsPerSecond > MaxLoad {
		l.RequestsPerSecond = ptrTo(float64(MaxLoad))
	}
	return l
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
