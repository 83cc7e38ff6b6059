package verification

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/specdefaults"
)

// loadOf is what a Plan says of its traffic.
type loadOf struct {
	Load            v1beta2.VerificationLoad
	Trace           *TraceReplay
	Requests        int32
	LoadAsPredicted bool
	LoadDifference  string
}

// TestResolveMaterializedLoad: the verification offers the traffic of the candidate's prediction
// document: the concurrency the search resolved for a kvCapacityFraction range, a rate, its
// token lengths; a trace request replays its trace as the search did. What the Job cannot
// reproduce, an explicit load that differs, or a load over the bound is measured all the same
// and recorded as differing.
func TestResolveMaterializedLoad(t *testing.T) {
	kv := &v1beta2.WorkloadSpec{Static: &v1beta2.StaticWorkload{InputTokens: ptr.To[int32](4096), OutputTokens: ptr.To[int32](512),
		Load: &v1beta2.LoadSpec{KVCapacityFraction: &v1beta2.KVCapacityFraction{Range: &v1beta2.FractionRange{Min: 0.1, Max: 1}}}}}
	cmTrace := &v1beta2.TraceWorkload{Format: v1beta2.TraceFormatMooncake,
		Source: &v1beta2.TraceSource{ConfigMap: &v1beta2.TraceConfigMapSource{Name: "traffic", Key: "day.jsonl"}},
		Replay: &v1beta2.TraceReplay{ArrivalSpeedupRatio: ptr.To(2.0)}}
	pvcTrace := &v1beta2.TraceWorkload{Format: v1beta2.TraceFormatDynamo,
		Source: &v1beta2.TraceSource{PVC: &v1beta2.TracePVCSource{ClaimName: "captures", Path: "frontend/day.jsonl.gz"}}}
	traceReq := &v1beta2.WorkloadSpec{Trace: cmTrace}
	synthetic := `{"type":"synthetic","input_tokens":4096,"output_tokens":512}`
	// The concurrency AISimulate resolved kvCapacityFraction 0.35 to for this candidate.
	kvResolved := `{"source":` + synthetic + `,"load":{"type":"concurrency","concurrency":37},"stop":{"requests":1000}}`
	synth := func(in, out int32) v1beta2.VerificationLoad {
		return v1beta2.VerificationLoad{InputTokens: ptr.To(in), OutputTokens: ptr.To(out)}
	}
	withConcurrency := func(l v1beta2.VerificationLoad, c int32) v1beta2.VerificationLoad {
		l.Concurrency = ptr.To(c)
		return l
	}
	cases := []struct {
		name     string
		workload *v1beta2.WorkloadSpec
		spec     *v1beta2.VerificationSpec
		traffic  string
		searched Searched
		want     loadOf
	}{
		{name: "a kvCapacityFraction range at the concurrency the search resolved", workload: kv, traffic: kvResolved,
			want: loadOf{Load: withConcurrency(synth(4096, 512), 37), Requests: specdefaults.VerificationRequests, LoadAsPredicted: true}},
		{name: "an explicit load equal to the prediction's", workload: kv, traffic: kvResolved,
			spec: &v1beta2.VerificationSpec{Load: &v1beta2.VerificationLoad{Concurrency: ptr.To[int32](37)}},
			want: loadOf{Load: withConcurrency(synth(4096, 512), 37), Requests: specdefaults.VerificationRequests, LoadAsPredicted: true}},
		{name: "an explicit load that differs", workload: kv, traffic: kvResolved,
			spec: &v1beta2.VerificationSpec{Load: &v1beta2.VerificationLoad{Concurrency: ptr.To[int32](1)}},
			want: loadOf{Load: withConcurrency(synth(4096, 512), 1), Requests: specdefaults.VerificationRequests,
				LoadDifference: "spec.deployment.verification.load offers concurrency 1 (4096 input, 512 output tokens); the prediction's is concurrency 37 (4096 input, 512 output tokens)"}},
		{name: "a concurrency over the bound is capped", workload: kv,
			traffic: `{"source":` + synthetic + `,"load":{"type":"concurrency","concurrency":20000}}`,
			want: loadOf{Load: withConcurrency(synth(4096, 512), MaxLoad), Requests: specdefaults.VerificationRequests,
				LoadDifference: "concurrency 20000 is capped at the verification's bound of 10000"}},
		{name: "an unresolved fraction falls back to the request's load", workload: kv,
			traffic: `{"source":` + synthetic + `,"load":{"type":"kv_capacity_fraction","fraction":0.5}}`,
			want: loadOf{Load: withConcurrency(synth(4096, 512), 1), Requests: specdefaults.VerificationRequests,
				LoadDifference: "the Job cannot reproduce the prediction's traffic: its kvCapacityFraction load was not resolved to a concurrency"}},
		{name: "a cached prefix the Job does not send", workload: kv,
			traffic: `{"source":{"type":"synthetic","input_tokens":4096,"output_tokens":512,"cached_prefix_tokens":1024},"load":{"type":"concurrency","concurrency":12}}`,
			want: loadOf{Load: withConcurrency(synth(4096, 512), 12), Requests: specdefaults.VerificationRequests,
				LoadDifference: "the Job cannot reproduce the prediction's traffic: its requests share a cached prefix of 1024 tokens"}},
		{name: "constant-rate arrivals", workload: kv,
			traffic: `{"source":` + synthetic + `,"load":{"type":"constant_rate","requests_per_second":4}}`,
			want: loadOf{Load: v1beta2.VerificationLoad{RequestsPerSecond: ptr.To(4.0), InputTokens: ptr.To[int32](4096), OutputTokens: ptr.To[int32](512)},
				Requests:       specdefaults.VerificationRequests,
				LoadDifference: "the Job cannot reproduce the prediction's traffic: its requests arrive at a constant rate, the Job's as a Poisson process"}},
		{name: "no traffic in the parameters", workload: kv,
			want: loadOf{Load: withConcurrency(synth(4096, 512), 1), Requests: specdefaults.VerificationRequests,
				LoadDifference: "the Job cannot reproduce the prediction's traffic: the candidate's spec.parameters has no traffic"}},
		{name: "sessions", workload: &v1beta2.WorkloadSpec{Static: &v1beta2.StaticWorkload{}},
			traffic: `{"source":{"type":"synthetic-session","new_input_tokens_per_turn":256},"load":{"type":"poisson","sessions_per_second":2}}`,
			want: loadOf{Load: withConcurrency(synth(specdefaults.InputTokens, specdefaults.OutputTokens), 1), Requests: specdefaults.VerificationRequests,
				LoadDifference: "the Job cannot reproduce the prediction's traffic: its traffic source is synthetic-session"}},
		{name: "a ConfigMap trace at its timestamps, sped up", workload: traceReq, searched: Searched{Trace: cmTrace},
			traffic: `{"source":{"type":"trace","paths":["/var/run/dgdr/trace/trace.jsonl"],"format":"mooncake","block_size":64},"load":{"type":"trace_timestamps","speedup":2}}`,
			want: loadOf{Trace: &TraceReplay{Source: *cmTrace.Source, Path: "/var/run/dgdr/trace/trace.jsonl", Format: v1beta2.TraceFormatMooncake,
				Speedup: ptr.To(2.0), BlockSize: ptr.To[int32](64)}, LoadAsPredicted: true}},
		{name: "a Dynamo trace on a claim, closed-loop", workload: &v1beta2.WorkloadSpec{Trace: pvcTrace}, searched: Searched{Trace: pvcTrace},
			spec:    &v1beta2.VerificationSpec{Requests: ptr.To[int32](500)},
			traffic: `{"source":{"type":"trace","paths":["/var/run/dgdr/trace/frontend/day.jsonl.gz"],"format":"dynamo"},"load":{"type":"concurrency","concurrency":24}}`,
			want: loadOf{Load: v1beta2.VerificationLoad{Concurrency: ptr.To[int32](24)}, Requests: 500, LoadAsPredicted: true,
				Trace: &TraceReplay{Source: *pvcTrace.Source, Path: "/var/run/dgdr/trace/frontend/day.jsonl.gz", Format: v1beta2.TraceFormatDynamo}}},
		{name: "an explicit load instead of the trace", workload: traceReq, searched: Searched{Trace: cmTrace},
			spec:    &v1beta2.VerificationSpec{Load: &v1beta2.VerificationLoad{RequestsPerSecond: ptr.To(1.5)}},
			traffic: `{"source":{"type":"trace","paths":["/var/run/dgdr/trace/trace.jsonl"],"format":"mooncake"},"load":{"type":"trace_timestamps"}}`,
			want: loadOf{Load: v1beta2.VerificationLoad{RequestsPerSecond: ptr.To(1.5), InputTokens: ptr.To(specdefaults.InputTokens), OutputTokens: ptr.To(specdefaults.OutputTokens)},
				Requests:       specdefaults.VerificationRequests,
				LoadDifference: "spec.deployment.verification.load replaces the replay of the trace with synthetic requests at 1.5 requests/s (1024 input, 128 output tokens)"}},
		{name: "a re-search's window", workload: traceReq, searched: Searched{Unmountable: "it replayed the window of captured traffic re-search Run r cut, which the Job cannot mount"},
			traffic: `{"source":{"type":"trace","paths":["/var/run/dgdr/trace/window.jsonl.gz"],"format":"dynamo"},"load":{"type":"trace_timestamps","speedup":1}}`,
			want: loadOf{Load: withConcurrency(synth(specdefaults.InputTokens, specdefaults.OutputTokens), 1), Requests: specdefaults.VerificationRequests,
				LoadDifference: "the Job cannot reproduce the prediction's traffic: it replayed the window of captured traffic re-search Run r cut, which the Job cannot mount"}},
		{name: "a trace other than the request's", workload: traceReq, searched: Searched{Trace: pvcTrace},
			traffic: `{"source":{"type":"trace","paths":["/var/run/dgdr/trace/trace.jsonl"],"format":"dynamo"},"load":{"type":"trace_timestamps"}}`,
			want: loadOf{Load: withConcurrency(synth(specdefaults.InputTokens, specdefaults.OutputTokens), 1), Requests: specdefaults.VerificationRequests,
				LoadDifference: "the Job cannot reproduce the prediction's traffic: it replayed /var/run/dgdr/trace/trace.jsonl, not the request's trace at /var/run/dgdr/trace/frontend/day.jsonl.gz"}},
		{name: "a trace read in another format", workload: traceReq, searched: Searched{Trace: cmTrace},
			traffic: `{"source":{"type":"trace","paths":["/var/run/dgdr/trace/trace.jsonl"],"format":"dynamo"},"load":{"type":"trace_timestamps"}}`,
			want: loadOf{Load: withConcurrency(synth(specdefaults.InputTokens, specdefaults.OutputTokens), 1), Requests: specdefaults.VerificationRequests,
				LoadDifference: "the Job cannot reproduce the prediction's traffic: it read the trace as dynamo, the request names mooncake"}},
	}
	metrics := &v1beta2.CandidateMetrics{TTFTMs: ptr.To(100.0)}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Resolve(request(tc.workload, tc.spec), candidate(metrics, tc.traffic), tc.searched)
			if err != nil {
				t.Fatal(err)
			}
			got := loadOf{Load: p.Load, Trace: p.Trace, Requests: p.Requests, LoadAsPredicted: p.LoadAsPredicted, LoadDifference: p.LoadDifference}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("load (-want +got):\n%s", diff)
			}
		})
	}
}
