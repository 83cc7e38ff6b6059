package run

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/status"
	"github.com/dgdr-operator/dgdr-operator/internal/research"
)

// EventBaselineUnavailable says why a re-search Run evaluates no baseline.
const EventBaselineUnavailable = "BaselineUnavailable"

// recordBaseline records, with the re-search Run's input, the prediction input that evaluates
// the candidate deployed when the Run was created (status.aisimulate.baseline). A candidate that
// cannot be read, or that does not belong to a Run of the same request, gets no baseline: the
// search still runs, and the request's gate says BaselineUnavailable.
func (r *Reconciler) recordBaseline(ctx context.Context, run *v1beta2.DynamoGraphDeploymentRun, input *aisimulate.Input, events *status.Events) error {
	name := run.Annotations[v1beta2.AnnotationResearchBaseline]
	if name == "" {
		return nil
	}
	unavailable := func(why string) error {
		events.Warning(EventBaselineUnavailable, "Baseline", fmt.Sprintf("the deployed candidate %s is not evaluated: %s", name, why))
		return nil
	}
	cand := &v1beta2.DynamoGraphDeploymentCandidate{}
	// The cache keeps only part of a Candidate's parameters: read it whole.
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: name}, cand); err != nil {
		if apierrors.IsNotFound(err) {
			return unavailable("it does not exist")
		}
		return err
	}
	owner := metav1.GetControllerOf(cand)
	if owner == nil || owner.Kind != "DynamoGraphDeploymentRun" {
		return unavailable("it is not controlled by a Run")
	}
	src := &v1beta2.DynamoGraphDeploymentRun{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: owner.Name}, src); err != nil {
		if apierrors.IsNotFound(err) {
			return unavailable(fmt.Sprintf("its Run %s does not exist", owner.Name))
		}
		return err
	}
	req := metav1.GetControllerOf(run)
	srcReq := metav1.GetControllerOf(src)
	if src.UID != owner.UID || req == nil || srcReq == nil || srcReq.UID != req.UID {
		return unavailable(fmt.Sprintf("its Run %s is not a Run of the same request", owner.Name))
	}
	baseline, err := research.BaselineInput(cand.Spec.Parameters.Raw, input.Document)
	if err != nil {
		return unavailable(err.Error())
	}
	run.Status.AISimulate.Baseline = &v1beta2.BaselineInputStatus{
		Candidate: name,
		Input:     &runtime.RawExtension{Raw: append([]byte(nil), baseline.JSON...)},
		InputHash: baseline.Hash,
	}
	return nil
}
