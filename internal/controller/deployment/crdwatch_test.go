package deployment_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dgdr-operator/dgdr-operator/internal/controller/deployment"
)

// TestStripCRDKeepsIdentity: of the watched CRD's metadata the cache keeps its name, UID and
// resourceVersion (a change of which is the event the watch exists for), nothing else.
func TestStripCRDKeepsIdentity(t *testing.T) {
	in := deployment.DGDCRDObject()
	in.ObjectMeta = metav1.ObjectMeta{Name: deployment.DGDCRDName, UID: "u1", ResourceVersion: "42", Generation: 3,
		Annotations: map[string]string{"controller-gen.kubebuilder.io/version": "v0.19.0"}, Labels: map[string]string{"a": "b"}}
	got, err := deployment.StripCRD(in)
	if err != nil {
		t.Fatal(err)
	}
	want := deployment.DGDCRDObject()
	want.Name, want.UID, want.ResourceVersion = deployment.DGDCRDName, "u1", "42"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("StripCRD (-want +got):\n%s", diff)
	}
}
