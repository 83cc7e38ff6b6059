package research

import (
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/gate"
)

// comparison is the gate's verdict on a re-search, with the API's reasons.
type comparison struct {
	BaselineObjective, CandidateObjective *float64
	Reason, Message                       string
}

// compare runs the gate on a re-search's best candidate and its baseline. Both are reduced to
// the replay report keys the gate reads: the candidate from its published metrics (a candidate
// of a search with an SLA met it: the search is strict), the baseline from status.baseline.
func compare(spec *v1beta2.DynamoGraphDeploymentRequestSpec, margin float64, baseline *v1beta2.BaselineStatus, cand *v1beta2.DynamoGraphDeploymentCandidate) comparison {
	var target v1beta2.ObjectiveTarget
	if spec.Objective != nil {
		target = spec.Objective.Target
	}
	m := cand.Status.Metrics
	if m == nil {
		return comparison{Reason: v1beta2.ReasonBaselineUnavailable, Message: "candidate " + cand.Name + " has no metrics"}
	}
	gpus := float64(cand.Spec.GPUs)
	if m.GPUs > 0 {
		gpus = float64(m.GPUs)
	}
	in := gate.Input{Target: target, SLA: spec.SLA, Margin: margin,
		Candidate: gate.Point{Name: cand.Name, Metrics: report(m, target, gpus, m.ITLMs, 1)}}
	if baseline != nil {
		in.Baseline.Name = baseline.Candidate
		if baseline.Error == "" && baseline.Metrics != nil && baseline.GPUs != nil {
			in.Baseline.Metrics = report(baseline.Metrics, target, *baseline.GPUs, baseline.MeanTPOTMs, baseline.CompletedRequests)
		}
	}
	d, err := gate.Decide(in)
	if err != nil {
		return comparison{Reason: v1beta2.ReasonBaselineUnavailable, Message: err.Error()}
	}
	out := comparison{BaselineObjective: d.BaselineObjective, CandidateObjective: d.CandidateObjective, Reason: string(d.Reason), Message: d.Message}
	if baseline != nil && baseline.Error != "" {
		out.Message = "the baseline was not evaluated: " + baseline.Error
	}
	return out
}

// report is the replay report of a deployment with metrics m on gpus GPUs (gpu_hours over one
// hour), its mean time per output token, and completed requests, which stand for the latency
// samples. Goodput is not among the published metrics: for a goodput target it comes from the
// score, which is AISimulate's objective for the Run's target.
func report(m *v1beta2.CandidateMetrics, target v1beta2.ObjectiveTarget, gpus float64, tpot *float64, completed int64) map[string]float64 {
	r := map[string]float64{"gpu_hours": gpus, "duration_ms": 3.6e6, "completed_requests": float64(completed)}
	set := func(key string, v *float64) {
		if v != nil {
			r[key] = *v
		}
	}
	set("mean_ttft_ms", m.TTFTMs)
	set("mean_itl_ms", m.ITLMs)
	set("mean_tpot_ms", tpot)
	set("mean_e2e_latency_ms", m.E2EMs)
	set("output_throughput_tok_s", m.Throughput)
	if m.Throughput == nil && m.ThroughputPerGPU != nil {
		r["output_throughput_tok_s"] = *m.ThroughputPerGPU * gpus
	}
	set("mean_output_token_throughput_per_user", m.ThroughputPerUser)
	if m.Score != nil {
		switch target {
		case v1beta2.TargetGoodput:
			r["goodput_output_throughput_tok_s"] = *m.Score
		case v1beta2.TargetGoodputPerGPU:
			r["goodput_output_throughput_tok_s"] = *m.Score * gpus
		}
	}
	for _, k := range []string{"num_ttft_samples", "num_e2e_latency_samples", "num_tpot_samples", "num_itl_samples"} {
		r[k] = float64(completed)
	}
	return r
}
