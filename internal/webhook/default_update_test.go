package webhook_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/config"
	"github.com/dgdr-operator/dgdr-operator/internal/webhook"
)

// TestUpdateWithUnchangedSpecIsNotDefaulted: a request stored before a default existed (here:
// without model.remoteCode, deployment and hardware.gpu.perNode) keeps its spec on a
// metadata-only update (dgdrctl cancel), so its generation does not move and no new search
// starts; a spec edit materializes every default.
func TestUpdateWithUnchangedSpecIsNotDefaulted(t *testing.T) {
	cfg := config.Default()
	cfg.Defaults.GPUSKU = "h200_sxm"
	w := &webhook.RequestWebhook{Config: cfg}
	stored := &v1beta2.DynamoGraphDeploymentRequest{}
	stored.Name = "old"
	stored.Spec.Model.Name = "meta-llama/Llama-3.1-8B-Instruct"
	stored.Spec.Hardware = &v1beta2.HardwareSpec{GPU: &v1beta2.GPUSpec{SKU: "h200_sxm"}}
	raw, err := json.Marshal(stored)
	if err != nil {
		t.Fatal(err)
	}
	ctx := admission.NewContextWithRequest(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Update, OldObject: runtime.RawExtension{Raw: raw}}})

	metadataOnly := stored.DeepCopy()
	metadataOnly.Annotations = map[string]string{v1beta2.AnnotationCancel: "true"}
	if err := w.Default(ctx, metadataOnly); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(stored.Spec, metadataOnly.Spec); diff != "" {
		t.Errorf("a metadata-only update changed the spec (-stored +admitted):\n%s", diff)
	}

	edited := stored.DeepCopy()
	edited.Spec.Model.Revision = "main"
	if err := w.Default(ctx, edited); err != nil {
		t.Fatal(err)
	}
	if edited.Spec.Model.RemoteCode != v1beta2.RemoteCodeNever || edited.Spec.Deployment == nil || edited.Spec.Hardware.GPU.PerNode == nil {
		t.Errorf("a spec edit did not materialize the defaults: %+v", edited.Spec)
	}
}
