package deployment_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	ct "github.com/dgdr-operator/dgdr-operator/internal/controller/controllertest"
	"github.com/dgdr-operator/dgdr-operator/internal/promote"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
)

// eightGPUParameters are ct.CandidateParameters with 4 replicas of TP2: 8 GPUs.
var eightGPUParameters = strings.Replace(ct.CandidateParameters, `"replicas":2`, `"replicas":4`, 1)

// tieSearch is the demo's trace request of issue 42: the best candidate uses 8 GPUs for 2,164
// tok/s, the next 4 GPUs for 2,159 (0.23% less), both fitting the cluster's 8 H200 GPUs.
func tieSearch(t *testing.T, r *v1beta2.DynamoGraphDeploymentRun) ct.Search {
	t.Helper()
	score := func(v float64) *v1beta2.CandidateMetrics { return &v1beta2.CandidateMetrics{Score: &v, Throughput: &v} }
	return ct.Search{Candidates: []*v1beta2.DynamoGraphDeploymentCandidate{
		ct.RenderedCandidateOf(t, cfg, r, r.Name+"-c1", eightGPUParameters, 8, score(2164)),
		ct.RenderedCandidateOf(t, cfg, r, r.Name+"-c2", ct.CandidateParameters, 4, score(2159)),
	}}
}

// deployedDGD reads the DynamoGraphDeployment ns/name.
func deployedDGD(t *testing.T, ns, name string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(promote.GVK)
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

// TestSelectionToleranceDeploysTheCheaperTie: with the default tolerance (2%) autoApply deploys
// the 4-GPU candidate scoring 0.23% below the 8-GPU best, and names both with the reason in
// status.deployment.selection; with 0% it deploys the ranking's first. Each deployed
// DynamoGraphDeployment carries dgdr.nvidia.com/name and dgdr.nvidia.com/namespace of its request
// (not another request's, though both live in one namespace), and the request's status names it
// in status.deployment.name and status.dgdName. The writes pass the operator's RBAC (the chart's)
// in this API server.
func TestSelectionToleranceDeploysTheCheaperTie(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k8s, "t")
	tolerant := builders.Request(ns, "tolerant").GPUSKU("h200_sxm").AutoApply("tolerant-dgd").Obj()
	strict := builders.Request(ns, "strict").GPUSKU("h200_sxm").AutoApply("strict-dgd").Obj()
	strict.Spec.Deployment.Selection = &v1beta2.SelectionSpec{Tolerance: "0%"}
	for _, d := range []*v1beta2.DynamoGraphDeploymentRequest{tolerant, strict} {
		if err := k8s.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	tolerantRun, strictRun := waitForFirstRun(t, tolerant), waitForFirstRun(t, strict)
	ct.FinishSearch(t, k8s, tolerantRun, tieSearch(t, tolerantRun))
	ct.FinishSearch(t, k8s, strictRun, tieSearch(t, strictRun))

	for _, tc := range []struct {
		d       *v1beta2.DynamoGraphDeploymentRequest
		run     string
		dgd     string
		want    v1beta2.DeploymentSelection
		wantWhy string
	}{
		{tolerant, tolerantRun.Name, "tolerant-dgd", v1beta2.DeploymentSelection{Best: tolerantRun.Name + "-c1", Chosen: tolerantRun.Name + "-c2", Tolerance: "2%"},
			"uses fewer GPUs (4) than the best candidate " + tolerantRun.Name + "-c1 (8 GPUs), and scores 2159 against 2164 (0.23% lower), within the tolerance of 2%"},
		{strict, strictRun.Name, "strict-dgd", v1beta2.DeploymentSelection{Best: strictRun.Name + "-c1", Chosen: strictRun.Name + "-c1", Tolerance: "0%"},
			"the tolerance is 0%"},
	} {
		got := waitForStatus(t, tc.d, tc.d.Name+": status.deployment", func(d *v1beta2.DynamoGraphDeploymentRequest) bool {
			return d.Status.Deployment != nil && d.Status.DGDName != ""
		})
		dep := got.Status.Deployment
		sel := v1beta2.DeploymentSelection{}
		if dep.Selection != nil {
			sel = *dep.Selection
		}
		why := sel.Reason
		sel.Reason = ""
		wantStatus := v1beta2.DeploymentStatus{Name: tc.dgd, Run: tc.run, Candidate: tc.want.Chosen, Selection: &tc.want}
		if diff := cmp.Diff(wantStatus, v1beta2.DeploymentStatus{Name: dep.Name, Run: dep.Run, Candidate: dep.Candidate, Selection: &sel}); diff != "" {
			t.Errorf("%s: status.deployment (-want +got):\n%s", tc.d.Name, diff)
		}
		if !strings.Contains(why, tc.wantWhy) {
			t.Errorf("%s: selection reason %q lacks %q", tc.d.Name, why, tc.wantWhy)
		}
		if got.Status.DGDName != tc.dgd {
			t.Errorf("%s: status.dgdName = %q, want %q", tc.d.Name, got.Status.DGDName, tc.dgd)
		}
		obj := deployedDGD(t, ns, tc.dgd)
		labels := obj.GetLabels()
		gotMeta := map[string]string{"name": labels["dgdr.nvidia.com/name"], "namespace": labels["dgdr.nvidia.com/namespace"],
			"from": obj.GetAnnotations()[promote.AnnotationPromotedFrom]}
		if diff := cmp.Diff(map[string]string{"name": tc.d.Name, "namespace": ns, "from": tc.want.Chosen}, gotMeta); diff != "" {
			t.Errorf("%s: the DynamoGraphDeployment's request labels and origin (-want +got):\n%s", tc.d.Name, diff)
		}
	}
}
