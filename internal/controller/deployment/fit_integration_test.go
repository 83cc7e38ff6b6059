package deployment_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	ct "github.com/dgdr-operator/dgdr-operator/internal/controller/controllertest"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/poll"
)

// tooLarge is a Candidate of h200_sxm whose pods take 16 GPUs each (two pods): more than the
// cluster's H200 Nodes have in all, and more than one of them holds.
func tooLarge(r *v1beta2.DynamoGraphDeploymentRun, name string) *v1beta2.DynamoGraphDeploymentCandidate {
	dgd := `{"apiVersion":"nvidia.com/v1beta1","kind":"DynamoGraphDeployment","spec":{"components":[{"name":"worker","type":"worker","replicas":2,"podTemplate":{"spec":{"containers":[{"name":"main","image":"x",` +
		`"resources":{"limits":{"nvidia.com/gpu":"16"},"requests":{"nvidia.com/gpu":"16"}}}]}}}]}}`
	return builders.Candidate(r.Namespace, name).OwnedBy(r).GPUs(32).GraphDeployment([]byte(dgd)).
		Parameters(`{"engine":{"hardware":"h200_sxm"}}`).Obj()
}

// waitFit waits for the Candidate's status.fitsCluster to equal want (message aside).
func waitFit(t *testing.T, ns, name string, want v1beta2.ClusterFit) {
	t.Helper()
	poll.Eventually(t, wait, name+" fitsCluster", func() (bool, error) {
		c := &v1beta2.DynamoGraphDeploymentCandidate{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, c); err != nil {
			return false, err
		}
		if c.Status.FitsCluster == nil {
			return false, nil
		}
		got := *c.Status.FitsCluster
		got.Message = ""
		if diff := cmp.Diff(want, got); diff != "" {
			t.Logf("%s fitsCluster (-want +got):\n%s", name, diff)
			return false, nil
		}
		return true, nil
	})
}

// TestFitsClusterWithNodesOfTwoProducts: with an H200 Node of 8 GPUs and an A100 Node of 16,
// Candidates of h200_sxm are judged against the H200 Node only: one of 4 GPUs fits, one of 32
// (pods of 16) does not, and autoApply deploys the one that fits although it ranks second.
// When no candidate fits, Deployed=False NoCandidateFits names them. A second H200 Node of 16
// GPUs, a cordon and the Node's deletion each change the verdicts of the published Candidates.
func TestFitsClusterWithNodesOfTwoProducts(t *testing.T) {
	withoutDGDCRD(t)
	ctx := context.Background()
	a100, err := ct.GPUNode(ctx, k8s, "gpu-a100-a", "NVIDIA-A100-SXM4-80GB", 16)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(ctx, a100) })
	ns := testenv.Namespace(t, k8s, "t")
	// The cluster now has two GPU products: requests name their SKU.
	mixed := builders.Request(ns, "mixed").GPUSKU("h200_sxm").AutoApply("llama-mixed").Obj()
	none := builders.Request(ns, "none-fits").GPUSKU("h200_sxm").AutoApply("llama-none").Obj()
	for _, d := range []*v1beta2.DynamoGraphDeploymentRequest{mixed, none} {
		if err := k8s.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	run := waitForFirstRun(t, mixed)
	big, small := tooLarge(run, run.Name+"-c1"), ct.RenderedCandidate(t, cfg, run, run.Name+"-c2", nil)
	ct.FinishSearch(t, k8s, run, ct.Search{Candidates: []*v1beta2.DynamoGraphDeploymentCandidate{big, small}})
	noneRun := waitForFirstRun(t, none)
	ct.FinishSearch(t, k8s, noneRun, ct.Search{Candidates: []*v1beta2.DynamoGraphDeploymentCandidate{tooLarge(noneRun, noneRun.Name+"-c1"), tooLarge(noneRun, noneRun.Name+"-c2")}})

	waitFit(t, ns, big.Name, v1beta2.ClusterFit{Fits: ptr.To(false), SKU: "h200_sxm", GPUsNeeded: 32, GPUsAvailable: ptr.To[int64](8), GPUsPerNodeNeeded: 16, LargestNodeGPUs: 8, Nodes: 1})
	waitFit(t, ns, small.Name, v1beta2.ClusterFit{Fits: ptr.To(true), SKU: "h200_sxm", GPUsNeeded: 4, GPUsAvailable: ptr.To[int64](8), GPUsPerNodeNeeded: 2, LargestNodeGPUs: 8, Nodes: 1})

	// The first candidate's graphDeployment is not what its parameters render to: had autoApply
	// picked it, Deployed would say CandidateNotReproduced. The second reaches the deployment
	// step (this API server serves no DynamoGraphDeployments).
	waitForStatus(t, mixed, "the fitting second candidate deployed (CRDNotInstalled)", func(d *v1beta2.DynamoGraphDeploymentRequest) bool {
		c := meta.FindStatusCondition(d.Status.Conditions, v1beta2.ConditionDeployed)
		return c != nil && c.Reason == v1beta2.ReasonDeploymentCRDMissing
	})
	got := waitForStatus(t, none, "Deployed=False NoCandidateFits", func(d *v1beta2.DynamoGraphDeploymentRequest) bool {
		c := meta.FindStatusCondition(d.Status.Conditions, v1beta2.ConditionDeployed)
		return c != nil && c.Reason == v1beta2.ReasonNoCandidateFits
	})
	c := meta.FindStatusCondition(got.Status.Conditions, v1beta2.ConditionDeployed)
	for _, want := range []string{noneRun.Name + "-c1: needs 32 GPUs; the 1 Nodes of h200_sxm have 8 allocatable", noneRun.Name + "-c2"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("NoCandidateFits message %q lacks %q", c.Message, want)
		}
	}

	// More H200 GPUs: 24 in all, but no Node holds a pod of 16.
	h200b, err := ct.GPUNode(ctx, k8s, "gpu-h200-b", "NVIDIA-H200", 16)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(ctx, h200b) })
	waitFit(t, ns, big.Name, v1beta2.ClusterFit{Fits: ptr.To(false), SKU: "h200_sxm", GPUsNeeded: 32, GPUsAvailable: ptr.To[int64](24), GPUsPerNodeNeeded: 16, LargestNodeGPUs: 16, Nodes: 2})
	// Cordoning the first H200 Node takes its GPUs out.
	node := &corev1.Node{}
	if err := k8s.Get(ctx, client.ObjectKey{Name: clusterNode}, node); err != nil {
		t.Fatal(err)
	}
	node.Spec.Unschedulable = true
	if err := k8s.Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := k8s.Get(ctx, client.ObjectKey{Name: clusterNode}, node); err == nil {
			node.Spec.Unschedulable = false
			_ = k8s.Update(ctx, node)
		}
	})
	waitFit(t, ns, small.Name, v1beta2.ClusterFit{Fits: ptr.To(true), SKU: "h200_sxm", GPUsNeeded: 4, GPUsAvailable: ptr.To[int64](16), GPUsPerNodeNeeded: 2, LargestNodeGPUs: 16, Nodes: 1})
	// Uncordoned again, then the second H200 Node gone: each change is judged in turn.
	if err := k8s.Get(ctx, client.ObjectKey{Name: clusterNode}, node); err != nil {
		t.Fatal(err)
	}
	node.Spec.Unschedulable = false
	if err := k8s.Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	waitFit(t, ns, small.Name, v1beta2.ClusterFit{Fits: ptr.To(true), SKU: "h200_sxm", GPUsNeeded: 4, GPUsAvailable: ptr.To[int64](24), GPUsPerNodeNeeded: 2, LargestNodeGPUs: 16, Nodes: 2})
	if err := k8s.Delete(ctx, h200b); err != nil {
		t.Fatal(err)
	}
	waitFit(t, ns, small.Name, v1beta2.ClusterFit{Fits: ptr.To(true), SKU: "h200_sxm", GPUsNeeded: 4, GPUsAvailable: ptr.To[int64](8), GPUsPerNodeNeeded: 2, LargestNodeGPUs: 8, Nodes: 1})
	waitFit(t, ns, big.Name, v1beta2.ClusterFit{Fits: ptr.To(false), SKU: "h200_sxm", GPUsNeeded: 32, GPUsAvailable: ptr.To[int64](8), GPUsPerNodeNeeded: 16, LargestNodeGPUs: 8, Nodes: 1})
}
