package app

import (
	"fmt"
	"io"
	"text/tabwriter"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

// writeDeployment prints what autoApply deployed (status.deployment): the DynamoGraphDeployment,
// the candidate and, when the selection chose it over the best, both and why; then the Deployed
// condition. Nothing for a request with neither.
func writeDeployment(out io.Writer, req *v1beta2.DynamoGraphDeploymentRequest) {
	d := req.Status.Deployment
	cond := meta.FindStatusCondition(req.Status.Conditions, v1beta2.ConditionDeployed)
	if d == nil && cond == nil {
		return
	}
	fmt.Fprintln(out)
	if d == nil {
		fmt.Fprintln(out, "Deployment: none yet")
	} else {
		fmt.Fprintf(out, "Deployment: DynamoGraphDeployment %s\n", d.Name)
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "  candidate\t%s of Run %s\n", d.Candidate, d.Run)
		if s := d.Selection; s != nil {
			if s.Chosen != s.Best {
				fmt.Fprintf(tw, "  chosen\t%s instead of the best %s (tolerance %s)\n", s.Chosen, s.Best, orDash(s.Tolerance))
			} else {
				fmt.Fprintf(tw, "  chosen\tthe best, %s (tolerance %s)\n", s.Best, orDash(s.Tolerance))
			}
			fmt.Fprintf(tw, "  why\t%s\n", s.Reason)
		}
		_ = tw.Flush()
	}
	writeCondition(out, cond)
}
