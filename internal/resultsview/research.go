package resultsview

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/gate"
	"github.com/dgdr-operator/dgdr-operator/internal/research"
	"github.com/dgdr-operator/dgdr-operator/internal/specdefaults"
)

// ResearchSchedule is a request's re-search schedule (spec.research, spec.deployment.replaceMargin
// and status.research.nextTime) as people read it, with the defaults the operator applies.
type ResearchSchedule struct {
	// Interval and Window are durations such as "6h" and "24h".
	Interval string `json:"interval"`
	Window   string `json:"window"`
	// MinRequests is the fewest captured requests in a window worth a search.
	MinRequests int32 `json:"minRequests"`
	// Margin is how much better a new best must be to replace the deployment, e.g. "10%".
	Margin string `json:"replaceMargin"`
	// Next is when the next re-search is due; nil when none is scheduled (no deployment yet).
	Next *time.Time `json:"nextTime,omitempty"`
}

// ResearchScheduleOf is req's re-search schedule; nil when its spec schedules none.
func ResearchScheduleOf(req *v1beta2.DynamoGraphDeploymentRequest) *ResearchSchedule {
	if !research.On(&req.Spec) {
		return nil
	}
	s := &ResearchSchedule{
		Interval: DurationText(research.Interval(&req.Spec)), Window: DurationText(research.Window(&req.Spec)),
		MinRequests: research.MinRequests(&req.Spec), Margin: specdefaults.ReplaceMargin,
	}
	if d := req.Spec.Deployment; d != nil && d.ReplaceMargin != "" {
		s.Margin = d.ReplaceMargin
	}
	if st := req.Status.Research; st != nil && st.NextTime != nil {
		t := st.NextTime.UTC()
		s.Next = &t
	}
	return s
}

// ResearchScheduleText says the schedule in one line, e.g. "every 6h over the last 24h of
// captured traffic, at least 100 requests, replace margin 10%".
func ResearchScheduleText(s *ResearchSchedule) string {
	if s == nil {
		return ""
	}
	requests := "requests"
	if s.MinRequests == 1 {
		requests = "request"
	}
	return fmt.Sprintf("every %s over the last %s of captured traffic, at least %d %s, replace margin %s",
		s.Interval, s.Window, s.MinRequests, requests, s.Margin)
}

// NextResearchText is when the next re-search is due, with how long until then, e.g.
// "2025-06-01 18:00 UTC (in 3h)"; "" when none is scheduled.
func NextResearchText(next *time.Time, now time.Time) string {
	if next == nil {
		return ""
	}
	if !next.After(now) {
		return TimeText(*next) + " (due)"
	}
	return fmt.Sprintf("%s (in %s)", TimeText(*next), duration.HumanDuration(next.Sub(now)))
}

// ResearchRow is one re-search of a request's history as people read it. Text fields are ""
// when the record does not say; each view draws its own dash.
type ResearchRow struct {
	// Run is the re-search Run; a skipped tick may name a Run that was never created.
	Run string `json:"run"`
	// Window is the replayed traffic, e.g. "2025-06-01 06:00–12:00 UTC".
	Window            string    `json:"window"`
	WindowStart       time.Time `json:"windowStart"`
	WindowEnd         time.Time `json:"windowEnd"`
	Requests          string    `json:"requests,omitempty"`
	DeployedCandidate string    `json:"deployedCandidate,omitempty"`
	// BaselineObjective is the deployed candidate's objective under the window, with its unit.
	BaselineObjective string `json:"baselineObjective,omitempty"`
	BestCandidate     string `json:"bestCandidate,omitempty"`
	BestObjective     string `json:"bestObjective,omitempty"`
	// Change is the best candidate's objective relative to the baseline's, e.g. "+21.9%"; for a
	// minimized target (ttft, e2eLatency) a negative change is the better one.
	Change   string `json:"change,omitempty"`
	Decision string `json:"decision,omitempty"`
	Reason   string `json:"reason,omitempty"`
	Message  string `json:"message,omitempty"`
}

// ResearchRows is req's re-search history, newest first as the status keeps it.
func ResearchRows(req *v1beta2.DynamoGraphDeploymentRequest) []ResearchRow {
	st := req.Status.Research
	if st == nil {
		return nil
	}
	var target v1beta2.ObjectiveTarget
	if o := req.Spec.Objective; o != nil {
		target = o.Target
	}
	rows := make([]ResearchRow, 0, len(st.History))
	for _, r := range st.History {
		start, end := timeOf(r.WindowStart), timeOf(r.WindowEnd)
		row := ResearchRow{
			Run: r.Run, Window: WindowText(start, end),
			WindowStart: start, WindowEnd: end,
			DeployedCandidate: r.DeployedCandidate, BaselineObjective: ObjectiveText(r.BaselineObjective, target),
			BestCandidate: r.BestCandidate, BestObjective: ObjectiveText(r.BestObjective, target),
			Change:   ChangeText(r.BestObjective, r.BaselineObjective),
			Decision: string(r.Decision), Reason: r.Reason, Message: r.Message,
		}
		// Zero is what an unknown count looks like in the status.
		if r.Requests > 0 {
			row.Requests = groupDigits(r.Requests)
		}
		rows = append(rows, row)
	}
	return rows
}

// DurationText is a duration without its zero minor units: "6h", "1h30m", "90s" stays "1m30s".
func DurationText(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// TimeText is a time in UTC to the minute, with seconds only when it has some.
func TimeText(t time.Time) string {
	t = t.UTC()
	if t.Second() != 0 {
		return t.Format("2006-01-02 15:04:05 UTC")
	}
	return t.Format("2006-01-02 15:04 UTC")
}

// WindowText is a window of time in UTC, its date once when both ends fall on the same day:
// "2025-06-01 06:00–12:00 UTC", else "2025-05-31 12:00 – 2025-06-01 12:00 UTC"; "" when
// neither end is set.
func WindowText(start, end time.Time) string {
	switch {
	case start.IsZero() && end.IsZero():
		return ""
	case start.IsZero():
		return "until " + TimeText(end)
	case end.IsZero():
		return "from " + TimeText(start)
	}
	start, end = start.UTC(), end.UTC()
	clock := "15:04"
	if start.Second() != 0 || end.Second() != 0 {
		clock = "15:04:05"
	}
	if start.Format(time.DateOnly) == end.Format(time.DateOnly) {
		return fmt.Sprintf("%s %s–%s UTC", start.Format(time.DateOnly), start.Format(clock), end.Format(clock))
	}
	return fmt.Sprintf("%s – %s UTC", start.Format(time.DateOnly+" "+clock), end.Format(time.DateOnly+" "+clock))
}

// ObjectiveText is an objective with the unit of target, written as the gate's messages write
// it (1,840 tok/s/GPU; 6.16 ms TTFT); "" when v is nil.
func ObjectiveText(v *float64, target v1beta2.ObjectiveTarget) string {
	if v == nil {
		return ""
	}
	return gate.ObjectiveText(*v, target)
}

// ChangeText is best relative to baseline with its sign and one decimal, e.g. "+21.9%"; "" when
// either is missing or the baseline is zero.
func ChangeText(best, baseline *float64) string {
	if best == nil || baseline == nil || *baseline == 0 || math.IsNaN(*best) || math.IsInf(*best, 0) || math.IsNaN(*baseline) || math.IsInf(*baseline, 0) {
		return ""
	}
	return gate.ChangeText(*best, *baseline)
}

// groupDigits writes n with thousands separators: 12,345.
func groupDigits(n int64) string {
	digits := strconv.FormatInt(n, 10)
	sign := ""
	if n < 0 {
		sign, digits = "-", digits[1:]
	}
	var b strings.Builder
	b.WriteString(sign)
	for i, c := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// timeOf is t in UTC, zero when unset.
func timeOf(t *metav1.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}
