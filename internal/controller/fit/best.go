package fit

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/config"
	"github.com/dgdr-operator/dgdr-operator/internal/gpunodes"
)

// BestFitting returns the best deployable candidate of run (candidateRefs, best first) that fits
// the GPUs of the cluster's Nodes, judged now from the Node informer (cached) with the rule of
// status.fitsCluster (not read from that status: the search identity can write Candidates'
// status); live reads a Candidate the cache does not show yet. A candidate whose Deployable
// condition is False (NotRenderable) is skipped: the search identity could clear that condition,
// but autoApply renders the chosen candidate again and deploys nothing it cannot render. With GPU
// discovery off the operator reads no Nodes and the best deployable candidate is returned. unfit
// says why each candidate was passed over; notDeployable counts those that are not deployable.
// autoApply deploys this candidate, and a re-search compares it with the deployed one.
func BestFitting(ctx context.Context, cached, live client.Reader, cfg *v1alpha1.OperatorConfiguration, run *v1beta2.DynamoGraphDeploymentRun) (best string, unfit []string, notDeployable int, err error) {
	discover := config.GPUDiscoveryEnabled(cfg)
	var inv gpunodes.Inventory
	if discover {
		if inv, err = Inventory(ctx, cached); err != nil {
			return "", nil, 0, err
		}
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
				return "", nil, 0, err
			}
			if err := live.Get(ctx, key, cand); err != nil {
				return "", nil, 0, err
			}
		}
		if c := meta.FindStatusCondition(cand.Status.Conditions, v1beta2.ConditionDeployable); c != nil && c.Status == metav1.ConditionFalse {
			unfit = append(unfit, ref.Name+": not deployable ("+c.Reason+"): "+c.Message)
			notDeployable++
			continue
		}
		if !discover {
			return ref.Name, unfit, notDeployable, nil
		}
		needs, sku, err := gpunodes.NeedsOf(cand)
		if err != nil {
			unfit = append(unfit, ref.Name+": "+err.Error())
			continue
		}
		f := gpunodes.Fit(needs, sku, inv.Pool(sku))
		if *f.Fits {
			return ref.Name, unfit, notDeployable, nil
		}
		unfit = append(unfit, ref.Name+": "+f.Message)
	}
	return "", unfit, notDeployable, nil
}
