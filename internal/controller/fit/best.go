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
// status); live reads a Candidate the cache does not show yet. With GPU discovery off the
// operator reads no Nodes and the best deployable candidate is returned. unfit says why each
// candidate was passed over; notDeployable counts those that are not deployable. A re-search
// compares this candidate with the deployed one.
func BestFitting(ctx context.Context, cached, live client.Reader, cfg *v1alpha1.OperatorConfiguration, run *v1beta2.DynamoGraphDeploymentRun) (best string, unfit []string, notDeployable int, err error) {
	err = eachFitting(ctx, cached, live, cfg, run, func(c *v1beta2.DynamoGraphDeploymentCandidate, why string, deployable bool) bool {
		if why != "" {
			unfit = append(unfit, c.Name+": "+why)
			if !deployable {
				notDeployable++
			}
			return true
		}
		best = c.Name
		return false
	})
	if err != nil || best != "" {
		unfit, notDeployable = nil, 0
	}
	return best, unfit, notDeployable, err
}

// Fitting returns the deployable candidates of run that fit the GPUs of the cluster's Nodes, in
// ranking order (candidateRefs), judged as BestFitting judges them, why each other one was
// passed over, and how many of those are not deployable. With GPU discovery off every
// deployable candidate fits. autoApply chooses among them (Select).
func Fitting(ctx context.Context, cached, live client.Reader, cfg *v1alpha1.OperatorConfiguration, run *v1beta2.DynamoGraphDeploymentRun) (fits []*v1beta2.DynamoGraphDeploymentCandidate, unfit []string, notDeployable int, err error) {
	err = eachFitting(ctx, cached, live, cfg, run, func(c *v1beta2.DynamoGraphDeploymentCandidate, why string, deployable bool) bool {
		switch {
		case why == "":
			fits = append(fits, c)
		case !deployable:
			unfit = append(unfit, c.Name+": "+why)
			notDeployable++
		default:
			unfit = append(unfit, c.Name+": "+why)
		}
		return true
	})
	return fits, unfit, notDeployable, err
}

// eachFitting reads the candidates of run in ranking order and hands each to visit with why it
// is passed over ("" when it fits) and whether it is deployable, until visit returns false. A
// candidate whose Deployable condition is False (NotRenderable) is passed over: the search
// identity could clear that condition, but autoApply renders the chosen candidate again and
// deploys nothing it cannot render.
func eachFitting(ctx context.Context, cached, live client.Reader, cfg *v1alpha1.OperatorConfiguration, run *v1beta2.DynamoGraphDeploymentRun,
	visit func(c *v1beta2.DynamoGraphDeploymentCandidate, why string, deployable bool) bool) error {
	judge := config.GPUDiscoveryEnabled(cfg)
	var inv gpunodes.Inventory
	if judge {
		var err error
		if inv, err = gpunodes.Read(ctx, cached); err != nil {
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
		if c := meta.FindStatusCondition(cand.Status.Conditions, v1beta2.ConditionDeployable); c != nil && c.Status == metav1.ConditionFalse {
			if !visit(cand, "not deployable ("+c.Reason+"): "+c.Message, false) {
				return nil
			}
			continue
		}
		why := ""
		if judge {
			if needs, sku, err := gpunodes.NeedsOf(cand); err != nil {
				why = err.Error()
			} else if f := gpunodes.Fit(needs, sku, inv.Pool(sku)); !*f.Fits {
				why = f.Message
			}
		}
		if !visit(cand, why, true) {
			return nil
		}
	}
	return nil
}
