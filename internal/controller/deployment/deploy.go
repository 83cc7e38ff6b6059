package deployment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/candidates"
	"github.com/dgdr-operator/dgdr-operator/internal/config"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/fit"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/request"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/run"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/status"
	"github.com/dgdr-operator/dgdr-operator/internal/naming"
	"github.com/dgdr-operator/dgdr-operator/internal/promote"
	"github.com/dgdr-operator/dgdr-operator/internal/render"
	"github.com/dgdr-operator/dgdr-operator/internal/research"
)

// autoApply reads the best Candidate, creates or updates its DynamoGraphDeployment (it never
// deletes one) and reads the deployment's readiness:
// +kubebuilder:rbac:groups=nvidia.com,resources=dynamographdeployments,verbs=get;create;update
// +kubebuilder:rbac:groups=nvidia.com,resources=dynamographdeploymentcandidates,verbs=get;list;watch

// Event reasons of autoApply.
const (
	EventDeployed         = "Deployed"
	EventDeployConflict   = "DeployConflict"
	EventDeploymentReady  = "DeploymentReady"
	EventDeployCRDMissing = "DeployCRDMissing"
)

// deploymentName is spec.deployment.name, or the request's name (admission materializes it;
// requests stored before the field existed fall back here).
func deploymentName(dgdr *v1beta2.DynamoGraphDeploymentRequest) string {
	if d := dgdr.Spec.Deployment; d != nil && d.Name != "" {
		return d.Name
	}
	return dgdr.Name
}

// autoApply deploys the best candidate of the current generation's successful Run (through
// promote, the code path of dgdrctl promote), and mirrors the deployment's readiness into the
// Deployed condition. It returns when to look again (0: only on the next event), and the
// deployment when it is ready.
func (r *Reconciler) autoApply(ctx context.Context, dgdr *v1beta2.DynamoGraphDeploymentRequest, runs []*v1beta2.DynamoGraphDeploymentRun, events *status.Events) (time.Duration, *unstructured.Unstructured, error) {
	if !r.Config.AutoApply.Enabled {
		r.setDeployed(dgdr, metav1.ConditionFalse, v1beta2.ReasonAutoApplyDisabled,
			"autoApply is disabled in the operator's configuration (autoApply.enabled); nothing is deployed: deploy a candidate with dgdrctl promote", events)
		return 0, nil, nil
	}
	name := deploymentName(dgdr)
	src := succeededCurrentRun(dgdr, runs)
	deployed := dgdr.Status.Deployment
	// A Run deploys once: the candidate chosen stays when Nodes change later.
	if src != nil && (deployed == nil || deployed.Name != name || deployed.Run != src.Name) {
		return r.deploy(ctx, dgdr, src, name, events)
	}
	if deployed == nil || deployed.Name != name {
		msg := fmt.Sprintf("nothing deployed yet: waiting for the search of generation %d (Run %s) to succeed",
			dgdr.Status.ObservedGeneration, naming.RunName(dgdr.Name, dgdr.Status.ObservedGeneration))
		r.setDeployed(dgdr, metav1.ConditionFalse, v1beta2.ReasonAwaitingResult, msg, events)
		return 0, nil, nil
	}
	return r.followReadiness(ctx, dgdr, events)
}

// succeededCurrentRun is the newest Run of the current generation that succeeded with a best
// candidate and may deploy: the generation's own Run, or a re-search Run whose comparison with
// the deployed candidate decided to replace it (its decision in status.research, the research
// reconciler's). Older generations never deploy: their results are superseded.
func succeededCurrentRun(dgdr *v1beta2.DynamoGraphDeploymentRequest, runs []*v1beta2.DynamoGraphDeploymentRun) *v1beta2.DynamoGraphDeploymentRun {
	current := naming.RunName(dgdr.Name, dgdr.Status.ObservedGeneration)
	for _, rn := range runs { // newest first
		if request.GenerationOf(rn) != dgdr.Status.ObservedGeneration || !run.IsTerminal(rn) {
			continue
		}
		if rn.Name != current && !(research.IsRun(rn) && request.Replaces(dgdr, rn.Name)) {
			continue
		}
		c := meta.FindStatusCondition(rn.Status.Conditions, v1beta2.ConditionCompleted)
		if c.Reason == v1beta2.ReasonSucceeded && rn.Status.Recommendation != nil && rn.Status.Recommendation.BestCandidate != "" {
			return rn
		}
	}
	return nil
}

// deploy renders the candidate of the Run that spec.deployment.selection chooses among those
// that fit the cluster (fit.Select) and creates or updates the deployment.
func (r *Reconciler) deploy(ctx context.Context, dgdr *v1beta2.DynamoGraphDeploymentRequest, src *v1beta2.DynamoGraphDeploymentRun, name string, events *status.Events) (time.Duration, *unstructured.Unstructured, error) {
	// The cache keeps no spec or candidate list of a terminal Run (stripTerminalRun): read it
	// whole, as rarely as the Candidate.
	full := &v1beta2.DynamoGraphDeploymentRun{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(src), full); err != nil || full.UID != src.UID {
		if err == nil {
			err = fmt.Errorf("the Run %s was replaced", src.Name)
		}
		r.setDeployed(dgdr, metav1.ConditionFalse, v1beta2.ReasonDeploymentFailed, fmt.Sprintf("reading Run %s: %v", src.Name, err), events)
		return 0, nil, err
	}
	fits, unfit, notDeployable, err := fit.Fitting(ctx, r.Client, r.APIReader, r.Config, full)
	if err != nil {
		r.setDeployed(dgdr, metav1.ConditionFalse, v1beta2.ReasonDeploymentFailed, fmt.Sprintf("judging the fit of the candidates of Run %s: %v", src.Name, err), events)
		return 0, nil, err
	}
	if len(fits) == 0 && notDeployable > 0 && notDeployable == len(unfit) {
		msg := status.Truncate(fmt.Sprintf("no candidate of Run %s is deployable; nothing is deployed: its search predicted settings the renderer cannot deploy (remove them from spec.aisimulate.inputOverrides): %s",
			src.Name, strings.Join(unfit, "; ")), 1024)
		r.setDeployed(dgdr, metav1.ConditionFalse, v1beta2.ReasonNotRenderable, msg, events)
		return deployPollSettled, nil, nil
	}
	if len(fits) == 0 {
		msg := fmt.Sprintf("no candidate of Run %s fits the cluster's GPU Nodes (%s); nothing is deployed: add Nodes, or search again with a smaller spec.hardware.gpu.budget",
			src.Name, strings.Join(unfit, "; "))
		r.setDeployed(dgdr, metav1.ConditionFalse, v1beta2.ReasonNoCandidateFits, msg, events)
		return deployPollSettled, nil, nil
	}
	// The tolerance is the Run's generation's (the cache keeps no spec.deployment.selection of an
	// accepted request).
	written, tolerance, err := fit.Tolerance(&full.Spec)
	if err != nil {
		r.setDeployed(dgdr, metav1.ConditionFalse, v1beta2.ReasonDeploymentFailed, err.Error(), events)
		return deployPollSettled, nil, nil
	}
	selection := fit.Select(fits, written, tolerance, candidates.Pareto(&full.Spec))
	best := selection.Chosen
	cand := &v1beta2.DynamoGraphDeploymentCandidate{}
	// The cache keeps only the engine's hardware of a Candidate's parameters: read it whole.
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: dgdr.Namespace, Name: best}, cand); err != nil {
		r.setDeployed(dgdr, metav1.ConditionFalse, v1beta2.ReasonDeploymentFailed, fmt.Sprintf("reading the best candidate %s of Run %s: %v", best, src.Name, err), events)
		return 0, nil, err
	}
	if !metav1.IsControlledBy(cand, src) {
		msg := fmt.Sprintf("candidate %s is not controlled by Run %s; it is not deployed", best, src.Name)
		r.setDeployed(dgdr, metav1.ConditionFalse, v1beta2.ReasonDeploymentFailed, msg, events)
		return deployPollSettled, nil, nil
	}
	// The Candidate was written by a search identity, whose pod runs the search image: only
	// what the operator's own renderer makes of its parameters is deployed.
	if msg := r.reproduce(full, cand); msg != "" {
		r.setDeployed(dgdr, metav1.ConditionFalse, v1beta2.ReasonCandidateNotReproduced, msg, events)
		return deployPollSettled, nil, nil
	}
	owner := &promote.Owner{RequestUID: dgdr.UID, RequestName: dgdr.Name, Generation: request.GenerationOf(src)}
	obj, err := promote.Render(cand, name, owner)
	if err != nil {
		r.setDeployed(dgdr, metav1.ConditionFalse, v1beta2.ReasonDeploymentFailed, err.Error(), events)
		return deployPollSettled, nil, nil
	}
	result, err := promote.Apply(ctx, r.Client, obj, owner)
	var conflict *promote.ConflictError
	switch {
	case errors.As(err, &conflict):
		r.setDeployed(dgdr, metav1.ConditionFalse, v1beta2.ReasonDeploymentConflict, conflict.Error()+"; set spec.deployment.name to another name, or delete it", events)
		return deployPollSettled, nil, nil
	case errors.Is(err, promote.ErrCRDMissing):
		r.setDeployed(dgdr, metav1.ConditionFalse, v1beta2.ReasonDeploymentCRDMissing, promote.ErrCRDMissing.Error()+"; autoApply deploys once its CRD ("+DGDCRDName+") is established", events)
		return deployPollMissingCRD, nil, nil
	case err != nil:
		r.setDeployed(dgdr, metav1.ConditionFalse, v1beta2.ReasonDeploymentFailed, err.Error(), events)
		return 0, nil, err
	}
	dgdr.Status.Deployment = &v1beta2.DeploymentStatus{Name: name, Run: src.Name, Candidate: best, Selection: &selection}
	if result != promote.Unchanged {
		events.Normal(EventDeployed, "Deploy",
			fmt.Sprintf("%s DynamoGraphDeployment %s from candidate %s of Run %s: %s", result, name, best, src.Name, selection.Reason))
	}
	return r.followReadiness(ctx, dgdr, events)
}

// reproduce renders the Candidate again from its recorded parameters (spec.parameters) and the
// Run's spec, with the operator's configuration, as the reporter rendered it
// (render.RunOptions), and compares the result with the stored spec.graphDeployment. It returns
// "" when they are the same, and otherwise a message saying why the Candidate is not deployed.
func (r *Reconciler) reproduce(src *v1beta2.DynamoGraphDeploymentRun, cand *v1beta2.DynamoGraphDeploymentCandidate) string {
	refuse := func(why string) string {
		return fmt.Sprintf("candidate %s of Run %s is not deployed: %s; autoApply deploys only what the operator renders from a candidate's parameters (promote it by hand after reviewing it, or create a new request generation)",
			cand.Name, src.Name, why)
	}
	var params map[string]any
	if err := json.Unmarshal(cand.Spec.Parameters.Raw, &params); err != nil || params == nil {
		return refuse("its spec.parameters is not an object")
	}
	// The search Job's reporter renders with the same configuration values (BuildJob: its
	// runtime-images and planner-image environment, and the default --gpus-per-node).
	dgd, _, err := render.Render(params, render.RunOptions(src, cand.Name, config.RuntimeImageRefs(r.Config.RuntimeImages), render.DefaultGPUsPerNode, r.Config.Planner.Image))
	if err != nil {
		return refuse(fmt.Sprintf("rendering its parameters failed: %v", err))
	}
	want, err := normalizedJSON(dgd)
	if err != nil {
		return refuse(err.Error())
	}
	var stored any
	if err := json.Unmarshal(cand.Spec.GraphDeployment.Raw, &stored); err != nil {
		return refuse("its spec.graphDeployment is not JSON")
	}
	if !equality.Semantic.DeepEqual(withoutNulls(want), withoutNulls(stored)) {
		return refuse("its spec.graphDeployment differs from the rendering of its spec.parameters (altered after the search rendered it, or the operator's runtime images changed since)")
	}
	return ""
}

// normalizedJSON is v as decoded JSON (maps, slices, float64), comparable with a stored document.
func normalizedJSON(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	return out, json.Unmarshal(data, &out)
}

// withoutNulls drops the null members of every object in v: the API server may drop them from
// a stored document (creationTimestamp: null), and they mean the same as absent ones.
func withoutNulls(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			if e != nil {
				out[k] = withoutNulls(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = withoutNulls(e)
		}
		return out
	}
	return v
}
