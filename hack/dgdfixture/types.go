// Package dgdfixture only exists to generate test/crds-strict: a DynamoGraphDeployment
// (nvidia.com/v1beta1) CRD whose schema is generated from the renderer's own types
// (internal/render/dgdv1beta1, which follow the upstream Dynamo CRD's field names and types), with
// a full core/v1 PodSpec schema and no x-kubernetes-preserve-unknown-fields, so tests can apply
// rendered deployments with server-side strict validation. Regenerate with
// `make manifests`.
// +groupName=nvidia.com
// +versionName=v1beta1
package dgdfixture

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dgdr-operator/dgdr-operator/internal/render/dgdv1beta1"
)

// DynamoGraphDeployment is the rendered object's schema.
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=dgd
// +kubebuilder:storageversion
type DynamoGraphDeployment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec dgdv1beta1.DynamoGraphDeploymentSpec `json:"spec"`
}
