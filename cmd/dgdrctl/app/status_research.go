package app

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/resultsview"
)

// writeResearch prints the re-search schedule (spec.research), the history of re-searches
// (status.research) and the ImprovementAvailable condition; nothing when the request has none of
// them. now says how long until the next re-search.
func writeResearch(out io.Writer, req *v1beta2.DynamoGraphDeploymentRequest, now time.Time) {
	sched := resultsview.ResearchScheduleOf(req)
	rows := resultsview.ResearchRows(req)
	cond := meta.FindStatusCondition(req.Status.Conditions, v1beta2.ConditionImprovementAvailable)
	if sched == nil && len(rows) == 0 && cond == nil {
		return
	}
	fmt.Fprintln(out)
	if sched == nil {
		fmt.Fprintln(out, "Re-searches: not scheduled")
	} else {
		fmt.Fprintf(out, "Re-searches: %s\n", resultsview.ResearchScheduleText(sched))
		if next := resultsview.NextResearchText(sched.Next, now); next != "" {
			fmt.Fprintf(out, "  next  %s\n", next)
		}
	}
	if len(rows) == 0 {
		fmt.Fprintln(out, "No re-searches yet.")
	} else {
		writeResearchRows(out, rows)
	}
	writeCondition(out, cond)
}

// writeResearchRows prints one row per re-search, newest first; the message comes last, where
// its length misaligns nothing.
func writeResearchRows(out io.Writer, rows []resultsview.ResearchRow) {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tWINDOW\tREQUESTS\tDEPLOYED\tBASELINE\tBEST\tBEST OBJECTIVE\tCHANGE\tDECISION\tMESSAGE")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", orDash(r.Run), orDash(r.Window), orDash(r.Requests),
			orDash(r.DeployedCandidate), orDash(r.BaselineObjective), orDash(r.BestCandidate), orDash(r.BestObjective),
			orDash(r.Change), decisionText(r), orDash(oneLine(r.Message)))
	}
	_ = tw.Flush()
}

// decisionText is the decision with its reason, e.g. "Kept (BaselineStillBest)".
func decisionText(r resultsview.ResearchRow) string {
	if r.Reason == "" {
		return orDash(r.Decision)
	}
	return fmt.Sprintf("%s (%s)", orDash(r.Decision), r.Reason)
}

// oneLine keeps a message on its row of the table: its line breaks and tabs become spaces.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
