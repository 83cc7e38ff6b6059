package builders

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// FrontendService is the frontend Service of the DynamoGraphDeployment dgd on port, as the
// Dynamo operator creates it and a verification accepts it (verification.CheckFrontend): named
// <dgd>-frontend, ClusterIP, selecting the deployment's frontend pods, controlled by dgd.
func FrontendService(dgd metav1.Object, apiVersion string, port int32) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: dgd.GetNamespace(), Name: dgd.GetName() + "-frontend",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: apiVersion, Kind: "DynamoGraphDeployment", Name: dgd.GetName(), UID: dgd.GetUID(),
				Controller: ptr.To(true)}}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP,
			Selector: map[string]string{"nvidia.com/dynamo-graph-deployment-name": dgd.GetName(), "nvidia.com/dynamo-component-type": "frontend"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: port}}},
	}
}
