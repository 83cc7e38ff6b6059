package resultsview_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/resultsview"
)

func TestVerificationLoadText(t *testing.T) {
	load := func(l *v1beta2.VerificationLoad) *v1beta2.VerificationStatus {
		return &v1beta2.VerificationStatus{Load: l, LoadAsPredicted: ptr.To(true)}
	}
	tests := []struct {
		name string
		in   *v1beta2.VerificationStatus
		want string
	}{
		{"no verification", nil, ""},
		{"not resolved", &v1beta2.VerificationStatus{}, ""},
		{"concurrency with lengths", load(&v1beta2.VerificationLoad{Concurrency: ptr.To[int32](10), InputTokens: ptr.To[int32](1024), OutputTokens: ptr.To[int32](128)}),
			"concurrency 10, 1024 input and 128 output tokens per request"},
		{"a rate alone", load(&v1beta2.VerificationLoad{RequestsPerSecond: ptr.To(2.5)}), "2.5 requests/s"},
		{"one length", load(&v1beta2.VerificationLoad{OutputTokens: ptr.To[int32](64)}), "64 output tokens per request"},
		{"a trace at its timestamps", &v1beta2.VerificationStatus{LoadAsPredicted: ptr.To(true),
			Trace: &v1beta2.VerificationTraceReplay{Format: v1beta2.TraceFormatMooncake, ArrivalSpeedupRatio: ptr.To(2.0)}},
			"the mooncake trace at its timestamps sped up 2x"},
		{"a trace closed-loop", &v1beta2.VerificationStatus{LoadAsPredicted: ptr.To(true), Load: &v1beta2.VerificationLoad{Concurrency: ptr.To[int32](24)},
			Trace: &v1beta2.VerificationTraceReplay{Format: v1beta2.TraceFormatDynamo}},
			"the dynamo trace, concurrency 24"},
		{"another load than the prediction's", &v1beta2.VerificationStatus{Load: &v1beta2.VerificationLoad{Concurrency: ptr.To[int32](1)},
			LoadAsPredicted: ptr.To(false), LoadDifference: "spec.deployment.verification.load offers concurrency 1; the prediction's is concurrency 37"},
			"concurrency 1, not the prediction's load (spec.deployment.verification.load offers concurrency 1; the prediction's is concurrency 37)"},
	}
	for _, tc := range tests {
		if got := resultsview.VerificationLoadText(tc.in); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestVerifiedMetrics(t *testing.T) {
	if got := resultsview.VerifiedMetrics(nil); got != nil {
		t.Errorf("no verification: %v", got)
	}
	v := &v1beta2.VerificationStatus{Metrics: []v1beta2.VerifiedMetric{
		{Name: v1beta2.MetricThroughputPerGPU, Predicted: ptr.To(2600.0), Held: ptr.To(true)},
		{Name: v1beta2.MetricITLMs},
		{Name: v1beta2.MetricTTFTP99Ms, Predicted: ptr.To(300.0), Held: ptr.To(false)},
		{Name: "e2eMs", Observed: ptr.To(900.0)},
	}}
	want := []resultsview.VerifiedMetric{
		{Name: "throughput per GPU", Unit: "tokens/s", Predicted: ptr.To(2600.0), Held: ptr.To(true)},
		{Name: "ITL", Unit: "ms"},
		{Name: "TTFT p99", Unit: "ms", Predicted: ptr.To(300.0), Held: ptr.To(false)},
		{Name: "e2eMs", Observed: ptr.To(900.0)},
	}
	if diff := cmp.Diff(want, resultsview.VerifiedMetrics(v)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
