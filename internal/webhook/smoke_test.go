package webhook_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

func TestSmokeDefaulting(t *testing.T) {
	d := &v1beta2.DynamoGraphDeploymentRequest{ObjectMeta: metav1.ObjectMeta{Name: "smoke", Namespace: "default"},
		Spec: v1beta2.DynamoGraphDeploymentRequestSpec{Model: v1beta2.ModelSpec{Name: "m"}}}
	if err := k8s.Create(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	if d.Spec.Hardware == nil || d.Spec.Hardware.GPU.SKU != "h200_sxm" {
		t.Fatalf("not defaulted: %+v", d.Spec)
	}
}
