package ui

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/resultsview"
)

// ResearchView is a request's re-searches: the schedule (spec.research), the history
// (status.research) and the ImprovementAvailable condition.
type ResearchView struct {
	Namespace string `json:"-"`
	Request   string `json:"-"`
	// Schedule is nil when the spec schedules no re-search (any more); ScheduleText and Next
	// say it for people.
	Schedule     *resultsview.ResearchSchedule `json:"schedule,omitempty"`
	ScheduleText string                        `json:"-"`
	Next         string                        `json:"-"`
	// History is newest first.
	History   []ResearchRowView         `json:"history"`
	Condition *ImprovementAvailableView `json:"improvementAvailable,omitempty"`
}

// ResearchRowView is one re-search of the history.
type ResearchRowView struct {
	resultsview.ResearchRow
	// RunListed tells whether the Run is one of the request's Runs the page can show; a skipped
	// tick may name a Run that was never created.
	RunListed bool `json:"-"`
	// Class marks the row by its decision.
	Class string `json:"-"`
}

// ImprovementAvailableView is the request's ImprovementAvailable condition.
type ImprovementAvailableView struct {
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// decisionClasses are the row classes of the decisions the API names; others get none.
var decisionClasses = map[string]string{
	string(v1beta2.ResearchReplaced): "replaced", string(v1beta2.ResearchKept): "kept",
	string(v1beta2.ResearchSkipped): "skipped", string(v1beta2.ResearchUndecided): "undecided",
}

// researchView is req's re-searches; nil when the request neither schedules nor recorded any and
// has no ImprovementAvailable. listed tells which Runs the page links; now says how long until the
// next re-search.
func researchView(req *v1beta2.DynamoGraphDeploymentRequest, listed func(run string) bool, now time.Time) *ResearchView {
	sched := resultsview.ResearchScheduleOf(req)
	rows := resultsview.ResearchRows(req)
	cond := meta.FindStatusCondition(req.Status.Conditions, v1beta2.ConditionImprovementAvailable)
	if sched == nil && len(rows) == 0 && cond == nil {
		return nil
	}
	v := &ResearchView{Namespace: req.Namespace, Request: req.Name, Schedule: sched, History: []ResearchRowView{}}
	if sched != nil {
		v.ScheduleText, v.Next = resultsview.ResearchScheduleText(sched), resultsview.NextResearchText(sched.Next, now)
	}
	for _, r := range rows {
		v.History = append(v.History, ResearchRowView{ResearchRow: r, RunListed: r.Run != "" && listed(r.Run), Class: decisionClasses[r.Decision]})
	}
	if cond != nil {
		v.Condition = &ImprovementAvailableView{Status: string(cond.Status), Reason: cond.Reason, Message: cond.Message}
	}
	return v
}
