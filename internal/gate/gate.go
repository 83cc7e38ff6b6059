package gate

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
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
	Metrics output.Report
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

// Decide compares the candidate with the baseline by their replay reports, scored as AISimulate
// scores a report (output.Objective, the per-GPU targets over the time-averaged GPU count). The
// candidate replaces the baseline when it meets the SLA and either the baseline misses it or
// the candidate's objective beats the baseline's by the margin: n ≥ b·(1+m) and n > b for a
// maximized target, n ≤ b·(1−m) and n < b for a minimized one (b ≥ 0) (the strict half keeps
// equal deployments from replacing each other at margin 0). For pareto the candidate must beat
// the baseline by the margin on throughput per GPU and be no worse on throughput per user.
func Decide(in Input) (Decision, error) {
	objectives, err := check(in.Target, in.Margin)
	if err != nil {
		return Decision{}, err
	}
	if in.Candidate.Metrics == nil {
		return Decision{}, fmt.Errorf("candidate.metrics: required")
	}
	sla := fromSpec(in.SLA)
	cand, err := reportSide(in.Candidate, objectives, sla)
	if err != nil {
		return Decision{}, err
	}
	base := side{name: in.Baseline.Name}
	if in.Baseline.Metrics != nil {
		if base, err = reportSide(in.Baseline, objectives, sla); err != nil {
			return Decision{}, err
		}
	}
	return decide(objectives, in.Margin, base, cand), nil
}

// Deployment is one deployment DecideMetrics compares, by its published metrics: a Candidate's
// status.metrics, or a Run's status.baseline.
type Deployment struct {
	// Name names the deployment in the message (a Candidate's name).
	Name string
	// Metrics are the deployment's published metrics; nil when there is no prediction.
	Metrics *v1beta2.CandidateMetrics
	// MeanTPOTMs is the mean time per output token, which AISimulate's SLA check compares with
	// the ITL bound (a baseline's status.baseline.meanTpotMs); nil compares metrics.itlMs, the
	// latency a Candidate publishes.
	MeanTPOTMs *float64
}

// MetricsInput is what DecideMetrics compares.
type MetricsInput struct {
	// Target is the search's spec.objective.target (throughput when empty).
	Target v1beta2.ObjectiveTarget
	// SLA is the search's spec.sla; nil for none.
	SLA *v1beta2.SLASpec
	// Baseline is the deployed candidate predicted under the re-search's traffic.
	Baseline Deployment
	// Candidate is the re-search's best candidate (rank 1).
	Candidate Deployment
	// Margin is the fraction by which the candidate must beat the baseline, in [0, 1).
	Margin float64
}

// DecideMetrics is Decide on two deployments' published metrics, which hold each objective as
// the recommender computed it: throughput, throughput per GPU and per user, the mean TTFT and
// E2E latency, and for a goodput target the score (goodput is not among the published metrics,
// and a score is the objective of the search's target). A missing latency reads as having no
// samples, a missing throughput as 0, as AISimulate reads a report.
func DecideMetrics(in MetricsInput) (Decision, error) {
	objectives, err := check(in.Target, in.Margin)
	if err != nil {
		return Decision{}, err
	}
	if in.Candidate.Metrics == nil {
		return Decision{}, fmt.Errorf("candidate.metrics: required")
	}
	sla := fromSpec(in.SLA)
	cand, base := metricsSide(in.Candidate, objectives, sla), side{name: in.Baseline.Name}
	if in.Baseline.Metrics != nil {
		base = metricsSide(in.Baseline, objectives, sla)
	}
	return decide(objectives, in.Margin, base, cand), nil
}

// check resolves the target to the objectives it compares (AISimulate's names; pareto's two)
// and checks the margin.
func check(t v1beta2.ObjectiveTarget, margin float64) ([]string, error) {
	if t == "" {
		t = v1beta2.TargetThroughput
	}
	target, ok := aisimulate.TargetName(t)
	if !ok {
		return nil, fmt.Errorf("spec.objective.target: unsupported value %q", t)
	}
	if !(margin >= 0 && margin < 1) {
		return nil, fmt.Errorf("margin: must be in [0, 1), got %v", margin)
	}
	if target == output.TargetPareto {
		return output.ParetoObjectives, nil
	}
	return []string{target}, nil
}

// side is one deployment as the gate weighs it: its objectives (nil without a prediction) and
// how it misses the SLA.
type side struct {
	name       string
	objectives []float64
	violations []string
}

func reportSide(p Point, objectives []string, sla SLA) (side, error) {
	s := side{name: p.Name, objectives: make([]float64, len(objectives))}
	for i, t := range objectives {
		v, err := output.Objective(t, p.Metrics, output.GPUs{Basis: output.TimeAveragedGPUs})
		if err != nil {
			return side{}, fmt.Errorf("spec.objective.target: %w", err)
		}
		s.objectives[i] = v
	}
	if sla.Any() {
		s.violations = SLAViolations(p.Metrics, sla)
	}
	return s, nil
}

func metricsSide(d Deployment, objectives []string, sla SLA) side {
	s := side{name: d.Name, objectives: make([]float64, len(objectives))}
	for i, t := range objectives {
		s.objectives[i] = metricsObjective(d.Metrics, t)
	}
	if sla.Any() {
		s.violations = metricsSLAViolations(d, sla)
	}
	return s
}

// metricsObjective is the raw objective of target among published metrics m.
func metricsObjective(m *v1beta2.CandidateMetrics, target string) float64 {
	or := func(v *float64, missing float64) float64 {
		if v == nil {
			return missing
		}
		return *v
	}
	switch target {
	case output.TargetThroughput:
		return or(m.Throughput, 0)
	case output.TargetThroughputPerGPU:
		if m.ThroughputPerGPU == nil && m.Throughput != nil && m.GPUs > 0 {
			return *m.Throughput / float64(m.GPUs)
		}
		return or(m.ThroughputPerGPU, 0)
	case output.TargetThroughputPerUser:
		return or(m.ThroughputPerUser, 0)
	case output.TargetGoodput, output.TargetGoodputPerGPU:
		return or(m.Score, 0)
	case output.TargetTTFT:
		return or(m.TTFTMs, math.Inf(1))
	case output.TargetE2ELatency:
		return or(m.E2EMs, math.Inf(1))
	}
	return 0
}

// decide weighs the candidate against the baseline on objectives (see Decide).
func decide(objectives []string, margin float64, base, cand side) Decision {
	d := Decision{CandidateObjective: &cand.objectives[0]}
	if base.objectives == nil {
		d.Improvement, d.Reason = metav1.ConditionUnknown, BaselineUnavailable
		d.Message = fmt.Sprintf("no baseline prediction of deployed %s; candidate %s %s", base.name, cand.name, quantities(objectives, cand.objectives))
		return d
	}
	d.BaselineObjective = &base.objectives[0]
	// One objective: its unit once, after the candidate's number; pareto: after every number.
	baseText := number(base.objectives[0])
	if len(objectives) > 1 {
		baseText = quantities(objectives, base.objectives)
	}
	compared := fmt.Sprintf("candidate %s %s vs deployed %s %s", cand.name, quantities(objectives, cand.objectives), base.name, baseText)
	if v := cand.violations; len(v) > 0 {
		d.Improvement, d.Reason = metav1.ConditionFalse, BaselineStillBest
		d.Message = fmt.Sprintf("candidate %s misses the SLA (%s); deployed %s stays", cand.name, strings.Join(v, "; "), base.name)
		return d
	}
	if v := base.violations; len(v) > 0 {
		d.Improvement, d.Reason = metav1.ConditionTrue, BaselineMissesSLA
		d.Message = fmt.Sprintf("deployed %s misses the SLA under this traffic (%s), candidate %s meets it: %s",
			base.name, strings.Join(v, "; "), cand.name, compared)
		return d
	}
	better := beats(cand.objectives[0], base.objectives[0], maximized(objectives[0]), margin)
	for i := 1; i < len(objectives); i++ {
		if worse(cand.objectives[i], base.objectives[i], maximized(objectives[i])) {
			better = false
		}
	}
	d.Improvement, d.Reason = metav1.ConditionFalse, BaselineStillBest
	if better {
		d.Improvement, d.Reason = metav1.ConditionTrue, BetterCandidate
	}
	d.Message = fmt.Sprintf("%s (%s, margin %s)", compared, change(cand.objectives[0], base.objectives[0]), percent(margin))
	return d
}

func maximized(target string) bool {
	t, _ := output.LookupTarget(target)
	return t.Maximized
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

func fromSpec(s *v1beta2.SLASpec) SLA {
	if s == nil {
		return SLA{}
	}
	return SLA{TTFTMs: s.TTFTMs, ITLMs: s.ITLMs, E2EMs: s.E2EMs}
}

func quantities(objectives []string, v []float64) string {
	parts := make([]string, len(objectives))
	for i, t := range objectives {
		parts[i] = number(v[i]) + " " + unit(t)
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
	if name == output.TargetPareto {
		name = output.ParetoObjectives[0]
	}
	if u := unit(name); u != "" {
		return number(v) + " " + u
	}
	return number(v)
}

// unit is the unit of target's objective in messages.
func unit(target string) string {
	t, _ := output.LookupTarget(target)
	return t.Unit
}

// ChangeText is n relative to b with its sign and one decimal, e.g. "+21.9%".
func ChangeText(n, b float64) string { return change(n, b) }

// number prints whole numbers with thousands separators from 100 up (1,840), three significant
// digits below (6.16).
func number(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "no samples"
	case !output.Finite(v):
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
	if b == 0 || !output.Finite(b) || !output.Finite(n) {
		return "no relative change"
	}
	return fmt.Sprintf("%+.1f%%", (n-b)/math.Abs(b)*100)
}

func percent(m float64) string {
	return strconv.FormatFloat(m*100, 'f', -1, 64) + "%"
}
