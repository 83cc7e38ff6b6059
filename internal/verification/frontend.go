package verification

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// DeploymentKind is the kind of the deployment a frontend Service must be owned by.
var DeploymentKind = schema.GroupKind{Group: "nvidia.com", Kind: "DynamoGraphDeployment"}

// CheckFrontend tells whether svc may be measured as the frontend of the DynamoGraphDeployment
// named deployment with UID uid: a ClusterIP Service with a selector that carries an owner
// reference to that deployment, as the Dynamo operator creates it. Any other Service of the
// frontend's name was not made for the deployment, and the verification pod would send the
// request's load wherever it points: an ExternalName to any host, a NodePort or LoadBalancer out
// of the cluster, a Service without a selector to whatever addresses its hand-written
// EndpointSlices name. The error names what is wrong (its type, its selector, its owners).
func CheckFrontend(svc *corev1.Service, deployment string, uid types.UID) error {
	var wrong []string
	if svc.Spec.Type != corev1.ServiceTypeClusterIP {
		what := fmt.Sprintf("its type is %s", orNone(string(svc.Spec.Type)))
		if svc.Spec.Type == corev1.ServiceTypeExternalName {
			what += fmt.Sprintf(" (to %q)", svc.Spec.ExternalName)
		}
		wrong = append(wrong, what+", not ClusterIP")
	}
	if len(svc.Spec.Selector) == 0 {
		wrong = append(wrong, "it has no selector (its endpoints are written by hand)")
	}
	owned := false
	owners := make([]string, 0, len(svc.OwnerReferences))
	for _, o := range svc.OwnerReferences {
		gv, _ := schema.ParseGroupVersion(o.APIVersion)
		owned = owned || (o.UID == uid && o.Kind == DeploymentKind.Kind && gv.Group == DeploymentKind.Group)
		owners = append(owners, fmt.Sprintf("%s %s", o.Kind, o.Name))
	}
	if !owned {
		wrong = append(wrong, fmt.Sprintf("DynamoGraphDeployment %s does not own it (owners: %s)", deployment, orNone(strings.Join(owners, ", "))))
	}
	if len(wrong) == 0 {
		return nil
	}
	return fmt.Errorf("the frontend Service %s is not the ClusterIP Service of DynamoGraphDeployment %s: %s; nothing was measured",
		svc.Name, deployment, strings.Join(wrong, "; "))
}
