package deployment_test

import (
	"context"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	ct "github.com/dgdr-operator/dgdr-operator/internal/controller/controllertest"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/run"
	"github.com/dgdr-operator/dgdr-operator/internal/naming"
	"github.com/dgdr-operator/dgdr-operator/internal/promote"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/poll"
	"github.com/dgdr-operator/dgdr-operator/internal/verification"
)

// plantVerificationJob creates, as someone who may create Jobs, a finished Job under the name
// of the request's verification Job of deployment generation 1, carrying the operator's labels
// and a controller reference to the request, whose pod reports a real, passing AIPerf result.
func plantVerificationJob(t *testing.T, d *v1beta2.DynamoGraphDeploymentRequest) *batchv1.Job {
	t.Helper()
	ctx := context.Background()
	owner := getRequest(t, d)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: naming.VerificationJobName(d.Name, 1),
			Labels:          map[string]string{run.LabelManagedBy: run.ManagedByValue, v1beta2.LabelRequestUID: string(owner.UID)},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(owner, v1beta2.GroupVersion.WithKind("DynamoGraphDeploymentRequest"))}},
		Spec: batchv1.JobSpec{BackoffLimit: ptr.To[int32](0), Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{run.LabelManagedBy: run.ManagedByValue}},
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: verification.ContainerName, Image: "attacker/aiperf"}}}}},
	}
	if err := k8s.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	msg := realResult(t, "termination-ok.json")
	finishVerification(t, job, &msg, "")
	return job
}

// assertForeignJob waits for the verification to fail ForeignJob naming the planted Job's UID,
// and checks that nothing of the planted result was believed.
func assertForeignJob(t *testing.T, d *v1beta2.DynamoGraphDeploymentRequest, planted *batchv1.Job) {
	t.Helper()
	got := waitForStatus(t, d, "the verification failing", func(d *v1beta2.DynamoGraphDeploymentRequest) bool {
		c := meta.FindStatusCondition(d.Status.Conditions, v1beta2.ConditionPredictionHeld)
		return (d.Status.Verification != nil && d.Status.Verification.Phase != v1beta2.VerificationRunning) ||
			(c != nil && c.Status == metav1.ConditionTrue)
	})
	v := got.Status.Verification
	if v == nil || v.Phase != v1beta2.VerificationFailed || v.Reason != verification.ReasonForeignJob || !strings.Contains(v.Message, string(planted.UID)) {
		t.Errorf("verification %+v, want Failed ForeignJob naming the planted Job's uid %s", v, planted.UID)
	}
	if v != nil && len(v.Metrics) != 0 {
		t.Errorf("the planted Job's metrics were compared: %+v", v.Metrics)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, v1beta2.ConditionPredictionHeld); c == nil || c.Status == metav1.ConditionTrue {
		t.Errorf("PredictionHeld %+v, want not True", c)
	}
	if obs := observationOf(t, d.Namespace+"/"+d.Name+"@gen1"); obs != nil {
		t.Errorf("the planted result entered the calibration profile: %+v", obs)
	}
}

// TestPlantedVerificationJobFailsTheVerification: someone who may create Jobs in the namespace
// plants the verification Job of a request's deployment under its predictable name, with the
// operator's labels, a controller reference to the request and a pod reporting a passing
// result, before the operator creates its own. Only the Job whose UID
// status.verification.jobUID recorded is read: the verification fails ForeignJob naming the
// planted Job, nothing is compared and no calibration observation is recorded. Before, a Job the request controlled was read, and
// PredictionHeld became True with the planted numbers.
func TestPlantedVerificationJobFailsTheVerification(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k8s, "v")
	on := &v1beta2.VerificationSpec{Enabled: ptr.To(true), Requests: ptr.To[int32](30)}

	t.Run("before", func(t *testing.T) {
		d := builders.Request(ns, "early").GPUSKU("h200_sxm").AutoApply("early-dgd").Verification(on).Obj()
		if err := k8s.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
		planted := plantVerificationJob(t, d)
		r := waitForFirstRun(t, d)
		ct.FinishSearch(t, k8s, r, ct.Search{Candidates: []*v1beta2.DynamoGraphDeploymentCandidate{ct.RenderedCandidate(t, cfg, r, r.Name+"-c1", predicted())}})
		var dgd *unstructured.Unstructured
		poll.Eventually(t, 2*wait, "the DynamoGraphDeployment", func() (bool, error) {
			var found bool
			dgd, found = deploymentOf(t, ns, "early-dgd")
			return found, nil
		})
		if err := k8s.Create(ctx, ownedFrontend(dgd)); err != nil {
			t.Fatal(err)
		}
		ct.MakeReady(t, k8s, ns, "early-dgd")
		assertForeignJob(t, d, planted)
	})

}

// deploymentOf reads the DynamoGraphDeployment ns/name; found is false when there is none.
func deploymentOf(t *testing.T, ns, name string) (obj *unstructured.Unstructured, found bool) {
	t.Helper()
	obj = &unstructured.Unstructured{}
	obj.SetGroupVersionKind(promote.GVK)
	err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return obj, true
}

// TestRevokedRightsDeployNothing: a user who holds the rights autoApply needs creates an
// autoApply request (admission records them as its reviewed user); their RoleBinding is removed
// while the search runs. When the search succeeds, the operator asks again: Deployed=False
// RightsRevoked naming the missing rights, and no DynamoGraphDeployment is created. Before, the
// rights were checked at admission only, and the operator deployed on the user's behalf.
func TestRevokedRightsDeployNothing(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k8s, "r")
	owner := testenv.UserClient(t, k8s, env.Config, ns, "owner", []rbacv1.PolicyRule{
		{APIGroups: []string{"nvidia.com"}, Resources: []string{"dynamographdeploymentrequests"}, Verbs: []string{"get", "create", "update", "patch"}},
		{APIGroups: []string{"nvidia.com"}, Resources: []string{"dynamographdeployments"}, Verbs: []string{"create", "update"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create"}}})
	d := builders.Request(ns, "revoked").AutoApply("revoked-dgd").Obj()
	if err := owner.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	r := waitForFirstRun(t, d)
	if err := k8s.Delete(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner"}}); err != nil {
		t.Fatal(err)
	}
	succeedWithCandidate(t, r)
	got := waitForStatus(t, d, "Deployed=False RightsRevoked", func(d *v1beta2.DynamoGraphDeploymentRequest) bool {
		c := meta.FindStatusCondition(d.Status.Conditions, v1beta2.ConditionDeployed)
		return c != nil && (c.Reason == v1beta2.ReasonRightsRevoked || c.Status == metav1.ConditionTrue || d.Status.Deployment != nil)
	})
	c := meta.FindStatusCondition(got.Status.Conditions, v1beta2.ConditionDeployed)
	for _, want := range []string{`"owner"`, "create pods", "create dynamographdeployments.nvidia.com", "spec.deployment.autoApply"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("Deployed message does not name %s: %s", want, c.Message)
		}
	}
	if c.Status != metav1.ConditionFalse || c.Reason != v1beta2.ReasonRightsRevoked || got.Status.Deployment != nil {
		t.Errorf("Deployed %+v, status.deployment %+v", c, got.Status.Deployment)
	}
	time.Sleep(2 * time.Second)
	if _, found := deploymentOf(t, ns, "revoked-dgd"); found {
		t.Errorf("the DynamoGraphDeployment was created for a user whose rights were revoked")
	}
}

// TestDeletedDeploymentIsNotRecreated: an admin deletes the DynamoGraphDeployment autoApply
// created. The operator records Deployed=False DeploymentDeleted and does not create it again
// for that generation; a new generation (a spec edit) deploys its own. Before, the operator
// recreated it within a second, forever.
func TestDeletedDeploymentIsNotRecreated(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k8s, "r")
	d := builders.Request(ns, "removed").AutoApply("removed-dgd").Obj()
	if err := k8s.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	succeedWithCandidate(t, waitForFirstRun(t, d))
	ct.MakeReady(t, k8s, ns, "removed-dgd")
	waitForStatus(t, d, "Deployed=True", func(d *v1beta2.DynamoGraphDeploymentRequest) bool {
		return meta.IsStatusConditionTrue(d.Status.Conditions, v1beta2.ConditionDeployed)
	})
	dgd, _ := deploymentOf(t, ns, "removed-dgd")
	if err := k8s.Delete(ctx, dgd); err != nil {
		t.Fatal(err)
	}
	// The operator follows a deployment by polling; any event of the request brings it back
	// sooner (here a label an admin adds).
	touch := getRequest(t, d)
	if err := k8s.Patch(ctx, touch, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"touched":"yes"}}}`))); err != nil {
		t.Fatal(err)
	}
	got := waitForStatus(t, d, "Deployed=False DeploymentDeleted", func(d *v1beta2.DynamoGraphDeploymentRequest) bool {
		c := meta.FindStatusCondition(d.Status.Conditions, v1beta2.ConditionDeployed)
		return c != nil && c.Reason == v1beta2.ReasonDeploymentDeleted
	})
	if c := meta.FindStatusCondition(got.Status.Conditions, v1beta2.ConditionDeployed); c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "removed-dgd") {
		t.Errorf("Deployed %+v", c)
	}
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if _, found := deploymentOf(t, ns, "removed-dgd"); found {
			t.Fatal("the deleted DynamoGraphDeployment was created again within the generation")
		}
	}
	cur := getRequest(t, d)
	patch := client.MergeFrom(cur.DeepCopy())
	cur.Spec.SLA = &v1beta2.SLASpec{TTFTMs: ptr.To(400.0)}
	if err := k8s.Patch(ctx, cur, patch); err != nil {
		t.Fatal(err)
	}
	r2 := &v1beta2.DynamoGraphDeploymentRun{}
	poll.Eventually(t, wait, "the Run of generation 2", func() (bool, error) {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: naming.RunName(d.Name, 2)}, r2)
		return err == nil && r2.Status.AISimulate != nil, client.IgnoreNotFound(err)
	})
	succeedWithCandidate(t, r2)
	poll.Eventually(t, 2*wait, "generation 2 deployed", func() (bool, error) {
		_, found := deploymentOf(t, ns, "removed-dgd")
		return found, nil
	})
}
