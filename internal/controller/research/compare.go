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

// compare runs the gate on a re-search's best candidate and its baseline, each by its published
// metrics (a candidate of a search with an SLA met it: the search is strict; the baseline's are
// status.baseline's, with its mean time per output token for the ITL bound).
func compare(spec *v1beta2.DynamoGraphDeploymentRequestSpec, margin float64, baseline *v1beta2.BaselineStatus, cand *v1beta2.DynamoGraphDeploymentCandidate) comparison {
	var target v1beta2.ObjectiveTarget
	if spec.Objective != nil {
		target = spec.Objective.Target
	}
	m := cand.Status.Metrics
	if m == nil {
		return comparison{Reason: v1beta2.ReasonBaselineUnavailable, Message: "candidate " + cand.Name + " has no metrics"}
	}
	in := gate.MetricsInput{Target: target, SLA: spec.SLA, Margin: margin,
		Candidate: gate.Deployment{Name: cand.Name, Metrics: m}}
	if baseline != nil {
		in.Baseline.Name = baseline.Candidate
		if baseline.Error == "" && baseline.Metrics != nil && baseline.GPUs != nil {
			in.Baseline.Metrics, in.Baseline.MeanTPOTMs = baseline.Metrics, baseline.MeanTPOTMs
		}
	}
	d, err := gate.DecideMetrics(in)
	if err != nil {
		return comparison{Reason: v1beta2.ReasonBaselineUnavailable, Message: err.Error()}
	}
	out := comparison{BaselineObjective: d.BaselineObjective, CandidateObjective: d.CandidateObjective, Reason: string(d.Reason), Message: d.Message}
	if baseline != nil && baseline.Error != "" {
		out.Message = "the baseline was not evaluated: " + baseline.Error
	}
	return out
}
