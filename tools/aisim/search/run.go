package search

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/input"
)

// Options control a search run.
type Options struct {
	// Parallelism caps concurrent evaluations (further capped by
	// optimizer.parallelism and GOMAXPROCS). Zero means no extra cap.
	Parallelism int
	// OnSettled is called for every candidate in candidate order, as soon as
	// it and all earlier candidates have settled.
	OnSettled func(c output.Candidate, settled, budget int)
	// Space, when set, is the space Env.Enumerate returned (for callers that enumerated it
	// already to fail early); otherwise Recommend enumerates it.
	Space map[string][]Point
}

// Run is a finished (or interrupted) search.
type Run struct {
	Candidates []output.Candidate
	Outcomes   []*Outcome
	Counts     output.Counts
	// Selected lists indexes into Candidates, best first (or Pareto order).
	Selected   []int
	Exhaustive bool
	// Interrupted is set when ctx was cancelled before every candidate
	// settled; Candidates then holds the settled prefix.
	Interrupted bool
}

// Recommend enumerates, selects, evaluates and ranks.
func (e *Env) Recommend(ctx context.Context, opts Options) (*Run, error) {
	space := opts.Space
	if space == nil {
		var err error
		if space, err = e.Enumerate(); err != nil {
			return nil, err
		}
	}
	points, exhaustive := e.Select(space)
	// The space (hundreds of thousands of points at large budgets) is garbage from here on;
	// dropping opts' reference keeps the collector from scanning it during the simulations
	// (the local space is dead after Select, so it no longer keeps the space reachable).
	opts.Space = nil
	run := &Run{Exhaustive: exhaustive}

	// Resolve every point first (cheap) so duplicates are known before any
	// simulation; a duplicate is served from the first occurrence's result
	// regardless of evaluation order, which keeps runs deterministic.
	prepared := make([]*Prepared, len(points))
	dupOf := make([]int, len(points))
	firstByKey := map[string]int{}
	for i, p := range points {
		prepared[i] = e.Prepare(p)
		dupOf[i] = -1
		key := string(mustJSON(e.PredictionConfig(prepared[i])))
		if j, ok := firstByKey[key]; ok {
			dupOf[i] = j
		} else {
			firstByKey[key] = i
		}
	}

	workers := max(1, min(e.Doc.Optimizer.Parallelism, runtime.GOMAXPROCS(0)))
	if opts.Parallelism > 0 {
		workers = min(workers, opts.Parallelism)
	}
	timeout := time.Duration(e.Doc.Optimizer.CandidateTimeoutSeconds * float64(time.Second))
	outcomes := make([]*Outcome, len(points))
	ready := make([]chan struct{}, len(points))
	for i := range ready {
		ready[i] = make(chan struct{})
	}
	jobs := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				pr := prepared[i]
				if pr.Status != "" {
					outcomes[i] = &Outcome{Prepared: pr}
				} else {
					rep, err := e.Simulate(ctx, pr, time.Now().Add(timeout))
					if ctx.Err() != nil {
						close(ready[i])
						continue // interrupted: leave unsettled
					}
					outcomes[i] = e.Finish(pr, rep, err)
				}
				close(ready[i])
			}
		}()
	}
	go func() {
		defer close(jobs)
		for i := range points {
			if dupOf[i] >= 0 {
				continue
			}
			select {
			case jobs <- i:
			case <-ctx.Done():
				return
			}
		}
	}()

	// Settle in candidate order so the ledger and ids are deterministic.
settle:
	for i := range points {
		src := i
		if dupOf[i] >= 0 {
			src = dupOf[i]
		}
		select {
		case <-ready[src]:
		case <-ctx.Done():
			select {
			case <-ready[src]:
			default:
				break settle // a worker may still be writing outcomes[src]
			}
		}
		if outcomes[src] == nil {
			break
		}
		o := outcomes[src]
		if src != i {
			cp := *o
			cp.CacheHit = true
			o = &cp
		}
		outcomes[i] = o
		c := e.record(i, o)
		run.Candidates = append(run.Candidates, c)
		run.Outcomes = append(run.Outcomes, o)
		count(&run.Counts, c.Status, o.CacheHit)
		if opts.OnSettled != nil {
			opts.OnSettled(c, i+1, len(points))
		}
	}
	wg.Wait()
	if ctx.Err() != nil && len(run.Candidates) < len(points) {
		run.Interrupted = true
	}
	run.Selected = e.selectView(run)
	return run, nil
}

func count(c *output.Counts, status string, hit bool) {
	switch status {
	case output.StatusFeasible:
		c.Feasible++
	case output.StatusInfeasible:
		c.Infeasible++
	case output.StatusUnsupported:
		c.Unsupported++
	case output.StatusTimedOut:
		c.TimedOut++
	case output.StatusFailed:
		c.Failed++
	case output.StatusResourceLimited:
		c.ResourceLimited++
	}
	if status != output.StatusUnsupported && status != output.StatusResourceLimited {
		c.Evaluated++
	}
	if hit {
		c.CacheHits++
	}
}

// record builds the CandidateRecord for outcome i.
func (e *Env) record(i int, o *Outcome) output.Candidate {
	c := output.Candidate{
		CandidateID:      fmt.Sprintf("candidate-%06d", i+1),
		Status:           o.Status,
		ReasonCategory:   o.ReasonCategory,
		Reason:           o.Reason,
		Config:           e.SampleConfig(o.Prepared),
		PredictionConfig: e.PredictionConfig(o.Prepared),
		UsedGPUs:         o.Point.UsedGPUs(),
		Score:            o.Score,
		Metrics:          Metrics(o),
		Objectives:       o.Objectives,
		Provenance: map[string]any{
			"model":           e.Model.ID,
			"hardware":        e.GPU.ID,
			"backend":         o.Point.Backend,
			"backend_version": e.BackendVersion(o.Point.Backend),
			"topology":        map[string]any{"deployment_mode": o.Point.Mode},
			"estimator":       "aisim-analytical",
			"cache_hit":       o.CacheHit,
		},
	}
	if o.Status == output.StatusUnsupported {
		c.PredictionConfig = nil
	}
	if o.Report != nil {
		c.ErrorBand = e.ErrorBand(o.Point)
	}
	return c
}

// compare orders feasible candidates best first (output.CompareRank): ties of score and GPUs go
// (for min_gpus) to higher goodput and lower mean E2E, then to the canonical config. Feasible
// candidates' scores and metrics are finite (Finish checks), so no NaN reaches it.
func (e *Env) compare(a, b output.Candidate) int {
	return output.CompareRank(&a, &b, func(a, b *output.Candidate) int {
		if e.Doc.Optimization.Target == input.TargetMinGPUs {
			const goodput, e2e = "goodput_output_throughput_tok_s", "mean_e2e_latency_ms"
			if c := cmp.Compare(b.Metrics[goodput], a.Metrics[goodput]); c != 0 {
				return c
			}
			if c := cmp.Compare(a.Metrics[e2e], b.Metrics[e2e]); c != 0 {
				return c
			}
		}
		return bytes.Compare(mustJSON(a.Config), mustJSON(b.Config))
	})
}

// selectView returns all distinct feasible candidates best first, or the
// Pareto front (throughput_per_gpu, throughput_per_user both maximized)
// sorted by throughput_per_user ascending.
func (e *Env) selectView(run *Run) []int {
	var feas []int
	seen := map[string]bool{}
	for i, c := range run.Candidates {
		if c.Status != output.StatusFeasible || run.Outcomes[i].CacheHit {
			continue
		}
		key := string(mustJSON(c.PredictionConfig))
		if seen[key] {
			continue
		}
		seen[key] = true
		feas = append(feas, i)
	}
	cs := run.Candidates
	if e.Doc.Optimization.Target != input.TargetPareto {
		slices.SortStableFunc(feas, func(i, j int) int { return e.compare(cs[i], cs[j]) })
		return feas
	}
	objectives := func(i int) (float64, float64) {
		return cs[i].Objectives["throughput_per_gpu"], cs[i].Objectives["throughput_per_user"]
	}
	return output.ParetoFront(feas, objectives, func(i, j int) int { return e.compare(cs[i], cs[j]) })
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only plain maps of scalars are marshalled
	}
	return b
}

var sdkMode = map[string]string{input.ModeAggregated: "agg", input.ModeDisaggregated: "disagg"}
var sdkRole = map[string]string{input.RoleAggregated: "agg", input.RolePrefill: "prefill", input.RoleDecode: "decode"}

// SampleConfig is the internal sample in AISimulate's SDK naming.
func (e *Env) SampleConfig(pr *Prepared) map[string]any {
	p := pr.Point
	t := e.Doc.Traffic
	c := map[string]any{
		"mode":            sdkMode[p.Mode],
		"backend":         p.Backend,
		"backend_version": e.BackendVersion(p.Backend),
		"model_name":      e.Model.ID,
		"hardware_sku":    e.GPU.ID,
		"isl":             t.InputTokens,
		"osl":             t.OutputTokens,
	}
	for _, r := range p.Roles {
		pre := sdkRole[r.Role] + "_"
		s := r.Worker.Shape
		c[pre+"tp"], c[pre+"pp"], c[pre+"attention_dp"] = s.Tensor, s.Pipeline, s.AttentionData
		c[pre+"moe_tp"], c[pre+"moe_ep"], c[pre+"replicas"] = s.MoETensor, s.MoEExpert, s.Replicas
		c[pre+"max_num_batched_tokens"] = r.Worker.MaxBatchedTokens
		c[pre+"max_num_seqs"] = r.Worker.MaxSequences
		c[pre+"block_size"] = r.Worker.BlockSize
		if g, ok := e.RoleGPU[r.Role]; ok {
			c[pre+"hardware_sku"] = g.ID
		}
		if r.Worker.FixedBlocks > 0 {
			c[pre+"num_gpu_blocks"] = r.Worker.FixedBlocks
		} else {
			c[pre+"gpu_memory_utilization"] = r.Worker.MemoryFraction
		}
	}
	switch t.Load.Type {
	case input.LoadConcurrency:
		c["concurrency"] = int(p.Load)
	case input.LoadKVCapacityFraction:
		c["kv_load_ratio"] = p.Load
		if pr.Concurrency > 0 {
			c["concurrency"] = pr.Concurrency
		}
	default:
		c["request_rate"] = p.Load
	}
	if s := t.Session; s != nil {
		// AISimulate's SDK names (sessions_per_second lowers to request_rate).
		c["turns_per_session"], c["shared_prefix_ratio"] = s.Turns, s.SharedPrefixRatio
		c["num_prefix_groups"], c["inter_turn_delay_ms"] = s.PrefixGroups, s.InterTurnDelayMs
	}
	switch {
	case t.Trace != nil:
		e.traceSample(c, p)
	case t.Stop.Requests > 0:
		c["request_count"] = t.Stop.Requests
	default:
		c["num_request_ratio"] = t.Stop.RequestsPerLoadUnit
	}
	return c
}

// PredictionConfig is the concrete predict document for a point: no
// domains, presets or optimization sections; kv_capacity_fraction becomes
// the resolved concurrency; backend defaults are pinned.
func (e *Env) PredictionConfig(pr *Prepared) map[string]any {
	p := pr.Point
	t := e.Doc.Traffic
	load := map[string]any{}
	switch t.Load.Type {
	case input.LoadConcurrency:
		load["type"], load["concurrency"] = input.LoadConcurrency, int(p.Load)
	case input.LoadKVCapacityFraction:
		// An unresolved fraction (KV infeasible) keeps a placeholder of 1.
		load["type"], load["concurrency"] = input.LoadConcurrency, max(1, pr.Concurrency)
	case input.LoadPoisson:
		load["type"], load["requests_per_second"], load["seed"] = input.LoadPoisson, p.Load, t.Load.Seed
	default:
		load["type"], load["requests_per_second"] = t.Load.Type, p.Load
	}
	stop := map[string]any{}
	if t.Stop.Requests > 0 {
		stop["requests"] = t.Stop.Requests
	} else {
		stop["requests_per_load_unit"] = t.Stop.RequestsPerLoadUnit
	}
	workers := map[string]any{}
	for _, r := range p.Roles {
		s := r.Worker.Shape
		capacity := map[string]any{"type": "default", "memory_fraction": r.Worker.MemoryFraction}
		if r.Worker.FixedBlocks > 0 {
			capacity = map[string]any{"type": "fixed", "blocks": r.Worker.FixedBlocks}
		}
		role := map[string]any{
			"parallelism": map[string]any{
				"replicas": s.Replicas, "tensor": s.Tensor, "pipeline": s.Pipeline,
				"attention_data": s.AttentionData, "moe_tensor": s.MoETensor, "moe_expert": s.MoEExpert,
			},
			"scheduler": map[string]any{"max_batched_tokens": r.Worker.MaxBatchedTokens, "max_sequences": r.Worker.MaxSequences},
			"kv_cache": map[string]any{
				"block_size":     r.Worker.BlockSize,
				"prefix_caching": e.Doc.Engine.Workers[r.Role].PrefixCaching,
				"capacity":       capacity,
			},
		}
		if ft := e.Doc.Engine.Workers[r.Role].FixedTiming; ft != nil {
			role["timing"] = map[string]any{"type": "fixed", "prefill_ms": ft.PrefillMs, "decode_ms": ft.DecodeMs}
		}
		if g, ok := e.RoleGPU[r.Role]; ok {
			role["hardware"] = g.ID
		}
		workers[r.Role] = role
	}
	engine := map[string]any{
		"mode": p.Mode, "model": e.Doc.Engine.Model, "hardware": e.GPU.ID, "backend": p.Backend, "workers": workers,
	}
	if kt := e.Doc.Engine.KVTransfer; kt != nil && p.Mode == input.ModeDisaggregated {
		m := map[string]any{"bytes_per_token": "auto", "timing_mode": kt.TimingMode}
		if kt.BytesPerToken > 0 {
			m["bytes_per_token"] = kt.BytesPerToken
		}
		if kt.BandwidthGBps > 0 {
			m["bandwidth_gb_per_second"] = kt.BandwidthGBps
		}
		engine["kv_transfer"] = m
	}
	if e.Doc.Engine.BackendVersion != "" {
		engine["backend_version"] = e.BackendVersion(p.Backend)
	}
	prec := e.Doc.Engine.Precision
	for k, v := range map[string]string{"gemm_quant_mode": prec.GEMM, "moe_quant_mode": prec.MoE, "fmha_quant_mode": prec.FMHA,
		"kvcache_quant_mode": prec.KVCache, "comm_quant_mode": prec.Comm} {
		if v != "" {
			engine[k] = v
		}
	}
	if cl := e.Doc.Engine.ContextLength; cl > 0 {
		engine["context_length"] = cl
	}
	source := map[string]any{"type": "synthetic", "input_tokens": t.InputTokens, "output_tokens": t.OutputTokens}
	if t.CachedPrefixTokens > 0 {
		source["cached_prefix_tokens"] = t.CachedPrefixTokens
	}
	doc := map[string]any{
		"traffic": map[string]any{
			"source": source,
			"load":   load,
			"stop":   stop,
		},
		"engine": engine,
	}
	if t.Trace != nil {
		doc["traffic"] = e.traceTraffic(p)
	}
	if t.Session != nil {
		doc["traffic"] = e.sessionTraffic(p)
	}
	if sla := e.Doc.Evaluation.SLA; sla.Any() {
		m := map[string]any{}
		if sla.TTFTms > 0 {
			m["ttft_ms"] = sla.TTFTms
		}
		if sla.ITLms > 0 {
			m["itl_ms"] = sla.ITLms
		}
		if sla.E2Ems > 0 {
			m["e2e_ms"] = sla.E2Ems
		}
		doc["evaluation"] = map[string]any{"sla": m}
	}
	return doc
}
