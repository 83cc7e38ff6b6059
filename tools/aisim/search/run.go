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

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

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

// Result is what a finished (or interrupted) search found.
type Result struct {
	Candidates []output.Candidate
	Trials     []*Trial
	Counts     output.Counts
	// Selected lists indexes into Candidates, best first (or Pareto order).
	Selected   []int
	Exhaustive bool
	// Interrupted is set when ctx was cancelled before every candidate
	// settled; Candidates then holds the settled prefix.
	Interrupted bool
}

// Recommend enumerates, selects, evaluates and ranks.
func (e *Env) Recommend(ctx context.Context, opts Options) (*Result, error) {
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
	res := &Result{Exhaustive: exhaustive}

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
	trials := make([]*Trial, len(points))
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
					trials[i] = &Trial{Prepared: pr}
				} else {
					rep, err := e.Simulate(ctx, pr, time.Now().Add(timeout))
					if ctx.Err() != nil {
						close(ready[i])
						continue // interrupted: leave unsettled
					}
					trials[i] = e.Finish(pr, rep, err)
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
				break settle // a worker may still be writing trials[src]
			}
		}
		if trials[src] == nil {
			break
		}
		o := trials[src]
		if src != i {
			cp := *o
			cp.CacheHit = true
			o = &cp
		}
		trials[i] = o
		c := e.record(i, o)
		res.Candidates = append(res.Candidates, c)
		res.Trials = append(res.Trials, o)
		count(&res.Counts, c.Status, o.CacheHit)
		if opts.OnSettled != nil {
			opts.OnSettled(c, i+1, len(points))
		}
	}
	wg.Wait()
	if ctx.Err() != nil && len(res.Candidates) < len(points) {
		res.Interrupted = true
	}
	res.Selected = e.selectView(res)
	return res, nil
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

// record builds the CandidateRecord of trial i.
func (e *Env) record(i int, o *Trial) output.Candidate {
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
		if e.Doc.Optimization.Target == output.TargetMinGPUs {
			if c := cmp.Compare(b.Metrics[output.KeyGoodputOutputThroughput], a.Metrics[output.KeyGoodputOutputThroughput]); c != 0 {
				return c
			}
			if c := cmp.Compare(a.Metrics[output.KeyMeanE2ELatency], b.Metrics[output.KeyMeanE2ELatency]); c != 0 {
				return c
			}
		}
		return bytes.Compare(mustJSON(a.Config), mustJSON(b.Config))
	})
}

// selectView returns all distinct feasible candidates best first, or the
// Pareto front (throughput_per_gpu, throughput_per_user both maximized)
// sorted by throughput_per_user ascending.
func (e *Env) selectView(res *Result) []int {
	var feas []int
	seen := map[string]bool{}
	for i, c := range res.Candidates {
		if c.Status != output.StatusFeasible || res.Trials[i].CacheHit {
			continue
		}
		key := string(mustJSON(c.PredictionConfig))
		if seen[key] {
			continue
		}
		seen[key] = true
		feas = append(feas, i)
	}
	cs := res.Candidates
	if e.Doc.Optimization.Target != output.TargetPareto {
		slices.SortStableFunc(feas, func(i, j int) int { return e.compare(cs[i], cs[j]) })
		return feas
	}
	objectives := func(i int) (float64, float64) {
		return cs[i].Objectives[output.TargetThroughputPerGPU], cs[i].Objectives[output.TargetThroughputPerUser]
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
func (e *Env) PredictionConfig(pr *Prepared) *output.PredictionConfig {
	p := pr.Point
	t := e.Doc.Traffic
	var load output.Load
	switch t.Load.Type {
	case input.LoadConcurrency:
		load = output.Load{Type: input.LoadConcurrency, Concurrency: int(p.Load)}
	case input.LoadKVCapacityFraction:
		// An unresolved fraction (KV infeasible) keeps a placeholder of 1.
		load = output.Load{Type: input.LoadConcurrency, Concurrency: max(1, pr.Concurrency)}
	case input.LoadPoisson:
		load = output.Load{Type: input.LoadPoisson, RequestsPerSecond: ptr.To(p.Load), Seed: ptr.To(t.Load.Seed)}
	default:
		load = output.Load{Type: t.Load.Type, RequestsPerSecond: ptr.To(p.Load)}
	}
	var stop output.Stop
	if t.Stop.Requests > 0 {
		stop.Requests = t.Stop.Requests
	} else {
		stop.RequestsPerLoadUnit = ptr.To(t.Stop.RequestsPerLoadUnit)
	}
	engine := output.Engine{Mode: p.Mode, Model: e.Doc.Engine.Model, Hardware: e.GPU.ID, Backend: p.Backend}
	for _, r := range p.Roles {
		s := r.Worker.Shape
		capacity := output.Capacity{Type: output.CapacityDefault, MemoryFraction: ptr.To(r.Worker.MemoryFraction)}
		if r.Worker.FixedBlocks > 0 {
			capacity = output.Capacity{Type: output.CapacityFixed, Blocks: ptr.To(r.Worker.FixedBlocks)}
		}
		w := &output.Worker{
			Parallelism: output.Parallelism{Replicas: s.Replicas, Tensor: s.Tensor, Pipeline: s.Pipeline,
				AttentionData: s.AttentionData, MoETensor: s.MoETensor, MoEExpert: s.MoEExpert},
			Scheduler: output.Scheduler{MaxBatchedTokens: r.Worker.MaxBatchedTokens, MaxSequences: r.Worker.MaxSequences},
			KVCache: output.KVCache{BlockSize: r.Worker.BlockSize, PrefixCaching: ptr.To(e.Doc.Engine.Workers[r.Role].PrefixCaching),
				Capacity: capacity},
		}
		if ft := e.Doc.Engine.Workers[r.Role].FixedTiming; ft != nil {
			w.Timing = &output.Timing{Type: output.TimingFixed, PrefillMs: ptr.To(ft.PrefillMs), DecodeMs: ptr.To(ft.DecodeMs)}
		}
		if g, ok := e.RoleGPU[r.Role]; ok {
			w.Hardware = g.ID
		}
		engine.Workers.SetRole(r.Role, w)
	}
	if kt := e.Doc.Engine.KVTransfer; kt != nil && p.Mode == input.ModeDisaggregated {
		m := &output.KVTransfer{BytesPerToken: ptr.To(intstr.FromString("auto")), TimingMode: kt.TimingMode}
		if kt.BytesPerToken > 0 {
			m.BytesPerToken = ptr.To(intstr.FromInt32(int32(kt.BytesPerToken)))
		}
		if kt.BandwidthGBps > 0 {
			m.BandwidthGBps = ptr.To(kt.BandwidthGBps)
		}
		engine.KVTransfer = m
	}
	if e.Doc.Engine.BackendVersion != "" {
		engine.BackendVersion = e.BackendVersion(p.Backend)
	}
	prec := e.Doc.Engine.Precision
	engine.GEMMQuantMode, engine.MoEQuantMode, engine.FMHAQuantMode = prec.GEMM, prec.MoE, prec.FMHA
	engine.KVCacheQuantMode, engine.CommQuantMode = prec.KVCache, prec.Comm
	if cl := e.Doc.Engine.ContextLength; cl > 0 {
		engine.ContextLength = ptr.To(intstr.FromInt32(int32(cl)))
	}
	source := output.Source{Type: output.SourceSynthetic, InputTokens: t.InputTokens, OutputTokens: t.OutputTokens}
	if t.CachedPrefixTokens > 0 {
		source.CachedPrefixTokens = ptr.To(t.CachedPrefixTokens)
	}
	doc := &output.PredictionConfig{Engine: engine, Traffic: &output.Traffic{Source: source, Load: load, Stop: stop}}
	if t.Trace != nil {
		doc.Traffic = e.traceTraffic(p)
	}
	if t.Session != nil {
		doc.Traffic = e.sessionTraffic(p)
	}
	if sla := e.Doc.Evaluation.SLA; sla.Any() {
		m := &output.SLA{}
		if sla.TTFTms > 0 {
			m.TTFTMs = ptr.To(sla.TTFTms)
		}
		if sla.ITLms > 0 {
			m.ITLMs = ptr.To(sla.ITLms)
		}
		if sla.E2Ems > 0 {
			m.E2EMs = ptr.To(sla.E2Ems)
		}
		doc.Evaluation = &output.Evaluation{SLA: m}
	}
	return doc
}
