package request_test

import (
	"context"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/upstreamcrd"
)

// TestAutoApplyFollowsTheCRDsEstablishment: an autoApply request waiting for the Dynamo
// platform (Deployed=False CRDNotInstalled) deploys as soon as the DynamoGraphDeployment CRD is
// established, long before its 5-minute fallback retry.
func TestAutoApplyFollowsTheCRDsEstablishment(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k8s, "crd")
	d := builders.Request(ns, "waits").AutoApply("llama-waits").Obj()
	if err := k8s.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	succeedWithCandidate(t, waitForRun(t, d, 1))
	waitForStatus(t, d, "Deployed=False CRDNotInstalled", func(d *v1beta2.DynamoGraphDeploymentRequest) bool {
		c := meta.FindStatusCondition(d.Status.Conditions, v1beta2.ConditionDeployed)
		return c != nil && c.Reason == v1beta2.ReasonDeploymentCRDMissing
	})

	crd, err := upstreamcrd.DGD()
	if err != nil {
		t.Fatal(err)
	}
	installed := time.Now()
	if _, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{crd}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeCRD(t, crd) })
	got := waitForStatus(t, d, "the deployment created once the CRD is established", func(d *v1beta2.DynamoGraphDeploymentRequest) bool {
		return d.Status.Deployment != nil && d.Status.Deployment.Name == "llama-waits"
	})
	if c := meta.FindStatusCondition(got.Status.Conditions, v1beta2.ConditionDeployed); c == nil || c.Reason == v1beta2.ReasonDeploymentCRDMissing {
		t.Errorf("Deployed = %+v", c)
	}
	t.Logf("deployed %s after the CRD was created", time.Since(installed).Round(100*time.Millisecond))
}

// removeCRD deletes a CRD (and so its objects) and waits until it is gone, so that the tests
// that need a cluster without it are not affected.
func removeCRD(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	if err := envtest.UninstallCRDs(env.Config, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{crd}}); err != nil {
		t.Error(err)
	}
}
