package render

import (
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

// RunOptions are the Options with which a Run's Candidate named name is rendered from its
// parameters: the Run's spec (model access, deployment, SLA, hardware) and the operator's
// configuration (runtimeImages, plannerImage; gpusPerNode when the spec does not say), and the
// request's UID, which the operator labels every Run with. The
// reporter renders every Candidate with them, and autoApply renders the best Candidate again
// with them before deploying it, so both always agree (docs/operate/security.md).
func RunOptions(run *v1beta2.DynamoGraphDeploymentRun, name string, runtimeImages map[string]string, gpusPerNode int, plannerImage string) Options {
	if hw := run.Spec.Hardware; hw != nil && hw.GPU != nil && hw.GPU.PerNode != nil {
		gpusPerNode = int(*hw.GPU.PerNode)
	}
	budget := 0
	if hw := run.Spec.Hardware; hw != nil && hw.GPU != nil && hw.GPU.Budget != nil {
		budget = int(*hw.GPU.Budget)
	}
	return Options{
		Name:          name,
		ModelRevision: run.Spec.Model.Revision,
		RuntimeImages: runtimeImages,
		GPUsPerNode:   gpusPerNode,
		Model:         run.Spec.Model,
		Deployment:    run.Spec.Deployment,
		PlannerImage:  plannerImage,
		SLA:           run.Spec.SLA,
		GPUBudget:     budget,
		RequestUID:    run.Labels[v1beta2.LabelRequestUID],
	}
}
