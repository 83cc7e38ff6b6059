//go:build attack

package attack

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/config"
	runcontroller "github.com/dgdr-operator/dgdr-operator/internal/controller/run"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/internal/naming"
	"github.com/dgdr-operator/dgdr-operator/internal/promote"
	"github.com/dgdr-operator/dgdr-operator/internal/scheme"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
	"github.com/dgdr-operator/dgdr-operator/internal/verification"
	"github.com/dgdr-operator/dgdr-operator/test/sandboxtest"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/manager"
)

// unauthenticatedOrForbidden tells a 401 (the token's ServiceAccount is gone) or a 403.
func unauthenticatedOrForbidden(err error) bool {
	return apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err)
}

// TestFinishedSearchIdentityIsGone: a tenant holds the token of a running search pod (as a
// compromised search image does, or anyone who may create tokens or impersonate
// ServiceAccounts in the namespace). While the search runs, the token may write the reporter's
// fields of its Run's status but not the operator's: conditions, phase and aisimulate are
// refused (403). Once the Run has succeeded, its ServiceAccount and RoleBinding are gone: the
// same token gets 401/403 on creating a Candidate and on patching the Run's status, and no new
// token can be minted. Before (identity kept until the Run was deleted, status writes
// unrestricted within its Run), a finished search's token could forge a Candidate and point
// recommendation.bestCandidate at it for autoApply to deploy.
func TestFinishedSearchIdentityIsGone(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	target := runningRun(t, ns, "finished")
	attacker := searchToken(t, target)

	patch := func(body string) error {
		return attacker.Status().Patch(ctx, target.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(body)))
	}
	if err := patch(`{"status":{"lastProgressTime":"2026-01-01T00:00:00Z"}}`); err != nil {
		t.Fatalf("the running search's token must still write its reporter fields: %v", err)
	}
	for name, body := range map[string]string{
		"conditions (Completed=True Succeeded)": `{"status":{"conditions":[{"type":"Completed","status":"True","reason":"Succeeded","message":"forged","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`,
		"phase":                                 `{"status":{"phase":"Succeeded"}}`,
		"aisimulate":                            `{"status":{"aisimulate":{"input":{"optimizer":{"max_trials":100000}},"inputHash":"sha256:forged"}}}`,
	} {
		if err := patch(body); !apierrors.IsForbidden(err) {
			t.Errorf("the running search's token writing its Run's %s: err = %v, want 403 Forbidden", name, err)
		}
	}

	done := env.WaitRunDone(t, ns, target.Name, searchTimeout)
	if reason, msg, _ := sandboxtest.Completed(done); reason != v1beta2.ReasonSucceeded {
		t.Fatalf("Run ended %s: %s", reason, msg)
	}
	for _, obj := range []client.Object{&corev1.ServiceAccount{}, &rbacv1.RoleBinding{}} {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: jobcontract.SearchIdentity(target.UID)}, obj)
		if !apierrors.IsNotFound(err) {
			t.Errorf("the finished Run's %T %s: err = %v, want NotFound", obj, jobcontract.SearchIdentity(target.UID), err)
		}
	}

	forged := builders.Candidate(ns, target.Name+"-forged").OwnedBy(target).
		GraphDeployment([]byte(`{"spec":{"services":{"evil":{}}}}`)).Obj()
	if err := attacker.Create(ctx, forged); !unauthenticatedOrForbidden(err) {
		t.Errorf("the finished search's token creating a Candidate: err = %v, want 401 or 403", err)
	}
	if err := patch(`{"status":{"recommendation":{"bestCandidate":"` + forged.Name + `"}}}`); !unauthenticatedOrForbidden(err) {
		t.Errorf("the finished search's token patching its Run's status: err = %v, want 401 or 403", err)
	}
	admin, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	_, err = kubernetes.NewForConfigOrDie(admin).CoreV1().ServiceAccounts(ns).CreateToken(ctx, jobcontract.SearchIdentity(target.UID),
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}, metav1.CreateOptions{})
	if !apierrors.IsNotFound(err) && !ownershipRefused(err) {
		t.Errorf("minting a new token of the finished search's identity: err = %v, want NotFound (or the ownership policy's 403)", err)
	}
}

// TestForgedBestCandidateIsNotDeployed: an autoApply request's search succeeds while its
// author's rights are revoked, so nothing is deployed yet (RightsRevoked). Then someone who may
// write Candidates and the Run's status (the search identity used to; here the sandbox's admin
// plays them, on an installation without the ownership policy, which refuses them) creates a
// Candidate controlled by the Run whose graphDeployment adds a privileged container, keeping the
// best Candidate's parameters, and points recommendation.bestCandidate and the head of
// candidateRefs at it; the author's rights come back. autoApply renders the Candidate again from
// its parameters, finds the stored graphDeployment different and refuses it with Deployed=False
// CandidateNotReproduced naming it; nothing carrying the forged container is deployed. Reverted,
// autoApply deploys the forged container.
func TestForgedBestCandidateIsNotDeployed(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	withoutOwnershipPolicy(t)
	deployer := asUser(t, ns, "deployer-d", deployerRules)
	binding := &rbacv1.RoleBinding{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "deployer-d"}, binding); err != nil {
		t.Fatal(err)
	}
	// Within one Node's GPUs: the best candidate is the one autoApply deploys.
	req := smallRequest(ns, "forge").GPUBudget(8).Obj()
	req.Spec.Deployment = &v1beta2.DeploymentSpec{AutoApply: ptr.To(true), Name: "forge-prod"}
	if err := deployer.Create(ctx, req); err != nil {
		t.Fatal(err)
	}
	// Before the search ends: the operator asks for D's rights only once it would deploy.
	if err := k8s.Delete(ctx, binding.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	deployedCond := func(want string) *v1beta2.DynamoGraphDeploymentRequest {
		var got v1beta2.DynamoGraphDeploymentRequest
		sandboxtest.WaitFor(t, searchTimeout, poll, "Deployed reason "+want, func(ctx context.Context) (bool, string, error) {
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(req), &got); err != nil {
				return false, "", err
			}
			c := meta.FindStatusCondition(got.Status.Conditions, v1beta2.ConditionDeployed)
			if c == nil {
				return false, "no Deployed condition", nil
			}
			return c.Reason == want, c.Reason + ": " + c.Message, nil
		})
		return &got
	}
	if held := deployedCond(v1beta2.ReasonRightsRevoked); held.Status.Deployment != nil {
		t.Fatalf("deployed while D's rights were revoked: %+v", held.Status.Deployment)
	}
	runName := naming.RunName("forge", 1)
	var target v1beta2.DynamoGraphDeploymentRun
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: runName}, &target); err != nil {
		t.Fatal(err)
	}
	if target.Status.Recommendation == nil || target.Status.Recommendation.BestCandidate == "" {
		t.Fatalf("Run %s has no best candidate: %+v", runName, target.Status.Recommendation)
	}
	var honest v1beta2.DynamoGraphDeploymentCandidate
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: target.Status.Recommendation.BestCandidate}, &honest); err != nil {
		t.Fatal(err)
	}
	forged := honest.DeepCopy()
	forged.ObjectMeta = metav1.ObjectMeta{Namespace: ns, Name: runName + "-forged", Labels: honest.Labels, OwnerReferences: honest.OwnerReferences}
	forged.Status = v1beta2.DynamoGraphDeploymentCandidateStatus{}
	forged.Spec.GraphDeployment.Raw = []byte(strings.Replace(string(honest.Spec.GraphDeployment.Raw), `"containers":[`,
		`"containers":[{"name":"evil","image":"attacker/miner:latest","securityContext":{"privileged":true}},`, 1))
	if string(forged.Spec.GraphDeployment.Raw) == string(honest.Spec.GraphDeployment.Raw) {
		t.Fatalf("the honest candidate's graphDeployment has no containers to add to: %s", honest.Spec.GraphDeployment.Raw)
	}
	if err := k8s.Create(ctx, forged); err != nil {
		t.Fatal(err)
	}
	// autoApply walks candidateRefs, best first, for the best candidate that fits the cluster:
	// the forgery leads both.
	if err := k8s.Status().Patch(ctx, &target, client.RawPatch(types.MergePatchType,
		[]byte(`{"status":{"recommendation":{"bestCandidate":"`+forged.Name+`"},"candidateRefs":[{"name":"`+forged.Name+`"},{"name":"`+honest.Name+`"}]}}`))); err != nil {
		t.Fatal(err)
	}
	// D's rights come back: the operator deploys the Run's best candidate once its verdict
	// (rights.CheckTTL) expires.
	binding.ResourceVersion, binding.UID = "", ""
	if err := k8s.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}

	got := deployedCond(v1beta2.ReasonCandidateNotReproduced)
	c := meta.FindStatusCondition(got.Status.Conditions, v1beta2.ConditionDeployed)
	t.Logf("Deployed=%s %s: %s", c.Status, c.Reason, c.Message)
	if c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, forged.Name) {
		t.Errorf("Deployed = %+v, want False naming %s", c, forged.Name)
	}
	after := &unstructured.Unstructured{}
	after.SetGroupVersionKind(promote.GVK)
	err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "forge-prod"}, after)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		t.Fatal(err)
	default:
		data, _ := after.MarshalJSON()
		if strings.Contains(string(data), "attacker/miner") || after.GetAnnotations()[promote.AnnotationPromotedFrom] != honest.Name {
			t.Errorf("the deployment carries the forged candidate: promoted-from %q, %s", after.GetAnnotations()[promote.AnnotationPromotedFrom], data)
		}
	}
}

// TestPromoteDropsPlantedOwnership: a Candidate's graphDeployment carries the annotations that
// make a deployment a request's own (applied-by the victim request's UID, a high generation).
// `dgdrctl promote`'s code path (promote.Render, promote.Apply) creates the deployment on the
// sandbox; it carries no nvidia.com/dgdr-* annotation but promoted-from. Reverted, the victim's
// autoApply would take the deployment for its own and rewrite it.
func TestPromoteDropsPlantedOwnership(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	target := succeededRun(t, ns, "planted-ann")
	var cand v1beta2.DynamoGraphDeploymentCandidate
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: target.Status.Recommendation.BestCandidate}, &cand); err != nil {
		t.Fatal(err)
	}
	var gd map[string]any
	if err := yaml.Unmarshal(cand.Spec.GraphDeployment.Raw, &gd); err != nil {
		t.Fatal(err)
	}
	md, _ := gd["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		gd["metadata"] = md
	}
	md["annotations"] = map[string]any{promote.AnnotationAppliedBy: "victim-uid", promote.AnnotationGeneration: "99", "nvidia.com/dgdr-x": "y"}
	raw, err := yaml.Marshal(gd)
	if err != nil {
		t.Fatal(err)
	}
	cand.Spec.GraphDeployment.Raw, err = yaml.YAMLToJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := promote.Render(&cand, "promoted", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := promote.Apply(ctx, k8s, obj, nil); err != nil {
		t.Fatal(err)
	}
	dgd := &unstructured.Unstructured{}
	dgd.SetGroupVersionKind(promote.GVK)
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "promoted"}, dgd); err != nil {
		t.Fatal(err)
	}
	for k := range dgd.GetAnnotations() {
		if strings.HasPrefix(k, promote.OwnKeyPrefixes[0]) && k != promote.AnnotationPromotedFrom {
			t.Errorf("the promoted deployment carries %s=%s", k, dgd.GetAnnotations()[k])
		}
	}
}

// TestForeignPodDoesNotEndTheRun: while a search runs, a tenant who may create pods tries to
// create pods carrying the Run's labels (its UID and name, managed-by dgdr-operator): the chart's
// ownership policy refuses them (403). On an installation without the policy they are created:
// one not controlled by the search Job, one whose controller reference forges the Job's UID
// under another kind (Foo), each with an init container that failed (as its own kubelet would
// report; the pods are bound to no node). The Run must still succeed: only a pod whose
// controller is the batch/v1 Job of that name and UID counts. Before, the start-failure check
// took any pod with the Run's UID label, and then any controller reference with the Job's UID,
// and ended the Run SearchPodFailedToStart at once, deleting its Job.
func TestForeignPodDoesNotEndTheRun(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	tenant := asUser(t, ns, "tenant-t", append(append([]rbacv1.PolicyRule(nil), requestRules...),
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create"}}))
	target := runningRun(t, ns, "foreign-pod")
	job := &batchv1.Job{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: naming.JobName(target.Name)}, job); err != nil {
		t.Fatal(err)
	}
	impostor := func(name string, owners []metav1.OwnerReference) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, OwnerReferences: owners, Labels: map[string]string{
				v1beta2.LabelRunUID: string(target.UID), v1beta2.LabelRunName: target.Name,
				runcontroller.LabelManagedBy: runcontroller.ManagedByValue, batchv1.JobNameLabel: job.Name}},
			Spec: corev1.PodSpec{NodeName: "no-such-node", RestartPolicy: corev1.RestartPolicyNever,
				InitContainers: []corev1.Container{{Name: jobcontract.InputContainer, Image: "busybox"}},
				Containers:     []corev1.Container{{Name: jobcontract.SearchContainer, Image: "busybox"}}},
		}
	}
	forged := []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Foo", Name: job.Name, UID: job.UID, Controller: ptr.To(true)}}
	if err := tenant.Create(ctx, impostor("refused", forged)); !ownershipRefused(err) {
		t.Errorf("T's pod with the Run's labels: err = %v, want 403 from the ownership policy", err)
	}

	withoutOwnershipPolicy(t)
	for _, pod := range []*corev1.Pod{impostor("impostor", nil), impostor("impostor-foo", forged)} {
		if err := k8s.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		pod.Status = corev1.PodStatus{Phase: corev1.PodPending, InitContainerStatuses: []corev1.ContainerStatus{{
			Name: jobcontract.InputContainer, Image: "busybox",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: "forged"}}}}}
		if err := k8s.Status().Update(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	done := env.WaitRunDone(t, ns, target.Name, searchTimeout)
	reason, msg, _ := sandboxtest.Completed(done)
	if reason != v1beta2.ReasonSucceeded {
		t.Errorf("Run ended %s: %s; want Succeeded (the impostor pods are not the Job's)", reason, msg)
	}
}

// TestPlantedReporterRoleFailsTheRun: before any search in a fresh namespace, a tenant creates
// the Role the operator binds every search identity to (dgdr-reporter), owned by an object of
// theirs (so that deleting it takes the Role along). The Run must end SearchFailed naming the
// Role, and no search identity is bound to it. Before, the operator adopted the Role (repaired
// its rules) whatever its owner references said.
func TestPlantedReporterRoleFailsTheRun(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	anchor := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "anchor"}}
	if err := k8s.Create(ctx, anchor); err != nil {
		t.Fatal(err)
	}
	role := runcontroller.BuildReporterRole(ns)
	role.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: anchor.Name, UID: anchor.UID}}
	if err := k8s.Create(ctx, role); err != nil {
		t.Fatal(err)
	}
	env.CreateRequest(t, ns, fmt.Sprintf(sandboxtest.TinyRequest, "planted-role"))
	done := env.WaitRunDone(t, ns, awaitRunOf(t, ns, "planted-role"), searchTimeout)
	reason, msg, _ := sandboxtest.Completed(done)
	t.Logf("Run ended %s: %s", reason, msg)
	if reason != v1beta2.ReasonSearchFailed || !strings.Contains(msg, "Role "+ns+"/"+jobcontract.ReporterRole) {
		t.Errorf("Run ended %s (%s), want SearchFailed naming Role %s/%s", reason, msg, ns, jobcontract.ReporterRole)
	}
	var bindings rbacv1.RoleBindingList
	if err := k8s.List(ctx, &bindings, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(bindings.Items) != 0 {
		t.Errorf("%d RoleBindings in %s, want none", len(bindings.Items), ns)
	}
}

// TestPlantedServiceAccountFailsTheRun: a Run waits for a search slot (its namespace's slots
// are held by searches that never get a pod); a tenant who read its UID creates the search
// ServiceAccount (dgdr-search-<uid>) with an owner reference to the Run as controller plus one
// to an object of theirs. When a slot frees, the Run must end SearchFailed naming the
// ServiceAccount, and no Job runs as it. Before, a controller reference to the Run was taken as
// proof that the operator had created it.
func TestPlantedServiceAccountFailsTheRun(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	holds := stormHoldSlots(t, ns)
	t.Logf("%d searches hold the slots of %s", holds, ns)
	env.CreateRequest(t, ns, fmt.Sprintf(sandboxtest.TinyRequest, "planted-sa"))
	var waiting v1beta2.DynamoGraphDeploymentRun
	sandboxtest.WaitFor(t, time.Minute, poll, "the Run to wait for a slot", func(ctx context.Context) (bool, string, error) {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: naming.RunName("planted-sa", 1)}, &waiting)
		if err != nil {
			return false, "", client.IgnoreNotFound(err)
		}
		return isQueued(&waiting), waiting.Status.Message, nil
	})
	anchor := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "anchor"}}
	if err := k8s.Create(ctx, anchor); err != nil {
		t.Fatal(err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: jobcontract.SearchIdentity(waiting.UID),
		OwnerReferences: []metav1.OwnerReference{
			*metav1.NewControllerRef(&waiting, v1beta2.GroupVersion.WithKind("DynamoGraphDeploymentRun")),
			{APIVersion: "v1", Kind: "ConfigMap", Name: anchor.Name, UID: anchor.UID}}}}
	if err := k8s.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	// Free a slot for it: cancel the Run that waited before it (stormHoldSlots's last) and one
	// of the holding searches.
	for _, req := range []string{fmt.Sprintf("hold-%d", holds+1), "hold-1"} {
		if err := k8s.Patch(ctx, &v1beta2.DynamoGraphDeploymentRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: naming.RunName(req, 1)}},
			client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+v1beta2.AnnotationCancel+`":"true"}}}`))); err != nil {
			t.Fatal(err)
		}
	}
	done := env.WaitRunDone(t, ns, waiting.Name, searchTimeout)
	reason, msg, _ := sandboxtest.Completed(done)
	t.Logf("Run ended %s: %s", reason, msg)
	if reason != v1beta2.ReasonSearchFailed || !strings.Contains(msg, "ServiceAccount "+ns+"/"+sa.Name) {
		t.Errorf("Run ended %s (%s), want SearchFailed naming ServiceAccount %s/%s", reason, msg, ns, sa.Name)
	}
	var job batchv1.Job
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: naming.JobName(waiting.Name)}, &job); !apierrors.IsNotFound(err) {
		t.Errorf("the Run's Job: err = %v, want NotFound", err)
	}
}

// TestOperatorTokenIsFenced plays a compromised operator on the sandbox, with a token of the
// operator's own ServiceAccount (the chart's, TokenRequest) under the chart's RBAC and fence as
// the sandbox installs them. It is refused (403) on patching a foreign CRD (the Dynamo
// platform's DynamoGraphDeployment CRD), on creating an arbitrary ValidatingAdmissionPolicy, on
// a Job in kube-system, on a DynamoGraphDeployment without autoApply's annotation, on deleting a
// ConfigMap in kube-system and on a Job shaped like its search with a tenant's Secret mounted;
// its own search and verification Jobs pass. Reverted (CRD and policy rules without
// resourceNames, a fence matching no delete and checking only a Job's images and ServiceAccount),
// each attack succeeds; before, the fence also refused the verification Job.
func TestOperatorTokenIsFenced(t *testing.T) {
	ctx := context.Background()
	sandboxtest.ExpectDenials(t) // the attacks are refused requests of the operator's own user
	ns := newNamespace(t)
	operatorCfg, err := config.Load(manager.OperatorConfigPath(root))
	if err != nil {
		t.Fatal(err)
	}
	operator := operatorClient(t)

	r := builders.Run("kube-system", "x").UID("00000000-0000-0000-0000-000000000000").Obj()
	sysJob := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "dgdr-attack"},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			ServiceAccountName: jobcontract.SearchIdentity(r.UID),
			Containers:         []corev1.Container{{Name: "search", Image: manager.PlannerImage}}}}}}
	dgd := &unstructured.Unstructured{}
	dgd.SetGroupVersionKind(promote.GVK)
	dgd.SetNamespace(ns)
	dgd.SetName("hijack")
	dgd.Object["spec"] = map[string]any{"backendFramework": "vllm", "components": []any{map[string]any{
		"name": "Frontend", "type": "frontend", "replicas": int64(1),
		"podTemplate": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "main", "image": "attacker/miner:latest"}}}}}}}
	crdPatch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"pwned":"true"}}}`))
	foreignCRD := &unstructured.Unstructured{}
	foreignCRD.SetAPIVersion("apiextensions.k8s.io/v1")
	foreignCRD.SetKind("CustomResourceDefinition")
	foreignCRD.SetName("dynamographdeployments.nvidia.com")
	vap, _ := jobcontract.SearchIdentityPolicy()
	vap.Name = "attacker-policy"
	vapObj := &unstructured.Unstructured{}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(vap)
	if err != nil {
		t.Fatal(err)
	}
	vapObj.Object = content
	vapObj.SetAPIVersion("admissionregistration.k8s.io/v1")
	vapObj.SetKind("ValidatingAdmissionPolicy")

	systemConfigMap := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "attack-" + ns}}
	if err := k8s.Create(ctx, systemConfigMap); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), systemConfigMap) })
	searchRun := builders.Run(ns, "fenced").UID("00000000-0000-4000-8000-000000000001").InputHash("sha256:in").Obj()
	searchJob := runcontroller.BuildJob(searchRun, operatorCfg)
	lootJob := searchJob.DeepCopy()
	pod := &lootJob.Spec.Template.Spec
	pod.Volumes = append(pod.Volumes, corev1.Volume{Name: "loot", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "db-credentials"}}})
	pod.Containers[0].VolumeMounts = append(pod.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "loot", MountPath: "/loot"})
	request := &v1beta2.DynamoGraphDeploymentRequest{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fenced", UID: "00000000-0000-4000-8000-000000000002"}}
	verifyJob := verification.BuildJob(request, &verification.Plan{Load: v1beta2.VerificationLoad{Concurrency: ptr.To[int32](4),
		InputTokens: ptr.To[int32](512), OutputTokens: ptr.To[int32](64)}, Requests: 50, MaxDurationSeconds: 90},
		verification.Target{URL: "http://fenced-frontend." + ns + ".svc:8000", Model: "org/llama", Deployment: "fenced", Generation: 1}, operatorCfg)

	attacks := map[string]func() error{
		"delete a ConfigMap in kube-system":              func() error { return operator.Delete(ctx, systemConfigMap, client.DryRunAll) },
		"create a search Job mounting a tenant's Secret": func() error { return operator.Create(ctx, lootJob, client.DryRunAll) },
		"patch a foreign CRD":                            func() error { return operator.Patch(ctx, foreignCRD, crdPatch) },
		"create an arbitrary admission policy":           func() error { return operator.Create(ctx, vapObj) },
		"create a Job in kube-system":                    func() error { return operator.Create(ctx, sysJob) },
		"create a DGD without autoApply's annotation": func() error {
			return operator.Create(ctx, dgd)
		},
	}
	// The API server loads the fence asynchronously.
	sandboxtest.WaitFor(t, 30*time.Second, poll, "the fence refusing a Job in kube-system", func(ctx context.Context) (bool, string, error) {
		err := operator.Create(ctx, sysJob.DeepCopy(), client.DryRunAll)
		return apierrors.IsForbidden(err), fmt.Sprint(err), nil
	})
	for what, attack := range attacks {
		err := attack()
		var status apierrors.APIStatus
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s with the operator's token: err = %v, want 403 Forbidden", what, err)
		} else if errors.As(err, &status) {
			t.Logf("%s: %s", what, status.Status().Message)
		}
	}
	for what, job := range map[string]*batchv1.Job{"search": searchJob, "verification": verifyJob} {
		if err := operator.Create(ctx, job, client.DryRunAll); err != nil {
			t.Errorf("the operator's own %s Job with the operator's token: %v", what, err)
		}
	}
}

// operatorClient is a client with a fresh token of the sandbox operator's ServiceAccount: what a
// compromised operator process holds.
func operatorClient(t *testing.T) client.Client {
	t.Helper()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(manager.OperatorNamespace).CreateToken(context.Background(), manager.OperatorServiceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(env.Config)
	cfg.BearerToken = tr.Status.Token
	c, err := client.New(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
