// Package resultsview reads a request's search results as a user's client sees them: its Runs
// and their published Candidates, in the order people read them. dgdrctl (status, results) and
// its web view (dgdrctl ui) share it, so both show the same Runs and the same ranking.
package resultsview

import (
	"cmp"
	"context"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

// RequestRuns returns the request's Runs, newest first: those labelled with its name (and, when
// labelled with a UID, its UID: a request of the same name that was deleted and re-created has
// other Runs), and those its status names.
func RequestRuns(ctx context.Context, c client.Reader, req *v1beta2.DynamoGraphDeploymentRequest) ([]v1beta2.DynamoGraphDeploymentRun, error) {
	var list v1beta2.DynamoGraphDeploymentRunList
	if err := c.List(ctx, &list, client.InNamespace(req.Namespace), client.MatchingLabels{v1beta2.LabelRequestName: req.Name}); err != nil {
		return nil, err
	}
	byName := map[string]v1beta2.DynamoGraphDeploymentRun{}
	for _, r := range list.Items {
		if uid := r.Labels[v1beta2.LabelRequestUID]; uid != "" && uid != string(req.UID) {
			continue
		}
		byName[r.Name] = r
	}
	var refs []string
	if req.Status.ActiveRunRef != nil {
		refs = append(refs, req.Status.ActiveRunRef.Name)
	}
	for _, r := range req.Status.RecentRunRefs {
		refs = append(refs, r.Name)
	}
	for _, n := range refs {
		if _, ok := byName[n]; ok {
			continue
		}
		var r v1beta2.DynamoGraphDeploymentRun
		if err := c.Get(ctx, types.NamespacedName{Namespace: req.Namespace, Name: n}, &r); err == nil {
			byName[n] = r
		} else if !apierrors.IsNotFound(err) {
			return nil, err
		}
	}
	runs := make([]v1beta2.DynamoGraphDeploymentRun, 0, len(byName))
	for _, r := range byName {
		runs = append(runs, r)
	}
	slices.SortFunc(runs, func(a, b v1beta2.DynamoGraphDeploymentRun) int {
		return cmp.Or(b.CreationTimestamp.Compare(a.CreationTimestamp.Time), strings.Compare(b.Name, a.Name))
	})
	return runs, nil
}

// RunCandidates returns the Run's Candidates best first: in the Run's candidateRefs order, or by
// rank while the refs are not written yet. A Run with a UID selects its Candidates by UID (a Run
// of the same name that was deleted and re-created has other Candidates).
func RunCandidates(ctx context.Context, c client.Reader, run *v1beta2.DynamoGraphDeploymentRun) ([]v1beta2.DynamoGraphDeploymentCandidate, error) {
	var list v1beta2.DynamoGraphDeploymentCandidateList
	sel := client.MatchingLabels{v1beta2.LabelRunName: run.Name}
	if run.UID != "" {
		sel = client.MatchingLabels{v1beta2.LabelRunUID: string(run.UID)}
	}
	if err := c.List(ctx, &list, client.InNamespace(run.Namespace), sel); err != nil {
		return nil, err
	}
	order := map[string]int{}
	for i, r := range run.Status.CandidateRefs {
		order[r.Name] = i + 1
	}
	items := list.Items
	slices.SortStableFunc(items, func(a, b v1beta2.DynamoGraphDeploymentCandidate) int {
		if oa, ob := order[a.Name], order[b.Name]; oa != ob && oa != 0 && ob != 0 {
			return cmp.Compare(oa, ob)
		}
		return cmp.Or(cmp.Compare(a.Status.Rank, b.Status.Rank), strings.Compare(a.Name, b.Name))
	})
	return items, nil
}
