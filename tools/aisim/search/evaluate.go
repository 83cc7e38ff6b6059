package search

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"strings"
	"time"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/catalog"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/input"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/perf"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/trace"
)

// BackendVersions are the version slots aisim reports (AISimulate's fleet
// "current" slots); the analytical model itself is version-independent.
var BackendVersions = map[string]string{
	output.BackendVLLM:   "0.24.0",
	output.BackendSGLang: "0.5.14",
	output.BackendTRTLLM: "1.3.0rc20",
}

// BackendVersion is the version recorded for a backend: engine.backend_version when given
// (for recommend's {backend: version} map, that backend's entry), otherwise the current slot.
// aisim does not model differences between versions; the value is only recorded.
func (e *Env) BackendVersion(backend string) string {
	v := e.Doc.Engine.BackendVersion
	if v == "" {
		return BackendVersions[backend]
	}
	if !strings.Contains(v, "=") {
		return v
	}
	for _, kv := range strings.Split(v, ",") {
		if b, ver, _ := strings.Cut(kv, "="); b == backend {
			return ver
		}
	}
	return BackendVersions[backend]
}

// Prepared is a point with its memory and load resolved: everything needed
// to write its replayable config, before the (expensive) simulation.
type Prepared struct {
	Point       Point
	Memory      map[string]perf.Memory // per role
	Concurrency int                    // closed-loop concurrency (0 for open loop)
	Rate        float64
	Requests    int
	CapTokens   int // KV capacity of the load role, all replicas and ranks
	CapConc     int // floor(CapTokens / (isl + floor(osl/2)))
	// TraceMetrics are the metrics only a trace replay has (prefix-cache hit ratio, offered rate).
	TraceMetrics map[string]float64
	// Sessions is the point's generated synthetic-session trace (a synthetic-session source).
	Sessions *trace.Trace
	// Status/ReasonCategory/Reason are set when the point fails before
	// simulation (unsupported, budget, KV capacity).
	Status, ReasonCategory, Reason string
}

// Trial is one evaluated candidate of a search; a cache hit is a copy of the trial it repeats.
type Trial struct {
	*Prepared
	Report     *perf.Report
	Score      *float64
	Objectives map[string]float64
	CacheHit   bool
}

// Prepare resolves memory, feasibility gates that need no simulation, and
// the load of a point.
func (e *Env) Prepare(p Point) *Prepared {
	pr := &Prepared{Point: p, Memory: map[string]perf.Memory{}}
	fail := func(status, cat, reason string) *Prepared {
		pr.Status, pr.ReasonCategory, pr.Reason = status, cat, reason
		return pr
	}
	if p.Unsupported != "" {
		return fail(output.StatusUnsupported, output.ReasonBackendTopology, p.Unsupported)
	}
	t := e.Doc.Traffic
	isl, osl := t.InputTokens, t.OutputTokens
	if e.Doc.Command == input.Recommend {
		used := p.UsedGPUs()
		if o := e.Doc.Optimization; used > o.MaxGPUs || used < o.MinGPUs {
			return fail(output.StatusInfeasible, output.ReasonGPUBudget,
				fmt.Sprintf("uses %d GPUs; allowed range is [%d, %d]", used, max(1, o.MinGPUs), o.MaxGPUs))
		}
	}
	for _, r := range p.Roles {
		mem, err := perf.KVCapacity(e.Model, e.GPUFor(r.Role), r.Worker)
		pr.Memory[r.Role] = mem
		if err != nil {
			return fail(output.StatusInfeasible, output.ReasonKVCapacity, r.Role+": "+err.Error())
		}
		need := isl + osl
		if r.Role == input.RolePrefill {
			need = isl
		}
		if e.Trace != nil {
			need = e.traceNeed(r.Role)
		}
		if t.Session != nil {
			need = e.sessionNeed(r.Role)
		}
		if mem.TokensPerRank < need {
			return fail(output.StatusInfeasible, output.ReasonKVCapacity,
				fmt.Sprintf("%s: KV cache holds %d tokens per rank; one request needs %d", r.Role, mem.TokensPerRank, need))
		}
	}
	loadRole := input.RoleAggregated
	if p.Mode == input.ModeDisaggregated {
		loadRole = input.RoleDecode
	}
	lr := p.Role(loadRole)
	pr.CapTokens = pr.Memory[loadRole].TokensPerRank * lr.Worker.Shape.AttentionData * lr.Worker.Shape.Replicas
	if e.Trace != nil {
		e.prepareTrace(pr)
		return pr
	}
	if t.Session != nil {
		if err := e.prepareSessions(pr); err != nil {
			return fail(output.StatusFailed, output.ReasonReplayRuntime, err.Error())
		}
		return pr
	}
	pr.CapConc = pr.CapTokens / (isl + osl/2)
	unit := p.Load
	switch t.Load.Type {
	case input.LoadConcurrency:
		pr.Concurrency = int(p.Load)
	case input.LoadKVCapacityFraction:
		if pr.CapConc < 1 {
			return fail(output.StatusInfeasible, output.ReasonKVCapacity,
				fmt.Sprintf("KV capacity %d tokens holds no request of %d tokens", pr.CapTokens, isl+osl/2))
		}
		pr.Concurrency = max(1, int(math.Floor(p.Load*float64(pr.CapConc))))
		unit = float64(pr.Concurrency)
	default:
		pr.Rate = p.Load
	}
	pr.Requests = t.Stop.RequestCount(unit)
	return pr
}

// Simulate runs the batching simulation for a prepared point.
func (e *Env) Simulate(ctx context.Context, pr *Prepared, deadline time.Time) (*perf.Report, error) {
	pool := func(r *RoleSpec) *perf.Pool {
		w := r.Worker
		dp := w.Shape.AttentionData
		step := perf.NewStepModel(e.Model, e.GPUFor(r.Role), w.Backend, w.Shape)
		if dw := e.Doc.Engine.Workers[r.Role]; dw != nil && dw.FixedTiming != nil {
			step = step.WithFixedTiming(dw.FixedTiming.PrefillMs/1e3, dw.FixedTiming.DecodeMs/1e3)
		}
		return &perf.Pool{
			Replicas:  w.Shape.Replicas,
			Step:      step,
			MaxTokens: w.MaxBatchedTokens * dp,
			MaxSeqs:   w.MaxSequences * dp,
			KVTokens:  pr.Memory[r.Role].TokensPerRank * dp,
			BlockSize: w.BlockSize,
			// Only aggregated workers mix phases; a prefill worker has no decodes to pause.
			PrefillFirstUpTo: perf.PrefillFirstUpTo(w.Backend),
		}
	}
	var d perf.Deployment
	p := pr.Point
	if p.Mode == input.ModeAggregated {
		d.Agg = pool(p.Role(input.RoleAggregated))
	} else {
		pre, dec := p.Role(input.RolePrefill), p.Role(input.RoleDecode)
		d.Prefill, d.Decode = pool(pre), pool(dec)
		d.TransferSeconds = e.transferSeconds(pre.Worker.Shape, dec.Worker.Shape)
	}
	if e.Trace != nil || pr.Sessions != nil {
		return e.simulateTrace(ctx, pr, d, deadline)
	}
	t := e.Doc.Traffic
	entry := input.RoleAggregated
	if p.Mode == input.ModeDisaggregated {
		entry = input.RolePrefill
	}
	cached := 0
	if wk := e.Doc.Engine.Workers[entry]; wk != nil && wk.PrefixCaching {
		cached = t.CachedPrefixTokens
	}
	w := perf.Workload{ISL: t.InputTokens, OSL: t.OutputTokens, CachedPrefix: cached, Requests: pr.Requests,
		Concurrency: pr.Concurrency, Rate: pr.Rate, Poisson: t.Load.Type == input.LoadPoisson, Seed: uint64(t.Load.Seed)}
	sla := e.Doc.Evaluation.SLA
	rep, err := perf.Simulate(ctx, d, w, perf.SLA{TTFTms: sla.TTFTms, ITLms: sla.ITLms, E2Ems: sla.E2Ems}, deadline)
	if err != nil {
		return nil, err
	}
	return &rep, nil
}

// transferSeconds prices moving one prompt's KV from a prefill to a decode
// worker: the full-model KV of the prompt over min(tp) parallel links,
// NVLink when both workers fit in one node, the network otherwise.
// (AISimulate charges no transfer unless kv_transfer.bandwidth is given;
// aisim always charges the hardware's link.)
func (e *Env) transferSeconds(pre, dec input.Shape) float64 {
	bytes := float64(e.Doc.Traffic.InputTokens) * e.Model.KVBytesPerToken(1)
	if kt := e.Doc.Engine.KVTransfer; kt != nil {
		// engine.kv_transfer: the given bandwidth for the whole handoff, or none at all.
		if kt.BandwidthGBps == 0 {
			return 0
		}
		if kt.BytesPerToken > 0 {
			bytes = float64(e.Doc.Traffic.InputTokens) * float64(kt.BytesPerToken)
		}
		return bytes / (kt.BandwidthGBps * 1e9)
	}
	link, latency := e.handoffLink(pre, dec)
	streams := float64(min(pre.Tensor*pre.AttentionData, dec.Tensor*dec.AttentionData))
	return bytes/(link*streams) + latency
}

// handoffLink is the per-GPU link bandwidth and latency of a P/D handoff: NVLink when both
// workers fit in one node of the same hardware, the prefill hardware's network otherwise
// (prefill and decode on different hardware never share a node).
func (e *Env) handoffLink(pre, dec input.Shape) (bandwidth, latency float64) {
	pg, dg := e.GPUFor(input.RolePrefill), e.GPUFor(input.RoleDecode)
	if pg.ID == dg.ID && pre.GPUsPerWorker()+dec.GPUsPerWorker() <= pg.GPUsPerNode {
		return pg.IntraNodeBW, pg.P2PLatency
	}
	return min(pg.InterNodeBW, dg.InterNodeBW), pg.P2PLatency
}

// Finish turns a simulation result into a trial: strict-SLA gate and score.
func (e *Env) Finish(pr *Prepared, rep *perf.Report, err error) *Trial {
	o := &Trial{Prepared: pr, Report: rep}
	switch {
	case errors.Is(err, perf.ErrDeadline):
		pr.Status, pr.ReasonCategory, pr.Reason = output.StatusTimedOut, output.ReasonRuntimeTimeout,
			fmt.Sprintf("exceeded candidate_timeout_seconds (%gs)", e.Doc.Optimizer.CandidateTimeoutSeconds)
		return o
	case errors.Is(err, perf.ErrStalled):
		pr.Status, pr.ReasonCategory, pr.Reason = output.StatusInfeasible, output.ReasonKVCapacity, err.Error()
		return o
	case err != nil:
		pr.Status, pr.ReasonCategory, pr.Reason = output.StatusFailed, output.ReasonReplayRuntime, err.Error()
		return o
	}
	metrics := Metrics(o)
	if err := output.CheckFinite(metrics); err != nil {
		pr.Status, pr.ReasonCategory, pr.Reason = output.StatusFailed, output.ReasonInvalidMetrics, err.Error()
		return o
	}
	score, objectives, err := e.score(o, metrics)
	if err != nil {
		pr.Status, pr.ReasonCategory, pr.Reason = output.StatusFailed, output.ReasonInvalidMetrics, err.Error()
		return o
	}
	o.Score, o.Objectives = &score, objectives
	pr.Status = output.StatusFeasible
	opt := e.Doc.Optimization
	if e.Doc.Command == input.Recommend && (opt.StrictSLA || opt.Target == output.TargetMinGPUs) {
		if why := slaViolation(e.Doc.Evaluation.SLA, rep); why != "" {
			pr.Status, pr.ReasonCategory, pr.Reason = output.StatusInfeasible, output.ReasonSLAConstraint, why
		} else if floor := opt.MinGoodputRPS; opt.Target == output.TargetMinGPUs && floor > 0 && rep.GoodputRequests < floor {
			pr.Status, pr.ReasonCategory, pr.Reason = output.StatusInfeasible, output.ReasonLoadConstraint,
				fmt.Sprintf("goodput %.3f req/s is below min_goodput_rps %g", rep.GoodputRequests, floor)
		}
	}
	return o
}

// slaViolation compares aggregate means against the SLA (the strict_sla
// filter; mean TPOT stands for itl_ms, as in AISimulate).
func slaViolation(sla input.SLA, r *perf.Report) string {
	switch {
	case sla.TTFTms > 0 && r.TTFT.Mean > sla.TTFTms:
		return fmt.Sprintf("mean TTFT %.1f ms exceeds ttft_ms %g", r.TTFT.Mean, sla.TTFTms)
	case sla.ITLms > 0 && r.TPOTSamples > 0 && r.TPOT.Mean > sla.ITLms:
		return fmt.Sprintf("mean TPOT %.2f ms exceeds itl_ms %g", r.TPOT.Mean, sla.ITLms)
	case sla.E2Ems > 0 && r.E2E.Mean > sla.E2Ems:
		return fmt.Sprintf("mean E2E latency %.1f ms exceeds e2e_ms %g", r.E2E.Mean, sla.E2Ems)
	}
	return ""
}

// score is AISimulate's score_report of the trial's metrics (output.Score): higher is better,
// latency targets and min_gpus negated; pareto scores by its first objective. The per-GPU
// targets divide by the deployment's GPU count (output.ProvisionedGPUs): aisim's pools never
// scale. A latency target without a qualifying sample has no score, and the trial is an error.
func (e *Env) score(o *Trial, metrics output.Report) (float64, map[string]float64, error) {
	report := maps.Clone(metrics)
	// A record has no E2E sample count: every completed request is one.
	report[output.KeyE2ELatencySamples] = float64(o.Report.Completed)
	gpus := output.GPUs{Provisioned: o.Point.UsedGPUs(), Basis: output.ProvisionedGPUs}
	target := e.Doc.Optimization.Target
	if target != output.TargetPareto {
		score, err := output.Score(target, report, gpus)
		if err == nil && !output.Finite(score) {
			err = fmt.Errorf("the %s objective has no qualifying samples", target)
		}
		return score, nil, err
	}
	objectives := map[string]float64{}
	for _, t := range output.ParetoObjectives {
		v, err := output.Objective(t, report, gpus)
		if err != nil {
			return 0, nil, err
		}
		objectives[t] = v
	}
	return objectives[output.ParetoObjectives[0]], objectives, nil
}

// Metrics flattens a report into recommendation.json metric keys.
func Metrics(o *Trial) output.Report {
	r := o.Report
	if r == nil {
		return nil
	}
	gpus := float64(o.Point.UsedGPUs())
	m := output.Report{
		output.KeyRequests:                 float64(r.Requests),
		output.KeyCompletedRequests:        float64(r.Completed),
		output.KeyOutputTokens:             float64(r.OutputTokens),
		output.KeyDurationMs:               r.DurationMs,
		output.KeyRequestThroughput:        r.RequestThroughput,
		output.KeyOutputThroughput:         r.OutputThroughput,
		output.KeyOutputThroughputPerGPU:   r.OutputThroughput / gpus,
		output.KeyThroughputPerUser:        r.PerUserThroughput,
		output.KeyTTFTSamples:              float64(r.TTFTSamples),
		output.KeyTPOTSamples:              float64(r.TPOTSamples),
		output.KeyGoodputCompleted:         float64(r.GoodCompleted),
		output.KeyGoodputOutputThroughput:  r.GoodputOutput,
		output.KeyGoodputRequestThroughput: r.GoodputRequests,
		output.KeyGPUHours:                 output.GPUHours(gpus, r.DurationMs),
		"forward_steps":                    float64(r.ForwardSteps),
		"kv_load_capacity_tokens":          float64(o.CapTokens),
		"kv_load_concurrency_capacity":     float64(o.CapConc),
	}
	if o.Concurrency > 0 {
		m["concurrency"] = float64(o.Concurrency)
	} else {
		m["request_rate"] = o.Rate
	}
	for dist, s := range map[string]perf.Stats{output.DistTTFT: r.TTFT, output.DistTPOT: r.TPOT, output.DistITL: r.ITL, output.DistE2ELatency: r.E2E} {
		m[output.StatKey(output.StatMean, dist)] = s.Mean
		m[output.StatKey(output.StatP50, dist)] = s.P50
		m[output.StatKey(output.StatP90, dist)] = s.P90
		m[output.StatKey(output.StatP99, dist)] = s.P99
	}
	for role, mem := range o.Memory {
		m[role+"_kv_cache_tokens_per_rank"] = float64(mem.TokensPerRank)
	}
	for k, v := range o.TraceMetrics {
		m[k] = v
	}
	return m
}

// NewEnv resolves a decoded document's hardware and model (with the engine's precision
// overrides applied). The CLI does the same with field paths in its errors.
func NewEnv(doc *input.Document) (*Env, error) {
	gpu, err := catalog.LookupGPU(doc.Engine.Hardware)
	if err != nil {
		return nil, err
	}
	model, err := catalog.LoadModel(doc.Engine.Model)
	if err != nil {
		return nil, err
	}
	if p := doc.Engine.Precision; p.Any() {
		if model, err = model.WithPrecision(p.GEMM, p.MoE, p.FMHA, p.KVCache); err != nil {
			return nil, err
		}
	}
	roleGPU, err := RoleGPUs(doc)
	if err != nil {
		return nil, err
	}
	e := &Env{Doc: doc, Model: model, GPU: gpu, RoleGPU: roleGPU}
	return e, e.LoadTrace()
}
