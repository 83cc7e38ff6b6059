package gate

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
)

// Reason says why a Decision came out as it did.
type Reason string

// Reasons of a Decision.
const (
	// BetterCandidate: the new best beats the baseline by the margin and meets the SLA.
	BetterCandidate Reason = "BetterCandidate"
	// BaselineStillBest: the new best does not beat the baseline by the margin, or misses the
	// SLA.
	BaselineStillBest Reason = "BaselineStillBest"
	// BaselineMissesSLA: under this traffic the baseline misses the SLA and the new best meets it.
	BaselineMissesSLA Reason = "BaselineMissesSLA"
	// BaselineUnavailable: there is no baseline prediction to compare with.
	BaselineUnavailable Reason = "BaselineUnavailable"
)

// Point is one deployment's replay report, as AISimulate's prediction or candidate metrics.
type Point struct {
	// Name names the deployment in the message (a Candidate's name).
	Name string
	// Metrics is the flat report (mean_tpot_ms, gpu_hours, ...); nil for no report.
	Metrics map[string]float64
}

// Input is what the gate compares.
type Input struct {
	// Target is the search's spec.objective.target (throughput when empty, AISimulate's
	// default).
	Target v1beta2.ObjectiveTarget
	// SLA is the search's spec.sla; nil for none.
	SLA *v1beta2.SLASpec
	// Baseline is the deployed candidate predicted under the re-search's traffic; nil Metrics
	// when the prediction failed.
	Baseline Point
	// Candidate is the re-search's best candidate (rank 1).
	Candidate Point
	// Margin is the fraction by which the candidate must beat the baseline, in [0, 1).
	Margin float64
}

// Decision is whether the candidate should replace the baseline.
type Decision struct {
	// Improvement is True (replace), False (keep the baseline) or Unknown (no baseline).
	Improvement metav1.ConditionStatus
	Reason      Reason
	// BaselineObjective and CandidateObjective are the raw objectives (for pareto, throughput
	// per GPU); nil when there is no report.
	BaselineObjective, CandidateObjective *float64
	// Message gives both numbers for people.
	Message string
}

// Decide compares the candidate with the baseline. The candidate replaces the baseline when it
// meets the SLA and either the baseline misses it or the candidate's objective beats the
// baseline's by the margin: n ≥ b·(1+m) and n > b for a maximized target, n ≤ b·(1−m) and
// n < b for a minimized one (b ≥ 0) (the strict half keeps equal deployments from replacing each other
// at margin 0). For pareto the candidate must beat the baseline by the margin on throughput
// per GPU and be no worse on throughput per user.
func Decide(in Input) (Decision, error) {
	if in.Target == "" {
		in.Target = v1beta2.TargetThroughput
	}
	target, ok := aisimulate.TargetName(in.Target)
	if !ok {
		return Decision{}, fmt.Errorf("spec.objective.target: unsupported value %q", in.Target)
	}
	if !(in.Margin >= 0 && in.Margin < 1) {
		return Decision{}, fmt.Errorf("margin: must be in [0, 1), got %v", in.Margin)
	}
	if in.Candidate.Metrics == nil {
		return Decision{}, fmt.Errorf("candidate.metrics: required")
	}
	objectives := []string{target}
	if target == Pareto {
		objectives = ParetoObjectives
	}
	cand, err := values(in.Candidate.Metrics, objectives)
	if err != nil {
		return Decision{}, err
	}
	d := Decision{CandidateObjective: &cand[0]}
	if in.Baseline.Metrics == nil {
		d.Improvement, d.Reason = metav1.ConditionUnknown, BaselineUnavailable
		d.Message = fmt.Sprintf("no baseline prediction of deployed %s; candidate %s %s", in.Baseline.Name, in.Candidate.Name, quantities(objectives, cand))
		return d, nil
	}
	base, err := values(in.Baseline.Metrics, objectives)
	if err != nil {
		return Decision{}, err
	}
	d.BaselineObjective = &base[0]
	// One objective: its unit once, after the candidate's number; pareto: after every number.
	baseText := number(base[0])
	if len(objectives) > 1 {
		baseText = quantities(objectives, base)
	}
	compared := fmt.Sprintf("candidate %s %s vs deployed %s %s", in.Candidate.Name, quantities(objectives, cand), in.Baseline.Name, baseText)
	sla := fromSpec(in.SLA)
	if sla.Any() {
		if v := SLAViolations(in.Candidate.Metrics, sla); len(v) > 0 {
			d.Improvement, d.Reason = metav1.ConditionFalse, BaselineStillBest
			d.Message = fmt.Sprintf("candidate %s misses the SLA (%s); deployed %s stays", in.Candidate.Name, strings.Join(v, "; "), in.Baseline.Name)
			return d, nil
		}
		if v := SLAViolations(in.Baseline.Metrics, sla); len(v) > 0 {
			d.Improvement, d.Reason = metav1.ConditionTrue, BaselineMissesSLA
			d.Message = fmt.Sprintf("deployed %s misses the SLA under this traffic (%s), candidate %s meets it: %s",
				in.Baseline.Name, strings.Join(v, "; "), in.Candidate.Name, compared)
			return d, nil
		}
	}
	better := beats(cand[0], base[0], Maximized(objectives[0]), in.Margin)
	for i := 1; i < len(objectives); i++ {
		if worse(cand[i], base[i], Maximized(objectives[i])) {
			better = false
		}
	}
	d.Improvement, d.Reason = metav1.ConditionFalse, BaselineStillBest
	if better {
		d.Improvement, d.Reason = metav1.ConditionTrue, BetterCandidate
	}
	d.Message = fmt.Sprintf("%s (%s, margin %s)", compared, change(cand[0], base[0]), percent(in.Margin))
	return d, nil
}

// beats says whether n beats b by the margin m in the target's direction.
// The margin is compared as a difference, n−b ≥ m·b, so that a candidate exactly m above the
// baseline passes despite rounding of b·(1+m).
func beats(n, b float64, maximized bool, m float64) bool {
	if maximized {
		return n > b && n-b >= m*math.Abs(b)
	}
	return n < b && b-n >= m*math.Abs(b)
}

func worse(n, b float64, maximized bool) bool {
	if maximized {
		return n < b
	}
	return n > b
}

func values(report map[string]float64, objectives []string) ([]float64, error) {
	out := make([]float64, len(objectives))
	for i, t := range objectives {
		v, err := Objective(report, t, 0)
		if err != nil {
			return nil, fmt.Errorf("spec.objective.target: %w", err)
		}
		out[i] = v
	}
	return out, nil
}

func fromSpec(s *v1beta2.SLASpec) SLA {
	if s == nil {
		return SLA{}
	}
	return SLA{TTFTMs: s.TTFTMs, ITLMs: s.ITLMs, E2EMs: s.E2EMs}
}

// units of each objective in a message.
var units = map[string]string{
	Throughput: "tok/s", ThroughputPerGPU: "tok/s/GPU", ThroughputPerUser: "tok/s/user", Goodput: "tok/s goodput",
	GoodputPerGPU: "tok/s/GPU goodput", TTFT: "ms TTFT", E2ELatency: "ms E2E", MinGPUs: "GPUs",
}

func quantities(objectives []string, v []float64) string {
	parts := make([]string, len(objectives))
	for i, t := range objectives {
		parts[i] = number(v[i]) + " " + units[t]
	}
	return strings.Join(parts, ", ")
}

// ObjectiveText is an objective of target with its unit, written as the gate's messages write
// it: "1,840 tok/s/GPU". Pareto's headline is throughput per GPU; no target is throughput.
func ObjectiveText(v float64, target v1beta2.ObjectiveTarget) string {
	if target == "" {
		target = v1beta2.TargetThroughput
	}
	name, _ := aisimulate.TargetName(target)
	if name == Pareto {
		name = ParetoObjectives[0]
	}
	if u := units[name]; u != "" {
		return number(v) + " " + u
	}
	return number(v)
}

// ChangeText is n relative to b with its sign and one decimal, e.g. "+21.9%".
func ChangeText(n, b float64) string { return change(n, b) }

// number prints whole numbers with thousands separators from 100 up (1,840), three significant
// digits below (6.16).
func number(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "no samples"
	case !finite(v):
		return strconv.FormatFloat(v, 'g', -1, 64)
	case math.Abs(v) < 100:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	digits := strconv.FormatFloat(math.Abs(math.Round(v)), 'f', 0, 64)
	var b strings.Builder
	if v < 0 {
		b.WriteByte('-')
	}
	for i, c := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// change is the candidate's relative change against the baseline, e.g. +21.9%.
func change(n, b float64) string {
	if b == 0 || !finite(b) || !finite(n) {
		return "no relative change"
	}
	return fmt.Sprintf("%+.1f%%", (n-b)/math.Abs(b)*100)
}

func percent(m float64) string {
	return strconv.FormatFloat(m*100, 'f', -1, 64) + "%"
}
