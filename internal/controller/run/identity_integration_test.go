package run_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/internal/scheme"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/poll"
)

// asSearchIdentity is a client authenticated as the search identity of run, as its reporter is:
// impersonation sets exactly the user name and groups a token of that ServiceAccount carries.
func asSearchIdentity(t *testing.T, run *v1beta2.DynamoGraphDeploymentRun) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + run.Namespace + ":" + jobcontract.SearchIdentity(run.UID),
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + run.Namespace, "system:authenticated"},
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// candidateOf is a Candidate as a reporter publishes it for owner, labelled with labelRun's UID.
func candidateOf(owner *v1beta2.DynamoGraphDeploymentRun, labelRun types.UID, name string) *v1beta2.DynamoGraphDeploymentCandidate {
	return builders.Candidate(owner.Namespace, name).OwnedBy(owner).Label(v1beta2.LabelRunUID, string(labelRun)).Obj()
}

// artifactsOf is a Run's artifacts ConfigMap as its reporter writes it (jobcontract.ArtifactsName),
// here named name, controlled by owner and labelled with labelRun's UID.
func artifactsOf(owner *v1beta2.DynamoGraphDeploymentRun, labelRun types.UID, name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: owner.Namespace, Name: name,
			Labels: map[string]string{v1beta2.LabelRunUID: string(labelRun), v1beta2.LabelRunName: owner.Name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: v1beta2.GroupVersion.String(), Kind: "DynamoGraphDeploymentRun",
				Name: owner.Name, UID: owner.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		BinaryData: map[string][]byte{jobcontract.ArtifactEventsKey: []byte("x")},
	}
}

// patchProgress writes a progress field of target's status as c.
func patchProgress(c client.Client, target *v1beta2.DynamoGraphDeploymentRun, settled int32) error {
	patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"status":{"progress":{"budget":10,"settled":%d}}}`, settled))
	return c.Status().Patch(context.Background(), target.DeepCopy(), patch)
}

// TestSearchIdentityIsConfinedToItsRun plays a compromised search pod of Run A. RBAC alone (the
// reporter Role, bound to A's identity) lets it write Run B's status; with the search-identity
// policy (what the operator installs at startup) every write outside Run A is Forbidden, while
// A's own writes, the reporter's job, still pass. Reverting the policy fails the 403 checks;
// reverting the per-Run identity (a shared ServiceAccount) makes the policy unable to tell A from
// B, and the same checks fail.
func TestSearchIdentityIsConfinedToItsRun(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k8s, "t")
	runA := createRun(t, ns, "tenant-a", nil)
	runB := createRun(t, ns, "tenant-b", nil)
	waitForJob(t, runA)
	waitForJob(t, runB)
	attacker := asSearchIdentity(t, runA)

	// The package's tests share one API server, and another of them installs the policy: start
	// without its binding (the API server drops it asynchronously).
	unbound := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: jobcontract.SearchIdentityPolicyName}}
	if err := mustClient(t).Delete(ctx, unbound); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	// Without the policy, RBAC alone would let A's identity write B: the hole the policy closes.
	poll.Eventually(t, 30*time.Second, "before the policy, RBAC allows A's identity to patch B's status (the test's premise)", func() (bool, error) {
		return patchProgress(attacker, runB, 1) == nil, nil
	})
	if err := jobcontract.ApplySearchIdentityPolicy(ctx, mustClient(t)); err != nil {
		t.Fatal(err)
	}
	// The API server loads policies asynchronously.
	poll.Eventually(t, 30*time.Second, "the policy denies A's identity writing B's status", func() (bool, error) {
		err := patchProgress(attacker, runB, 2)
		return apierrors.IsForbidden(err), nil
	})

	victim := candidateOf(runB, runB.UID, runB.Name+"-c1")
	if err := k8s.Create(ctx, victim); err != nil {
		t.Fatal(err)
	}
	victimArtifacts := artifactsOf(runB, runB.UID, jobcontract.ArtifactsName(runB.UID))
	if err := k8s.Create(ctx, victimArtifacts.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	rankLabel := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"`+v1beta2.LabelCandidateRank+`":"1"}}}`))
	attacks := map[string]func() error{
		"patch B's status": func() error { return patchProgress(attacker, runB, 3) },
		"create a Candidate controlled by B": func() error {
			return attacker.Create(ctx, candidateOf(runB, runB.UID, runB.Name+"-c2"))
		},
		"create a Candidate controlled by A but labelled as B's": func() error {
			return attacker.Create(ctx, candidateOf(runA, runB.UID, runA.Name+"-c9"))
		},
		"delete B's Candidate": func() error { return attacker.Delete(ctx, victim.DeepCopy()) },
		"rewrite B's Candidate status": func() error {
			c := &v1beta2.DynamoGraphDeploymentCandidate{}
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(victim), c); err != nil {
				return err
			}
			c.Status.Rank = 1
			return attacker.Status().Update(ctx, c)
		},
		"relabel B's Candidate": func() error { return attacker.Patch(ctx, victim.DeepCopy(), rankLabel) },
		"create B's artifacts ConfigMap": func() error {
			return attacker.Create(ctx, artifactsOf(runB, runB.UID, jobcontract.ArtifactsName(runB.UID)+"x"))
		},
		"create a ConfigMap of A under another name": func() error {
			return attacker.Create(ctx, artifactsOf(runA, runA.UID, "dgdr-operator-config"))
		},
		"create A's artifacts ConfigMap controlled by B": func() error {
			return attacker.Create(ctx, artifactsOf(runB, runA.UID, jobcontract.ArtifactsName(runA.UID)))
		},
		"create A's artifacts ConfigMap labelled as B's": func() error {
			return attacker.Create(ctx, artifactsOf(runA, runB.UID, jobcontract.ArtifactsName(runA.UID)))
		},
		"delete B's artifacts ConfigMap": func() error { return attacker.Delete(ctx, victimArtifacts.DeepCopy()) },
		// Its own Run's operator-owned status: ending it Succeeded, or changing the input.
		"write A's conditions": func() error {
			return ownStatus(attacker, runA, `{"status":{"conditions":[{"type":"Completed","status":"True","reason":"Succeeded","message":"forged","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`)
		},
		"write A's phase":   func() error { return ownStatus(attacker, runA, `{"status":{"phase":"Succeeded"}}`) },
		"write A's message": func() error { return ownStatus(attacker, runA, `{"status":{"message":"forged"}}`) },
		"write A's aisimulate": func() error {
			return ownStatus(attacker, runA, `{"status":{"aisimulate":{"input":{"optimizer":{"max_trials":100000}},"inputHash":"sha256:forged"}}}`)
		},
		// The baseline's input decides what the deployed Candidate is compared under.
		"write A's baseline input": func() error {
			return ownStatus(attacker, runA, `{"status":{"aisimulate":{"baseline":{"candidate":"`+runA.Name+`-c1","input":{"engine":{"workers":{"aggregated":{"tp":8}}}},"inputHash":"sha256:forged"}}}}`)
		},
		"write A's jobRef": func() error { return ownStatus(attacker, runA, `{"status":{"jobRef":{"name":"planted","uid":"x"}}}`) },
		// Which Job's end is the baseline's end: a planted one would end a re-search on the
		// attacker's baseline.
		"write A's baselineJobRef": func() error {
			return ownStatus(attacker, runA, `{"status":{"baselineJobRef":{"name":"planted","uid":"x"}}}`)
		},
		// The corrections the reporter applies: a forged one would publish made-up calibrated figures.
		"write A's calibration": func() error {
			return ownStatus(attacker, runA, `{"status":{"calibration":{"minObservations":1,"corrections":[`+
				`{"backend":"vllm","mode":"aggregated","parallelism":"agg:tp1","metric":"ttftMs","ratio":0.01,"spread":0,"observations":99}]}}}`)
		},
		// The price the operator recorded, which the reporter costs candidates at: a forged one
		// would publish made-up costs (and hide the price maxCostPerHour was lowered with).
		"write A's pricing": func() error {
			return ownStatus(attacker, runA, `{"status":{"pricing":{"system":"h200_sxm","currency":"USD","pricePerGPUHour":"0.01"}}}`)
		},
		// Its own Candidate's fitsCluster, which the operator owns.
		"write fitsCluster of A's Candidate": func() error {
			c := candidateOf(runA, runA.UID, runA.Name+"-c7")
			if err := attacker.Create(ctx, c); err != nil {
				return err
			}
			// As the reporter writes a Candidate's status: a whole update.
			c.Status.FitsCluster = &v1beta2.ClusterFit{Fits: ptr.To(true), SKU: "h200_sxm", GPUsNeeded: 1, GPUsAvailable: ptr.To[int64](64)}
			return attacker.Status().Update(ctx, c)
		},
	}
	for name, attack := range attacks {
		if err := attack(); !apierrors.IsForbidden(err) {
			t.Errorf("%s as Run A's search identity: err = %v, want 403 Forbidden", name, err)
		}
	}

	// What the reporter of A must still do.
	if err := patchProgress(attacker, runA, 4); err != nil {
		t.Errorf("A's identity patching A's status: %v", err)
	}
	// Everything the reporter writes (reporter.statusPatch): progress, lastProgressTime,
	// candidateRefs, recommendation, artifacts and baseline, in one merge patch as it sends them.
	if err := ownStatus(attacker, runA, `{"status":{"progress":{"budget":10,"settled":5},"lastProgressTime":"2026-01-01T00:00:00Z",`+
		`"candidateRefs":[{"name":"`+runA.Name+`-c1","rank":1}],"recommendation":{"bestCandidate":"`+runA.Name+`-c1","evaluated":5,"feasible":1},`+
		`"artifacts":{"configMapName":"`+jobcontract.ArtifactsName(runA.UID)+`"},`+
		`"baseline":{"candidate":"`+runA.Name+`-c0","metrics":{"ttftMs":40.25,"gpus":1},"meanTpotMs":9.75,"gpus":1,"completedRequests":36}}}`); err != nil {
		t.Errorf("A's identity writing the reporter's fields of A's status: %v", err)
	}
	own := candidateOf(runA, runA.UID, runA.Name+"-c1")
	if err := attacker.Create(ctx, own); err != nil {
		t.Fatalf("A's identity creating A's Candidate: %v", err)
	}
	if err := attacker.Patch(ctx, own, rankLabel); err != nil {
		t.Errorf("A's identity relabelling A's Candidate: %v", err)
	}
	// The reporter rewrites a Candidate's status whole, keeping the operator's fitsCluster.
	fit := client.RawPatch(types.MergePatchType, []byte(`{"status":{"fitsCluster":{"fits":false,"sku":"h200_sxm","gpusNeeded":1,"gpusAvailable":0}}}`))
	if err := k8s.Status().Patch(ctx, own, fit); err != nil {
		t.Fatal(err)
	}
	own.Status.Rank = 1
	if err := attacker.Status().Update(ctx, own); err != nil {
		t.Errorf("A's identity writing A's Candidate status, fitsCluster kept: %v", err)
	}
	if err := attacker.Delete(ctx, own); err != nil {
		t.Errorf("A's identity deleting A's Candidate: %v", err)
	}
	ownArtifacts := artifactsOf(runA, runA.UID, jobcontract.ArtifactsName(runA.UID))
	if err := attacker.Create(ctx, ownArtifacts.DeepCopy()); err != nil {
		t.Fatalf("A's identity creating A's artifacts ConfigMap: %v", err)
	}
	if err := attacker.Delete(ctx, ownArtifacts); err != nil {
		t.Errorf("A's identity deleting A's artifacts ConfigMap: %v", err)
	}
	var cms corev1.ConfigMapList
	if err := attacker.List(ctx, &cms, client.InNamespace(ns)); !apierrors.IsForbidden(err) {
		t.Errorf("A's identity listing ConfigMaps: err = %v, want 403 Forbidden (no reads)", err)
	}
}

// mustClient is an admin client with client-go's scheme (admission policies).
func mustClient(t *testing.T) client.Client {
	t.Helper()
	c, err := client.New(env.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ownStatus merge-patches target's status with body as c.
func ownStatus(c client.Client, target *v1beta2.DynamoGraphDeploymentRun, body string) error {
	return c.Status().Patch(context.Background(), target.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(body)))
}
