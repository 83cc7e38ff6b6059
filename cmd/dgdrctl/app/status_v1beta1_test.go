package app_test

import (
	"context"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta1"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
)

// TestStatusV1Beta1Request: dgdrctl status of a request created through nvidia.com/v1beta1 (read
// as v1beta2 through the conversion webhook) shows it as the Dynamo operator's, with its model,
// backend, phase and deployment from the envelopes, and no runs.
func TestStatusV1Beta1Request(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, env.Client, "ctl-v1")
	req := builders.V1Beta1Request(ns, "qwen", "Qwen/Qwen3-0.6B", v1beta1.BackendSGLang)
	if err := env.Client.Create(ctx, req); err != nil {
		t.Fatal(err)
	}
	req.Status = v1beta1.DynamoGraphDeploymentRequestStatus{Phase: v1beta1.PhaseDeployed, DGDName: "qwen-dgd"}
	if err := env.Client.Status().Update(ctx, req); err != nil {
		t.Fatal(err)
	}
	stdout, err := dgdrctlRun(t, "status", "qwen", "-n", ns)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"model Qwen/Qwen3-0.6B", "owned by the Dynamo operator", "sglang", "Deployed", "qwen-dgd"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("status output lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "No runs yet") {
		t.Errorf("a v1beta1 request shown as waiting for runs:\n%s", stdout)
	}

	// dgdrctl cancel leaves the Dynamo operator's request alone.
	if _, err := dgdrctlRun(t, "cancel", "qwen", "-n", ns); err == nil || !strings.Contains(err.Error(), "Dynamo operator") {
		t.Errorf("cancel of a v1beta1 request: err = %v", err)
	}
	got := &v1beta1.DynamoGraphDeploymentRequest{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(req), got); err != nil {
		t.Fatal(err)
	}
	if len(got.Annotations) != 0 {
		t.Errorf("cancel annotated the v1beta1 request: %v", got.Annotations)
	}
}
