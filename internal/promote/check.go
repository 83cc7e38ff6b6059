package promote

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

// CheckRunSucceeded finds the candidate's Run (its controller, else its Run label) and requires
// Completed=True with reason Succeeded: what `dgdrctl promote` and `dgdrctl ui` check before
// they create a deployment (both skip it when the user forces).
func CheckRunSucceeded(ctx context.Context, c client.Reader, cand *v1beta2.DynamoGraphDeploymentCandidate) error {
	runName := cand.Labels[v1beta2.LabelRunName]
	if ref := metav1.GetControllerOf(cand); ref != nil && ref.Kind == "DynamoGraphDeploymentRun" {
		runName = ref.Name
	}
	if runName == "" {
		return fmt.Errorf("candidate %s has no Run", cand.Name)
	}
	var run v1beta2.DynamoGraphDeploymentRun
	if err := c.Get(ctx, types.NamespacedName{Namespace: cand.Namespace, Name: runName}, &run); err != nil {
		return fmt.Errorf("getting Run %s: %w", runName, err)
	}
	cond := meta.FindStatusCondition(run.Status.Conditions, v1beta2.ConditionCompleted)
	if cond == nil || cond.Status != metav1.ConditionTrue {
		return fmt.Errorf("run %s has not completed", runName)
	}
	if cond.Reason != v1beta2.ReasonSucceeded {
		return fmt.Errorf("run %s did not succeed (Completed reason %s)", runName, cond.Reason)
	}
	return nil
}
