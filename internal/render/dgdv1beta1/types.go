// Package dgdv1beta1 holds the minimal Go types of the Dynamo platform's DynamoGraphDeployment
// (nvidia.com/v1beta1, the graduated "components" shape) that the renderer emits. The real CRD
// belongs to the Dynamo platform; only the fields the renderer sets are modelled here, with the
// upstream JSON names, so the rendered objects are valid upstream objects.
package dgdv1beta1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Group, version and kind of the rendered object.
const (
	APIVersion = "nvidia.com/v1beta1"
	Kind       = "DynamoGraphDeployment"
	Resource   = "dynamographdeployments"
)

// MainContainer is the container the Dynamo operator merges its defaults into; it must exist
// with a non-empty image in every component.
const MainContainer = "main"

// Component types (spec.components[].type).
const (
	ComponentFrontend = "frontend"
	ComponentWorker   = "worker"
	ComponentPrefill  = "prefill"
	ComponentDecode   = "decode"
	ComponentPlanner  = "planner"
)

// DynamoGraphDeployment is the rendered object. Metadata is kept minimal on purpose (name and
// labels): the namespace is chosen when the object is created.
type DynamoGraphDeployment struct {
	APIVersion string                    `json:"apiVersion"`
	Kind       string                    `json:"kind"`
	Metadata   Metadata                  `json:"metadata"`
	Spec       DynamoGraphDeploymentSpec `json:"spec"`
}

// Metadata is the subset of ObjectMeta the renderer sets.
type Metadata struct {
	Name        string            `json:"name,omitempty"`
	Namespace   string            `json:"namespace,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// DynamoGraphDeploymentSpec is spec of a DynamoGraphDeployment.
type DynamoGraphDeploymentSpec struct {
	// BackendFramework is sglang, vllm or trtllm; always set (multinode TRT-LLM needs it).
	// +kubebuilder:validation:Enum=sglang;vllm;trtllm
	// +optional
	BackendFramework string `json:"backendFramework,omitempty"`
	// Annotations are propagated by the Dynamo operator to child resources.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// Env is prepended to every component's env.
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`
	// Components is a list keyed by name (at most 25).
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=25
	Components []Component `json:"components"`
}

// Component is one DynamoComponentDeploymentSharedSpec.
//
// The kubebuilder markers mirror the upstream CRD's validation of the fields we emit, as
// documentation; what judges a rendered DGD is the upstream CRD itself
// (test/crds/upstream/dynamo, TestRenderedDeploymentsPassTheStrictSchema).
type Component struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?$`
	Name string `json:"name"`
	// +kubebuilder:validation:Enum=frontend;worker;prefill;decode;planner;epp
	// +optional
	Type string `json:"type,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// +optional
	Multinode *Multinode `json:"multinode,omitempty"`
	// +optional
	SharedMemorySize *resource.Quantity `json:"sharedMemorySize,omitempty"`
	// ScalingAdapter, when present (an empty object), makes the Dynamo operator create a
	// DynamoGraphDeploymentScalingAdapter that owns replicas (for the Planner).
	// +optional
	ScalingAdapter *ScalingAdapter `json:"scalingAdapter,omitempty"`
	PodTemplate    PodTemplate     `json:"podTemplate"`
}

// ScalingAdapter is the presence flag of a component's scaling adapter (no fields are rendered).
type ScalingAdapter struct{}

// Multinode spreads one engine instance over several pods (one per node).
type Multinode struct {
	// +kubebuilder:validation:Minimum=2
	NodeCount int32 `json:"nodeCount"`
}

// PodTemplate is a corev1.PodTemplateSpec without the object metadata (which would otherwise
// serialize as `metadata: {creationTimestamp: null}`).
type PodTemplate struct {
	// +optional
	Metadata *PodMetadata   `json:"metadata,omitempty"`
	Spec     corev1.PodSpec `json:"spec"`
}

// PodMetadata is the part of a pod template's metadata the renderer may set (from pod
// template overrides).
type PodMetadata struct {
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}
