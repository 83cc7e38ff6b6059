// Package v1beta1 contains the nvidia.com/v1beta1 DynamoGraphDeploymentRequest that the Dynamo
// platform serves and owns. It is the storage version of the DGDR CRD and the conversion hub:
// dgdr-operator never reconciles a v1beta1-native request, it only keeps such requests readable
// and lossless next to the v1beta2 API (docs/operate/coexistence.md).
//
// The schema mirrors the one upstream Dynamo serves, field for field, so that objects the Dynamo
// operator stored stay valid. A native v1beta2 request is represented here losslessly under
// spec.v1beta2 and status.v1beta2.
//
// +kubebuilder:object:generate=true
// +groupName=nvidia.com
package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "nvidia.com", Version: "v1beta1"}

	// SchemeBuilder registers the types of this package with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &DynamoGraphDeploymentRequest{}, &DynamoGraphDeploymentRequestList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
