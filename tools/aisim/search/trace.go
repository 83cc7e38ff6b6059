package search

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/input"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/perf"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/replay"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/trace"
)

// LoadTrace reads the document's trace source (nothing for synthetic traffic) into e.Trace,
// checking what the replay needs: timestamps for trace_timestamps, and requests that fit the
// model's context. Errors name the line and field of the offending row.
func (e *Env) LoadTrace() error {
	src := e.Doc.Traffic.Trace
	if src == nil {
		return nil
	}
	t, err := trace.Read(src.Path, src.Format, src.BlockSize)
	if err != nil {
		return err
	}
	if e.Doc.Traffic.Load.Type == input.LoadTraceTimestamps {
		if _, err := t.Arrivals(1); err != nil {
			return err
		}
	}
	limit := e.Model.MaxContext
	if cl := e.Doc.Engine.ContextLength; cl > 0 {
		limit = min(limit, cl)
	}
	for _, r := range t.Requests {
		if r.Input+r.Output > limit {
			return &trace.ParseError{Line: r.Line, Field: "input_length",
				Reason: fmt.Sprintf("input + output (%d) exceeds the context length %d", r.Input+r.Output, limit)}
		}
	}
	e.Trace = t
	return nil
}

// prepareTrace resolves the load of a trace point: closed-loop concurrency, or the trace's
// arrival rate times the speedup; every request of the trace is replayed.
func (e *Env) prepareTrace(pr *Prepared) {
	p := pr.Point
	in, out := e.Trace.MeanTokens()
	pr.CapConc = int(float64(pr.CapTokens) / (in + out/2))
	if e.Doc.Traffic.Load.Type == input.LoadConcurrency {
		pr.Concurrency = int(p.Load)
	} else {
		pr.Rate = e.Trace.Rate() * p.Load
	}
	pr.Requests = len(e.Trace.Requests)
}

// traceNeed is the KV one request of the trace needs on a worker of role: its largest prompt
// plus response (prompt only on a prefill worker).
func (e *Env) traceNeed(role string) int {
	total, in := e.Trace.MaxTokens()
	if role == input.RolePrefill {
		return in
	}
	return total
}

// simulateTrace replays the trace on the deployment.
func (e *Env) simulateTrace(ctx context.Context, pr *Prepared, d perf.Deployment, deadline time.Time) (*perf.Report, error) {
	t := e.Doc.Traffic
	o := replay.Options{Concurrency: pr.Concurrency, MaxVirtualSeconds: t.Stop.MaxVirtualSeconds, Sessions: pr.Sessions != nil}
	tr := e.Trace
	if pr.Sessions != nil {
		tr = pr.Sessions
	}
	if t.Load.Type == input.LoadTraceTimestamps {
		o.Speedup = pr.Point.Load
	}
	entry := input.RoleAggregated
	if pr.Point.Mode == input.ModeDisaggregated {
		entry = input.RolePrefill
		pre, dec := pr.Point.Role(input.RolePrefill).Worker.Shape, pr.Point.Role(input.RoleDecode).Worker.Shape
		o.TransferPerToken, o.TransferLatency = e.transferRate(pre, dec)
	}
	if w := e.Doc.Engine.Workers[entry]; w != nil {
		o.PrefixCaching = w.PrefixCaching
	}
	sla := e.Doc.Evaluation.SLA
	res, err := replay.Simulate(ctx, d, tr, o, perf.SLA{TTFTms: sla.TTFTms, ITLms: sla.ITLms, E2Ems: sla.E2Ems}, deadline)
	if err != nil {
		return nil, err
	}
	pr.TraceMetrics = map[string]float64{"prefix_cache_hit_ratio": res.PrefixHitRatio}
	if res.OfferedRate > 0 {
		pr.TraceMetrics["offered_rate_rps"] = res.OfferedRate
	}
	return &res.Report, nil
}

// transferRate is transferSeconds per prompt token, and its fixed latency.
func (e *Env) transferRate(pre, dec input.Shape) (perToken, latency float64) {
	if kt := e.Doc.Engine.KVTransfer; kt != nil {
		// engine.kv_transfer: the given bandwidth for the whole handoff, or none at all.
		if kt.BandwidthGBps == 0 {
			return 0, 0
		}
		bytes := e.Model.KVBytesPerToken(1)
		if kt.BytesPerToken > 0 {
			bytes = float64(kt.BytesPerToken)
		}
		return bytes / (kt.BandwidthGBps * 1e9), 0
	}
	link, latency := e.handoffLink(pre, dec)
	streams := float64(min(pre.Tensor*pre.AttentionData, dec.Tensor*dec.AttentionData))
	return e.Model.KVBytesPerToken(1) / (link * streams), latency
}

// traceTraffic is the traffic section of a trace point's prediction document.
func (e *Env) traceTraffic(p Point) *output.Traffic {
	t := e.Doc.Traffic
	src := output.Source{Type: output.SourceTrace, Paths: []string{t.Trace.Path}, Format: t.Trace.Format}
	if t.Trace.BlockSizeSet {
		src.BlockSize = t.Trace.BlockSize
	}
	load := output.Load{Type: input.LoadConcurrency, Concurrency: int(p.Load)}
	if t.Load.Type == input.LoadTraceTimestamps {
		load = output.Load{Type: input.LoadTraceTimestamps, Speedup: ptr.To(p.Load)}
	}
	traffic := &output.Traffic{Source: src, Load: load}
	if v := t.Stop.MaxVirtualSeconds; v > 0 {
		traffic.Stop.MaxVirtualTimeSeconds = ptr.To(v)
	}
	return traffic
}

// traceSample fills the SDK-style sample of a trace point.
func (e *Env) traceSample(c map[string]any, p Point) {
	t := e.Doc.Traffic
	delete(c, "isl")
	delete(c, "osl")
	delete(c, "request_rate")
	c["trace_path"], c["trace_format"] = t.Trace.Path, t.Trace.Format
	if t.Load.Type == input.LoadTraceTimestamps {
		c["speedup"] = p.Load
	} else {
		c["concurrency"] = int(p.Load)
	}
	if v := t.Stop.MaxVirtualSeconds; v > 0 && !math.IsInf(v, 0) {
		c["max_virtual_time_seconds"] = v
	}
}

// sessionBlockSize is the hash-block size of generated sessions, the granularity at which the
// replay's prefix cache reuses the history: the entry worker's KV block, at least 64 tokens (a
// session loses at most one partial block per turn to the rounding; finer blocks only cost
// replay time).
func sessionBlockSize(p Point) int {
	entry := input.RoleAggregated
	if p.Mode == input.ModeDisaggregated {
		entry = input.RolePrefill
	}
	return max(64, p.Role(entry).Worker.BlockSize)
}

// sessionNeed is the KV one turn of a synthetic session needs at most on a worker of role: the
// last turn's prompt (the whole conversation) plus its response (prompt only on a prefill worker).
func (e *Env) sessionNeed(role string) int {
	t := e.Doc.Traffic
	n := t.Session.Turns
	prompt := n*t.InputTokens + (n-1)*t.OutputTokens
	if role == input.RolePrefill {
		return prompt
	}
	return prompt + t.OutputTokens
}

// prepareSessions resolves the load of a synthetic-session point and generates its sessions:
// closed-loop concurrency counts sessions; an open-loop rate (sessions per second) places the
// first turns evenly (constant_rate) or at seeded exponential gaps (poisson). The stop counts
// sessions; every turn is a request.
func (e *Env) prepareSessions(pr *Prepared) error {
	p := pr.Point
	t := e.Doc.Traffic
	sessions := t.Stop.RequestCount(p.Load)
	o := trace.SessionOptions{Sessions: sessions, Turns: t.Session.Turns, NewInput: t.InputTokens, Output: t.OutputTokens,
		SharedPrefixRatio: t.Session.SharedPrefixRatio, PrefixGroups: t.Session.PrefixGroups,
		InterTurnDelayMs: t.Session.InterTurnDelayMs, BlockSize: sessionBlockSize(p)}
	if t.Load.Type == input.LoadConcurrency {
		pr.Concurrency = int(p.Load)
	} else {
		pr.Rate = p.Load
		o.FirstArrivalsMs = make([]float64, sessions)
		rng := rand.New(rand.NewPCG(uint64(t.Load.Seed), 0x5e55))
		for i := 1; i < sessions; i++ {
			gap := 1 / p.Load
			if t.Load.Type == input.LoadPoisson {
				gap = rng.ExpFloat64() / p.Load
			}
			o.FirstArrivalsMs[i] = o.FirstArrivalsMs[i-1] + gap*1e3
		}
	}
	tr, err := trace.GenerateSessions(o)
	if err != nil {
		return err
	}
	pr.Sessions = tr
	pr.Requests = len(tr.Requests)
	in, out := tr.MeanTokens()
	pr.CapConc = int(float64(pr.CapTokens) / (in + out/2))
	return nil
}

// sessionTraffic is the traffic section of a synthetic-session point's prediction document.
func (e *Env) sessionTraffic(p Point) *output.Traffic {
	t := e.Doc.Traffic
	s := t.Session
	source := output.Source{Type: output.SourceSyntheticSession, NewInputTokensPerTurn: t.InputTokens,
		OutputTokensPerTurn: t.OutputTokens, Session: &output.Session{Turns: s.Turns,
			SharedPrefixRatio: ptr.To(s.SharedPrefixRatio), PrefixGroups: ptr.To(s.PrefixGroups), InterTurnDelayMs: ptr.To(s.InterTurnDelayMs)}}
	load := output.Load{Type: t.Load.Type}
	switch t.Load.Type {
	case input.LoadConcurrency:
		load.Concurrency = int(p.Load)
	case input.LoadPoisson:
		load.SessionsPerSecond, load.Seed = ptr.To(p.Load), ptr.To(t.Load.Seed)
	default:
		load.SessionsPerSecond = ptr.To(p.Load)
	}
	var stop output.Stop
	if t.Stop.Requests > 0 {
		stop.Sessions = t.Stop.Requests
	} else {
		stop.SessionsPerLoadUnit = ptr.To(t.Stop.RequestsPerLoadUnit)
	}
	return &output.Traffic{Source: source, Load: load, Stop: stop}
}
