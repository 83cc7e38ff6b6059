package research

import (
	"slices"
	"time"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

// maxResearchHistory bounds status.research.history.
const maxResearchHistory = 10

// addHistory puts rec into the history, newest window first, replacing a record of the same Run.
func addHistory(dgdr *v1beta2.DynamoGraphDeploymentRequest, rec v1beta2.ResearchRecord) {
	h := slices.DeleteFunc(dgdr.Status.Research.History, func(o v1beta2.ResearchRecord) bool { return o.Run == rec.Run })
	h = append(h, rec)
	slices.SortStableFunc(h, func(a, b v1beta2.ResearchRecord) int { return windowEndOf(b).Compare(windowEndOf(a)) })
	if len(h) > maxResearchHistory {
		h = h[:maxResearchHistory]
	}
	dgdr.Status.Research.History = h
}

func windowEndOf(r v1beta2.ResearchRecord) time.Time {
	if r.WindowEnd == nil {
		return time.Time{}
	}
	return r.WindowEnd.Time
}
