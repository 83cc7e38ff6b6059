//go:build attack

package attack

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	ct "github.com/dgdr-operator/dgdr-operator/internal/controller/controllertest"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/internal/naming"
	"github.com/dgdr-operator/dgdr-operator/internal/promote"
	"github.com/dgdr-operator/dgdr-operator/internal/research"
	"github.com/dgdr-operator/dgdr-operator/internal/rights"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
	"github.com/dgdr-operator/dgdr-operator/internal/verification"
	"github.com/dgdr-operator/dgdr-operator/test/sandboxtest"
)

// ownershipRefused tells a 403 from the chart's ownership policy.
func ownershipRefused(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "ownership policy")
}

// withoutOwnershipPolicy removes the binding of the chart's ownership policy for the rest of the
// test (an installation without it: another installer, or ownershipPolicy.enabled false), so
// that the operator's own defences are what a test exercises, and restores it afterwards.
func withoutOwnershipPolicy(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	if err := k8s.Get(ctx, client.ObjectKey{Name: jobcontract.OwnershipPolicyName}, binding); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(ctx, binding); err != nil {
		t.Fatal(err)
	}
	probe := func(ctx context.Context) error {
		return k8s.Create(ctx, builders.Run("default", "ownership-probe").WithSpec(smallRequest("default", "p").Obj().Spec).Obj(), client.DryRunAll)
	}
	t.Cleanup(func() {
		restored := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{
			Name: binding.Name, Labels: binding.Labels, Annotations: binding.Annotations}, Spec: binding.Spec}
		if err := k8s.Create(ctx, restored); err != nil {
			t.Errorf("restoring the ownership policy's binding: %v", err)
			return
		}
		if err := sandboxtest.Poll(30*time.Second, poll, func(ctx context.Context) (bool, string, error) {
			err := probe(ctx)
			return ownershipRefused(err), fmt.Sprint(err), nil
		}); err != nil {
			t.Errorf("the restored ownership policy: %v", err)
		}
	})
	// The API server loads bindings asynchronously.
	sandboxtest.WaitFor(t, 30*time.Second, poll, "the ownership policy no longer enforced", func(ctx context.Context) (bool, string, error) {
		err := probe(ctx)
		return err == nil, fmt.Sprint(err), nil
	})
}

// nvidiaWriterRules are U's: every write on the nvidia.com group in the namespace.
var nvidiaWriterRules = []rbacv1.PolicyRule{{APIGroups: []string{v1beta2.GroupVersion.Group}, Resources: []string{"*"}, Verbs: []string{"*"}}}

// deployedBy creates, as c, an autoApply request of the small search deploying dgd, and waits
// until its deployment exists.
func deployedBy(t *testing.T, c client.Client, ns, name, dgd string, mut func(*v1beta2.DynamoGraphDeploymentRequest)) *v1beta2.DynamoGraphDeploymentRequest {
	t.Helper()
	d := attackRequest(ns, name, autoApplyAs(dgd))
	if mut != nil {
		mut(d)
	}
	if err := c.Create(context.Background(), d); err != nil {
		t.Fatalf("creating %s: %v", name, err)
	}
	sandboxtest.WaitFor(t, searchTimeout, poll, "deployment "+dgd, func(ctx context.Context) (bool, string, error) {
		_, found, err := dgdOf(ctx, ns, dgd)
		return found, "", err
	})
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(d), d); err != nil {
		t.Fatal(err)
	}
	return d
}

// dgdOf reads the DynamoGraphDeployment ns/name.
func dgdOf(ctx context.Context, ns, name string) (*unstructured.Unstructured, bool, error) {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(promote.GVK)
	err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	return obj, err == nil, err
}

// requestStatus waits for the request's status to satisfy cond and returns it.
func requestStatus(t *testing.T, d *v1beta2.DynamoGraphDeploymentRequest, timeout time.Duration, what string, cond func(*v1beta2.DynamoGraphDeploymentRequest) (bool, string)) *v1beta2.DynamoGraphDeploymentRequest {
	t.Helper()
	got := &v1beta2.DynamoGraphDeploymentRequest{}
	sandboxtest.WaitFor(t, timeout, poll, what, func(ctx context.Context) (bool, string, error) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(d), got); err != nil {
			return false, "", err
		}
		ok, state := cond(got)
		return ok, state, nil
	})
	return got
}

// TestPlantedRunIsRefused: U, who may write anything of the nvidia.com group in the namespace
// (not the operator), plants the Run of the next generation of D's autoApply request: its name,
// its labels, a controller reference to the request, and a spec of U's with a hostPath override
// for the workers. The chart's ownership policy refuses it (403). Then, on an installation
// without the policy, the planted Run is created; when D edits the spec, the request does not
// adopt it (only the Run UID its status records is its own): the planted Run is deleted, the
// generation's own Run searches D's spec, and nothing of U's is ever deployed. Before, the
// request adopted any Run of that name carrying its labels, and the planted spec was deployed.
func TestPlantedRunIsRefused(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	deployer := asUser(t, ns, "deployer-d", deployerRules)
	writer := asUser(t, ns, "writer-u", nvidiaWriterRules)
	d := deployedBy(t, deployer, ns, "prod", "prod-serving", nil)

	planted := builders.Run(ns, naming.RunName(d.Name, 2)).WithSpec(*d.Spec.DeepCopy()).
		Label(v1beta2.LabelRequestName, d.Name).Label(v1beta2.LabelRequestUID, string(d.UID)).Label(v1beta2.LabelRequestGeneration, "2").Obj()
	planted.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1beta2.GroupVersion.String(), Kind: "DynamoGraphDeploymentRequest",
		Name: d.Name, UID: d.UID, Controller: ptr.To(true)}}
	planted.Spec.Deployment.PodTemplateOverrides = &v1beta2.PodTemplateOverrides{Workers: &runtime.RawExtension{
		Raw: []byte(`{"spec":{"volumes":[{"name":"host","hostPath":{"path":"/"}}]}}`)}}
	if err := writer.Create(ctx, planted.DeepCopy()); !ownershipRefused(err) {
		t.Fatalf("U's planted Run: err = %v, want 403 from the ownership policy", err)
	}

	withoutOwnershipPolicy(t)
	if err := writer.Create(ctx, planted); err != nil {
		t.Fatalf("U's planted Run without the policy: %v", err)
	}
	if err := deployer.Patch(ctx, d.DeepCopy(), client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"sla":{"ttftMs":400}}}`))); err != nil {
		t.Fatal(err)
	}
	got := requestStatus(t, d, searchTimeout, "generation 2 deployed from the operator's own Run", func(d *v1beta2.DynamoGraphDeploymentRequest) (bool, string) {
		a := d.Status.ActiveRunRef
		dep := d.Status.Deployment
		return d.Status.ObservedGeneration == 2 && dep != nil && dep.Run == planted.Name,
			fmt.Sprintf("observed %d active %+v deployment %+v", d.Status.ObservedGeneration, a, dep)
	})
	var run2 v1beta2.DynamoGraphDeploymentRun
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: planted.Name}, &run2); err != nil {
		t.Fatal(err)
	}
	if run2.UID == planted.UID {
		t.Errorf("the planted Run %s (uid %s) was adopted", planted.Name, planted.UID)
	}
	if run2.Spec.Deployment != nil && run2.Spec.Deployment.PodTemplateOverrides != nil {
		t.Errorf("generation 2's Run carries overrides: %+v", run2.Spec.Deployment.PodTemplateOverrides)
	}
	if a := got.Status.ActiveRunRef; a != nil && a.UID == planted.UID {
		t.Errorf("activeRunRef records the planted Run: %+v", a)
	}
	for _, dgd := range deploymentsOf(t, ns) {
		raw, err := json.Marshal(dgd.Object)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), "hostPath") {
			t.Errorf("DynamoGraphDeployment %s carries U's hostPath", dgd.GetName())
		}
	}
}

// TestRevokedUserIsNotActedFor: D, who holds the rights autoApply and capture need, creates an
// autoApply request that searches again every minute; it is deployed and ready. An admin removes
// D's RoleBinding. Over the next two re-search ticks the operator asks again for D's rights and
// acts no more: each tick is skipped RightsRevoked naming the missing rights, no re-search Run
// is created, the deployment is not rewritten, and once an admin deletes it, it is not created
// again. Before, the rights were checked once at admission and the operator went on acting for
// D: re-search Runs, replacements, and a deleted deployment back within a second.
func TestRevokedUserIsNotActedFor(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	if err := k8s.Create(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "traffic"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}); err != nil {
		t.Fatal(err)
	}
	deployer := asUser(t, ns, "deployer-d", append(append([]rbacv1.PolicyRule(nil), deployerRules...),
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims"}, Verbs: []string{"get"}}))
	d := deployedBy(t, deployer, ns, "revoked", "revoked-serving", func(d *v1beta2.DynamoGraphDeploymentRequest) {
		d.Spec.Deployment.Capture = &v1beta2.CaptureSpec{Enabled: ptr.To(true), ClaimName: "traffic"}
		d.Spec.Research = &v1beta2.ResearchSpec{IntervalMinutes: 1, MinRequests: ptr.To[int32](1)}
	})
	// The sandbox runs no Dynamo operator in this namespace: the test marks the deployment ready.
	ct.MakeReady(t, k8s, ns, "revoked-serving")
	requestStatus(t, d, time.Minute, "Deployed=True", func(d *v1beta2.DynamoGraphDeploymentRequest) (bool, string) {
		c := meta.FindStatusCondition(d.Status.Conditions, v1beta2.ConditionDeployed)
		return c != nil && c.Status == metav1.ConditionTrue, fmt.Sprintf("%+v", c)
	})
	before, _, err := dgdOf(ctx, ns, "revoked-serving")
	if err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deployer-d"}}); err != nil {
		t.Fatal(err)
	}
	// The operator keeps a verdict for rights.CheckTTL: what it decided before then was allowed.
	revokedBy := time.Now().Add(rights.CheckTTL)

	revokedTicks := func(d *v1beta2.DynamoGraphDeploymentRequest) []v1beta2.ResearchRecord {
		var out []v1beta2.ResearchRecord
		if d.Status.Research == nil {
			return nil
		}
		for _, h := range d.Status.Research.History {
			if h.Reason == v1beta2.ReasonRightsRevoked {
				out = append(out, h)
			}
		}
		return out
	}
	tickTimeout := rights.CheckTTL + 3*time.Minute
	first := requestStatus(t, d, tickTimeout, "a re-search tick skipped RightsRevoked", func(d *v1beta2.DynamoGraphDeploymentRequest) (bool, string) {
		return len(revokedTicks(d)) >= 1, fmt.Sprintf("history %+v", d.Status.Research)
	})
	rec := revokedTicks(first)[0]
	if rec.Decision != v1beta2.ResearchSkipped || !strings.Contains(rec.Message, `"deployer-d"`) || !strings.Contains(rec.Message, "create pods") {
		t.Errorf("tick record %+v, want Skipped naming deployer-d and create pods", rec)
	}
	after, found, err := dgdOf(ctx, ns, "revoked-serving")
	if err != nil || !found {
		t.Fatalf("the deployment: found %v, %v", found, err)
	}
	if after.GetGeneration() != before.GetGeneration() {
		t.Errorf("the deployment was rewritten after the revocation: generation %d, was %d", after.GetGeneration(), before.GetGeneration())
	}

	// An admin deletes the deployment; over the next tick it is not created again.
	if err := k8s.Delete(ctx, after); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(tickTimeout)
	for {
		if _, found, err := dgdOf(ctx, ns, "revoked-serving"); err != nil {
			t.Fatal(err)
		} else if found {
			t.Fatal("the deleted deployment was created again for a user whose rights were revoked")
		}
		cur := &v1beta2.DynamoGraphDeploymentRequest{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(d), cur); err != nil {
			t.Fatal(err)
		}
		if len(revokedTicks(cur)) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no second tick skipped RightsRevoked: %+v", cur.Status.Research)
		}
		time.Sleep(time.Second)
	}
	var runs v1beta2.DynamoGraphDeploymentRunList
	if err := k8s.List(ctx, &runs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for i := range runs.Items {
		rn := &runs.Items[i]
		if research.IsRun(rn) && rn.CreationTimestamp.After(revokedBy) {
			t.Errorf("re-search Run %s created at %s, after D's rights were revoked", rn.Name, rn.CreationTimestamp)
		}
	}
}

// TestPlantedVerificationJobFailsTheVerification: T, who may create Jobs, plants the
// verification Job of D's deployment under its predictable name (<request>-verify-1) with a
// controller reference to the request, before the deployment is ready. When it is, the
// operator finds the name taken by a Job it did not create (it records the UID of the one it
// creates in status.verification.jobUID and reads only that one): the verification fails
// ForeignJob naming the planted Job, and PredictionHeld is never True. Before, a Job the request
// controlled was read as the verification, its termination message believed.
func TestPlantedVerificationJobFailsTheVerification(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	deployer := asUser(t, ns, "deployer-d", deployerRules)
	tenant := asUser(t, ns, "tenant-t", []rbacv1.PolicyRule{
		{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"create", "get"}},
		{APIGroups: []string{v1beta2.GroupVersion.Group}, Resources: []string{"dynamographdeploymentrequests"}, Verbs: []string{"get", "list"}}})
	d := attackRequest(ns, "verified", autoApplyAs("verified-serving"))
	d.Spec.Deployment.Verification = &v1beta2.VerificationSpec{Enabled: ptr.To(true), Requests: ptr.To[int32](10)}
	if err := deployer.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	// The operator's labels would be refused by the ownership policy; a controller reference
	// (without blockOwnerDeletion, which needs rights on the request) is anyone's to write.
	planted := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: naming.VerificationJobName(d.Name, 1),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: v1beta2.GroupVersion.String(), Kind: "DynamoGraphDeploymentRequest",
				Name: d.Name, UID: d.UID, Controller: ptr.To(true)}}},
		Spec: batchv1.JobSpec{Suspend: ptr.To(true), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: verification.ContainerName, Image: "attacker.example/aiperf:latest"}}}}},
	}
	if err := tenant.Create(ctx, planted); err != nil {
		t.Fatalf("T's Job: %v", err)
	}
	sandboxtest.WaitFor(t, searchTimeout, poll, "deployment verified-serving", func(ctx context.Context) (bool, string, error) {
		_, found, err := dgdOf(ctx, ns, "verified-serving")
		return found, "", err
	})
	dgd, _, err := dgdOf(ctx, ns, "verified-serving")
	if err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(ctx, builders.FrontendService(dgd, dgd.GetAPIVersion(), 8000)); err != nil {
		t.Fatal(err)
	}
	ct.MakeReady(t, k8s, ns, "verified-serving")
	got := requestStatus(t, d, 2*time.Minute, "the verification ended", func(d *v1beta2.DynamoGraphDeploymentRequest) (bool, string) {
		v := d.Status.Verification
		c := meta.FindStatusCondition(d.Status.Conditions, v1beta2.ConditionPredictionHeld)
		return (v != nil && v.Phase != v1beta2.VerificationRunning) || (c != nil && c.Status == metav1.ConditionTrue),
			fmt.Sprintf("verification %+v, PredictionHeld %+v", v, c)
	})
	v := got.Status.Verification
	if v.Phase != v1beta2.VerificationFailed || v.Reason != verification.ReasonForeignJob || !strings.Contains(v.Message, string(planted.UID)) {
		t.Errorf("verification %+v, want Failed ForeignJob naming the planted Job's uid %s", v, planted.UID)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, v1beta2.ConditionPredictionHeld); c != nil && c.Status == metav1.ConditionTrue {
		t.Errorf("PredictionHeld %+v", c)
	}
}
