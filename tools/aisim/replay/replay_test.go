package replay

import (
	"bytes"
	"context"
	"math"
	"testing"
	"time"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/catalog"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/input"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/perf"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/trace"
)

// deployment is one vLLM worker of Llama-3.1-8B-Instruct on an H200 (tensor 1) with its KV
// capacity, or kvTokens when > 0.
func deployment(t *testing.T, replicas, kvTokens int) perf.Deployment {
	t.Helper()
	m, err := catalog.LoadModel("meta-llama/Llama-3.1-8B-Instruct")
	if err != nil {
		t.Fatal(err)
	}
	g, err := catalog.LookupGPU("h200_sxm")
	if err != nil {
		t.Fatal(err)
	}
	shape := input.Shape{Replicas: replicas, Tensor: 1, Pipeline: 1, AttentionData: 1, MoETensor: 1, MoEExpert: 1}
	w := perf.WorkerConfig{Backend: output.BackendVLLM, Shape: shape, MaxBatchedTokens: 8192, MaxSequences: 256,
		BlockSize: perf.DefaultBlockSize(output.BackendVLLM), MemoryFraction: perf.DefaultMemoryFraction(output.BackendVLLM)}
	mem, err := perf.KVCapacity(m, g, w)
	if err != nil {
		t.Fatal(err)
	}
	if kvTokens <= 0 {
		kvTokens = mem.TokensPerRank
	}
	return perf.Deployment{Agg: &perf.Pool{Replicas: replicas, Step: perf.NewStepModel(m, g, output.BackendVLLM, shape),
		MaxTokens: 8192, MaxSeqs: 256, KVTokens: kvTokens, BlockSize: w.BlockSize}}
}

func generate(t *testing.T, o trace.GenerateOptions) *trace.Trace {
	t.Helper()
	var b bytes.Buffer
	if err := trace.Generate(&b, o); err != nil {
		t.Fatal(err)
	}
	tr, err := trace.Parse(&b, o.BlockSize)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// uniquePrefixes is tr with every hash id made unique: the same arrivals and lengths, no
// shared prefix.
func uniquePrefixes(tr *trace.Trace) *trace.Trace {
	out := &trace.Trace{BlockSize: tr.BlockSize, Requests: make([]trace.Request, len(tr.Requests))}
	next := int64(0)
	for i, r := range tr.Requests {
		r.HashIDs = make([]int64, len(r.HashIDs))
		for j := range r.HashIDs {
			r.HashIDs[j] = next
			next++
		}
		out.Requests[i] = r
	}
	return out
}

func replay(t *testing.T, d perf.Deployment, tr *trace.Trace, o Options) Result {
	t.Helper()
	res, err := Simulate(context.Background(), d, tr, o, perf.SLA{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// sharedTrace: 300 requests in 8 groups sharing a 6144-token prefix of ~8k-token prompts.
var sharedTrace = trace.GenerateOptions{Seed: 3, Requests: 300, Rate: 8, PrefixGroups: 8, PrefixTokens: 6144,
	InputTokens: 8192, OutputTokens: 64, BlockSize: 512}

// Issue #14: a trace whose requests share long prefixes yields a lower mean TTFT than the same
// trace with unique prefixes, everything else equal; with prefix caching off they are equal.
func TestSharedPrefixesLowerTTFT(t *testing.T) {
	d := deployment(t, 1, 0)
	shared := generate(t, sharedTrace)
	unique := uniquePrefixes(shared)
	o := Options{Speedup: 1, PrefixCaching: true}
	s, u := replay(t, d, shared, o), replay(t, d, unique, o)
	t.Logf("mean TTFT shared %.1f ms (hit ratio %.2f), unique %.1f ms (hit ratio %.2f)", s.TTFT.Mean, s.PrefixHitRatio, u.TTFT.Mean, u.PrefixHitRatio)
	if !(s.TTFT.Mean < 0.7*u.TTFT.Mean) {
		t.Errorf("mean TTFT with shared prefixes %.1f ms is not well below unique prefixes' %.1f ms", s.TTFT.Mean, u.TTFT.Mean)
	}
	if s.PrefixHitRatio < 0.5 || u.PrefixHitRatio != 0 {
		t.Errorf("prefix hit ratios: shared %.3f (want >= 0.5), unique %.3f (want 0)", s.PrefixHitRatio, u.PrefixHitRatio)
	}
	if s.Completed != u.Completed || s.OutputTokens != u.OutputTokens {
		t.Errorf("the two replays served different work: %d/%d requests, %d/%d tokens", s.Completed, u.Completed, s.OutputTokens, u.OutputTokens)
	}
	// Without queueing (one request at a time) the saving is the cached blocks' prefill compute.
	s1, u1 := replay(t, d, shared, Options{Concurrency: 1, PrefixCaching: true}), replay(t, d, unique, Options{Concurrency: 1, PrefixCaching: true})
	if !(s1.TTFT.Mean < 0.6*u1.TTFT.Mean) {
		t.Errorf("one at a time: mean TTFT with shared prefixes %.1f ms, unique %.1f ms", s1.TTFT.Mean, u1.TTFT.Mean)
	}
	off := replay(t, d, shared, Options{Speedup: 1})
	if off.TTFT != u.TTFT || off.PrefixHitRatio != 0 {
		t.Errorf("without prefix caching, shared prefixes should not matter: TTFT %+v vs unique %+v", off.TTFT, u.TTFT)
	}
}

// The prefix cache is bounded by the worker's KV capacity: a worker that holds little more
// than one request's KV keeps few prefixes, and hits less than one with its full capacity.
func TestPrefixCacheBoundedByKVCapacity(t *testing.T) {
	shared := generate(t, sharedTrace)
	o := Options{Concurrency: 1, PrefixCaching: true}
	big := replay(t, deployment(t, 1, 0), shared, o)
	small := replay(t, deployment(t, 1, 16384), shared, o)
	if !(small.PrefixHitRatio < big.PrefixHitRatio) {
		t.Errorf("hit ratio with a 16k-token KV cache %.3f is not below the full cache's %.3f", small.PrefixHitRatio, big.PrefixHitRatio)
	}
}

// Issue #14: replaying at arrivalSpeedupRatio (speedup) 2 doubles the offered rate and
// halves the trace's span, so the served request rate rises.
func TestSpeedupRaisesOfferedRate(t *testing.T) {
	d := deployment(t, 2, 0)
	tr := generate(t, trace.GenerateOptions{Seed: 5, Requests: 400, Rate: 4, PrefixGroups: 4, PrefixTokens: 1024,
		InputTokens: 2048, OutputTokens: 128, BlockSize: 512})
	one := replay(t, d, tr, Options{Speedup: 1, PrefixCaching: true})
	two := replay(t, d, tr, Options{Speedup: 2, PrefixCaching: true})
	if r := two.OfferedRate / one.OfferedRate; math.Abs(r-2) > 1e-9 {
		t.Errorf("offered rate ratio %.6f, want 2 (%.3f vs %.3f req/s)", r, two.OfferedRate, one.OfferedRate)
	}
	if math.Abs(one.OfferedRate-tr.Rate()) > 1e-9 {
		t.Errorf("offered rate at speedup 1 is %.4f, the trace's rate is %.4f", one.OfferedRate, tr.Rate())
	}
	if !(two.RequestThroughput > 1.6*one.RequestThroughput) {
		t.Errorf("request throughput %.3f at speedup 2 vs %.3f at 1: want close to double", two.RequestThroughput, one.RequestThroughput)
	}
}

// Issue #14: a trace replayed with concurrency is closed-loop: exactly C requests are in
// flight, the timestamps play no part, and at C=1 the requests run back to back.
func TestConcurrencyIsClosedLoop(t *testing.T) {
	d := deployment(t, 1, 0)
	tr := generate(t, trace.GenerateOptions{Seed: 9, Requests: 200, Rate: 0.5, PrefixGroups: 4, PrefixTokens: 1024,
		InputTokens: 2048, OutputTokens: 96, BlockSize: 512})
	for _, c := range []int{1, 8, 32} {
		res := replay(t, d, tr, Options{Concurrency: c, PrefixCaching: true})
		if res.MaxInFlight != c || res.Completed != len(tr.Requests) {
			t.Errorf("concurrency %d: %d in flight at most, %d completed", c, res.MaxInFlight, res.Completed)
		}
		// Little's law over the run: mean requests in flight = throughput × mean latency ≈ C
		// (a little less: the last requests drain with fewer in flight).
		if l := res.RequestThroughput * res.E2E.Mean / 1e3; l > float64(c)*1.0001 || l < float64(c)*0.85 {
			t.Errorf("concurrency %d: throughput × mean E2E = %.2f", c, l)
		}
	}
	one := replay(t, d, tr, Options{Concurrency: 1, PrefixCaching: true})
	if sum := one.E2E.Mean * float64(one.Completed); math.Abs(sum-one.DurationMs) > 1e-6*one.DurationMs {
		t.Errorf("concurrency 1: duration %.3f ms, sum of latencies %.3f ms: requests did not run back to back", one.DurationMs, sum)
	}
	// Timestamps 100× further apart change nothing in closed loop.
	slow := &trace.Trace{BlockSize: tr.BlockSize, Requests: append([]trace.Request(nil), tr.Requests...)}
	for i := range slow.Requests {
		slow.Requests[i].TimestampMs *= 100
	}
	a := replay(t, d, tr, Options{Concurrency: 8, PrefixCaching: true})
	b := replay(t, d, slow, Options{Concurrency: 8, PrefixCaching: true})
	if a.Report != b.Report {
		t.Errorf("closed-loop replay depends on the timestamps:\n%+v\n%+v", a.Report, b.Report)
	}
	// Open loop at this low rate keeps few requests in flight; closed loop at 32 keeps 32.
	if open := replay(t, d, tr, Options{Speedup: 1, PrefixCaching: true}); open.MaxInFlight >= 32 {
		t.Errorf("open loop at 0.5 req/s had %d requests in flight", open.MaxInFlight)
	}
}

// max_virtual_time_seconds ends the replay at that simulated time.
func TestMaxVirtualTime(t *testing.T) {
	d := deployment(t, 1, 0)
	tr := generate(t, trace.GenerateOptions{Seed: 2, Requests: 300, Rate: 2, InputTokens: 1024, OutputTokens: 64, BlockSize: 512})
	full := replay(t, d, tr, Options{Speedup: 1})
	cut := replay(t, d, tr, Options{Speedup: 1, MaxVirtualSeconds: 30})
	if full.Cutoff || !cut.Cutoff {
		t.Fatalf("cutoff flags: full %v, cut %v", full.Cutoff, cut.Cutoff)
	}
	if cut.DurationMs > 30e3 || cut.Requests >= len(tr.Requests) || cut.Completed > cut.Requests || cut.Completed < 40 {
		t.Errorf("cut at 30 s: duration %.0f ms, %d issued, %d completed", cut.DurationMs, cut.Requests, cut.Completed)
	}
}

// A disaggregated deployment replays too: prefill workers cache prefixes, TTFT includes the
// KV transfer.
func TestDisaggregated(t *testing.T) {
	agg := deployment(t, 1, 0)
	d := perf.Deployment{Prefill: agg.Agg, Decode: agg.Agg}
	tr := generate(t, sharedTrace)
	res := replay(t, d, tr, Options{Speedup: 1, PrefixCaching: true, TransferPerToken: 1e-6, TransferLatency: 1e-3})
	if res.Completed != len(tr.Requests) || res.PrefixHitRatio < 0.5 || res.TTFT.Mean <= 1 {
		t.Errorf("disaggregated replay: %d completed, hit ratio %.2f, TTFT %.2f ms", res.Completed, res.PrefixHitRatio, res.TTFT.Mean)
	}
}

// Synthetic sessions replay turn by turn: closed loop, concurrency counts sessions (at most one
// turn of each in flight), a session's next turn waits for the previous response plus the
// inter-turn delay, and the history is found in the prefix cache of a single worker.
func TestSimulateSessions(t *testing.T) {
	o := trace.SessionOptions{Sessions: 6, Turns: 4, NewInput: 1024, Output: 128, InterTurnDelayMs: 500, BlockSize: 16}
	tr, err := trace.GenerateSessions(o)
	if err != nil {
		t.Fatal(err)
	}
	d := deployment(t, 1, 0)
	res := replay(t, d, tr, Options{Concurrency: 2, Sessions: true, PrefixCaching: true})
	if res.Completed != 24 || res.Requests != 24 {
		t.Fatalf("completed %d of %d requests, want 24", res.Completed, res.Requests)
	}
	if res.MaxInFlight != 2 {
		t.Errorf("max in flight %d, want 2 (one turn per active session)", res.MaxInFlight)
	}
	// Every session spends at least 3 delays of 0.5 s between turns, and three pairs of sessions
	// run one after another.
	if res.DurationMs < 3*3*500 {
		t.Errorf("duration %.0f ms, want >= %d (inter-turn delays)", res.DurationMs, 3*3*500)
	}
	// Turns 2..4 find their history: (1152+2304+3456) of the 6*(1024+2176+3328+4480) prompt
	// tokens, less the partial blocks' remainders (none: every prompt is a whole number of blocks).
	want := float64(6*(1152+2304+3456)) / float64(6*(1024+2176+3328+4480))
	if math.Abs(res.PrefixHitRatio-want) > 1e-9 {
		t.Errorf("prefix hit ratio %.4f, want %.4f", res.PrefixHitRatio, want)
	}
	// Without sessions the same trace runs every turn independently, as fast as the slots allow.
	flat := replay(t, d, tr, Options{Concurrency: 2, PrefixCaching: true})
	if flat.DurationMs >= res.DurationMs {
		t.Errorf("turn-by-turn replay (%.0f ms) should take longer than the flat one (%.0f ms)", res.DurationMs, flat.DurationMs)
	}

	// Open loop: sessions start at their first-turn arrivals; later turns follow completions.
	o.FirstArrivalsMs = []float64{0, 100, 200, 300, 400, 500}
	tr, err = trace.GenerateSessions(o)
	if err != nil {
		t.Fatal(err)
	}
	open := replay(t, d, tr, Options{Sessions: true, Speedup: 1})
	if open.Completed != 24 || open.MaxInFlight > 6 {
		t.Errorf("open loop: completed %d, max in flight %d; want 24 and <= 6", open.Completed, open.MaxInFlight)
	}
	if open.DurationMs < 500+3*500 {
		t.Errorf("open loop duration %.0f ms, want >= %d", open.DurationMs, 500+3*500)
	}
	if math.Abs(open.OfferedRate-24.0/0.5*5/6) > 1e-9 {
		t.Errorf("offered rate %.3f requests/s, want %.3f (10 sessions/s of 4 turns)", open.OfferedRate, 24.0/0.5*5/6)
	}
}
