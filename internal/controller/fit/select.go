package fit

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/pricing"
	"github.com/dgdr-operator/dgdr-operator/internal/specdefaults"
)

// Tolerance is spec.deployment.selection.tolerance of spec (its default where unset) as written
// and as a fraction (0.02 for "2%").
func Tolerance(spec *v1beta2.DynamoGraphDeploymentRequestSpec) (string, float64, error) {
	s := specdefaults.SelectionTolerance
	if d := spec.Deployment; d != nil && d.Selection != nil && d.Selection.Tolerance != "" {
		s = d.Selection.Tolerance
	}
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil || !strings.HasSuffix(s, "%") || !(v >= 0 && v <= 100) {
		return s, 0, fmt.Errorf("spec.deployment.selection.tolerance %q is not a percentage from 0%% to 100%%", s)
	}
	return s, v / 100, nil
}

// Select chooses the candidate autoApply deploys among fits, the Run's candidates that fit the
// cluster in ranking order (at least one): the best is the first; the chosen one has the fewest
// GPUs, then the lowest cost per hour, then the best rank, among those whose score is at least
// best − tolerance·|best| (status.metrics.score, higher is better). tolerance is the fraction
// and written its spec form. The best is chosen when it has no finite score, and for a pareto
// target, which has no single score to compare.
func Select(fits []*v1beta2.DynamoGraphDeploymentCandidate, written string, tolerance float64, pareto bool) v1beta2.DeploymentSelection {
	best := fits[0]
	sel := v1beta2.DeploymentSelection{Best: best.Name, Chosen: best.Name, Tolerance: written}
	bestScore, scored := score(best)
	switch {
	case pareto:
		sel.Reason = fmt.Sprintf("a pareto target ranks no single score: the first candidate of the front that fits the cluster, %s, is deployed", best.Name)
		return sel
	case !scored:
		sel.Reason = fmt.Sprintf("the best candidate %s has no score to compare others with: it is deployed", best.Name)
		return sel
	}
	threshold := bestScore - tolerance*math.Abs(bestScore)
	chosen, within := best, 0
	for _, c := range fits[1:] {
		s, ok := score(c)
		if !ok || s < threshold {
			continue
		}
		within++
		if cheaper(c, chosen) {
			chosen = c
		}
	}
	if chosen != best {
		s, _ := score(chosen)
		sel.Chosen = chosen.Name
		sel.Reason = fmt.Sprintf("%s %s than the best candidate %s (%s), and scores %s against %s (%s lower), within the tolerance of %s",
			chosen.Name, saving(chosen, best), best.Name, gpusAndCost(best), number(s), number(bestScore), percentBelow(s, bestScore), written)
		return sel
	}
	switch {
	case tolerance == 0:
		sel.Reason = fmt.Sprintf("the tolerance is 0%%: the best candidate %s (%s) is deployed", best.Name, gpusAndCost(best))
	case within == 0:
		sel.Reason = fmt.Sprintf("no other candidate that fits scores within %s of the best candidate %s (%s, %s)", written, best.Name, number(bestScore), gpusAndCost(best))
	default:
		others := "the other candidate"
		if within > 1 {
			others = fmt.Sprintf("the %d other candidates", within)
		}
		sel.Reason = fmt.Sprintf("the best candidate %s (%s) costs no more than %s scoring within %s of it", best.Name, gpusAndCost(best), others, written)
	}
	return sel
}

// score is a candidate's published score, when it has a finite one.
func score(c *v1beta2.DynamoGraphDeploymentCandidate) (float64, bool) {
	m := c.Status.Metrics
	if m == nil || m.Score == nil || math.IsNaN(*m.Score) || math.IsInf(*m.Score, 0) {
		return 0, false
	}
	return *m.Score, true
}

// cheaper tells whether a uses fewer GPUs than b, or as many at a lower cost per hour (compared
// only when both have one); equal candidates keep their ranking order.
func cheaper(a, b *v1beta2.DynamoGraphDeploymentCandidate) bool {
	if a.Spec.GPUs != b.Spec.GPUs {
		return a.Spec.GPUs < b.Spec.GPUs
	}
	ca, cb := perHour(a), perHour(b)
	return ca != nil && cb != nil && ca.Cmp(cb) < 0
}

// perHour is a candidate's cost per hour, nil without one.
func perHour(c *v1beta2.DynamoGraphDeploymentCandidate) *big.Rat {
	m := c.Status.Metrics
	if m == nil || m.Cost == nil || m.Cost.PerHour == "" {
		return nil
	}
	r, err := pricing.Decimal(m.Cost.PerHour)
	if err != nil {
		return nil
	}
	return r
}

// saving says what chosen saves over best: "uses fewer GPUs (4)", or at as many GPUs "costs
// less (4 GPUs, 10.00 USD/h)".
func saving(chosen, best *v1beta2.DynamoGraphDeploymentCandidate) string {
	if chosen.Spec.GPUs != best.Spec.GPUs {
		return fmt.Sprintf("uses fewer GPUs (%d)", chosen.Spec.GPUs)
	}
	return fmt.Sprintf("costs less (%s)", gpusAndCost(chosen))
}

// gpusAndCost reads "8 GPUs" or "8 GPUs, 28.00 USD/h".
func gpusAndCost(c *v1beta2.DynamoGraphDeploymentCandidate) string {
	s := fmt.Sprintf("%d GPUs", c.Spec.GPUs)
	if c.Spec.GPUs == 1 {
		s = "1 GPU"
	}
	if m := c.Status.Metrics; m != nil && m.Cost != nil && m.Cost.PerHour != "" {
		s += fmt.Sprintf(", %s %s/h", m.Cost.PerHour, m.Cost.Currency)
	}
	return s
}

// number prints a score with up to four significant digits past its integer part.
func number(v float64) string { return strconv.FormatFloat(v, 'g', max(4, digits(v)), 64) }

func digits(v float64) int {
	n := 1
	for v = math.Abs(v); v >= 10; v /= 10 {
		n++
	}
	return n
}

// percentBelow is how much lower s is than best, relative to |best|, e.g. "0.23%".
func percentBelow(s, best float64) string {
	if best == 0 {
		return "0%"
	}
	return strconv.FormatFloat((best-s)/math.Abs(best)*100, 'f', 2, 64) + "%"
}
