// Package request reconciles a DynamoGraphDeploymentRequest's generations: every accepted spec
// generation becomes one immutable DynamoGraphDeploymentRun; a newer generation supersedes the
// active Run; terminal Runs are kept up to the configured retention. It is one of the request's
// three reconcilers, beside internal/controller/deployment (autoApply, readiness, verification,
// calibration) and internal/controller/research (re-searches), and holds what they share: the
// field-owner table of the request's status (owners.go), the request's Runs (runs.go) and what
// they read of one another (readers.go).
package request

import (
	"context"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/run"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/status"
	"github.com/dgdr-operator/dgdr-operator/internal/naming"
)

// Event reasons of requests.
const (
	EventRunCreated        = "RunCreated"
	EventRunSuperseded     = "RunSuperseded"
	EventCancelRequested   = "CancelRequested"
	EventRunDeleted        = "RunDeleted"
	EventInvalidSpec       = "InvalidSpec"
	EventRunCreationFailed = "RunCreationFailed"
)

// The request reconciler creates a Run per generation, marks an active one superseded or
// cancelled (an annotation patch) and deletes those beyond the run retention:
// +kubebuilder:rbac:groups=nvidia.com,resources=dynamographdeploymentruns,verbs=get;list;watch;create;patch;delete

// Reconciler reconciles the generations and Runs of DynamoGraphDeploymentRequests
// (RequestOwner's share of their status).
type Reconciler struct {
	Client client.Client
	// APIReader verifies an existing Run on AlreadyExists, and reads a request again when a
	// status write conflicts.
	APIReader client.Reader
	Config    *v1alpha1.OperatorConfiguration
	Recorder  recorder.EventRecorder

	// expectations skips reconciles that read a request from the cache at the version its last
	// status write was computed from (triggered by its new Run's event): they would resend the
	// same status.
	expectations status.Expectations
}

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return NewControllerManagedBy(mgr, RequestOwner, r.Config, &r.expectations).Complete(r)
}

// Reconcile: fetch, reconcile, one status write, then deletions and events.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	dgdr, err := Fetch(ctx, r.Client, req.NamespacedName, &r.expectations)
	if dgdr == nil || err != nil {
		return ctrl.Result{}, err
	}
	writer := RequestOwner.NewWriter(r.Client, r.APIReader, dgdr, &r.expectations)
	var events status.Events
	expired, err := r.reconcile(ctx, dgdr, &events)
	if _, perr := writer.Patch(ctx, dgdr); perr != nil {
		err = errors.Join(err, perr)
		events.Drop()
		expired = nil
	}
	// Expired Runs are deleted only once the status no longer lists them: a reader never sees
	// a reference to a deleted Run.
	if derr := r.deleteExpired(ctx, expired, &events); derr != nil {
		err = errors.Join(err, derr)
	}
	events.Emit(r.Recorder, dgdr)
	return ctrl.Result{}, err
}

// reconcile computes the status and returns the terminal Runs beyond the retention, which the
// caller deletes after writing the status.
func (r *Reconciler) reconcile(ctx context.Context, dgdr *v1beta2.DynamoGraphDeploymentRequest, events *status.Events) ([]*v1beta2.DynamoGraphDeploymentRun, error) {
	if dgdr.Generation > dgdr.Status.ObservedGeneration {
		if done, err := r.acceptGeneration(ctx, dgdr, events); !done || err != nil {
			return nil, err
		}
	}
	runs, err := OwnedRuns(ctx, r.Client, dgdr)
	if err != nil {
		return nil, err
	}
	if err := r.stopOldRuns(ctx, dgdr, runs, events); err != nil {
		return nil, err
	}
	return r.summarize(dgdr, runs), nil
}

// acceptGeneration creates the Run of the current generation. It returns done=false when the
// generation cannot be accepted (the Accepted condition says why).
func (r *Reconciler) acceptGeneration(ctx context.Context, dgdr *v1beta2.DynamoGraphDeploymentRequest, events *status.Events) (bool, error) {
	input, errs := aisimulate.Lower(&dgdr.Spec, aisimulate.OptionsFrom(r.Config))
	if len(errs) > 0 {
		msg := fmt.Sprintf("generation %d cannot be lowered to an AISimulate input: %v", dgdr.Generation, errs.ToAggregate())
		if setAccepted(dgdr, metav1.ConditionFalse, v1beta2.ReasonInvalidSpec, msg) {
			events.Warning(EventInvalidSpec, "Accept", msg)
		}
		return false, nil
	}
	desired, err := BuildRun(dgdr, input.Hash)
	if err != nil {
		return false, err
	}
	cached := &v1beta2.DynamoGraphDeploymentRun{}
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(desired), cached); err == nil && BelongsTo(cached, dgdr, dgdr.Generation) {
		// Created by an earlier reconcile whose status write the cache has not shown yet.
	} else if err := r.Client.Create(ctx, desired); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			msg := fmt.Sprintf("creating Run %s failed: %v; retrying", desired.Name, err)
			setAccepted(dgdr, metav1.ConditionFalse, v1beta2.ReasonRunCreationFailed, msg)
			return false, err
		}
		existing := &v1beta2.DynamoGraphDeploymentRun{}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(desired), existing); err != nil {
			return false, err
		}
		if !BelongsTo(existing, dgdr, dgdr.Generation) {
			msg := fmt.Sprintf("a Run named %s exists but belongs to another request or generation; delete it or rename the request", desired.Name)
			if setAccepted(dgdr, metav1.ConditionFalse, v1beta2.ReasonRunCreationFailed, msg) {
				events.Warning(EventRunCreationFailed, "CreateRun", msg)
			}
			return false, nil
		}
	} else {
		events.Normal(EventRunCreated, "CreateRun",
			fmt.Sprintf("created Run %s for generation %d", desired.Name, dgdr.Generation))
		log.FromContext(ctx).Info("created run", "run", desired.Name, "generation", dgdr.Generation)
	}
	dgdr.Status.ObservedGeneration = dgdr.Generation
	dgdr.Status.ActiveRunRef = &v1beta2.RunReference{Name: desired.Name}
	// Summarize the new Run right away (it starts Pending), so that its first status writes do
	// not need another write of the request's status.
	dgdr.Status.LatestRun = &v1beta2.RunSummary{Name: desired.Name, Phase: v1beta2.RunPhasePending}
	setAccepted(dgdr, metav1.ConditionTrue, v1beta2.ReasonRunCreated, fmt.Sprintf("Run %s searches generation %d", desired.Name, dgdr.Generation))
	return true, nil
}

// stopOldRuns asks the Run controller to stop Runs of older generations (Superseded) and, when
// the request carries the cancel annotation, its active Run (Cancelled).
func (r *Reconciler) stopOldRuns(ctx context.Context, dgdr *v1beta2.DynamoGraphDeploymentRequest, runs []*v1beta2.DynamoGraphDeploymentRun, events *status.Events) error {
	current := naming.RunName(dgdr.Name, dgdr.Status.ObservedGeneration)
	cancel := dgdr.Annotations[v1beta2.AnnotationCancel] == "true"
	for _, rn := range runs {
		if run.IsTerminal(rn) {
			continue
		}
		var key, value, evReason, note string
		switch {
		case rn.Name != current && GenerationOf(rn) < dgdr.Status.ObservedGeneration:
			key, value, evReason = v1beta2.AnnotationSupersededBy, current, EventRunSuperseded
			note = fmt.Sprintf("Run %s is superseded by Run %s", rn.Name, current)
		case cancel:
			key, value, evReason = v1beta2.AnnotationCancel, "true", EventCancelRequested
			note = fmt.Sprintf("cancelling Run %s as requested by the %s annotation", rn.Name, v1beta2.AnnotationCancel)
		default:
			continue
		}
		if rn.Annotations[key] == value {
			continue
		}
		patch := client.MergeFrom(rn.DeepCopy())
		if rn.Annotations == nil {
			rn.Annotations = map[string]string{}
		}
		rn.Annotations[key] = value
		if err := r.Client.Patch(ctx, rn, patch); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("marking Run %s: %w", rn.Name, err)
		}
		events.Normal(evReason, "StopRun", note)
	}
	return nil
}

// summarize sets activeRunRef, recentRunRefs and latestRun from the Runs (the re-search Runs the
// research reconciler creates included), and returns the terminal Runs beyond the retention, to
// be deleted (their Jobs, ConfigMaps and Candidates go with them).
func (r *Reconciler) summarize(dgdr *v1beta2.DynamoGraphDeploymentRequest, runs []*v1beta2.DynamoGraphDeploymentRun) []*v1beta2.DynamoGraphDeploymentRun {
	var recent []v1beta2.RunReference
	var expired []*v1beta2.DynamoGraphDeploymentRun
	retention := int(*r.Config.RunRetention)
	for _, rn := range runs { // newest generation first
		if !run.IsTerminal(rn) {
			continue
		}
		// The deployed Run stays whatever its age: its Candidate is what a re-search compares
		// with, and what verification measures.
		if d := dgdr.Status.Deployment; len(recent) < retention || (d != nil && d.Run == rn.Name) {
			recent = append(recent, v1beta2.RunReference{Name: rn.Name})
		} else {
			expired = append(expired, rn)
		}
	}
	active := ActiveRun(dgdr, runs)
	dgdr.Status.ActiveRunRef = active
	dgdr.Status.RecentRunRefs = recent
	if len(runs) > 0 && !(dgdr.Status.LatestRun != nil && active != nil && dgdr.Status.LatestRun.Name == active.Name && !slices.ContainsFunc(runs, func(rn *v1beta2.DynamoGraphDeploymentRun) bool { return rn.Name == active.Name })) {
		latest := runs[0]
		phase := latest.Status.Phase
		if phase == "" {
			phase = v1beta2.RunPhasePending // not yet reconciled by the Run controller
		}
		s := &v1beta2.RunSummary{Name: latest.Name, Phase: phase}
		if c := meta.FindStatusCondition(latest.Status.Conditions, v1beta2.ConditionCompleted); c != nil && c.Status == metav1.ConditionTrue {
			s.Reason = c.Reason
		}
		if rec := latest.Status.Recommendation; rec != nil {
			s.BestCandidate = rec.BestCandidate
		}
		dgdr.Status.LatestRun = s
	}
	return expired
}

// deleteExpired deletes the Runs beyond the retention.
func (r *Reconciler) deleteExpired(ctx context.Context, expired []*v1beta2.DynamoGraphDeploymentRun, events *status.Events) error {
	retention := int(*r.Config.RunRetention)
	for _, rn := range expired {
		err := r.Client.Delete(ctx, rn, client.PropagationPolicy(metav1.DeletePropagationBackground),
			client.Preconditions{UID: &rn.UID})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting expired Run %s: %w", rn.Name, err)
		}
		if err == nil {
			events.Normal(EventRunDeleted, "DeleteRun",
				fmt.Sprintf("deleted Run %s beyond the run retention of %d", rn.Name, retention))
		}
	}
	return nil
}

// setAccepted sets Accepted and reports whether it changed.
func setAccepted(dgdr *v1beta2.DynamoGraphDeploymentRequest, status metav1.ConditionStatus, reason, msg string) bool {
	return meta.SetStatusCondition(&dgdr.Status.Conditions, metav1.Condition{
		Type: v1beta2.ConditionAccepted, Status: status, Reason: reason, Message: msg, ObservedGeneration: dgdr.Generation,
	})
}
