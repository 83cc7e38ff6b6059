package resultsview

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

// Progress is how far a Run's search got, as dgdrctl and the web view show it.
type Progress struct {
	v1beta2.RunProgress
	// Total is what Settled is counted against: the trial budget, or Settled itself once the
	// search exhausted its space; 0 when the budget is unknown.
	Total int64
	// Percent is Settled of Total, at most 100.
	Percent int
	// Exhausted says the search succeeded having settled fewer trials than its budget: it ran
	// out of candidates (its space, or its optimizer's suggestions) before the budget, so it is
	// complete. The Run's status.progress keeps the budget it was given (optimizer.max_trials).
	Exhausted bool
}

// RunProgress reads the Run's status.progress, complete for a search that succeeded with fewer
// settled trials than its budget.
func RunProgress(run *v1beta2.DynamoGraphDeploymentRun) Progress {
	p := Progress{}
	if run.Status.Progress != nil {
		p.RunProgress = *run.Status.Progress
	}
	p.Total = p.Budget
	c := meta.FindStatusCondition(run.Status.Conditions, v1beta2.ConditionCompleted)
	succeeded := c != nil && c.Status == metav1.ConditionTrue && c.Reason == v1beta2.ReasonSucceeded &&
		(run.Status.Recommendation == nil || !run.Status.Recommendation.Provisional)
	if succeeded && p.Budget > 0 && p.Settled < p.Budget {
		p.Exhausted, p.Total = true, p.Settled
	}
	if p.Total > 0 {
		p.Percent = int(min(100, p.Settled*100/p.Total))
	}
	if p.Exhausted {
		p.Percent = 100
	}
	return p
}

// Text reads "12/40 (30%)", "8/8 (100%), space exhausted (budget 320)" for a search that ended
// before its budget, "12" without a budget and "-" before anything settled.
func (p Progress) Text() string {
	switch {
	case p.Exhausted:
		return fmt.Sprintf("%d/%d (100%%), space exhausted (budget %d)", p.Settled, p.Settled, p.Budget)
	case p.Total > 0:
		return fmt.Sprintf("%d/%d (%d%%)", p.Settled, p.Total, p.Percent)
	case p.Settled > 0:
		return fmt.Sprintf("%d", p.Settled)
	}
	return "-"
}
