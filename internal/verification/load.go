package verification

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/internal/specdefaults"
)

// maxTokens bounds the token lengths of a verification request (those of
// spec.deployment.verification.load).
const maxTokens = 2097152

// Searched is what the candidate's Run replayed, beside the Candidate's own parameters: the
// controller reads it from the Run.
type Searched struct {
	// Trace is the trace workload the Run searched (its spec.workload.trace); nil when it
	// searched none the Job can mount.
	Trace *v1beta2.TraceWorkload
	// Unmountable says why a trace the Run replayed cannot be mounted (a re-search's window of
	// captured traffic); empty otherwise.
	Unmountable string
}

// TraceReplay is a trace the Job replays instead of synthetic requests.
type TraceReplay struct {
	// Source is the request's trace source (a ConfigMap key or a file on a claim), mounted
	// read-only into the Job at aisimulate.TraceMountDir as into the search container.
	Source v1beta2.TraceSource
	// Path is the trace file in the Job's container (aisimulate.TracePath).
	Path   string
	Format v1beta2.TraceFormat
	// Speedup divides the recorded arrival timestamps; nil replays closed-loop at
	// Plan.Load.Concurrency.
	Speedup *float64
	// BlockSize is the tokens of one prefix block of a mooncake trace's hash ids, as the search
	// read them (nil: the format's default); a Dynamo trace's records carry theirs.
	BlockSize *int32
}

// Status is the replay as status.verification.trace records it.
func (t *TraceReplay) Status() *v1beta2.VerificationTraceReplay {
	if t == nil {
		return nil
	}
	return &v1beta2.VerificationTraceReplay{Format: t.Format, ArrivalSpeedupRatio: copyPtr(t.Speedup), BlockSize: copyPtr(t.BlockSize)}
}

// resolveLoad sets p's load and trace: the traffic of the candidate's prediction (its
// spec.parameters), unless explicit (spec.deployment.verification.load) sets another, and
// records whether the Job offers the prediction's traffic.
func resolveLoad(p *Plan, dgdr *v1beta2.DynamoGraphDeploymentRequest, cand *v1beta2.DynamoGraphDeploymentCandidate, explicit *v1beta2.VerificationLoad, searched Searched) {
	predicted, trace, differences := predictedLoad(cand, searched)
	if len(differences) > 0 {
		trace = nil
		differences = []string{"the Job cannot reproduce the prediction's traffic: " + strings.Join(differences, "; ")}
		fill(&predicted, requestLoad(dgdr))
	}
	p.Load, p.Trace = predicted, trace
	if explicit != nil {
		p.Load = v1beta2.VerificationLoad{Concurrency: copyPtr(explicit.Concurrency), RequestsPerSecond: copyPtr(explicit.RequestsPerSecond),
			InputTokens: copyPtr(explicit.InputTokens), OutputTokens: copyPtr(explicit.OutputTokens)}
		p.Trace = nil
		fill(&p.Load, predicted)
		fill(&p.Load, defaultTokens())
		switch {
		case trace != nil:
			differences = append(differences, "spec.deployment.verification.load replaces the replay of the trace with synthetic requests at "+loadText(p.Load))
		case len(differences) == 0 && loadText(p.Load) != loadText(predicted):
			differences = append(differences, fmt.Sprintf("spec.deployment.verification.load offers %s; the prediction's is %s", loadText(p.Load), loadText(predicted)))
		}
	}
	// The prediction's load may exceed what one verification offers.
	if c := p.Load.Concurrency; c != nil && *c > MaxLoad {
		differences = append(differences, fmt.Sprintf("concurrency %d is capped at the verification's bound of %d", *c, MaxLoad))
		p.Load.Concurrency = ptrTo(int32(MaxLoad))
	}
	if r := p.Load.RequestsPerSecond; r != nil && *r > MaxLoad {
		differences = append(differences, fmt.Sprintf("%g requests/s are capped at the verification's bound of %d", *r, MaxLoad))
		p.Load.RequestsPerSecond = ptrTo(float64(MaxLoad))
	}
	p.LoadAsPredicted = len(differences) == 0
	p.LoadDifference = strings.Join(differences, "; ")
}

// predictedLoad is the load that reproduces the traffic of the candidate's prediction: its
// concurrency or request rate (for a kvCapacityFraction workload, the concurrency the search
// resolved for the candidate) and token lengths, or the request's trace replayed as the search
// replayed it. differences says what the Job cannot reproduce; the load then holds what it can.
func predictedLoad(cand *v1beta2.DynamoGraphDeploymentCandidate, searched Searched) (v1beta2.VerificationLoad, *TraceReplay, []string) {
	var l v1beta2.VerificationLoad
	var doc struct {
		Traffic *output.Traffic `json:"traffic"`
	}
	if err := json.Unmarshal(cand.Spec.Parameters.Raw, &doc); err != nil || doc.Traffic == nil {
		return l, nil, []string{"the candidate's spec.parameters has no traffic"}
	}
	src, load := doc.Traffic.Source, doc.Traffic.Load
	switch src.Type {
	case output.SourceSynthetic, "":
		var differences []string
		l.InputTokens, l.OutputTokens = tokens(src.InputTokens, specdefaults.InputTokens), tokens(src.OutputTokens, specdefaults.OutputTokens)
		if l.InputTokens == nil || l.OutputTokens == nil {
			differences = append(differences, fmt.Sprintf("its token lengths (%d input, %d output) are beyond the verification's bound of %d", src.InputTokens, src.OutputTokens, maxTokens))
		}
		if c := src.CachedPrefixTokens; c != nil && *c > 0 {
			differences = append(differences, fmt.Sprintf("its requests share a cached prefix of %d tokens", *c))
		}
		if len(src.Images) > 0 && string(src.Images) != "null" {
			differences = append(differences, "its requests carry images")
		}
		return l, nil, append(differences, openLoad(&l, load)...)
	case output.SourceTrace:
		trace, why := traceReplay(src, load, &l, searched)
		if why != "" {
			return l, nil, []string{why}
		}
		return l, trace, nil
	}
	return l, nil, []string{fmt.Sprintf("its traffic source is %s", src.Type)}
}

// openLoad sets l's concurrency or request rate from the prediction's load of synthetic requests.
func openLoad(l *v1beta2.VerificationLoad, load output.Load) []string {
	switch load.Type {
	case output.LoadConcurrency:
		if load.Concurrency > 0 {
			l.Concurrency = ptrTo(int32(min(load.Concurrency, math.MaxInt32)))
			return nil
		}
	case output.LoadPoisson, output.LoadConstantRate:
		if r := load.RequestsPerSecond; r != nil && *r > 0 && !math.IsInf(*r, 0) {
			l.RequestsPerSecond = copyPtr(r)
			if load.Type == output.LoadConstantRate {
				return []string{"its requests arrive at a constant rate, the Job's as a Poisson process"}
			}
			return nil
		}
	case output.LoadKVCapacityFraction:
		return []string{"its kvCapacityFraction load was not resolved to a concurrency"}
	}
	return []string{fmt.Sprintf("its load (type %s) is no concurrency or request rate", orNone(load.Type))}
}

// traceReplay is the replay of the request's trace that the prediction's trace source and
// load describe, or why the Job cannot replay it.
func traceReplay(src output.Source, load output.Load, l *v1beta2.VerificationLoad, searched Searched) (*TraceReplay, string) {
	w := searched.Trace
	switch {
	case w == nil && searched.Unmountable != "":
		return nil, searched.Unmountable
	case w == nil || w.Source == nil:
		return nil, "it replayed a trace the request's search did not name"
	}
	path := aisimulate.TracePath(w)
	if len(src.Paths) != 1 || src.Paths[0] != path {
		return nil, fmt.Sprintf("it replayed %s, not the request's trace at %s", strings.Join(src.Paths, ", "), path)
	}
	format := v1beta2.TraceFormat(src.Format)
	if format == "" {
		format = v1beta2.TraceFormatMooncake
	}
	if named := w.Format; named != format && (named != "" || format != v1beta2.TraceFormatMooncake) {
		return nil, fmt.Sprintf("it read the trace as %s, the request names %s", format, named)
	}
	if format != v1beta2.TraceFormatMooncake && format != v1beta2.TraceFormatDynamo {
		return nil, fmt.Sprintf("its trace format %s", format)
	}
	t := &TraceReplay{Source: *w.Source.DeepCopy(), Path: path, Format: format}
	if format == v1beta2.TraceFormatMooncake && src.BlockSize > 0 && src.BlockSize <= maxTokens {
		t.BlockSize = ptrTo(int32(src.BlockSize))
	}
	switch load.Type {
	case output.LoadTraceTimestamps:
		t.Speedup = ptrTo(1.0)
		if s := load.Speedup; s != nil {
			if *s <= 0 || *s > 1000 {
				return nil, fmt.Sprintf("its arrival speedup %g is outside (0, 1000]", *s)
			}
			t.Speedup = copyPtr(s)
		}
	case output.LoadConcurrency:
		if load.Concurrency <= 0 {
			return nil, "its closed-loop replay names no concurrency"
		}
		l.Concurrency = ptrTo(int32(min(load.Concurrency, math.MaxInt32)))
	default:
		return nil, fmt.Sprintf("it replayed the trace with a load of type %s", orNone(load.Type))
	}
	return t, ""
}

// requestLoad is what the request itself says of its traffic, for a prediction whose traffic
// the Job cannot reproduce: spec.workload.static's concurrency or requestsPerSecond and token
// lengths, else concurrency 1 with the default lengths.
func requestLoad(dgdr *v1beta2.DynamoGraphDeploymentRequest) v1beta2.VerificationLoad {
	var l v1beta2.VerificationLoad
	if w := dgdr.Spec.Workload; w != nil && w.Static != nil {
		s := w.Static
		l.InputTokens, l.OutputTokens = copyPtr(s.InputTokens), copyPtr(s.OutputTokens)
		if ld := s.Load; ld != nil {
			switch {
			case ld.Concurrency != nil:
				l.Concurrency = copyPtr(ld.Concurrency)
			case ld.RequestsPerSecond != nil:
				l.RequestsPerSecond = copyPtr(ld.RequestsPerSecond)
			}
		}
	}
	if l.Concurrency == nil && l.RequestsPerSecond == nil {
		l.Concurrency = ptrTo[int32](1)
	}
	fill(&l, defaultTokens())
	return l
}

func defaultTokens() v1beta2.VerificationLoad {
	return v1beta2.VerificationLoad{InputTokens: ptrTo(specdefaults.InputTokens), OutputTokens: ptrTo(specdefaults.OutputTokens)}
}

// fill sets what l lacks from from: the concurrency or request rate when l has neither, each
// token length it has not.
func fill(l *v1beta2.VerificationLoad, from v1beta2.VerificationLoad) {
	if l.Concurrency == nil && l.RequestsPerSecond == nil {
		l.Concurrency, l.RequestsPerSecond = copyPtr(from.Concurrency), copyPtr(from.RequestsPerSecond)
	}
	if l.InputTokens == nil {
		l.InputTokens = copyPtr(from.InputTokens)
	}
	if l.OutputTokens == nil {
		l.OutputTokens = copyPtr(from.OutputTokens)
	}
}

// tokens is a token length of the prediction (def when it names none); nil beyond maxTokens.
func tokens(n int, def int32) *int32 {
	switch {
	case n <= 0:
		return ptrTo(def)
	case n > maxTokens:
		return nil
	}
	return ptrTo(int32(n))
}

// loadText says what a synthetic load offers, e.g. "concurrency 10 (1024 input, 128 output
// tokens)".
func loadText(l v1beta2.VerificationLoad) string {
	var s string
	switch {
	case l.Concurrency != nil:
		s = "concurrency " + strconv.Itoa(int(*l.Concurrency))
	case l.RequestsPerSecond != nil:
		s = strconv.FormatFloat(*l.RequestsPerSecond, 'g', -1, 64) + " requests/s"
	default:
		s = "no set load"
	}
	if l.InputTokens != nil && l.OutputTokens != nil {
		s += fmt.Sprintf(" (%d input, %d output tokens)", *l.InputTokens, *l.OutputTokens)
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
