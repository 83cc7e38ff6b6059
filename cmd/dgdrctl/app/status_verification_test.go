package app

import (
	"bytes"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

// verifiedRequest is a request whose status holds v and, unless cond is nil, PredictionHeld.
func verifiedRequest(v *v1beta2.VerificationStatus, cond *metav1.Condition) *v1beta2.DynamoGraphDeploymentRequest {
	req := &v1beta2.DynamoGraphDeploymentRequest{}
	req.Status.Verification = v
	if cond != nil {
		req.Status.Conditions = []metav1.Condition{
			{Type: v1beta2.ConditionAccepted, Status: metav1.ConditionTrue, Reason: "Accepted"},
			*cond,
		}
	}
	return req
}

// TestWriteVerification: the Verification section of dgdrctl status, as printed.
func TestWriteVerification(t *testing.T) {
	measured := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	now := measured.Add(5 * time.Minute)
	base := func(phase v1beta2.VerificationPhase) *v1beta2.VerificationStatus {
		return &v1beta2.VerificationStatus{
			Phase: phase, JobName: "llm-verify-3", Deployment: "llm-prod", DeploymentGeneration: 3,
			Run: "llm-run-1", Candidate: "llm-run-1-c000042",
			Load:     &v1beta2.VerificationLoad{Concurrency: ptr.To[int32](10), InputTokens: ptr.To[int32](1024), OutputTokens: ptr.To[int32](128)},
			Requests: 100, MaxDurationSeconds: 300,
		}
	}
	succeeded := base(v1beta2.VerificationSucceeded)
	succeeded.MeasuredAt = &metav1.Time{Time: measured}
	succeeded.Observed = &v1beta2.ObservedMetrics{Requests: 100, Errors: 2}
	succeeded.Metrics = []v1beta2.VerifiedMetric{
		{Name: v1beta2.MetricTTFTMs, Predicted: ptr.To(154.0), Observed: ptr.To(170.0), RelativeErrorPct: ptr.To(10.4),
			BandPct: ptr.To(22.0), TolerancePct: ptr.To(22.0), Held: ptr.To(true)},
		{Name: v1beta2.MetricITLMs, Predicted: ptr.To(9.0), Observed: ptr.To(12.5), RelativeErrorPct: ptr.To(38.9),
			BandPct: ptr.To(15.0), TolerancePct: ptr.To(15.0), Held: ptr.To(false)},
		{Name: v1beta2.MetricThroughputPerGPU, Predicted: ptr.To(2600.0), Observed: ptr.To(2450.0), RelativeErrorPct: ptr.To(5.77),
			TolerancePct: ptr.To(25.0), Held: ptr.To(true)},
	}
	failed := base(v1beta2.VerificationFailed)
	failed.Reason, failed.Message = "TimedOut", "Job llm-verify-3 ended without a measurement: it ran past its deadline"
	failed.MeasuredAt = &metav1.Time{Time: measured}
	// A failed verification keeps what it measured; the table is still not printed.
	failed.Metrics = succeeded.Metrics

	tests := []struct {
		name string
		req  *v1beta2.DynamoGraphDeploymentRequest
		want string
	}{
		{
			name: "no verification: nothing",
			req:  verifiedRequest(nil, nil),
			want: "",
		},
		{
			name: "succeeded with one metric outside its band",
			req: verifiedRequest(succeeded, &metav1.Condition{Type: v1beta2.ConditionPredictionHeld, Status: metav1.ConditionFalse,
				Reason: v1beta2.ReasonOutsideErrorBand, Message: "candidate llm-run-1-c000042 of DynamoGraphDeployment llm-prod generation 3 is outside its error band: itlMs observed 12.5, predicted 9"}),
			want: `
Verification: Succeeded
  deployment  llm-prod generation 3
  candidate   llm-run-1-c000042 of run llm-run-1
  measured    2025-06-01T12:00:00Z (5m ago)
  load        concurrency 10, 1024 input and 128 output tokens per request, 100 requests, at most 300 s
  job         llm-verify-3
  completed   100 requests, 2 failed

METRIC              PREDICTED      BAND  OBSERVED       ERROR  RESULT
TTFT                154.0 ms       ±22%  170.0 ms       10.4%  held
ITL                 9.00 ms        ±15%  12.5 ms        38.9%  OUTSIDE BAND
throughput per GPU  2600 tokens/s  ±25%  2450 tokens/s  5.8%   held
BAND: the relative error allowed (the request's tolerance, else the candidate's error band, else 25%); ERROR: |observed - predicted| / predicted
PredictionHeld=False (OutsideErrorBand): candidate llm-run-1-c000042 of DynamoGraphDeployment llm-prod generation 3 is outside its error band: itlMs observed 12.5, predicted 9
`,
		},
		{
			name: "failed: the reason and message, no table",
			req: verifiedRequest(failed, &metav1.Condition{Type: v1beta2.ConditionPredictionHeld, Status: metav1.ConditionUnknown,
				Reason: v1beta2.ReasonVerificationFailed, Message: "verification of DynamoGraphDeployment llm-prod generation 3 failed (TimedOut)"}),
			want: `
Verification: Failed
  reason      TimedOut: Job llm-verify-3 ended without a measurement: it ran past its deadline
  deployment  llm-prod generation 3
  candidate   llm-run-1-c000042 of run llm-run-1
  measured    2025-06-01T12:00:00Z (5m ago)
  load        concurrency 10, 1024 input and 128 output tokens per request, 100 requests, at most 300 s
  job         llm-verify-3
PredictionHeld=Unknown (VerificationFailed): verification of DynamoGraphDeployment llm-prod generation 3 failed (TimedOut)
`,
		},
		{
			name: "running: what is measured, no table",
			req: verifiedRequest(base(v1beta2.VerificationRunning), &metav1.Condition{Type: v1beta2.ConditionPredictionHeld, Status: metav1.ConditionUnknown,
				Reason: v1beta2.ReasonVerifying, Message: "Job llm-verify-3 measures DynamoGraphDeployment llm-prod generation 3"}),
			want: `
Verification: Running
  deployment  llm-prod generation 3
  candidate   llm-run-1-c000042 of run llm-run-1
  load        concurrency 10, 1024 input and 128 output tokens per request, 100 requests, at most 300 s
  job         llm-verify-3
PredictionHeld=Unknown (Verifying): Job llm-verify-3 measures DynamoGraphDeployment llm-prod generation 3
`,
		},
		{
			name: "partially filled: dashes, no panic",
			req: verifiedRequest(&v1beta2.VerificationStatus{
				Phase:   v1beta2.VerificationSucceeded,
				Load:    &v1beta2.VerificationLoad{RequestsPerSecond: ptr.To(2.5)},
				Metrics: []v1beta2.VerifiedMetric{{Name: v1beta2.MetricITLMs}, {Name: "e2eMs", Predicted: ptr.To(900.0), Held: ptr.To(false)}},
			}, nil),
			want: `
Verification: Succeeded
  load  2.5 requests/s

METRIC  PREDICTED  BAND  OBSERVED  ERROR  RESULT
ITL     -          -     -         -      -
e2eMs   900.0      -     -         -      OUTSIDE BAND
BAND: the relative error allowed (the request's tolerance, else the candidate's error band, else 25%); ERROR: |observed - predicted| / predicted
`,
		},
		{
			name: "another load than predicted, percentiles compared",
			req: verifiedRequest(&v1beta2.VerificationStatus{
				Phase: v1beta2.VerificationSucceeded, Load: &v1beta2.VerificationLoad{Concurrency: ptr.To[int32](1), InputTokens: ptr.To[int32](1024), OutputTokens: ptr.To[int32](128)},
				LoadAsPredicted: ptr.To(false), LoadDifference: "spec.deployment.verification.load offers concurrency 1; the prediction's is concurrency 37",
				Metrics: []v1beta2.VerifiedMetric{
					{Name: v1beta2.MetricTTFTMs, Predicted: ptr.To(154.0), Observed: ptr.To(150.0), RelativeErrorPct: ptr.To(2.6), TolerancePct: ptr.To(25.0), Held: ptr.To(true)},
					{Name: v1beta2.MetricTTFTP99Ms, Predicted: ptr.To(300.0), Observed: ptr.To(450.0), RelativeErrorPct: ptr.To(50.0), TolerancePct: ptr.To(25.0), Held: ptr.To(false)},
				},
			}, nil),
			want: `
Verification: Succeeded
  load  concurrency 1, 1024 input and 128 output tokens per request, not the prediction's load (spec.deployment.verification.load offers concurrency 1; the prediction's is concurrency 37)

METRIC    PREDICTED  BAND  OBSERVED  ERROR  RESULT
TTFT      154.0 ms   ±25%  150.0 ms  2.6%   held
TTFT p99  300.0 ms   ±25%  450.0 ms  50%    OUTSIDE BAND
BAND: the relative error allowed (the request's tolerance, else the candidate's error band, else 25%); ERROR: |observed - predicted| / predicted
`,
		},
		{
			name: "a trace replayed",
			req: verifiedRequest(&v1beta2.VerificationStatus{Phase: v1beta2.VerificationRunning, LoadAsPredicted: ptr.To(true), MaxDurationSeconds: 300,
				Trace: &v1beta2.VerificationTraceReplay{Format: v1beta2.TraceFormatDynamo, ArrivalSpeedupRatio: ptr.To(1.0)}}, nil),
			want: `
Verification: Running
  load  the dynamo trace at its timestamps sped up 1x, at most 300 s
`,
		},
		{
			name: "a condition without a verification",
			req: verifiedRequest(nil, &metav1.Condition{Type: v1beta2.ConditionPredictionHeld, Status: metav1.ConditionUnknown,
				Reason: v1beta2.ReasonVerifying}),
			want: `
Verification: none recorded
PredictionHeld=Unknown (Verifying)
`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			writeVerification(&out, tc.req, now)
			if diff := cmp.Diff(tc.want, out.String()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
