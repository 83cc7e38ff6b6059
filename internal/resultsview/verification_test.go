package resultsview_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/resultsview"
)

func TestVerificationLoadText(t *testing.T) {
	tests := []struct {
		name string
		in   *v1beta2.VerificationLoad
		want string
	}{
		{"not resolved", nil, ""},
		{"concurrency with lengths", &v1beta2.VerificationLoad{Concurrency: ptr.To[int32](10), InputTokens: ptr.To[int32](1024), OutputTokens: ptr.To[int32](128)},
			"concurrency 10, 1024 input and 128 output tokens per request"},
		{"a rate alone", &v1beta2.VerificationLoad{RequestsPerSecond: ptr.To(2.5)}, "2.5 requests/s"},
		{"one length", &v1beta2.VerificationLoad{OutputTokens: ptr.To[int32](64)}, "64 output tokens per request"},
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
		{Name: "e2eMs", Observed: ptr.To(900.0)},
	}}
	want := []resultsview.VerifiedMetric{
		{Name: "throughput per GPU", Unit: "tokens/s", Predicted: ptr.To(2600.0), Held: ptr.To(true)},
		{Name: "ITL", Unit: "ms"},
		{Name: "e2eMs", Observed: ptr.To(900.0)},
	}
	if diff := cmp.Diff(want, resultsview.VerifiedMetrics(v)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
