package request

import (
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/research"
)

// What the request's reconcilers read of one another. Each reads the others' status fields
// (StatusOwners) and never writes them; these are the readings more than one of them makes, or
// whose meaning belongs to the writer.

// AutoApplyOn tells whether the request asks for automatic promotion (spec.deployment.autoApply).
func AutoApplyOn(dgdr *v1beta2.DynamoGraphDeploymentRequest) bool {
	d := dgdr.Spec.Deployment
	return d != nil && d.AutoApply != nil && *d.AutoApply
}

// ResearchOn tells whether the request's re-searches are in force: they replace only what
// autoApply deployed.
func ResearchOn(dgdr *v1beta2.DynamoGraphDeploymentRequest) bool {
	return research.On(&dgdr.Spec) && AutoApplyOn(dgdr)
}

// HistoryRecord is the record of the re-search Run named run in status.research.history (the
// research reconciler's), or nil.
func HistoryRecord(dgdr *v1beta2.DynamoGraphDeploymentRequest, run string) *v1beta2.ResearchRecord {
	if dgdr.Status.Research == nil {
		return nil
	}
	for i := range dgdr.Status.Research.History {
		if dgdr.Status.Research.History[i].Run == run {
			return &dgdr.Status.Research.History[i]
		}
	}
	return nil
}

// Replaces tells whether the re-search Run named run decided to replace the deployment: the
// deployment reconciler deploys its candidate only then.
func Replaces(dgdr *v1beta2.DynamoGraphDeploymentRequest, run string) bool {
	rec := HistoryRecord(dgdr, run)
	return rec != nil && rec.Decision == v1beta2.ResearchReplaced
}

// LatestKept is the newest re-search that kept the deployment, if that is the latest decision
// (skipped ticks aside).
func LatestKept(dgdr *v1beta2.DynamoGraphDeploymentRequest) *v1beta2.ResearchRecord {
	if dgdr.Status.Research == nil {
		return nil
	}
	for i := range dgdr.Status.Research.History {
		rec := &dgdr.Status.Research.History[i]
		switch rec.Decision {
		case v1beta2.ResearchKept:
			return rec
		case v1beta2.ResearchReplaced, v1beta2.ResearchUndecided:
			return nil
		}
	}
	return nil
}
