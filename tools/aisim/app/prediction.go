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

// statNames are the statistics AISimulate reports for each distribution (detail.py).
var statNames = []string{"mean", "min", "max", "median", "p75", "p90", "p95", "p99", "std"}

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
	set("num_requests", float64(r.Requests))
	set("completed_requests", float64(r.Completed))
	set("num_ttft_samples", float64(r.TTFTSamples))
	set("num_tpot_samples", float64(r.TPOTSamples))
	set("num_e2e_latency_samples", float64(r.Completed))
	set("total_input_tokens", in)
	set("total_output_tokens", out)
	set("duration_ms", r.DurationMs)
	set("gpu_hours", float64(pr.Point.UsedGPUs())*r.DurationMs/3.6e6)
	set("request_throughput_rps", r.RequestThroughput)
	set("input_throughput_tok_s", rate(in))
	set("output_throughput_tok_s", r.OutputThroughput)
	set("total_throughput_tok_s", rate(in+out))
	if sla {
		set("goodput_completed_requests", float64(r.GoodCompleted))
		set("goodput_request_throughput_rps", r.GoodputRequests)
		set("goodput_output_throughput_tok_s", r.GoodputOutput)
	}
	for name, s := range map[string]perf.Stats{"ttft_ms": r.TTFT, "tpot_ms": r.TPOT, "itl_ms": r.ITL, "e2e_latency_ms": r.E2E} {
		for stat, v := range map[string]float64{"mean": s.Mean, "min": s.Min, "max": s.Max, "median": s.P50, "p75": s.P75,
			"p90": s.P90, "p95": s.P95, "p99": s.P99, "std": s.Std} {
			set(stat+"_"+name, v)
		}
	}
	for _, stat := range statNames {
		m[stat+"_ttst_ms"] = nil
		m[stat+"_output_token_throughput_per_user"] = nil
	}
	set("mean_output_token_throughput_per_user", r.PerUserThroughput)
	reused := pr.TraceMetrics["prefix_cache_hit_ratio"]
	set("prefix_cache_reused_ratio", reused)
	set("first_admission_prefix_cache_reused_ratio", reused)
	set("committed_prefill_tokens", math.Round(in*(1-reused)))
	// Per role: an aggregated worker counts as a decode worker, as in AISimulate's report.
	set("prefill_gpus_per_worker", 0)
	set("prefill_worker_seconds", 0)
	set("decode_gpus_per_worker", 0)
	set("decode_worker_seconds", 0)
	for _, role := range pr.Point.Roles {
		side := "decode"
		if role.Role == "prefill" {
			side = "prefill"
		}
		set(side+"_gpus_per_worker", float64(role.Worker.Shape.GPUsPerWorker()))
		set(side+"_worker_seconds", float64(role.Worker.Shape.Replicas)*dur)
	}
	// The simulator's own speed.
	ms := float64(wall) / float64(time.Millisecond)
	set("wall_time_ms", ms)
	set("processed_tokens", in+out)
	set("processed_tokens_per_s", 0)
	set("processed_output_tokens_per_s", 0)
	if ms > 0 {
		set("processed_tokens_per_s", (in+out)/(ms/1e3))
		set("processed_output_tokens_per_s", out/(ms/1e3))
	}
	m["power_w"] = nil
	set("power_coverage", 0)

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
	for _, stat := range statNames {
		if !strings.HasPrefix(k, stat+"_") {
			continue
		}
		rest := strings.TrimPrefix(k, stat+"_")
		switch rest {
		case "ttft_ms", "ttst_ms", "tpot_ms", "itl_ms", "e2e_latency_ms", "output_token_throughput_per_user":
			return true
		}
	}
	switch k {
	case "request_throughput_rps", "input_throughput_tok_s", "output_throughput_tok_s", "total_throughput_tok_s",
		"goodput_request_throughput_rps", "goodput_output_throughput_tok_s", "processed_tokens_per_s", "processed_output_tokens_per_s":
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
