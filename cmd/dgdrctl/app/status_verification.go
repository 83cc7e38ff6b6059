package app

import (
	"fmt"
	"io"
	"math"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/resultsview"
)

// writeVerification prints the measurement of the deployed candidate (status.verification) and
// the PredictionHeld condition; nothing when the request has neither. now dates measuredAt.
func writeVerification(out io.Writer, req *v1beta2.DynamoGraphDeploymentRequest, now time.Time) {
	v := req.Status.Verification
	cond := meta.FindStatusCondition(req.Status.Conditions, v1beta2.ConditionPredictionHeld)
	if v == nil && cond == nil {
		return
	}
	fmt.Fprintln(out)
	if v == nil {
		fmt.Fprintln(out, "Verification: none recorded")
	} else {
		fmt.Fprintf(out, "Verification: %s\n", orDash(string(v.Phase)))
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		field := func(key, value string) {
			if value != "" {
				fmt.Fprintf(tw, "  %s\t%s\n", key, value)
			}
		}
		if v.Phase == v1beta2.VerificationFailed {
			field("reason", joinNonEmpty(": ", orDash(v.Reason), v.Message))
		}
		field("deployment", deploymentText(v))
		field("candidate", candidateText(v))
		if v.MeasuredAt != nil {
			field("measured", fmt.Sprintf("%s (%s ago)", v.MeasuredAt.UTC().Format(time.RFC3339), duration.HumanDuration(now.Sub(v.MeasuredAt.Time))))
		}
		field("load", loadText(v))
		field("job", v.JobName)
		if o := v.Observed; o != nil {
			field("completed", fmt.Sprintf("%d requests, %d failed", o.Requests, o.Errors))
		}
		_ = tw.Flush()
		// A failed verification measured nothing to compare: its reason is the result.
		if v.Phase != v1beta2.VerificationFailed && len(v.Metrics) > 0 {
			fmt.Fprintln(out)
			writeVerifiedMetrics(out, resultsview.VerifiedMetrics(v))
		}
	}
	writeCondition(out, cond)
}

// writeCondition prints a condition as TYPE=STATUS (REASON): MESSAGE; nothing for nil.
func writeCondition(out io.Writer, cond *metav1.Condition) {
	if cond == nil {
		return
	}
	fmt.Fprintf(out, "%s=%s (%s)", cond.Type, cond.Status, orDash(cond.Reason))
	if cond.Message != "" {
		fmt.Fprintf(out, ": %s", cond.Message)
	}
	fmt.Fprintln(out)
}

// writeVerifiedMetrics prints one row per compared metric.
func writeVerifiedMetrics(out io.Writer, rows []resultsview.VerifiedMetric) {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "METRIC\tPREDICTED\tBAND\tOBSERVED\tERROR\tRESULT")
	for _, m := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", m.Name, withUnit(m.Predicted, m.Unit), band(m.TolerancePct),
			withUnit(m.Observed, m.Unit), errorPct(m.RelativeErrorPct), heldText(m.Held))
	}
	_ = tw.Flush()
	fmt.Fprintln(out, "BAND: the relative error allowed (the request's tolerance, else the candidate's error band, else 25%); ERROR: |observed - predicted| / predicted")
}

func deploymentText(v *v1beta2.VerificationStatus) string {
	switch {
	case v.Deployment == "" && v.DeploymentGeneration == 0:
		return ""
	case v.DeploymentGeneration == 0:
		return v.Deployment
	}
	return fmt.Sprintf("%s generation %d", orDash(v.Deployment), v.DeploymentGeneration)
}

func candidateText(v *v1beta2.VerificationStatus) string {
	if v.Run == "" {
		return v.Candidate
	}
	return fmt.Sprintf("%s of run %s", orDash(v.Candidate), v.Run)
}

// loadText is the offered load with the number of requests and the time limit.
func loadText(v *v1beta2.VerificationStatus) string {
	s := resultsview.VerificationLoadText(v)
	if v.Requests > 0 {
		s = joinNonEmpty(", ", s, fmt.Sprintf("%d requests", v.Requests))
	}
	if v.MaxDurationSeconds > 0 {
		s = joinNonEmpty(", ", s, fmt.Sprintf("at most %d s", v.MaxDurationSeconds))
	}
	return s
}

func joinNonEmpty(sep, a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + sep + b
}

// withUnit prints a value with its unit, e.g. "154.0 ms" ("-": none).
func withUnit(v *float64, unit string) string {
	if v == nil || unit == "" {
		return num(v)
	}
	return num(v) + " " + unit
}

// band prints an allowed relative error, e.g. "±25%" ("-": none).
func band(pct *float64) string {
	if pct == nil {
		return "-"
	}
	return "±" + percentText(*pct)
}

func errorPct(pct *float64) string {
	if pct == nil {
		return "-"
	}
	return percentText(*pct)
}

// percentText prints a percentage with one decimal unless it is whole.
func percentText(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f%%", v)
	}
	return fmt.Sprintf("%.1f%%", v)
}

func heldText(held *bool) string {
	switch {
	case held == nil:
		return "-"
	case *held:
		return "held"
	}
	return "OUTSIDE BAND"
}
