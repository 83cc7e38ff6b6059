package webhook

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

// Setup registers every v1beta2 webhook with the manager's webhook server.
func Setup(mgr ctrl.Manager, cfg *v1alpha1.OperatorConfiguration) error {
	req := &RequestWebhook{Config: cfg, Nodes: mgr.GetAPIReader()}
	if err := ctrl.NewWebhookManagedBy(mgr, &v1beta2.DynamoGraphDeploymentRequest{}).
		WithDefaulter(req).WithValidator(req).Complete(); err != nil {
		return err
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &v1beta2.DynamoGraphDeploymentRun{}).
		WithValidator(RunWebhook{}).Complete(); err != nil {
		return err
	}
	return ctrl.NewWebhookManagedBy(mgr, &v1beta2.DynamoGraphDeploymentCandidate{}).
		WithValidator(CandidateWebhook{}).Complete()
}
