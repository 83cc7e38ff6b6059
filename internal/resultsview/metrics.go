package resultsview

import "github.com/dgdr-operator/dgdr-operator/api/v1beta2"

// Band is a metric's expected relative error in percent: half of the measured calibration runs
// were within MedianPct, four in five within P80Pct (0 when unknown).
type Band struct {
	MedianPct float64
	P80Pct    float64
}

// Metric is one predicted metric of a candidate, with its band when the recommender measured one.
type Metric struct {
	// Name is how people read it ("TTFT"), Unit its unit ("ms").
	Name, Unit string
	Value      *float64
	Band       *Band
}

// Metrics lists every predicted metric of m, throughputs first, each with its band: the
// recommender measures bands for TTFT and ITL only (v1beta2.MetricsErrorBand), so the others
// have none. The p50, p90 and p99 of the latencies follow when the search reported
// percentiles, and the power per GPU when it reported one. m may be nil.
func Metrics(m *v1beta2.CandidateMetrics) []Metric {
	if m == nil {
		m = &v1beta2.CandidateMetrics{}
	}
	rows := []Metric{
		{Name: "throughput per GPU", Unit: "tokens/s", Value: m.ThroughputPerGPU},
		{Name: "throughput per user", Unit: "tokens/s", Value: m.ThroughputPerUser},
		{Name: "throughput", Unit: "tokens/s", Value: m.Throughput},
		{Name: "requests", Unit: "requests/s", Value: m.RequestsPerSecond},
		{Name: "TTFT", Unit: "ms", Value: m.TTFTMs, Band: TTFTBand(m)},
		{Name: "ITL", Unit: "ms", Value: m.ITLMs, Band: ITLBand(m)},
		{Name: "E2E", Unit: "ms", Value: m.E2EMs},
	}
	if p := m.Percentiles; p != nil {
		for _, l := range []struct {
			name string
			p    *v1beta2.LatencyPercentiles
		}{{"TTFT", p.TTFTMs}, {"ITL", p.ITLMs}, {"E2E", p.E2EMs}} {
			q := l.p
			if q == nil {
				q = &v1beta2.LatencyPercentiles{}
			}
			rows = append(rows, Metric{Name: l.name + " p50", Unit: "ms", Value: q.P50}, Metric{Name: l.name + " p90", Unit: "ms", Value: q.P90},
				Metric{Name: l.name + " p99", Unit: "ms", Value: q.P99})
		}
	}
	if m.PowerW != nil {
		rows = append(rows, Metric{Name: "power per GPU", Unit: "W", Value: m.PowerW})
	}
	return rows
}

// TTFTBand is the band of m's TTFT; nil when none was measured.
func TTFTBand(m *v1beta2.CandidateMetrics) *Band {
	if m == nil || m.ErrorBand == nil {
		return nil
	}
	return band(m.ErrorBand.TTFTPct, m.ErrorBand.TTFTP80Pct)
}

// ITLBand is the band of m's ITL; nil when none was measured.
func ITLBand(m *v1beta2.CandidateMetrics) *Band {
	if m == nil || m.ErrorBand == nil {
		return nil
	}
	return band(m.ErrorBand.ITLPct, m.ErrorBand.ITLP80Pct)
}

func band(median, p80 *float64) *Band {
	if median == nil {
		return nil
	}
	b := &Band{MedianPct: *median}
	if p80 != nil {
		b.P80Pct = *p80
	}
	return b
}
