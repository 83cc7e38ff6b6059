package resultsview_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/resultsview"
)

func TestMetrics(t *testing.T) {
	full := &v1beta2.CandidateMetrics{ThroughputPerGPU: ptr.To(2600.0), ThroughputPerUser: ptr.To(45.0), Throughput: ptr.To(20800.0),
		RequestsPerSecond: ptr.To(3.5), TTFTMs: ptr.To(154.0), ITLMs: ptr.To(9.0), E2EMs: ptr.To(1300.0)}
	banded := full.DeepCopy()
	banded.ErrorBand = &v1beta2.MetricsErrorBand{TTFTPct: ptr.To(22.0), TTFTP80Pct: ptr.To(41.0), ITLPct: ptr.To(15.0)}
	tails := full.DeepCopy()
	tails.Percentiles = &v1beta2.CandidatePercentiles{TTFTMs: &v1beta2.LatencyPercentiles{P50: ptr.To(140.0), P90: ptr.To(210.0), P99: ptr.To(390.0)},
		ITLMs: &v1beta2.LatencyPercentiles{P99: ptr.To(14.0)}}
	tails.PowerW = ptr.To(612.5)
	rows := func(ttft, itl *resultsview.Band, m *v1beta2.CandidateMetrics) []resultsview.Metric {
		if m == nil {
			m = &v1beta2.CandidateMetrics{}
		}
		return []resultsview.Metric{
			{Name: "throughput per GPU", Unit: "tokens/s", Value: m.ThroughputPerGPU},
			{Name: "throughput per user", Unit: "tokens/s", Value: m.ThroughputPerUser},
			{Name: "throughput", Unit: "tokens/s", Value: m.Throughput},
			{Name: "requests", Unit: "requests/s", Value: m.RequestsPerSecond},
			{Name: "TTFT", Unit: "ms", Value: m.TTFTMs, Band: ttft},
			{Name: "ITL", Unit: "ms", Value: m.ITLMs, Band: itl},
			{Name: "E2E", Unit: "ms", Value: m.E2EMs},
		}
	}
	tests := []struct {
		name string
		in   *v1beta2.CandidateMetrics
		want []resultsview.Metric
	}{
		{name: "no metrics: every row, no value", in: nil, want: rows(nil, nil, nil)},
		{name: "no band: values only", in: full, want: rows(nil, nil, full)},
		{name: "bands go to TTFT and ITL; a missing 80th percentile reads 0", in: banded,
			want: rows(&resultsview.Band{MedianPct: 22, P80Pct: 41}, &resultsview.Band{MedianPct: 15}, banded)},
		{name: "percentiles and power follow", in: tails, want: append(rows(nil, nil, tails),
			resultsview.Metric{Name: "TTFT p50", Unit: "ms", Value: ptr.To(140.0)}, resultsview.Metric{Name: "TTFT p90", Unit: "ms", Value: ptr.To(210.0)},
			resultsview.Metric{Name: "TTFT p99", Unit: "ms", Value: ptr.To(390.0)},
			resultsview.Metric{Name: "ITL p50", Unit: "ms"}, resultsview.Metric{Name: "ITL p90", Unit: "ms"}, resultsview.Metric{Name: "ITL p99", Unit: "ms", Value: ptr.To(14.0)},
			resultsview.Metric{Name: "E2E p50", Unit: "ms"}, resultsview.Metric{Name: "E2E p90", Unit: "ms"}, resultsview.Metric{Name: "E2E p99", Unit: "ms"},
			resultsview.Metric{Name: "power per GPU", Unit: "W", Value: ptr.To(612.5)})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, resultsview.Metrics(tt.in)); diff != "" {
				t.Errorf("Metrics (-want +got):\n%s", diff)
			}
		})
	}
}
