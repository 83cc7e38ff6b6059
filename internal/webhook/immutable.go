package webhook

import (
	"context"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

// +kubebuilder:webhook:path=/validate-nvidia-com-v1beta2-dynamographdeploymentrun,mutating=false,failurePolicy=fail,sideEffects=None,groups=nvidia.com,resources=dynamographdeploymentruns,verbs=update,versions=v1beta2,name=vdynamographdeploymentrun.nvidia.com,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-nvidia-com-v1beta2-dynamographdeploymentcandidate,mutating=false,failurePolicy=fail,sideEffects=None,groups=nvidia.com,resources=dynamographdeploymentcandidates,verbs=update,versions=v1beta2,name=vdynamographdeploymentcandidate.nvidia.com,admissionReviewVersions=v1

// RunWebhook rejects changes to a Run's spec. The CRD's CEL rule does the same; the webhook
// gives the error a field path and covers API servers where CEL is disabled.
type RunWebhook struct{}

var _ admission.Validator[*v1beta2.DynamoGraphDeploymentRun] = RunWebhook{}

// ValidateCreate allows creation (only the operator has RBAC to create Runs).
func (RunWebhook) ValidateCreate(context.Context, *v1beta2.DynamoGraphDeploymentRun) (admission.Warnings, error) {
	return nil, nil
}

// ValidateUpdate rejects spec changes.
func (RunWebhook) ValidateUpdate(_ context.Context, old, obj *v1beta2.DynamoGraphDeploymentRun) (admission.Warnings, error) {
	if !apiequality.Semantic.DeepEqual(old.Spec, obj.Spec) {
		return nil, apierrors.NewInvalid(v1beta2.GroupVersion.WithKind("DynamoGraphDeploymentRun").GroupKind(), obj.Name,
			field.ErrorList{field.Forbidden(field.NewPath("spec"), "spec is immutable: a Run records the accepted request generation; edit the DynamoGraphDeploymentRequest instead")})
	}
	return nil, nil
}

// ValidateDelete allows deletion.
func (RunWebhook) ValidateDelete(context.Context, *v1beta2.DynamoGraphDeploymentRun) (admission.Warnings, error) {
	return nil, nil
}

// CandidateWebhook rejects changes to a Candidate's spec.
type CandidateWebhook struct{}

var _ admission.Validator[*v1beta2.DynamoGraphDeploymentCandidate] = CandidateWebhook{}

// ValidateCreate allows creation (only the reporter has RBAC to create Candidates).
func (CandidateWebhook) ValidateCreate(context.Context, *v1beta2.DynamoGraphDeploymentCandidate) (admission.Warnings, error) {
	return nil, nil
}

// ValidateUpdate rejects spec changes.
func (CandidateWebhook) ValidateUpdate(_ context.Context, old, obj *v1beta2.DynamoGraphDeploymentCandidate) (admission.Warnings, error) {
	if !apiequality.Semantic.DeepEqual(old.Spec, obj.Spec) {
		return nil, apierrors.NewInvalid(v1beta2.GroupVersion.WithKind("DynamoGraphDeploymentCandidate").GroupKind(), obj.Name,
			field.ErrorList{field.Forbidden(field.NewPath("spec"), "spec is immutable: a Candidate records one evaluated search result")})
	}
	return nil, nil
}

// ValidateDelete allows deletion.
func (CandidateWebhook) ValidateDelete(context.Context, *v1beta2.DynamoGraphDeploymentCandidate) (admission.Warnings, error) {
	return nil, nil
}
