// Package specdefaults holds the defaults of a DynamoGraphDeploymentRequest's spec, as the API
// types document them: admission writes them where a request leaves a field out (SPEC §4.1,
// internal/admission), and whoever reads a stored spec that predates a field (verification,
// rendering, the candidates' publication, re-search) falls back to the same value.
package specdefaults

import "github.com/dgdr-operator/dgdr-operator/api/v1beta2"

// The static workload (spec.workload.static) of a request that leaves it out, and what a
// non-empty static that leaves a field out is completed with.
const (
	InputTokens  int32 = 1024
	OutputTokens int32 = 128
	Concurrency  int32 = 10
)

// spec.recommendation.maxCandidates (MaxCandidatesFor).
const (
	// MaxCandidates is how many candidates a Run publishes.
	MaxCandidates = 5
	// ParetoMaxCandidates is how many candidates a Run with a Pareto target publishes: the whole
	// front, or a spread of this many points of a larger one.
	ParetoMaxCandidates = 10
)

// MaxCandidatesFor is spec.recommendation.maxCandidates when unset: ParetoMaxCandidates for
// objective.target pareto, else MaxCandidates.
func MaxCandidatesFor(spec *v1beta2.DynamoGraphDeploymentRequestSpec) int {
	if spec.Objective != nil && spec.Objective.Target == v1beta2.TargetPareto {
		return ParetoMaxCandidates
	}
	return MaxCandidates
}

// CaptureMaxSegmentMiB is spec.deployment.capture.rotation.maxSegmentMiB of a request that sets
// capture.
const CaptureMaxSegmentMiB int32 = 64

// Re-search (spec.research) of a request that sets research.
const (
	// ResearchMinRequests is spec.research.minRequests.
	ResearchMinRequests int32 = 100
	// ReplaceMargin is spec.deployment.replaceMargin.
	ReplaceMargin = "10%"
)

// SelectionTolerance is spec.deployment.selection.tolerance: a candidate with fewer GPUs whose
// score is within it of the best's is deployed instead.
const SelectionTolerance = "2%"

// spec.deployment.verification.
const (
	VerificationRequests           int32   = 100
	VerificationMaxDurationSeconds int32   = 300
	VerificationTolerancePct       float64 = 25
)
