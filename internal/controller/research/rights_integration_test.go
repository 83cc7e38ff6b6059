package research_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/naming"
	"github.com/dgdr-operator/dgdr-operator/internal/research"
	"github.com/dgdr-operator/dgdr-operator/internal/rights"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/poll"
)

// TestRevokedRightsStopResearch: a user who holds the rights autoApply and capture need creates
// a re-searching request and it is deployed; then their RoleBinding is removed. The next tick asks
// again for their rights and is skipped (history Skipped RightsRevoked naming the missing
// rights): no re-search Run is created for its window, and Deployed says RightsRevoked. Before,
// the operator kept creating re-search Runs (and replacing the deployment) on their behalf.
func TestRevokedRightsStopResearch(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k8s, "t")
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "traffic"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	if err := k8s.Create(ctx, pvc); err != nil {
		t.Fatal(err)
	}
	owner := testenv.UserClient(t, k8s, env.Config, ns, "owner", []rbacv1.PolicyRule{
		{APIGroups: []string{"nvidia.com"}, Resources: []string{"dynamographdeploymentrequests"}, Verbs: []string{"get", "create", "update", "patch"}},
		{APIGroups: []string{"nvidia.com"}, Resources: []string{"dynamographdeployments"}, Verbs: []string{"create", "update"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims"}, Verbs: []string{"get"}}})
	d := builders.Request(ns, "revoked").GPUSKU("h200_sxm").AutoApply("revoked-dgd").Capture("traffic").
		Research(1, 1).Objective(v1beta2.TargetThroughputPerGPU).Obj()
	if err := owner.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	gen := &v1beta2.DynamoGraphDeploymentRun{}
	poll.Eventually(t, wait, "the generation's Run", func() (bool, error) {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: naming.RunName(d.Name, 1)}, gen)
		return err == nil && gen.Status.AISimulate != nil, client.IgnoreNotFound(err)
	})
	finishRun(t, gen, throughputMetrics(1000), nil)
	makeReady(t, ns, "revoked-dgd")
	waitForStatus(t, d, "Deployed=True", func(d *v1beta2.DynamoGraphDeploymentRequest) bool {
		c := condition(d, v1beta2.ConditionDeployed)
		return c != nil && c.Status == metav1.ConditionTrue && d.Status.Research != nil && d.Status.Research.NextTime != nil
	})
	if err := k8s.Delete(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner"}}); err != nil {
		t.Fatal(err)
	}

	var record v1beta2.ResearchRecord
	got := waitForStatusWithin(t, d, 2*tickWait+rights.CheckTTL, "a tick skipped RightsRevoked", func(d *v1beta2.DynamoGraphDeploymentRequest) bool {
		for _, h := range d.Status.Research.History {
			if h.Reason == v1beta2.ReasonRightsRevoked {
				record = h
				return true
			}
		}
		return false
	})
	if record.Decision != v1beta2.ResearchSkipped || !strings.Contains(record.Message, "create pods") || !strings.Contains(record.Message, `"owner"`) {
		t.Errorf("history record %+v, want Skipped naming the user and create pods", record)
	}
	// The deployment's own reconciler says so at its next look: after an event, or its settled
	// poll (two minutes) at the latest.
	waitForStatusWithin(t, got, 2*time.Minute+rights.CheckTTL+tickWait, "Deployed=False RightsRevoked", func(d *v1beta2.DynamoGraphDeploymentRequest) bool {
		c := condition(d, v1beta2.ConditionDeployed)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1beta2.ReasonRightsRevoked
	})
	var list v1beta2.DynamoGraphDeploymentRunList
	if err := k8s.List(ctx, &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		rn := &list.Items[i]
		if end, ok := research.WindowEnd(rn); ok && !end.Before(record.WindowEnd.Time) {
			t.Errorf("re-search Run %s (window ending %s) created for a user whose rights were revoked", rn.Name, end)
		}
	}
}
