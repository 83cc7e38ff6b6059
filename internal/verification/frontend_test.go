package verification

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestCheckFrontend: only a ClusterIP Service with a selector that the deployment owns is its
// frontend; every other Service of that name is refused, naming its type, its missing selector
// or its owners.
func TestCheckFrontend(t *testing.T) {
	const uid = "dgd-uid"
	owner := metav1.OwnerReference{APIVersion: "nvidia.com/v1alpha1", Kind: "DynamoGraphDeployment", Name: "llama", UID: uid, Controller: ptr.To(true)}
	svc := func(mut func(*corev1.Service)) *corev1.Service {
		s := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "llama-frontend", Namespace: "team", OwnerReferences: []metav1.OwnerReference{owner}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: map[string]string{"app": "llama-frontend"},
				Ports: []corev1.ServicePort{{Name: "http", Port: 8000}}},
		}
		if mut != nil {
			mut(s)
		}
		return s
	}
	const prefix = "the frontend Service llama-frontend is not the ClusterIP Service of DynamoGraphDeployment llama: "
	const suffix = "; nothing was measured"
	cases := []struct {
		name string
		svc  *corev1.Service
		want string
	}{
		{"the deployment's", svc(nil), ""},
		{"a second owner besides the deployment", svc(func(s *corev1.Service) {
			s.OwnerReferences = append(s.OwnerReferences, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "x", UID: "u"})
		}), ""},
		{"ExternalName", svc(func(s *corev1.Service) {
			s.Spec.Type, s.Spec.ExternalName, s.Spec.Selector, s.OwnerReferences = corev1.ServiceTypeExternalName, "evil.example.com", nil, nil
		}), prefix + `its type is ExternalName (to "evil.example.com"), not ClusterIP; it has no selector (its endpoints are written by hand); ` +
			"DynamoGraphDeployment llama does not own it (owners: none)" + suffix},
		{"NodePort owned by the deployment", svc(func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort }),
			prefix + "its type is NodePort, not ClusterIP" + suffix},
		{"LoadBalancer", svc(func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeLoadBalancer }),
			prefix + "its type is LoadBalancer, not ClusterIP" + suffix},
		{"no selector", svc(func(s *corev1.Service) { s.Spec.Selector = nil }),
			prefix + "it has no selector (its endpoints are written by hand)" + suffix},
		{"no owner", svc(func(s *corev1.Service) { s.OwnerReferences = nil }),
			prefix + "DynamoGraphDeployment llama does not own it (owners: none)" + suffix},
		{"owned by another deployment of that name", svc(func(s *corev1.Service) { s.OwnerReferences[0].UID = "old-uid" }),
			prefix + "DynamoGraphDeployment llama does not own it (owners: DynamoGraphDeployment llama)" + suffix},
		{"owned by another kind with the deployment's UID", svc(func(s *corev1.Service) {
			s.OwnerReferences[0].Kind, s.OwnerReferences[0].Name = "Foo", "llama"
		}), prefix + "DynamoGraphDeployment llama does not own it (owners: Foo llama)" + suffix},
		{"owned by a kind of that name in another group", svc(func(s *corev1.Service) { s.OwnerReferences[0].APIVersion = "evil.example.com/v1" }),
			prefix + "DynamoGraphDeployment llama does not own it (owners: DynamoGraphDeployment llama)" + suffix},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if err := CheckFrontend(tc.svc, "llama", uid); err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
