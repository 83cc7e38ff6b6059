package deployment_test

import (
	"context"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/deployment"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/poll"
)

// withoutDGDCRD removes the DynamoGraphDeployment CRD (and so every DynamoGraphDeployment) for
// the test, as on a cluster without the Dynamo platform, and installs it again after it.
func withoutDGDCRD(t *testing.T) {
	t.Helper()
	removeDGDCRD(t)
	t.Cleanup(func() { installDGDCRD(t) })
}

// removeDGDCRD deletes the CRD and waits until it is gone.
func removeDGDCRD(t *testing.T) {
	t.Helper()
	if err := envtest.UninstallCRDs(env.Config, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{dgdCRD.DeepCopy()}}); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, wait, "the DynamoGraphDeployment CRD to be gone", func() (bool, error) {
		err := k8s.Get(context.Background(), client.ObjectKey{Name: dgdCRD.Name}, deployment.DGDCRDObject())
		return err != nil, client.IgnoreNotFound(err)
	})
}

// installDGDCRD installs the CRD, when missing, and waits until it is established.
func installDGDCRD(t *testing.T) {
	t.Helper()
	if _, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{dgdCRD.DeepCopy()}}); err != nil {
		t.Error(err)
	}
}

// TestAutoApplyFollowsTheCRDsEstablishment: an autoApply request waiting for the Dynamo
// platform (Deployed=False CRDNotInstalled) deploys as soon as the DynamoGraphDeployment CRD is
// established, long before its 5-minute fallback retry.
func TestAutoApplyFollowsTheCRDsEstablishment(t *testing.T) {
	withoutDGDCRD(t)
	ctx := context.Background()
	ns := testenv.Namespace(t, k8s, "crd")
	d := builders.Request(ns, "waits").AutoApply("llama-waits").Obj()
	if err := k8s.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	succeedWithCandidate(t, waitForFirstRun(t, d))
	waitForStatus(t, d, "Deployed=False CRDNotInstalled", func(d *v1beta2.DynamoGraphDeploymentRequest) bool {
		c := meta.FindStatusCondition(d.Status.Conditions, v1beta2.ConditionDeployed)
		return c != nil && c.Reason == v1beta2.ReasonDeploymentCRDMissing
	})

	installed := time.Now()
	installDGDCRD(t)
	got := waitForStatus(t, d, "the deployment created once the CRD is established", func(d *v1beta2.DynamoGraphDeploymentRequest) bool {
		return d.Status.Deployment != nil && d.Status.Deployment.Name == "llama-waits"
	})
	if c := meta.FindStatusCondition(got.Status.Conditions, v1beta2.ConditionDeployed); c == nil || c.Reason == v1beta2.ReasonDeploymentCRDMissing {
		t.Errorf("Deployed = %+v", c)
	}
	t.Logf("deployed %s after the CRD was created", time.Since(installed).Round(100*time.Millisecond))
}
