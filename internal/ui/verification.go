package ui

import (
	"fmt"
	"math"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/resultsview"
)

// VerificationView is the measurement of a request's deployed candidate beside what the search
// predicted (status.verification and the PredictionHeld condition).
type VerificationView struct {
	Namespace  string `json:"-"`
	Phase      string `json:"phase"`
	Reason     string `json:"reason,omitempty"`
	Message    string `json:"message,omitempty"`
	Deployment string `json:"deployment,omitempty"`
	Generation int64  `json:"deploymentGeneration,omitempty"`
	Run        string `json:"run,omitempty"`
	Candidate  string `json:"candidate,omitempty"`
	JobName    string `json:"jobName,omitempty"`
	// MeasuredAt is when the measurement ended; Measured says it for people, with its age.
	MeasuredAt *time.Time `json:"measuredAt,omitempty"`
	Measured   string     `json:"-"`
	// Load is the offered load, the number of requests and the time limit.
	Load string `json:"load,omitempty"`
	// Completed counts the requests that completed and failed, once measured.
	Completed string               `json:"completed,omitempty"`
	Metrics   []VerifiedMetricView `json:"metrics,omitempty"`
	Condition *PredictionHeldView  `json:"predictionHeld,omitempty"`
}

// VerifiedMetricView is one compared metric, its values with their units.
type VerifiedMetricView struct {
	Name      string `json:"name"`
	Predicted string `json:"predicted"`
	// Band is the relative error allowed, e.g. "±25%".
	Band     string `json:"band"`
	Observed string `json:"observed"`
	Error    string `json:"relativeError"`
	// Held is nil when the status does not say; Outside marks a prediction that missed.
	Held    *bool `json:"held,omitempty"`
	Outside bool  `json:"-"`
}

// PredictionHeldView is the request's PredictionHeld condition.
type PredictionHeldView struct {
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// Failed tells whether nothing usable was measured (the reason is the result).
func (v *VerificationView) Failed() bool { return v.Phase == string(v1beta2.VerificationFailed) }

// verificationView is req's verification; nil when the request has neither status.verification
// nor PredictionHeld. now dates the measurement.
func verificationView(req *v1beta2.DynamoGraphDeploymentRequest, now time.Time) *VerificationView {
	st := req.Status.Verification
	cond := meta.FindStatusCondition(req.Status.Conditions, v1beta2.ConditionPredictionHeld)
	if st == nil && cond == nil {
		return nil
	}
	v := &VerificationView{Namespace: req.Namespace, Phase: "none recorded"}
	if cond != nil {
		v.Condition = &PredictionHeldView{Status: string(cond.Status), Reason: cond.Reason, Message: cond.Message}
	}
	if st == nil {
		return v
	}
	v.Phase, v.Reason, v.Message = string(st.Phase), st.Reason, st.Message
	if v.Phase == "" {
		v.Phase = "–"
	}
	v.Deployment, v.Generation, v.Run, v.Candidate, v.JobName = st.Deployment, st.DeploymentGeneration, st.Run, st.Candidate, st.JobName
	if st.MeasuredAt != nil {
		t := st.MeasuredAt.UTC()
		v.MeasuredAt = &t
		v.Measured = fmt.Sprintf("%s (%s ago)", t.Format("2006-01-02 15:04:05 UTC"), duration.HumanDuration(now.Sub(t)))
	}
	var load []string
	if l := resultsview.VerificationLoadText(st); l != "" {
		load = append(load, l)
	}
	if st.Requests > 0 {
		load = append(load, fmt.Sprintf("%d requests", st.Requests))
	}
	if st.MaxDurationSeconds > 0 {
		load = append(load, fmt.Sprintf("at most %d s", st.MaxDurationSeconds))
	}
	v.Load = strings.Join(load, ", ")
	if o := st.Observed; o != nil {
		v.Completed = fmt.Sprintf("%d requests completed, %d failed", o.Requests, o.Errors)
	}
	for _, m := range resultsview.VerifiedMetrics(st) {
		v.Metrics = append(v.Metrics, VerifiedMetricView{
			Name: m.Name, Predicted: valueText(m.Predicted, m.Unit), Band: bandPctText(m.TolerancePct),
			Observed: valueText(m.Observed, m.Unit), Error: pctText(m.RelativeErrorPct),
			Held: m.Held, Outside: m.Held != nil && !*m.Held,
		})
	}
	return v
}

// valueText is a value with its unit, "–" when absent.
func valueText(v *float64, unit string) string {
	if v == nil {
		return "–"
	}
	return fmtNum(*v) + prefixed(" ", unit)
}

// pctText is a percentage with one decimal unless whole, "–" when absent.
func pctText(v *float64) string {
	switch {
	case v == nil:
		return "–"
	case *v == math.Trunc(*v):
		return fmt.Sprintf("%.0f%%", *v)
	}
	return fmt.Sprintf("%.1f%%", *v)
}

// bandPctText is an allowed relative error, e.g. "±25%", "–" when absent.
func bandPctText(v *float64) string {
	if v == nil {
		return "–"
	}
	return "±" + pctText(v)
}
