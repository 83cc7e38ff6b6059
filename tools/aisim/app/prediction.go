package app

import (
	"encoding/json"
	"math"
	"strings"
	"time"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/catalog"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/input"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/perf"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/search"
)

// predictionReport is the report `aisimulate predict` writes for the deployment pr, with the
// same keys: goodput only under an SLA. What aisim does not model is null: time to second
// token, the distribution of per-user throughput beyond its mean, and power. wall is the
// simulation's own run time.
func predictionReport(pr *search.Prepared, r *perf.Report, sla bool, kv map[string]output.KVCachePrecision, wall time.Duration) *output.Prediction {
	m := map[string]*float64{}
	set := func(k string, v float64) { m[k] = &v }
	dur := r.DurationMs / 1e3
	rate := func(n float64) float64 {
		if dur <= 0 {
			return 0
		}
		return n / dur
	}
	in, out := float64(r.InputTokens), float64(r.OutputTokens)
	set(output.KeyRequests, float64(r.Requests))
	set(output.KeyCompletedRequests, float64(r.Completed))
	set(output.KeyTTFTSamples, float64(r.TTFTSamples))
	set(output.KeyTPOTSamples, float64(r.TPOTSamples))
	set(output.KeyE2ELatencySamples, float64(r.Completed))
	set(output.KeyInputTokens, in)
	set(output.KeyOutputTokens, out)
	set(output.KeyDurationMs, r.DurationMs)
	set(output.KeyGPUHours, output.GPUHours(float64(pr.Point.UsedGPUs()), r.DurationMs))
	set(output.KeyRequestThroughput, r.RequestThroughput)
	set(output.KeyInputThroughput, rate(in))
	set(output.KeyOutputThroughput, r.OutputThroughput)
	set(output.KeyTotalThroughput, rate(in+out))
	if sla {
		set(output.KeyGoodputCompleted, float64(r.GoodCompleted))
		set(output.KeyGoodputRequestThroughput, r.GoodputRequests)
		set(output.KeyGoodputOutputThroughput, r.GoodputOutput)
	}
	for dist, s := range map[string]perf.Stats{output.DistTTFT: r.TTFT, output.DistTPOT: r.TPOT, output.DistITL: r.ITL, output.DistE2ELatency: r.E2E} {
		for stat, v := range map[string]float64{output.StatMean: s.Mean, output.StatMin: s.Min, output.StatMax: s.Max, output.StatMedian: s.P50,
			output.StatP75: s.P75, output.StatP90: s.P90, output.StatP95: s.P95, output.StatP99: s.P99, output.StatStd: s.Std} {
			set(output.StatKey(stat, dist), v)
		}
	}
	for _, stat := range output.StatsOfPrediction {
		m[output.StatKey(stat, output.DistTTST)] = nil
		m[output.StatKey(stat, output.DistThroughputPerUser)] = nil
	}
	set(output.KeyThroughputPerUser, r.PerUserThroughput)
	reused := pr.TraceMetrics["prefix_cache_hit_ratio"]
	set(output.KeyPrefixCacheReusedRatio, reused)
	set(output.KeyFirstAdmissionPrefixCacheReusedRatio, reused)
	set(output.KeyCommittedPrefillTokens, math.Round(in*(1-reused)))
	// Per role: an aggregated worker counts as a decode worker, as in AISimulate's report.
	for _, side := range []string{output.RolePrefill, output.RoleDecode} {
		set(output.GPUsPerWorkerKey(side), 0)
		set(output.WorkerSecondsKey(side), 0)
	}
	for _, role := range pr.Point.Roles {
		side := output.RoleDecode
		if role.Role == output.RolePrefill {
			side = output.RolePrefill
		}
		set(output.GPUsPerWorkerKey(side), float64(role.Worker.Shape.GPUsPerWorker()))
		set(output.WorkerSecondsKey(side), float64(role.Worker.Shape.Replicas)*dur)
	}
	// The simulator's own speed.
	ms := float64(wall) / float64(time.Millisecond)
	set(output.KeyWallTimeMs, ms)
	set(output.KeyProcessedTokens, in+out)
	set(output.KeyProcessedTokensPerSecond, 0)
	set(output.KeyProcessedOutputTokensPerSecond, 0)
	if ms > 0 {
		set(output.KeyProcessedTokensPerSecond, (in+out)/(ms/1e3))
		set(output.KeyProcessedOutputTokensPerSecond, out/(ms/1e3))
	}
	m[output.KeyPowerW] = nil
	set(output.KeyPowerCoverage, 0)

	p := &output.Prediction{
		Metrics: m, KVEvictionPolicy: "lru", KVCachePrecision: map[string]output.KVCachePrecision{},
		Provenance: map[string]output.TimingProvenance{}, PowerDiagnostics: noPower,
	}
	reason := "aisim's analytical model reads no performance database"
	for _, role := range pr.Point.Roles {
		p.KVCachePrecision[role.Role] = kv[role.Role]
		p.Provenance[role.Role] = output.TimingProvenance{Estimator: "analytical", TimingSource: "aisim", DataVersionUnavailableReason: &reason}
	}
	if r.Completed == 0 {
		p.Status, p.StopReason = output.PredictionInvalid, "no_completed_requests"
		p.Diagnostic = "No requests completed; serving latency and throughput are unavailable. " +
			"Check KV capacity against request lengths, context limits, and traffic stop limits."
		for k := range m {
			if servingMetric(k) {
				m[k] = nil
			}
		}
	}
	return p
}

// servingMetric says whether AISimulate nulls a key in an invalid prediction: the serving
// latency distributions and throughputs (detail.py SERVING_LATENCY_METRICS,
// SERVING_THROUGHPUT_METRICS).
func servingMetric(k string) bool {
	for _, stat := range output.StatsOfPrediction {
		if !strings.HasPrefix(k, stat+"_") {
			continue
		}
		switch strings.TrimPrefix(k, stat+"_") {
		case output.DistTTFT, output.DistTTST, output.DistTPOT, output.DistITL, output.DistE2ELatency, output.DistThroughputPerUser:
			return true
		}
	}
	switch k {
	case output.KeyRequestThroughput, output.KeyInputThroughput, output.KeyOutputThroughput, output.KeyTotalThroughput,
		output.KeyGoodputRequestThroughput, output.KeyGoodputOutputThroughput, output.KeyProcessedTokensPerSecond, output.KeyProcessedOutputTokensPerSecond:
		return true
	}
	return false
}

// kvPrecision is the KV cache's data type per role, named as AISimulate names it; the engine's
// kvcache_quant_mode is a user override, otherwise the checkpoint decides.
func kvPrecision(doc *input.Document, model *catalog.Model) map[string]output.KVCachePrecision {
	p := output.KVCachePrecision{DType: "bfloat16", Source: "aisimulate_policy"}
	if model.KVBytes == 1 {
		p.DType = "fp8"
	}
	if doc.Engine.Precision.KVCache != "" {
		p.Source = "user_override"
	}
	return map[string]output.KVCachePrecision{"aggregated": p, "prefill": p, "decode": p}
}

// noPower is AISimulate's power_diagnostics for a runner without timing-energy evidence
// (detail.py energy_diagnostics).
var noPower = json.RawMessage(`{"coverage_gate":0.9,"phases":[],"power_coverage":null,"power_w":null,` +
	`"publication_status":"unsupported","schema_version":"1.0","scope":"active_forward_pass_per_gpu",` +
	`"unavailable_reason":"aisim models no power"}`)
