// Package request is the DynamoGraphDeploymentRequest controller: every accepted spec
// generation becomes one immutable DynamoGraphDeploymentRun; a newer generation supersedes the
// active Run; terminal Runs are kept up to the configured retention.
package request

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/run"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/status"
	"github.com/dgdr-operator/dgdr-operator/internal/naming"
	"github.com/dgdr-operator/dgdr-operator/internal/research"
	"github.com/dgdr-operator/dgdr-operator/internal/version"
)

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "dgdr-request"

// Event reasons of requests.
const (
	EventRunCreated        = "RunCreated"
	EventRunSuperseded     = "RunSuperseded"
	EventCancelRequested   = "CancelRequested"
	EventRunDeleted        = "RunDeleted"
	EventInvalidSpec       = "InvalidSpec"
	EventRunCreationFailed = "RunCreationFailed"
)

// The request controller follows requests and patches their status, and follows their Runs:
// it creates one per generation, marks an active one superseded or cancelled (an annotation
// patch) and deletes those beyond the run retention:
// +kubebuilder:rbac:groups=nvidia.com,resources=dynamographdeploymentrequests,verbs=get;list;watch
// +kubebuilder:rbac:groups=nvidia.com,resources=dynamographdeploymentrequests/status,verbs=patch
// +kubebuilder:rbac:groups=nvidia.com,resources=dynamographdeploymentruns,verbs=get;list;watch;create;patch;delete
// Events on requests (Run created, superseded or deleted, invalid spec):
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// No code path calls these (status writes are merge patches of the status subresource):
// candidates for removal.
// +kubebuilder:rbac:groups=nvidia.com,resources=dynamographdeploymentrequests/status,verbs=get;update

// Reconciler reconciles DynamoGraphDeploymentRequests.
type Reconciler struct {
	Client client.Client
	// APIReader verifies an existing Run on AlreadyExists.
	APIReader client.Reader
	Config    *v1alpha1.OperatorConfiguration
	Recorder  recorder.EventRecorder
	// Now is the clock of re-search ticks (time.Now when nil).
	Now func() time.Time

	// expectations skips reconciles that read a request from the cache at the version its last
	// status write was computed from (triggered by its new Run's event): they would resend the
	// same status.
	expectations status.Expectations
	// verificationStarts holds since when each request's verification pod has had a given
	// container unable to start (podstart.Due).
	verificationStarts status.Sightings
}

// runControllerUIDIndex indexes cached Runs by the UID of their controlling owner (the
// request), so a reconcile finds a request's Runs without scanning its namespace's Runs: with
// a label selector the cache filters every Run of the namespace, which made a burst of n
// requests in one namespace cost O(n²) (docs/develop/performance.md, P3).
const runControllerUIDIndex = "dgdr.nvidia.com/controller-uid"

func runControllerUID(o client.Object) []string {
	if ref := metav1.GetControllerOf(o); ref != nil {
		return []string{string(ref.UID)}
	}
	return nil
}

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1beta2.DynamoGraphDeploymentRun{}, runControllerUIDIndex, runControllerUID); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: status.Workers(r.Config.Concurrency.Requests)}).
		For(&v1beta2.DynamoGraphDeploymentRequest{}, builder.WithPredicates(predicate.NewPredicateFuncs(isV1Beta2Native))).
		Owns(&v1beta2.DynamoGraphDeploymentRun{}).
		// A verification Job's end is what its request waits for, or its pod failing to start.
		Owns(&batchv1.Job{}).
		Watches(verificationPodWatch()).
		// autoApply waits for the Dynamo platform's CRD when the cluster lacks it.
		Watches(DGDCRDObject(), handler.EnqueueRequestsFromMapFunc(r.awaitingDGDCRD), builder.WithPredicates(dgdCRDEstablished)).
		Complete(r)
}

// isV1Beta2Native selects the requests this controller owns: those created through v1beta2.
func isV1Beta2Native(o client.Object) bool {
	dgdr, ok := o.(*v1beta2.DynamoGraphDeploymentRequest)
	return ok && !dgdr.IsV1Beta1Native()
}

// Reconcile: fetch, reconcile, one status write, then events.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	dgdr := &v1beta2.DynamoGraphDeploymentRequest{}
	if err := r.Client.Get(ctx, req.NamespacedName, dgdr); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !r.expectations.Satisfied(dgdr) {
		return ctrl.Result{}, nil // the cache lags behind our own status write; its event follows
	}
	// A request created through v1beta1 belongs to the Dynamo operator (docs/operate/coexistence.md):
	// it is never searched and its status is never written here.
	if !dgdr.DeletionTimestamp.IsZero() || dgdr.IsV1Beta1Native() {
		return ctrl.Result{}, nil
	}
	writer := status.NewWriter(r.Client, dgdr, &r.expectations)
	var events status.Events
	expired, requeue, err := r.reconcile(ctx, dgdr, &events)
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
	return ctrl.Result{RequeueAfter: requeue}, err
}

// reconcile computes the status and returns the terminal Runs beyond the retention, which the
// caller deletes after writing the status, and when autoApply wants to look again.
func (r *Reconciler) reconcile(ctx context.Context, dgdr *v1beta2.DynamoGraphDeploymentRequest, events *status.Events) ([]*v1beta2.DynamoGraphDeploymentRun, time.Duration, error) {
	if dgdr.Generation > dgdr.Status.ObservedGeneration {
		if done, err := r.acceptGeneration(ctx, dgdr, events); !done || err != nil {
			return nil, 0, err
		}
	}
	runs, err := r.ownedRuns(ctx, dgdr)
	if err != nil {
		return nil, 0, err
	}
	if err := r.stopOldRuns(ctx, dgdr, runs, events); err != nil {
		return nil, 0, err
	}
	expired := r.summarize(dgdr, runs)
	if err := r.decideResearch(ctx, dgdr, runs, events); err != nil {
		return expired, 0, err
	}
	requeue, err := r.autoApply(ctx, dgdr, runs, events)
	if err != nil {
		return expired, requeue, err
	}
	next, err := r.tick(ctx, dgdr, runs, events)
	if next > 0 && (requeue == 0 || next < requeue) {
		requeue = next
	}
	return expired, requeue, err
}

// acceptGeneration creates the Run of the current generation. It returns done=false when the
// generation cannot be accepted (the Accepted condition says why).
func (r *Reconciler) acceptGeneration(ctx context.Context, dgdr *v1beta2.DynamoGraphDeploymentRequest, events *status.Events) (bool, error) {
	input, errs := aisimulate.Lower(&dgdr.Spec, aisimulate.OptionsFrom(r.Config))
	if len(errs) > 0 {
		msg := fmt.Sprintf("generation %d cannot be lowered to an AISimulate input: %v", dgdr.Generation, errs.ToAggregate())
		if setCondition(dgdr, metav1.ConditionFalse, v1beta2.ReasonInvalidSpec, msg) {
			events.Warning(EventInvalidSpec, "Accept", msg)
		}
		return false, nil
	}
	desired, err := BuildRun(dgdr, input.Hash)
	if err != nil {
		return false, err
	}
	cached := &v1beta2.DynamoGraphDeploymentRun{}
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(desired), cached); err == nil && belongsTo(cached, dgdr, dgdr.Generation) {
		// Created by an earlier reconcile whose status write the cache has not shown yet.
	} else if err := r.Client.Create(ctx, desired); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			msg := fmt.Sprintf("creating Run %s failed: %v; retrying", desired.Name, err)
			setCondition(dgdr, metav1.ConditionFalse, v1beta2.ReasonRunCreationFailed, msg)
			return false, err
		}
		existing := &v1beta2.DynamoGraphDeploymentRun{}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(desired), existing); err != nil {
			return false, err
		}
		if !belongsTo(existing, dgdr, dgdr.Generation) {
			msg := fmt.Sprintf("a Run named %s exists but belongs to another request or generation; delete it or rename the request", desired.Name)
			if setCondition(dgdr, metav1.ConditionFalse, v1beta2.ReasonRunCreationFailed, msg) {
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
	setCondition(dgdr, metav1.ConditionTrue, v1beta2.ReasonRunCreated, fmt.Sprintf("Run %s searches generation %d", desired.Name, dgdr.Generation))
	return true, nil
}

// BuildRun returns the Run of the request's current generation: deterministic name, controller
// owner reference, labels and annotations identifying the request, and spec = exact copy.
func BuildRun(dgdr *v1beta2.DynamoGraphDeploymentRequest, inputHash string) (*v1beta2.DynamoGraphDeploymentRun, error) {
	specHash, err := SpecHash(&dgdr.Spec)
	if err != nil {
		return nil, err
	}
	labels := map[string]string{
		v1beta2.LabelRequestName:       dgdr.Name,
		v1beta2.LabelRequestUID:        string(dgdr.UID),
		v1beta2.LabelRequestGeneration: strconv.FormatInt(dgdr.Generation, 10),
	}
	if q := dgdr.Labels[v1beta2.LabelKueueQueueName]; q != "" {
		labels[v1beta2.LabelKueueQueueName] = q
	}
	return &v1beta2.DynamoGraphDeploymentRun{
		ObjectMeta: metav1.ObjectMeta{
			Name:      naming.RunName(dgdr.Name, dgdr.Generation),
			Namespace: dgdr.Namespace,
			Labels:    labels,
			Annotations: map[string]string{
				v1beta2.AnnotationSpecHash:        specHash,
				v1beta2.AnnotationInputHash:       inputHash,
				v1beta2.AnnotationOperatorVersion: version.Get().Version,
			},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(dgdr, v1beta2.GroupVersion.WithKind("DynamoGraphDeploymentRequest"))},
		},
		Spec: *dgdr.Spec.DeepCopy(),
	}, nil
}

// SpecHash is "sha256:<hex>" of the JSON encoding of an accepted spec.
func SpecHash(spec *v1beta2.DynamoGraphDeploymentRequestSpec) (string, error) {
	data, err := json.Marshal(spec)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

func belongsTo(r *v1beta2.DynamoGraphDeploymentRun, dgdr *v1beta2.DynamoGraphDeploymentRequest, generation int64) bool {
	return r.Labels[v1beta2.LabelRequestUID] == string(dgdr.UID) &&
		r.Labels[v1beta2.LabelRequestGeneration] == strconv.FormatInt(generation, 10)
}

// generationOf is the request generation a Run was created for.
func generationOf(r *v1beta2.DynamoGraphDeploymentRun) int64 {
	g, _ := strconv.ParseInt(r.Labels[v1beta2.LabelRequestGeneration], 10, 64)
	return g
}

// ownedRuns lists the request's Runs, newest generation first; within a generation its
// re-search Runs come first, newest window first, then the generation's own Run.
func (r *Reconciler) ownedRuns(ctx context.Context, dgdr *v1beta2.DynamoGraphDeploymentRequest) ([]*v1beta2.DynamoGraphDeploymentRun, error) {
	var list v1beta2.DynamoGraphDeploymentRunList
	if err := r.Client.List(ctx, &list, client.InNamespace(dgdr.Namespace),
		client.MatchingFields{runControllerUIDIndex: string(dgdr.UID)}); err != nil {
		return nil, err
	}
	runs := make([]*v1beta2.DynamoGraphDeploymentRun, 0, len(list.Items))
	for i := range list.Items {
		if metav1.IsControlledBy(&list.Items[i], dgdr) {
			runs = append(runs, &list.Items[i])
		}
	}
	slices.SortFunc(runs, func(a, b *v1beta2.DynamoGraphDeploymentRun) int {
		if c := cmp.Compare(generationOf(b), generationOf(a)); c != 0 {
			return c
		}
		ea, _ := research.WindowEnd(a)
		eb, _ := research.WindowEnd(b)
		return eb.Compare(ea)
	})
	return runs, nil
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
		case rn.Name != current && generationOf(rn) < dgdr.Status.ObservedGeneration:
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

// summarize sets activeRunRef, recentRunRefs and latestRun from the Runs, and returns the
// terminal Runs beyond the retention, to be deleted (their Jobs, ConfigMaps and Candidates go
// with them).
func (r *Reconciler) summarize(dgdr *v1beta2.DynamoGraphDeploymentRequest, runs []*v1beta2.DynamoGraphDeploymentRun) []*v1beta2.DynamoGraphDeploymentRun {
	current := naming.RunName(dgdr.Name, dgdr.Status.ObservedGeneration)
	var active *v1beta2.RunReference
	var recent []v1beta2.RunReference
	var expired []*v1beta2.DynamoGraphDeploymentRun
	retention := int(*r.Config.RunRetention)
	for _, rn := range runs { // newest generation first
		if !run.IsTerminal(rn) {
			if generationOf(rn) == dgdr.Status.ObservedGeneration && active == nil {
				active = &v1beta2.RunReference{Name: rn.Name}
			}
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
	if active == nil && dgdr.Status.ActiveRunRef != nil && !slices.ContainsFunc(runs, func(rn *v1beta2.DynamoGraphDeploymentRun) bool { return rn.Name == dgdr.Status.ActiveRunRef.Name }) &&
		(dgdr.Status.ActiveRunRef.Name == current || naming.IsResearchRunName(dgdr.Status.ActiveRunRef.Name, dgdr.Name, dgdr.Status.ObservedGeneration)) {
		// The cache has not seen the Run created a moment ago: keep pointing at it.
		active = dgdr.Status.ActiveRunRef
	}
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

// setCondition sets Accepted and reports whether it changed.
func setCondition(dgdr *v1beta2.DynamoGraphDeploymentRequest, status metav1.ConditionStatus, reason, msg string) bool {
	return meta.SetStatusCondition(&dgdr.Status.Conditions, metav1.Condition{
		Type: v1beta2.ConditionAccepted, Status: status, Reason: reason, Message: msg, ObservedGeneration: dgdr.Generation,
	})
}
