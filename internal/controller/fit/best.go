package fit

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/config"
	"github.com/dgdr-operator/dgdr-operator/internal/gpunodes"
)

// BestFitting returns the best candidate of run (candidateRefs, best first) that fits the GPUs
// of the cluster's Nodes, judged now from the Node informer (cached) with the rule of
// status.fitsCluster (not read from that status: the search identity can write Candidates'
// status); live reads a Candidate the cache does not show yet. With GPU discovery off the
// operator reads no Nodes and the best candidate is returned. unfit says why each candidate
// does not fit. autoApply deploys this candidate, and a re-search compares it with the deployed
// one.
func BestFitting(ctx context.Context, cached, live client.Reader, cfg *v1alpha1.OperatorConfiguration, run *v1beta2.DynamoGraphDeploymentRun) (best string, unfit []string, err error) {
	if !config.GPUDiscoveryEnabled(cfg) {
		return run.Status.Recommendation.BestCandidate, nil, nil
	}
	inv, err := Inventory(ctx, cached)
	if err != nil {
		return "", nil, err
	}
	refs := run.Status.CandidateRefs
	if len(refs) == 0 {
		refs = []v1beta2.CandidateReference{{Name: run.Status.Recommendation.BestCandidate}}
	}
	for _, ref := range refs {
		cand := &v1beta2.DynamoGraphDeploymentCandidate{}
		key := types.NamespacedName{Namespace: run.Namespace, Name: ref.Name}
		if err := cached.Get(ctx, key, cand); err != nil {
			if !apierrors.IsNotFound(err) {
				return "", nil, err
			}
			if err := live.Get(ctx, key, cand); err != nil {
				return "", nil, err
			}
		}
		needs, sku, err := gpunodes.NeedsOf(cand)
		if err != nil {
			unfit = append(unfit, ref.Name+": "+err.Error())
			continue
		}
		f := gpunodes.Fit(needs, sku, inv.Pool(sku))
		if *f.Fits {
			return ref.Name, nil, nil
		}
		unfit = append(unfit, ref.Name+": "+f.Message)
	}
	return "", unfit, nil
}
