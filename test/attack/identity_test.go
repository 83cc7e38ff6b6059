//go:build attack

package attack

import (
	"context"
	"fmt"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/internal/naming"
	"github.com/dgdr-operator/dgdr-operator/internal/scheme"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
	"github.com/dgdr-operator/dgdr-operator/test/sandboxtest"
)

// smallRequest is a search of a second or two on the sandbox.
func smallRequest(ns, name string) *builders.RequestWrapper {
	return builders.Request(ns, name).Overrides(`{"optimizer":{"max_trials":4},"traffic":{"stop":{"requests":50}}}`)
}

// succeededRun creates a small request and waits until its Run succeeded with candidates.
func succeededRun(t *testing.T, ns, name string) *v1beta2.DynamoGraphDeploymentRun {
	t.Helper()
	ctx := context.Background()
	if err := k8s.Create(ctx, smallRequest(ns, name).Obj()); err != nil {
		t.Fatal(err)
	}
	var run v1beta2.DynamoGraphDeploymentRun
	sandboxtest.WaitFor(t, searchTimeout, poll, "request "+name+" to succeed", func(ctx context.Context) (bool, string, error) {
		var runs v1beta2.DynamoGraphDeploymentRunList
		if err := k8s.List(ctx, &runs, client.InNamespace(ns), client.MatchingLabels{v1beta2.LabelRequestName: name}); err != nil {
			return false, "", err
		}
		if len(runs.Items) != 1 {
			return false, fmt.Sprintf("%d Runs", len(runs.Items)), nil
		}
		run = runs.Items[0]
		return run.Status.Phase == v1beta2.RunPhaseSucceeded && len(run.Status.CandidateRefs) > 0, "phase " + string(run.Status.Phase), nil
	})
	return &run
}

// searchToken is what a compromised search pod of run holds: a token of the Run's search
// identity, bound to its pod (as the kubelet projects it), with the lifetime the operator sets.
func searchToken(t *testing.T, run *v1beta2.DynamoGraphDeploymentRun) client.Client {
	t.Helper()
	ctx := context.Background()
	admin, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	var pods corev1.PodList
	if err := k8s.List(ctx, &pods, client.InNamespace(run.Namespace), client.MatchingLabels{v1beta2.LabelRunUID: string(run.UID)}); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) == 0 {
		t.Fatalf("Run %s has no search pod to bind a token to", run.Name)
	}
	pod := pods.Items[0]
	if pod.Spec.ServiceAccountName != jobcontract.SearchIdentity(run.UID) {
		t.Fatalf("the search pod of Run %s runs as %q, want its own identity %q", run.Name, pod.Spec.ServiceAccountName, jobcontract.SearchIdentity(run.UID))
	}
	// The kubelet of the pod's Node mints it (the ownership policy refuses anyone else a search
	// identity's token).
	asNode := rest.CopyConfig(admin)
	asNode.Impersonate = rest.ImpersonationConfig{UserName: "system:node:" + pod.Spec.NodeName, Groups: []string{"system:nodes", "system:authenticated"}}
	tr, err := kubernetes.NewForConfigOrDie(asNode).CoreV1().ServiceAccounts(run.Namespace).CreateToken(ctx, pod.Spec.ServiceAccountName, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600),
			BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(admin)
	cfg.BearerToken = tr.Status.Token
	c, err := client.New(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// runningRun creates a search of about 15 s and returns its Run once the search container runs.
func runningRun(t *testing.T, ns, name string) *v1beta2.DynamoGraphDeploymentRun {
	t.Helper()
	env.CreateRequest(t, ns, fmt.Sprintf(sandboxtest.SlowRequest, name))
	runName := awaitRunOf(t, ns, name)
	env.WaitSearchRunning(t, ns, runName)
	var run v1beta2.DynamoGraphDeploymentRun
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: runName}, &run); err != nil {
		t.Fatal(err)
	}
	return &run
}

// TestSearchTokenTouchesOnlyItsOwnRun: holding the token of Run A's search pod, a tenant tries
// to forge Run B's results: patch B's status (its Completed condition and recommendation), create
// a Candidate owned by B (which `dgdrctl promote` would deploy), delete B's Candidates. Each
// gets 403 Forbidden, while the same token still writes A's own status (so the 403s are not an
// authentication failure). Before the per-Run identity and the search-identity admission policy
// (commit 94af075 and earlier: one reporter ServiceAccount per namespace), the same calls
// returned 200/201.
func TestSearchTokenTouchesOnlyItsOwnRun(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	runB := succeededRun(t, ns, "tenant-b")
	// A's search must still run: a finished Run's identity is gone (TestFinishedSearchIdentityIsGone).
	runA := runningRun(t, ns, "tenant-a")
	attacker := searchToken(t, runA)

	status := func(target *v1beta2.DynamoGraphDeploymentRun, body string) error {
		return attacker.Status().Patch(ctx, target.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(body)))
	}
	if err := status(runA, `{"status":{"lastProgressTime":"2026-01-01T00:00:00Z"}}`); err != nil {
		t.Fatalf("the token of Run A must still write A's own status: %v", err)
	}

	var victims v1beta2.DynamoGraphDeploymentCandidateList
	if err := k8s.List(ctx, &victims, client.InNamespace(ns), client.MatchingLabels{v1beta2.LabelRunUID: string(runB.UID)}); err != nil || len(victims.Items) == 0 {
		t.Fatalf("Run B's candidates: %d, %v", len(victims.Items), err)
	}
	forged := victims.Items[0].DeepCopy()
	forged.ObjectMeta = metav1.ObjectMeta{Namespace: ns, Name: runB.Name + "-forged", Labels: forged.Labels,
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(runB, v1beta2.GroupVersion.WithKind("DynamoGraphDeploymentRun"))}}
	forged.Spec.GraphDeployment = runtime.RawExtension{Raw: []byte(`{"apiVersion":"nvidia.com/v1alpha1","kind":"DynamoGraphDeployment","spec":{"services":{"evil":{}}}}`)}

	attacks := []struct {
		name string
		do   func() error
	}{
		{"patch Run B's status (Completed condition, recommendation)", func() error {
			return status(runB, `{"status":{"recommendation":{"bestCandidate":"`+forged.Name+`"},"conditions":[]}}`)
		}},
		{"create a Candidate owned by Run B", func() error { return attacker.Create(ctx, forged) }},
		{"delete Run B's Candidate", func() error { return attacker.Delete(ctx, victims.Items[0].DeepCopy()) }},
	}
	for _, a := range attacks {
		if err := a.do(); !apierrors.IsForbidden(err) {
			t.Errorf("%s with Run A's search token: err = %v, want 403 Forbidden", a.name, err)
		}
	}

	// Nothing the attacker tried stuck.
	var after v1beta2.DynamoGraphDeploymentRun
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(runB), &after); err != nil {
		t.Fatal(err)
	}
	if after.Status.Recommendation == nil || after.Status.Recommendation.BestCandidate == forged.Name || len(after.Status.Conditions) == 0 {
		t.Errorf("Run B's status changed: %+v", after.Status.Recommendation)
	}
	var still v1beta2.DynamoGraphDeploymentCandidate
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(&victims.Items[0]), &still); err != nil {
		t.Errorf("Run B's candidate %s: %v", victims.Items[0].Name, err)
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(forged), &still); !apierrors.IsNotFound(err) {
		t.Errorf("the forged candidate exists (err %v)", err)
	}
}

// TestPlantedInputConfigMapIsIgnored: a tenant who may create ConfigMaps plants one under the
// name the search input used to have (<run>-input), with an input beyond the operator's caps,
// before the request exists. The search must run the Run's own recorded input: the search pod
// mounts no ConfigMap and the search evaluates at most the request's 4 trials, not the planted
// 100,000. (Without the check the operator would mount an existing ConfigMap of that name.)
func TestPlantedInputConfigMapIsIgnored(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	planted := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: naming.RunName("planted", 1) + "-input"},
		Data: map[string]string{"input.yaml": "engine: {model: meta-llama/Llama-3.1-8B-Instruct, hardware: h200_sxm}\n" +
			"optimizer: {max_trials: 100000, parallelism: 1000}\noptimization: {}\n"},
	}
	if err := k8s.Create(ctx, planted); err != nil {
		t.Fatal(err)
	}
	run := succeededRun(t, ns, "planted")
	if rec := run.Status.Recommendation; rec == nil || rec.Evaluated == 0 || rec.Evaluated > 4 {
		t.Errorf("the search evaluated %+v candidates, want 1–4 (the request's max_trials), not the planted input's", rec)
	}
	var pods corev1.PodList
	if err := k8s.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{v1beta2.LabelRunUID: string(run.UID)}); err != nil || len(pods.Items) == 0 {
		t.Fatalf("the search pod: %v (%d)", err, len(pods.Items))
	}
	for _, v := range pods.Items[0].Spec.Volumes {
		if v.ConfigMap != nil {
			t.Errorf("the search pod mounts ConfigMap %s (volume %s)", v.ConfigMap.Name, v.Name)
		}
		if v.Projected != nil {
			for _, src := range v.Projected.Sources {
				if src.ConfigMap != nil && src.ConfigMap.Name != "kube-root-ca.crt" {
					t.Errorf("the search pod projects ConfigMap %s (volume %s)", src.ConfigMap.Name, v.Name)
				}
			}
		}
	}
}
