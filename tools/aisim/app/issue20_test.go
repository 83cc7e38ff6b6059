package app

import (
	"bytes"
	"context"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/input"
)

// mustPredict predicts a document that must succeed, without an output directory, and returns
// the prediction with what aisim knows beside the report.
func mustPredict(t *testing.T, doc string) *predicted {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "input.yaml")
	if err := os.WriteFile(cfg, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	opts := Options{ConfigPath: cfg, Format: "table", Stdout: io.Discard, Stderr: &errb}
	l, code := start(input.Predict, opts)
	if l == nil {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	p, code := predict(context.Background(), l, opts)
	if p == nil {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	return p
}

// metric is a metric of the report that must be a number.
func (p *predicted) metric(t *testing.T, key string) float64 {
	t.Helper()
	v, ok := p.report.Metric(key)
	if !ok {
		t.Fatalf("%s is missing or null", key)
	}
	return v
}

func runPredict(t *testing.T, doc string) (dir string, code int, stdout, stderr string) {
	t.Helper()
	t.Setenv(EnvFixedTime, "2026-01-02T03:04:05Z")
	tmp := t.TempDir()
	cfg := filepath.Join(tmp, "input.yaml")
	if err := os.WriteFile(cfg, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(tmp, "out")
	var out, errb bytes.Buffer
	code = Predict(context.Background(), Options{ConfigPath: cfg, OutputDir: dir, Format: "table", Stdout: &out, Stderr: &errb})
	return dir, code, out.String(), errb.String()
}

// Issue #20: an FP8 deployment of a base checkpoint with a recorded backend version runs, its
// prediction carries the error band and prints it, the FP8 KV cache doubles the capacity, and
// the replayable config keeps the precision and version; router/planner are accepted and named
// as ignored.
func TestPredictFP8WithErrorBand(t *testing.T) {
	const base = `traffic: {source: {type: synthetic, input_tokens: 1024, output_tokens: 64}, load: {type: concurrency, concurrency: 8}, stop: {requests: 32}}
engine:
  model: meta-llama/Llama-3.1-70B
  hardware: h100_sxm
  backend: vllm
  backend_version: "0.12.0"
  workers: {aggregated: {parallelism: {tensor: 4}}}
`
	_, code, stdout, stderr := runPredict(t, base+"  gemm_quant_mode: fp8\n  kvcache_quant_mode: fp8\nrouter: {policy: round_robin}\n")
	if code != aisimulate.ExitOK {
		t.Fatalf("fp8: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "router: accepted and ignored") {
		t.Errorf("stderr does not name the ignored router section: %q", stderr)
	}
	if !strings.Contains(stdout, "expected error: TTFT ") || !strings.Contains(stdout, "±") {
		t.Errorf("stdout has no expected-error line:\n%s", stdout)
	}
	p16, p8 := mustPredict(t, base), mustPredict(t, base+"  gemm_quant_mode: fp8\n  kvcache_quant_mode: fp8\n")
	b := p8.band
	if b == nil || b.Extrapolated || b.Metrics["ttft_ms"].MedianAbsPct <= 0 || b.Metrics["tpot_ms"].P80AbsPct <= 0 {
		t.Errorf("error band = %+v, want a measured (not extrapolated) band for vLLM on H100", b)
	}
	// Half the weight bytes and half the KV bytes per token: far more than twice the tokens.
	if k8, k16 := p8.kvTokens["aggregated"], p16.kvTokens["aggregated"]; k8 < 2*k16 {
		t.Errorf("KV capacity fp8 %d vs bf16 %d, want > 2×", k8, k16)
	}
	if tpot8, tpot16 := p8.metric(t, "mean_tpot_ms"), p16.metric(t, "mean_tpot_ms"); tpot8 >= tpot16 {
		t.Errorf("FP8 decode (%.2f ms) must be faster than BF16 (%.2f ms)", tpot8, tpot16)
	}
	if kv := p8.report.KVCachePrecision["aggregated"]; kv != (output.KVCachePrecision{DType: "fp8", Source: "user_override"}) {
		t.Errorf("kv_cache_precision = %+v", kv)
	}
	eng := p8.config.Engine
	if eng.GEMMQuantMode != "fp8" || eng.KVCacheQuantMode != "fp8" || eng.BackendVersion != "0.12.0" {
		t.Errorf("replayable config lost precision or version: %+v", eng)
	}
	// An unsupported quantization stays an explicit exit 2 naming the field.
	if _, code, _, stderr := runPredict(t, base+"  gemm_quant_mode: nvfp4\n"); code != aisimulate.ExitInvalidInput ||
		!strings.Contains(stderr, "engine.gemm_quant_mode") {
		t.Errorf("nvfp4: exit %d, stderr %q", code, stderr)
	}
}

// Issue #20: min_gpus with a goodput floor answers with the smallest deployment that serves it;
// candidates below the floor are infeasible with reason load_constraint.
func TestMinGPUsWithGoodputFloor(t *testing.T) {
	doc := `traffic: {source: {type: synthetic, input_tokens: 2048, output_tokens: 128}, load: {type: poisson, requests_per_second: 40}, stop: {requests: 200}}
engine: {model: meta-llama/Llama-3.1-8B-Instruct, hardware: h100_sxm, mode: aggregated, backend: vllm, workers: {aggregated: {}}}
evaluation: {sla: {ttft_ms: 2000, itl_ms: 100}}
optimization: {target: min_gpus, constraints: {max_candidate_gpus: 8, min_goodput_rps: 30}}
optimizer: {max_trials: 64}
`
	dir, code, _, stderr := runRecommend(t, doc)
	if code != aisimulate.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	res, err := output.ReadSweepResult(dir)
	if err != nil {
		t.Fatal(err)
	}
	best := res.Views.Selected()
	if len(best) == 0 {
		t.Fatal("no selected candidate")
	}
	byID := map[string]output.Candidate{}
	refused := 0
	for _, c := range res.Candidates {
		byID[c.CandidateID] = c
		if c.ReasonCategory == output.ReasonLoadConstraint {
			refused++
		}
		if c.Status == output.StatusFeasible && c.Metrics["goodput_request_throughput_rps"] < 30 {
			t.Errorf("%s is feasible with goodput %.2f < 30", c.CandidateID, c.Metrics["goodput_request_throughput_rps"])
		}
		if c.ReasonCategory == output.ReasonLoadConstraint && c.Metrics["goodput_request_throughput_rps"] >= 30 {
			t.Errorf("%s refused for load with goodput %.2f", c.CandidateID, c.Metrics["goodput_request_throughput_rps"])
		}
	}
	if refused == 0 {
		t.Error("no candidate fell below the goodput floor; the floor is not exercised")
	}
	top := byID[best[0]]
	for _, c := range res.Candidates {
		if c.Status == output.StatusFeasible && c.UsedGPUs < top.UsedGPUs {
			t.Errorf("%s serves the floor on %d GPUs, fewer than the selected %d", c.CandidateID, c.UsedGPUs, top.UsedGPUs)
		}
	}
	if top.ErrorBand == nil {
		t.Error("selected candidate has no error band")
	}
}

// Issue #20: traffic.source.cached_prefix_tokens skips the cached part of the prefill when the
// role caches prefixes, and is kept in the replay config.
func TestCachedPrefixTokens(t *testing.T) {
	doc := func(cached string, caching bool) string {
		return `traffic: {source: {type: synthetic, input_tokens: 4096, output_tokens: 32` + cached + `}, load: {type: concurrency, concurrency: 1}, stop: {requests: 4}}
engine: {model: Qwen/Qwen3-8B, hardware: h100_sxm, backend: vllm, workers: {aggregated: {kv_cache: {prefix_caching: ` +
			map[bool]string{true: "true", false: "false"}[caching] + `}}}}
`
	}
	ttft := func(d string) float64 { return mustPredict(t, d).metric(t, "mean_ttft_ms") }
	cold, warm, off := ttft(doc("", true)), ttft(doc(", cached_prefix_tokens: 3072", true)), ttft(doc(", cached_prefix_tokens: 3072", false))
	if !(warm < 0.6*cold) || off != cold {
		t.Errorf("TTFT cold %.1f, 3/4 cached %.1f, cached without prefix caching %.1f", cold, warm, off)
	}
	if _, code, _, stderr := runPredict(t, doc(", cached_prefix_tokens: 5000", true)); code != aisimulate.ExitInvalidInput ||
		!strings.Contains(stderr, "traffic.source.cached_prefix_tokens") {
		t.Errorf("cached > input: exit %d, %q", code, stderr)
	}
}

// Issue #20: engine.kv_transfer sets the P/D handoff: a slow link raises TTFT, no bandwidth
// charges nothing, and the setting is kept in the replay config.
func TestKVTransferSetting(t *testing.T) {
	doc := func(kt string) string {
		return `traffic: {source: {type: synthetic, input_tokens: 4096, output_tokens: 32}, load: {type: concurrency, concurrency: 1}, stop: {requests: 4}}
engine: {model: Qwen/Qwen3-8B, hardware: h100_sxm, backend: vllm, mode: disaggregated` + kt + `}
`
	}
	none := mustPredict(t, doc(", kv_transfer: {bytes_per_token: auto}"))
	slow := mustPredict(t, doc(", kv_transfer: {bandwidth_gb_per_second: 1, timing_mode: full_prompt}"))
	// 4096 tokens × 144 KiB per token over 1 GB/s ≈ 0.6 s more TTFT.
	if d := slow.metric(t, "mean_ttft_ms") - none.metric(t, "mean_ttft_ms"); d < 500 || d > 700 {
		t.Errorf("TTFT with 1 GB/s − without transfer = %.1f ms, want ≈ 600", d)
	}
	if kt := slow.config.Engine.KVTransfer; kt == nil || kt.BandwidthGBps == nil || *kt.BandwidthGBps != 1 || kt.TimingMode != "full_prompt" {
		t.Errorf("replay config kv_transfer = %+v", kt)
	}
}

// Issue #20: workers.<role>.timing: {type: fixed} prices every prompt step at prefill_ms and
// every decode-only step at decode_ms: one request alone has TTFT = prefill_ms (one step for a
// prompt within the step budget) and TPOT = decode_ms.
func TestFixedTiming(t *testing.T) {
	dir, code, _, stderr := runPredict(t, `traffic: {source: {type: synthetic, input_tokens: 1000, output_tokens: 11}, load: {type: concurrency, concurrency: 1}, stop: {requests: 3}}
engine: {model: Qwen/Qwen3-8B, hardware: h100_sxm, workers: {aggregated: {timing: {type: fixed, prefill_ms: 40, decode_ms: 5}}}}
`)
	if code != aisimulate.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	p, err := output.ReadPrediction(dir)
	if err != nil {
		t.Fatal(err)
	}
	ttft, _ := p.Metric("mean_ttft_ms")
	tpot, _ := p.Metric("mean_tpot_ms")
	if math.Abs(ttft-40) > 1e-6 || math.Abs(tpot-5) > 1e-6 {
		t.Errorf("TTFT %.3f ms, TPOT %.3f ms, want 40 and 5", ttft, tpot)
	}
}

// Issue #20: engine.workers.<role>.hardware puts a disaggregated role on other hardware: the
// decode pool's KV capacity and step times come from that GPU, the replay config keeps the
// override, and predicting that config reproduces the candidate; an unknown id is exit 2 naming
// the field.
func TestHeterogeneousPD(t *testing.T) {
	doc := func(decode string) string {
		return `traffic: {source: {type: synthetic, input_tokens: 1024, output_tokens: 64}, load: {type: concurrency, concurrency: 16}, stop: {requests: 64}}
engine:
  mode: disaggregated
  model: meta-llama/Meta-Llama-3.1-8B
  hardware: h200_sxm
  backend: vllm
  kv_transfer: {bandwidth_gb_per_second: 50}
  workers: {prefill: {parallelism: {tensor: 1}}, decode: {parallelism: {tensor: 1}` + decode + `}}
`
	}
	same, het := mustPredict(t, doc("")), mustPredict(t, doc(", hardware: b200_sxm"))
	if same.kvTokens["prefill"] != het.kvTokens["prefill"] {
		t.Errorf("prefill capacity changed: %d vs %d", same.kvTokens["prefill"], het.kvTokens["prefill"])
	}
	if het.kvTokens["decode"] <= same.kvTokens["decode"] {
		t.Errorf("decode on b200_sxm holds %d tokens, not more than on h200_sxm (%d)", het.kvTokens["decode"], same.kvTokens["decode"])
	}
	if h, s := het.metric(t, "mean_tpot_ms"), same.metric(t, "mean_tpot_ms"); h >= s {
		t.Errorf("decode on b200_sxm: TPOT %.3f ms, not below h200_sxm's %.3f ms", h, s)
	}
	if het.band == nil || !strings.Contains(het.band.Basis, "h200_sxm, b200_sxm") {
		t.Errorf("error band does not name both GPUs: %+v", het.band)
	}

	// Recommend searches the independent knobs (preset: false: AISimulate refuses them with the
	// default preset); predict takes them as they are (aisim's predict refuses a preset).
	rec := strings.Replace(doc(", hardware: b200_sxm"), "load: {type: concurrency, concurrency: 16}", "load: {type: concurrency, concurrency: {choices: [8, 16]}}", 1)
	rec = strings.ReplaceAll(rec, "parallelism: {tensor: 1}", "parallelism: {preset: false, tensor: 1}") + "optimization: {target: throughput}\n"
	dir, code, _, stderr := runRecommend(t, rec)
	if code != aisimulate.ExitOK {
		t.Fatalf("recommend: exit %d: %s", code, stderr)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "recommendations", "0001.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), "hardware: b200_sxm") {
		t.Fatalf("replay config lost the decode hardware:\n%s", raw)
	}
	res, err := output.ReadSweepResult(dir)
	if err != nil {
		t.Fatal(err)
	}
	var top output.Candidate
	for _, c := range res.Candidates {
		if c.CandidateID == res.Views.Selected()[0] {
			top = c
		}
	}
	if top.Config["decode_hardware_sku"] != "b200_sxm" {
		t.Errorf("candidate config: decode_hardware_sku = %v", top.Config["decode_hardware_sku"])
	}
	if got := mustPredict(t, string(raw)).metric(t, "mean_tpot_ms"); math.Abs(got-top.Metrics["mean_tpot_ms"]) > 1e-9 {
		t.Errorf("predict of 0001.yaml: TPOT %v, candidate %v", got, top.Metrics["mean_tpot_ms"])
	}

	if _, code, _, stderr := runPredict(t, doc(", hardware: x9000")); code != aisimulate.ExitInvalidInput ||
		!strings.Contains(stderr, ": engine.workers.decode.hardware: ") {
		t.Errorf("unknown decode hardware: exit %d, stderr %q", code, stderr)
	}
}

// Issue #20: synthetic-session traffic. Every turn is a request; turns run in order after the
// previous response plus the inter-turn delay, so a longer delay stretches the run; the prompt
// carries the history, which the worker's prefix cache serves. Recommend accepts and ignores a
// router section, and its concrete configs keep the session traffic (sessions_per_second,
// stop.sessions) and run again through predict.
func TestSyntheticSessions(t *testing.T) {
	doc := func(delay string) string {
		return `traffic:
  source: {type: synthetic-session, new_input_tokens_per_turn: 512, output_tokens_per_turn: 64, session: {turns: 3, inter_turn_delay_ms: ` + delay + `}}
  load: {type: concurrency, concurrency: 2}
  stop: {sessions: 6}
engine: {model: Qwen/Qwen3-8B, hardware: h100_sxm, backend: vllm, workers: {aggregated: {kv_cache: {prefix_caching: true}}}}
`
	}
	fast, slow := mustPredict(t, doc("0")), mustPredict(t, doc("2000"))
	if f, s := fast.metric(t, "completed_requests"), slow.metric(t, "completed_requests"); f != 18 || s != 18 {
		t.Errorf("completed %v / %v requests, want 18 (6 sessions of 3 turns)", f, s)
	}
	// Three rounds of sessions, two 2 s pauses each.
	if s, f := slow.metric(t, "duration_ms"), fast.metric(t, "duration_ms"); s < f+3*2*2000 {
		t.Errorf("duration %.0f ms with 2 s delays, %.0f ms without: want at least 12 s more", s, f)
	}
	if _, code, _, stderr := runPredict(t, doc("0")+"\ntraffic2: {}\n"); code != aisimulate.ExitInvalidInput || !strings.Contains(stderr, "traffic2") {
		t.Errorf("unknown section: exit %d, %q", code, stderr)
	}
	if _, code, _, stderr := runPredict(t, strings.Replace(doc("0"), "turns: 3", "turns: 200", 1)); code != aisimulate.ExitInvalidInput ||
		!strings.Contains(stderr, "traffic.source.session.turns") {
		t.Errorf("conversation beyond the context: exit %d, %q", code, stderr)
	}

	rec := `traffic:
  source: {type: synthetic-session, new_input_tokens_per_turn: 512, output_tokens_per_turn: 64, session: {turns: 3, shared_prefix_ratio: 0.5, prefix_groups: 2}}
  load: {type: poisson, sessions_per_second: {choices: [1, 4]}, seed: 7}
  stop: {sessions_per_load_unit: 4}
engine: {model: Qwen/Qwen3-8B, hardware: h100_sxm, backend: vllm, workers: {aggregated: {parallelism: {preset: default}, kv_cache: {prefix_caching: true}}, prefill: {}, decode: {}}}
router: {policy: {choices: [round_robin, kv_router]}, prefill_load_model: {type: none}}
optimization: {target: throughput, constraints: {max_candidate_gpus: 2}}
optimizer: {algorithm: random, max_trials: 6, seed: 1}
`
	dir, code, _, stderr := runRecommend(t, rec)
	if code != aisimulate.ExitOK {
		t.Fatalf("recommend: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "router: accepted and ignored") {
		t.Errorf("stderr does not name the ignored router section: %q", stderr)
	}
	cfg, err := os.ReadFile(filepath.Join(dir, "recommendations", "0001.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"type: synthetic-session", "sessions_per_second:", "sessions_per_load_unit: 4", "shared_prefix_ratio: 0.5", "seed: 7"} {
		if !strings.Contains(string(cfg), want) {
			t.Errorf("recommendations/0001.yaml lacks %q:\n%s", want, cfg)
		}
	}
	if _, code, _, stderr := runPredict(t, string(cfg)); code != aisimulate.ExitOK {
		t.Errorf("predict of recommendations/0001.yaml: exit %d: %s", code, stderr)
	}
}
