// Package v1beta2 contains the nvidia.com/v1beta2 search API: DynamoGraphDeploymentRequest,
// DynamoGraphDeploymentRun and DynamoGraphDeploymentCandidate.
//
// The package holds types only and imports nothing heavier than apimachinery, so that the
// lowering library, webhooks, controllers and external clients can all depend on it.
//
// +kubebuilder:object:generate=true
// +groupName=nvidia.com
package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "nvidia.com", Version: "v1beta2"}

	// SchemeBuilder registers the types of this package with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&DynamoGraphDeploymentRequest{}, &DynamoGraphDeploymentRequestList{},
		&DynamoGraphDeploymentRun{}, &DynamoGraphDeploymentRunList{},
		&DynamoGraphDeploymentCandidate{}, &DynamoGraphDeploymentCandidateList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
