// Package gate decides whether a re-search found a deployment worth replacing the deployed one
// with. It compares the new best candidate with the baseline, the deployed candidate predicted
// by AISimulate under the same traffic, on the search's objective, as AISimulate scores both
// (sweeper/score.py: objective_value, aggregate_sla_violations), with a margin so that noise of
// a few percent does not roll a deployment. It is pure: metrics in, a Decision out.
package gate

import (
	"fmt"
	"math"
)

// AISimulate's optimization targets (optimization.target).
const (
	Throughput        = "throughput"
	ThroughputPerGPU  = "throughput_per_gpu"
	ThroughputPerUser = "throughput_per_user"
	Goodput           = "goodput"
	GoodputPerGPU     = "goodput_per_gpu"
	TTFT              = "ttft"
	E2ELatency        = "e2e_latency"
	MinGPUs           = "min_gpus"
	Pareto            = "pareto"
)

// ParetoObjectives are AISimulate's default Pareto objectives, the only ones the API lowers to:
// throughput per GPU against throughput per user. The first is the headline.
var ParetoObjectives = []string{ThroughputPerGPU, ThroughputPerUser}

// Maximized says whether a larger objective is better; false for ttft, e2e_latency and
// min_gpus.
func Maximized(target string) bool {
	switch target {
	case TTFT, E2ELatency, MinGPUs:
		return false
	}
	return true
}

// Objective is AISimulate's objective_value: the raw objective of a replay report for a
// scalar target, not signed. The per-GPU targets divide by the time-averaged GPU count
// gpu_hours / duration_h (0 when either is missing); a latency without samples is +Inf;
// min_gpus is the provisioned GPU count usedGPUs.
func Objective(report map[string]float64, target string, usedGPUs int) (float64, error) {
	switch target {
	case MinGPUs:
		if usedGPUs <= 0 {
			return 0, fmt.Errorf("min_gpus needs a positive provisioned GPU count, got %d", usedGPUs)
		}
		return float64(usedGPUs), nil
	case Throughput:
		return report["output_throughput_tok_s"], nil
	case E2ELatency:
		return qualifiedLatency(report, "mean_e2e_latency_ms", "num_e2e_latency_samples"), nil
	case Goodput:
		return report["goodput_output_throughput_tok_s"], nil
	case GoodputPerGPU:
		return perGPU(report, "goodput_output_throughput_tok_s"), nil
	case ThroughputPerGPU:
		return perGPU(report, "output_throughput_tok_s"), nil
	case ThroughputPerUser:
		return report["mean_output_token_throughput_per_user"], nil
	case TTFT:
		return qualifiedLatency(report, "mean_ttft_ms", "num_ttft_samples"), nil
	case Pareto:
		return 0, fmt.Errorf("pareto is multi-objective and has no scalar objective")
	}
	return 0, fmt.Errorf("unknown optimization target %q", target)
}

// Score is AISimulate's score_report: the objective signed so that higher is better, the
// `score` of a recommendation.json candidate.
func Score(report map[string]float64, target string, usedGPUs int) (float64, error) {
	v, err := Objective(report, target, usedGPUs)
	if err != nil || Maximized(target) {
		return v, err
	}
	return -v, nil
}

// AvgGPUs is the time-averaged provisioned GPU count gpu_hours / duration_h: the GPU count of a
// static deployment. 0 when gpu_hours or duration_ms is missing or not positive.
func AvgGPUs(report map[string]float64) float64 {
	hours, ms := report["gpu_hours"], report["duration_ms"]
	if hours <= 0 || ms <= 0 {
		return 0
	}
	return hours / (ms / 3.6e6)
}

func perGPU(report map[string]float64, key string) float64 {
	gpus := AvgGPUs(report)
	if gpus <= 0 {
		return 0
	}
	return report[key] / gpus
}

// qualifiedLatency is a latency only when at least one sample qualified it, else +Inf.
func qualifiedLatency(report map[string]float64, metric, samples string) float64 {
	n, okN := report[samples]
	v, okV := report[metric]
	if !okN || !okV || !finite(n) || n <= 0 || !finite(v) {
		return math.Inf(1)
	}
	return v
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// SLA is AISimulate's evaluation.sla in milliseconds; nil bounds are unset.
type SLA struct {
	TTFTMs, ITLMs, E2EMs *float64
}

// Any says whether any bound is set.
func (s SLA) Any() bool { return s.TTFTMs != nil || s.ITLMs != nil || s.E2EMs != nil }

// SLAViolations is AISimulate's aggregate_sla_violations: the strict check of a report's means
// against the SLA, with inclusive bounds. The ITL bound applies to mean_tpot_ms (not
// mean_itl_ms). A missing or non-finite value, no qualifying samples or no completed request is
// a violation. Empty when the report meets every bound.
func SLAViolations(report map[string]float64, sla SLA) []string {
	var out []string
	switch c, ok := report["completed_requests"]; {
	case !ok:
		out = append(out, "completed_requests is missing")
	case !finite(c):
		out = append(out, "completed_requests is non-finite")
	case c <= 0:
		out = append(out, "completed_requests is zero")
	}
	for _, check := range []struct {
		label, metric, samples string
		bound                  *float64
	}{
		{"ttft", "mean_ttft_ms", "num_ttft_samples", sla.TTFTMs},
		{"tpot", "mean_tpot_ms", "num_tpot_samples", sla.ITLMs},
		{"e2e", "mean_e2e_latency_ms", "num_e2e_latency_samples", sla.E2EMs},
	} {
		if check.bound == nil {
			continue
		}
		switch n, ok := report[check.samples]; {
		case !ok:
			out = append(out, fmt.Sprintf("%s sample count %s is missing", check.label, check.samples))
		case !finite(n):
			out = append(out, fmt.Sprintf("%s sample count %s is non-finite", check.label, check.samples))
		case n <= 0:
			out = append(out, fmt.Sprintf("%s has no qualifying samples (%s=%.6g)", check.label, check.samples, n))
		}
		switch v, ok := report[check.metric]; {
		case !ok:
			out = append(out, fmt.Sprintf("%s metric %s is missing", check.label, check.metric))
		case !finite(v):
			out = append(out, fmt.Sprintf("%s metric %s is non-finite", check.label, check.metric))
		case v > *check.bound:
			out = append(out, fmt.Sprintf("%s %.6gms > %.6gms", check.label, v, *check.bound))
		}
	}
	return out
}
