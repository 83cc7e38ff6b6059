package perf

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/catalog"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/input"
)

func mustModel(t testing.TB, id string) *catalog.Model {
	t.Helper()
	m, err := catalog.LoadModel(id)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func mustGPU(t testing.TB, id string) catalog.GPU {
	t.Helper()
	g, err := catalog.LookupGPU(id)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func tp(n int) input.Shape {
	return input.Shape{Replicas: 1, Tensor: n, Pipeline: 1, AttentionData: 1, MoETensor: 1, MoEExpert: 1}
}

func workerCfg(backend string, s input.Shape) WorkerConfig {
	return WorkerConfig{Backend: backend, Shape: s, MaxBatchedTokens: 8192, MaxSequences: 256,
		BlockSize: DefaultBlockSize(backend), MemoryFraction: DefaultMemoryFraction(backend)}
}

// AISimulate captured Qwen3-32B-FP8 on one H200 with vLLM 0.24.0 at memory
// fraction 0.9: 737,808 tokens (weights 34.3 GB, activations 1.48 GB,
// runtime overhead 3.76 GB, 131,072 B/token). aisim's weights and overhead
// are exact up to norms and FP8 scales; activations are a formula, and KV is
// the small remainder of large numbers, so 1% (~7,400 tokens, 0.97 GB) is
// the tolerance: it allows a ~1 GB error in the non-KV terms and still
// catches any wrong per-token size (2×) or wrong backend formula (>5%).
func TestKVCapacityQwen3_32B_FP8_H200_VLLM(t *testing.T) {
	mem, err := KVCapacity(mustModel(t, "Qwen/Qwen3-32B-FP8"), mustGPU(t, "h200_sxm"), workerCfg(output.BackendVLLM, tp(1)))
	if err != nil {
		t.Fatal(err)
	}
	const captured = 737808
	if rel := math.Abs(float64(mem.TokensPerRank)-captured) / captured; rel > 0.01 {
		t.Errorf("KV tokens = %d, want %d ± 1%% (off by %.2f%%)", mem.TokensPerRank, captured, rel*100)
	}
	if mem.BytesPerToken != 131072 {
		t.Errorf("bytes per token = %v, want 131072", mem.BytesPerToken)
	}
	if math.Abs(mem.WeightsBytes-34.3e9) > 0.1e9 {
		t.Errorf("weights = %.3g, want 34.3 GB", mem.WeightsBytes)
	}
	if mem.TokensPerRank%64 != 0 || mem.Blocks != mem.TokensPerRank/64 {
		t.Errorf("capacity %d is not whole 64-token blocks (%d)", mem.TokensPerRank, mem.Blocks)
	}
}

func TestKVCapacityBackendFormulasAndLimits(t *testing.T) {
	m, g := mustModel(t, "meta-llama/Llama-3.1-8B-Instruct"), mustGPU(t, "h200_sxm")
	tokens := map[string]int{}
	for _, b := range []string{output.BackendVLLM, output.BackendSGLang, output.BackendTRTLLM} {
		mem, err := KVCapacity(m, g, workerCfg(b, tp(1)))
		if err != nil {
			t.Fatal(err)
		}
		tokens[b] = mem.TokensPerRank
		// Each formula must leave room for the weights and the overhead.
		if used := mem.KVBytes + mem.WeightsBytes + mem.OverheadBytes; used > g.MemoryBytes {
			t.Errorf("%s: KV + weights + overhead = %.3g > capacity %.3g", b, used, g.MemoryBytes)
		}
	}
	// SGLang does not deduct activations but uses a lower fraction; TRT-LLM
	// applies the fraction after subtracting, so it keeps the most memory.
	if !(tokens[output.BackendTRTLLM] > tokens[output.BackendVLLM]) {
		t.Errorf("want trtllm > vllm, got %v", tokens)
	}
	// 70B in BF16 does not fit on one H200; it does with tensor=2.
	big := mustModel(t, "meta-llama/Llama-3.1-70B-Instruct")
	if _, err := KVCapacity(big, g, workerCfg(output.BackendVLLM, tp(1))); err == nil {
		t.Errorf("Llama-70B BF16 fits on one H200, want an error")
	}
	one, err := KVCapacity(big, g, workerCfg(output.BackendVLLM, tp(2)))
	if err != nil {
		t.Fatal(err)
	}
	four, _ := KVCapacity(big, g, workerCfg(output.BackendVLLM, tp(4)))
	if four.TokensPerRank <= one.TokensPerRank {
		t.Errorf("more tensor parallelism must free KV memory per rank: tp2=%d tp4=%d", one.TokensPerRank, four.TokensPerRank)
	}
}

func TestStepTimeRoofline(t *testing.T) {
	m := mustModel(t, "meta-llama/Llama-3.1-8B-Instruct")
	h100, h200, b200 := mustGPU(t, "h100_sxm"), mustGPU(t, "h200_sxm"), mustGPU(t, "b200_sxm")
	decode := Batch{DecodeSeqs: 32, DecodeKV: 32 * 2048, OutputRows: 32}
	prefill := Batch{PrefillTokens: 8192, PrefillAttn: 8192 * 4096, OutputRows: 8}
	step := func(g catalog.GPU, s input.Shape, b Batch) float64 {
		return NewStepModel(m, g, output.BackendVLLM, s).Time(b)
	}
	// Small-batch decode is bandwidth bound: reading 16 GB of weights at
	// 0.8 × 4.8 TB/s takes ~4.2 ms, so a step must cost at least that.
	if d := step(h200, tp(1), decode); d < 4.2e-3 || d > 10e-3 {
		t.Errorf("H200 decode step = %.2f ms, want 4.2..10 ms", d*1e3)
	}
	// Ordering properties the search relies on.
	checks := []struct {
		name       string
		slow, fast float64
	}{
		{"H200 has more bandwidth than H100 (decode)", step(h100, tp(1), decode), step(h200, tp(1), decode)},
		{"B200 beats H200 (prefill)", step(h200, tp(1), prefill), step(b200, tp(1), prefill)},
		{"TP=2 speeds up a memory-bound decode step", step(h200, tp(1), decode), step(h200, tp(2), decode)},
		{"a bigger batch takes longer", step(h200, tp(1), Batch{DecodeSeqs: 256, DecodeKV: 256 * 2048, OutputRows: 256}), step(h200, tp(1), decode)},
	}
	for _, c := range checks {
		if !(c.fast < c.slow) {
			t.Errorf("%s: fast=%.3f ms slow=%.3f ms", c.name, c.fast*1e3, c.slow*1e3)
		}
	}
	if got := step(h200, tp(1), Batch{}); got != 0 {
		t.Errorf("empty batch costs %v", got)
	}
}

// llamaPool is one replica of Llama-3.1-8B-Instruct on one H200 with vLLM.
func llamaPool(t testing.TB) *Pool {
	m, g := mustModel(t, "meta-llama/Llama-3.1-8B-Instruct"), mustGPU(t, "h200_sxm")
	s := tp(1)
	w := workerCfg(output.BackendVLLM, s)
	mem, err := KVCapacity(m, g, w)
	if err != nil {
		t.Fatal(err)
	}
	return &Pool{Replicas: s.Replicas, Step: NewStepModel(m, g, output.BackendVLLM, s), MaxTokens: w.MaxBatchedTokens,
		MaxSeqs: w.MaxSequences, KVTokens: mem.TokensPerRank, BlockSize: w.BlockSize}
}

func TestSimulateClosedLoopInvariants(t *testing.T) {
	p := llamaPool(t)
	w := Workload{ISL: 1024, OSL: 128, Requests: 500, Concurrency: 32}
	r, err := Simulate(context.Background(), Deployment{Agg: p}, w, SLA{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{500, 500, 64000}, []int{r.Completed, r.TTFTSamples, r.OutputTokens}); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	// E2E = TTFT + (OSL-1) × TPOT for every request, hence for the means.
	if want := r.TTFT.Mean + 127*r.TPOT.Mean; math.Abs(r.E2E.Mean-want) > 1e-6*want {
		t.Errorf("mean E2E %.3f != TTFT + 127 × TPOT = %.3f", r.E2E.Mean, want)
	}
	// Little's law for a closed loop: throughput × mean E2E ≈ concurrency
	// (ramp-up and drain make it slightly lower).
	if l := r.RequestThroughput * r.E2E.Mean / 1e3; l < 0.85*32 || l > 32.01 {
		t.Errorf("throughput × E2E = %.2f, want ≈ 32", l)
	}
	if !(r.TTFT.P50 <= r.TTFT.P90 && r.TTFT.P90 <= r.TTFT.P99) {
		t.Errorf("percentiles not ordered: %+v", r.TTFT)
	}
	// Every request's output is counted as good without an SLA.
	if r.GoodCompleted != 500 {
		t.Errorf("goodput requests = %d, want 500", r.GoodCompleted)
	}
}

func TestSimulateLoadAndSLA(t *testing.T) {
	p := llamaPool(t)
	run := func(w Workload, sla SLA) Report {
		r, err := Simulate(context.Background(), Deployment{Agg: p}, w, sla, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	low := run(Workload{ISL: 1024, OSL: 128, Requests: 300, Concurrency: 4}, SLA{})
	high := run(Workload{ISL: 1024, OSL: 128, Requests: 300, Concurrency: 64}, SLA{})
	if !(high.OutputThroughput > low.OutputThroughput && high.TPOT.Mean > low.TPOT.Mean) {
		t.Errorf("more concurrency must raise throughput and TPOT: low=%+v high=%+v", low, high)
	}
	// An open-loop rate far below capacity has TTFT ≈ one prefill.
	open := run(Workload{ISL: 1024, OSL: 128, Requests: 100, Rate: 1, Poisson: true, Seed: 1}, SLA{})
	if open.TTFT.Mean > 100 || math.Abs(open.RequestThroughput-1) > 0.3 {
		t.Errorf("light poisson load: TTFT %.1f ms, rps %.2f", open.TTFT.Mean, open.RequestThroughput)
	}
	// A TTFT bound at the median keeps about half the requests. The median is its histogram
	// bucket's centre and requests arriving together share a TTFT, so the bound includes the
	// whole median bucket (one bucket is 0.2% wide).
	strict := run(Workload{ISL: 1024, OSL: 128, Requests: 300, Concurrency: 64}, SLA{TTFTms: high.TTFT.P50 * (1 + HistBase)})
	if f := float64(strict.GoodCompleted) / 300; f < 0.3 || f > 0.8 {
		t.Errorf("goodput fraction at TTFT p50 bound = %.2f", f)
	}
}

func TestSimulateDisaggregated(t *testing.T) {
	pre := llamaPool(t)
	pre.MaxSeqs = 1
	dec := llamaPool(t)
	// Concurrency 1, so queueing cannot absorb the transfer delay.
	w := Workload{ISL: 2048, OSL: 64, Requests: 20, Concurrency: 1}
	fast, err := Simulate(context.Background(), Deployment{Prefill: pre, Decode: dec}, w, SLA{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	slow, err := Simulate(context.Background(), Deployment{Prefill: pre, Decode: dec, TransferSeconds: 0.05}, w, SLA{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if fast.Completed != 20 || slow.Completed != 20 {
		t.Fatalf("not all requests completed: %d %d", fast.Completed, slow.Completed)
	}
	// The KV transfer is part of TTFT.
	if d := slow.TTFT.Mean - fast.TTFT.Mean; math.Abs(d-50) > 0.01 {
		t.Errorf("50 ms transfer added only %.1f ms to mean TTFT", d)
	}
}

func TestSimulateStallsWhenARequestCannotFit(t *testing.T) {
	p := llamaPool(t)
	p.KVTokens = 512
	_, err := Simulate(context.Background(), Deployment{Agg: p}, Workload{ISL: 1024, OSL: 16, Requests: 2, Concurrency: 1}, SLA{}, time.Time{})
	if err != ErrStalled {
		t.Fatalf("err = %v, want ErrStalled", err)
	}
}

func TestSimulateHonoursCancellation(t *testing.T) {
	p := llamaPool(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Simulate(ctx, Deployment{Agg: p}, Workload{ISL: 128, OSL: 128, Requests: 100000, Concurrency: 8}, SLA{}, time.Time{})
	if err != context.Canceled {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// Issue #20: with prefill-only steps (SGLang) the requests of a closed loop stay in waves: each
// wave's prompts run back to back (a higher mean TTFT), then its decodes run in pure decode steps
// (a lower TPOT); mixed steps (vLLM) spread the prompts over decode steps instead.
func TestPrefillFirstSplitsTTFTAndTPOT(t *testing.T) {
	w := Workload{ISL: 2048, OSL: 64, Requests: 64, Concurrency: 16}
	mixed := llamaPool(t)
	first := llamaPool(t)
	first.PrefillFirstUpTo = math.MaxInt
	rm, err := Simulate(context.Background(), Deployment{Agg: mixed}, w, SLA{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	rf, err := Simulate(context.Background(), Deployment{Agg: first}, w, SLA{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if rf.Completed != 64 || rm.Completed != 64 {
		t.Fatalf("completed %d / %d", rf.Completed, rm.Completed)
	}
	if !(rf.TTFT.Mean > rm.TTFT.Mean && rf.TPOT.Mean < rm.TPOT.Mean) {
		t.Errorf("prefill-first TTFT/TPOT %.1f/%.2f ms, mixed %.1f/%.2f ms: want a higher TTFT and a lower TPOT",
			rf.TTFT.Mean, rf.TPOT.Mean, rm.TTFT.Mean, rm.TPOT.Mean)
	}
	// A bound below the concurrency keeps mixed steps once the worker is busier than that.
	bounded := llamaPool(t)
	bounded.PrefillFirstUpTo = 4
	rb, err := Simulate(context.Background(), Deployment{Agg: bounded}, w, SLA{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if rb.TTFT.Mean == rf.TTFT.Mean {
		t.Errorf("a bound of 4 requests at concurrency 16 should behave unlike always-prefill-first")
	}
}
