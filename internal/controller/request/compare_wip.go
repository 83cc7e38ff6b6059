package request

import (
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

// comparison is the gate's verdict (placeholder until internal/gate lands).
type comparison struct {
	BaselineObjective, CandidateObjective *float64
	Reason, Message                       string
}

func compare(spec *v1beta2.DynamoGraphDeploymentRequestSpec, margin float64, baseline *v1beta2.BaselineStatus, cand *v1beta2.DynamoGraphDeploymentCandidate) comparison {
	if baseline == nil || baseline.Metrics == nil || baseline.Metrics.Score == nil || cand.Status.Metrics == nil || cand.Status.Metrics.Score == nil {
		return comparison{Reason: v1beta2.ReasonBaselineUnavailable, Message: "no baseline"}
	}
	b, n := *baseline.Metrics.Score, *cand.Status.Metrics.Score
	if n >= b+margin*abs(b) {
		return comparison{&b, &n, v1beta2.ReasonBetterCandidate, "better"}
	}
	return comparison{&b, &n, v1beta2.ReasonBaselineStillBest, "kept"}
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}
