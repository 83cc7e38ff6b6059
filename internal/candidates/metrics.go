package candidates

import (
	"math"
	"strconv"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
)

// Metrics maps a candidate record's metrics to the API's CandidateMetrics.
func Metrics(rec *output.Candidate) *v1beta2.CandidateMetrics {
	get := func(keys ...string) *float64 {
		for _, k := range keys {
			if v, ok := rec.Metrics[k]; ok {
				v := v
				return &v
			}
		}
		return nil
	}
	m := &v1beta2.CandidateMetrics{
		Score:             copyFloat(rec.Score),
		TTFTMs:            get(output.KeyMeanTTFT),
		ITLMs:             get(output.KeyMeanITL, output.KeyMeanTPOT),
		E2EMs:             get(output.KeyMeanE2ELatency),
		Throughput:        get(output.KeyOutputThroughput),
		ThroughputPerGPU:  get(output.KeyOutputThroughputPerGPU),
		ThroughputPerUser: get(output.KeyThroughputPerUser),
		RequestsPerSecond: get(output.KeyRequestThroughput),
		GPUs:              int32(rec.UsedGPUs),
	}
	if m.ThroughputPerGPU == nil && m.Throughput != nil && rec.UsedGPUs > 0 {
		v := *m.Throughput / float64(rec.UsedGPUs)
		m.ThroughputPerGPU = &v
	}
	m.ErrorBand = errorBand(rec.ErrorBand)
	// The percentiles of ITL are of the distribution its mean was read from.
	itl := output.DistITL
	if _, ok := rec.Metrics[output.KeyMeanITL]; !ok {
		itl = output.DistTPOT
	}
	p := &v1beta2.CandidatePercentiles{
		TTFTMs: percentiles(rec.Metrics, output.DistTTFT),
		ITLMs:  percentiles(rec.Metrics, itl),
		E2EMs:  percentiles(rec.Metrics, output.DistE2ELatency),
	}
	if p.TTFTMs != nil || p.ITLMs != nil || p.E2EMs != nil {
		m.Percentiles = p
	}
	if w, ok := rec.Metrics[output.KeyPowerW]; ok && w > 0 {
		m.PowerW = &w
	}
	return m
}

// percentiles are the p50, p90 and p99 of the distribution dist of a record's metrics (the
// median is AISimulate's name of p50, p50 the local recommender's); nil when it has none. A
// negative value is no latency and is left out.
func percentiles(r output.Report, dist string) *v1beta2.LatencyPercentiles {
	get := func(stats ...string) *float64 {
		for _, s := range stats {
			if v, ok := r[output.StatKey(s, dist)]; ok && v >= 0 {
				return &v
			}
		}
		return nil
	}
	p := &v1beta2.LatencyPercentiles{P50: get(output.StatMedian, output.StatP50), P90: get(output.StatP90), P99: get(output.StatP99)}
	if p.P50 == nil && p.P90 == nil && p.P99 == nil {
		return nil
	}
	return p
}

// Display rounds metrics for the printer columns of kubectl get dgdc: whole tokens per second,
// one fraction digit of milliseconds, the cost per hour with its currency. Display only.
func Display(m *v1beta2.CandidateMetrics) *v1beta2.CandidateDisplay {
	if m == nil {
		return nil
	}
	whole := func(v *float64) *int64 {
		if v == nil || math.IsNaN(*v) || math.IsInf(*v, 0) {
			return nil
		}
		r := int64(math.Round(*v))
		return &r
	}
	tenth := func(v *float64) string {
		if v == nil || math.IsNaN(*v) || math.IsInf(*v, 0) {
			return ""
		}
		return strconv.FormatFloat(*v, 'f', 1, 64)
	}
	d := &v1beta2.CandidateDisplay{
		ThroughputPerGPU:  whole(m.ThroughputPerGPU),
		ThroughputPerUser: whole(m.ThroughputPerUser),
		TTFTMs:            tenth(m.TTFTMs),
		ITLMs:             tenth(m.ITLMs),
	}
	if c := m.Cost; c != nil {
		d.CostPerHour = c.PerHour + " " + c.Currency
	}
	return d
}

// errorBand maps the recommender's error band (keyed by metric: ttft_ms, tpot_ms or itl_ms) to
// the API's; nil when the recommender wrote none.
func errorBand(b *output.ErrorBand) *v1beta2.MetricsErrorBand {
	if b == nil {
		return nil
	}
	out := &v1beta2.MetricsErrorBand{Basis: b.Basis, Extrapolated: b.Extrapolated}
	pick := func(keys ...string) (*float64, *float64) {
		for _, k := range keys {
			if r, ok := b.Metrics[k]; ok {
				return &r.MedianAbsPct, &r.P80AbsPct
			}
		}
		return nil, nil
	}
	out.TTFTPct, out.TTFTP80Pct = pick(output.DistTTFT)
	out.ITLPct, out.ITLP80Pct = pick(output.DistITL, output.DistTPOT)
	if out.TTFTPct == nil && out.ITLPct == nil {
		return nil
	}
	if len(out.Basis) > 512 {
		out.Basis = out.Basis[:512]
	}
	return out
}

func copyFloat(p *float64) *float64 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
