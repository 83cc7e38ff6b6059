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
// does not fit. A re-search compares this candidate with the deployed one.
func BestFitting(ctx context.Context, cached, live client.Reader, cfg *v1alpha1.OperatorConfiguration, run *v1beta2.DynamoGraphDeploymentRun) (best string, unfit []string, err error) {
	if !config.GPUDiscoveryEnabled(cfg) {
		return run.Status.Recommendation.BestCandidate, nil, nil
	}
	err = eachFitting(ctx, cached, live, cfg, run, func(c *v1beta2.DynamoGraphDeploymentCandidate, why string) bool {
		if why != "" {
			unfit = append(unfit, c.Name+": "+why)
			return true
		}
		best = c.Name
		return false
	})
	if err != nil || best != "" {
		unfit = nil
	}
	return best, unfit, err
}

// Fitting returns the candidates of run that fit the GPUs of the cluster's Nodes, in ranking
// order (candidateRefs), judged as BestFitting judges them, and why each other one does not fit.
// With GPU discovery off every candidate fits. autoApply chooses among them (Select).
func Fitting(ctx context.Context, cached, live client.Reader, cfg *v1alpha1.OperatorConfiguration, run *v1beta2.DynamoGraphDeploymentRun) (fits []*v1beta2.DynamoGraphDeploymentCandidate, unfit []string, err error) {
	err = eachFitting(ctx, cached, live, cfg, run, func(c *v1beta2.DynamoGraphDeploymentCandidate, why string) bool {
		if why != "" {
			unfit = append(unfit, c.Name+": "+why)
		} else {
			fits = append(fits, c)
		}
		return true
	})
	return fits, unfit, err
}

// eachFitting reads the candidates of run in ranking order and hands each to visit with why it
// does not fit ("" when it fits), until visit returns false.
func eachFitting(ctx context.Context, cached, live client.Reader, cfg *v1alpha1.OperatorConfiguration, run *v1beta2.DynamoGraphDeploymentRun,
	visit func(c *v1beta2.DynamoGraphDeploymentCandidate, why string) bool) error {
	judge := config.GPUDiscoveryEnabled(cfg)
	var inv gpunodes.Inventory
	if judge {
		var err error
		if inv, err = Inventory(ctx, cached); err != nil {
			return err
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
				return err
			}
			if err := live.Get(ctx, key, cand); err != nil {
				return err
			}
		}
		why := ""
		if judge {
			if needs, sku, err := gpunodes.NeedsOf(cand); err != nil {
				why = err.Error()
			} else if f := gpunodes.Fit(needs, sku, inv.Pool(sku)); !*f.Fits {
				why = f.Message
			}
		}
		if !visit(cand, why) {
			return nil
		}
	}
	return nil
}
