// Package run is the DynamoGraphDeploymentRun controller: it lowers the Run's immutable spec
// into the effective AISimulate input (recorded once in status.aisimulate, from where the Job's
// input init container reads it), creates the search Job (and a re-search's baseline Job), and
// derives the terminal Completed condition from the Jobs and the search container's exit code.
//
// Status ownership: this controller writes phase, message, aisimulate, pricing, calibration,
// jobRef, baselineJobRef, startTime, completionTime and conditions; the reporter inside the
// search Job writes progress, lastProgressTime, candidateRefs, recommendation and artifacts, the
// reporter inside the baseline Job writes baseline (this controller writes it only when the
// baseline Job ended without it). Both use JSON merge patches of only the fields they own.
package run

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/calibration"
	"github.com/dgdr-operator/dgdr-operator/internal/config"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/jobcache"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/podstart"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/slotqueue"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/status"
	"github.com/dgdr-operator/dgdr-operator/internal/metrics"
	"github.com/dgdr-operator/dgdr-operator/internal/naming"
	"github.com/dgdr-operator/dgdr-operator/internal/research"
)

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "dgdr-run"

// Event reasons of Runs.
const (
	EventCompleted  = "Completed"
	EventFailed     = "Failed"
	EventCancelled  = "Cancelled"
	EventSuperseded = "Superseded"
	EventQueued     = "Queued"
)

// The Run controller follows Runs and patches their status, runs each search as a Job owned by
// its Run (cached by label), and reads the Job's pods to tell why a search did not start or how
// it ended (the reporter Role grants the same pod rights):
// +kubebuilder:rbac:groups=nvidia.com,resources=dynamographdeploymentruns,verbs=get;list;watch
// +kubebuilder:rbac:groups=nvidia.com,resources=dynamographdeploymentruns/status,verbs=patch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// It reads a re-search's baseline Candidate; creating and deleting Candidates and updating their
// status it holds only to grant them to the reporter Role (RBAC lets it grant nothing it does
// not hold):
// +kubebuilder:rbac:groups=nvidia.com,resources=dynamographdeploymentcandidates,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=nvidia.com,resources=dynamographdeploymentcandidates/status,verbs=update
// Each Run's search identity: a ServiceAccount and a RoleBinding to the namespace's reporter
// Role, which it creates and repairs when edited (cached by label); both are deleted when the
// Run ends:
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;create;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=rolebindings,verbs=get;create;delete
// Children carry blockOwnerDeletion, which OwnerReferencesPermissionEnforcement allows only to
// those who may update the owner's finalizers:
// +kubebuilder:rbac:groups=nvidia.com,resources=dynamographdeploymentruns/finalizers;dynamographdeploymentrequests/finalizers,verbs=update
// Events on Runs (queued, completed, failed, cancelled, superseded):
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// No code path calls these (status writes are merge patches of the status subresource):
// candidates for removal.
// +kubebuilder:rbac:groups=nvidia.com,resources=dynamographdeploymentruns,verbs=update
// +kubebuilder:rbac:groups=nvidia.com,resources=dynamographdeploymentruns/status,verbs=get;update
// +kubebuilder:rbac:groups=nvidia.com,resources=dynamographdeploymentcandidates/status,verbs=get

// Reconciler reconciles DynamoGraphDeploymentRuns.
type Reconciler struct {
	Client client.Client
	// expectations skips reconciles that read a Run from the cache at the version its last
	// status write was computed from (typically the one the new Job's event triggers right
	// after the write): they would recompute and resend what was just written. Terminal writes
	// count too: a Run ended after its Job was deleted (checkStart) must not be reconciled from
	// a cache that already misses the Job but still shows the Run running.
	expectations status.Expectations
	// startFailures holds since when each Run's search pod has had a given container unable to
	// start (checkStart).
	startFailures status.Sightings
	// stops holds since when each stopped Run has waited for its search pod (stoppingSearch).
	stops status.Sightings

	// slotQueue holds the Runs waiting for a search slot (slotqueue); see slots.
	slotQueue     *slotqueue.Queue
	slotQueueOnce sync.Once

	// APIReader reads around the cache where a stale read would be wrong (AlreadyExists
	// checks, the reporter Role). Slot accounting never reads through it (slotqueue).
	APIReader client.Reader
	Config    *v1alpha1.OperatorConfiguration
	Recorder  recorder.EventRecorder
	// Now is the clock; defaults to time.Now.
	Now func() time.Time
}

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Now == nil {
		r.Now = time.Now
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: status.Workers(r.Config.Concurrency.Runs)}).
		For(&v1beta2.DynamoGraphDeploymentRun{}).
		Owns(&batchv1.Job{}).
		// A search pod that cannot start ends its Run (checkStart); the Job says nothing then.
		Watches(podWatch()).
		// The slot queue (slotqueue) follows the Run informer; a Run that ends or goes away
		// wakes only the waiting Runs that may now start.
		Watches(&v1beta2.DynamoGraphDeploymentRun{}, slotqueue.Handler(r.slots(), describeSlotRun)).
		Watches(&v1beta2.DynamoGraphDeploymentRun{}, status.ForgetOnDelete(&r.expectations, &r.startFailures, &r.stops)).
		Complete(r)
}

// Reconcile drives one Run: guards, then reconcile, then one status write, then events.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	run := &v1beta2.DynamoGraphDeploymentRun{}
	if err := r.Client.Get(ctx, req.NamespacedName, run); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !r.expectations.Satisfied(run) {
		return ctrl.Result{}, nil // the cache lags behind our own status write; its event follows
	}
	if IsTerminal(run) || !run.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	writer := status.NewWriter(r.Client, run, &r.expectations)
	var events status.Events
	res, err := r.reconcile(ctx, run, &events)
	if err == nil && IsTerminal(run) {
		// The search identity ends with its search, before the Run says so: a terminal Run
		// never has one (docs/operate/security.md); a baseline still running would compare with
		// nothing. Reconcile returns early for terminal Runs, so this runs once per Run, when it
		// ends (again only if the status write fails).
		if err := r.stopBaseline(ctx, run); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.deleteSearchIdentity(ctx, run); err != nil {
			return ctrl.Result{}, err
		}
	}
	if _, perr := writer.Patch(ctx, run); perr != nil {
		err = errors.Join(err, perr)
	}
	if err != nil {
		return ctrl.Result{}, err // the queued events are dropped: the retry decides again
	}
	events.Emit(r.Recorder, run)
	if IsTerminal(run) {
		reason := meta.FindStatusCondition(run.Status.Conditions, v1beta2.ConditionCompleted).Reason
		metrics.ObserveCompletion(reason, run.Status.CompletionTime.Sub(run.CreationTimestamp.Time))
		log.FromContext(ctx).Info("run completed", "reason", reason, "message", run.Status.Message)
	}
	return res, nil
}

// IsTerminal tells whether a Run's Completed condition is True.
func IsTerminal(run *v1beta2.DynamoGraphDeploymentRun) bool {
	return meta.IsStatusConditionTrue(run.Status.Conditions, v1beta2.ConditionCompleted)
}

// stopRequest returns the reason and message when the Run must be stopped (cancelled or
// superseded), or "".
func stopRequest(run *v1beta2.DynamoGraphDeploymentRun) (string, string) {
	if run.Annotations[v1beta2.AnnotationCancel] == "true" {
		return v1beta2.ReasonCancelled, "cancelled by the " + v1beta2.AnnotationCancel + " annotation; published candidates are kept"
	}
	if by := run.Annotations[v1beta2.AnnotationSupersededBy]; by != "" {
		return v1beta2.ReasonSuperseded, fmt.Sprintf("superseded by Run %s of a newer request generation; published candidates are kept", by)
	}
	return "", ""
}

// reconcile computes the Run's status: a stopped Run stops its search and ends; otherwise its
// input is recorded, its search Job created and followed until the search ends, and a re-search
// whose search succeeded (Searched) then waits for its baseline before it ends.
func (r *Reconciler) reconcile(ctx context.Context, run *v1beta2.DynamoGraphDeploymentRun, events *status.Events) (ctrl.Result, error) {
	if reason, msg := stopRequest(run); reason != "" {
		return r.stop(ctx, run, &Completion{Reason: reason, Message: msg}, events)
	}
	input, err := r.recordInput(ctx, run, events)
	if err != nil || input == nil {
		return ctrl.Result{}, err
	}
	if c := meta.FindStatusCondition(run.Status.Conditions, v1beta2.ConditionSearched); c != nil {
		return r.awaitBaseline(ctx, run, &Completion{Reason: c.Reason, Message: c.Message}, events)
	}
	job, res, err := r.searchJob(ctx, run, input, events)
	if job == nil || err != nil {
		return res, err
	}
	return r.track(ctx, run, job, events)
}

// stop ends a cancelled or superseded Run once its search is stopped (stoppingSearch).
func (r *Reconciler) stop(ctx context.Context, run *v1beta2.DynamoGraphDeploymentRun, c *Completion, events *status.Events) (ctrl.Result, error) {
	if err := r.deleteJob(ctx, run); err != nil {
		return ctrl.Result{}, err
	}
	if wait, err := r.stoppingSearch(ctx, run); err != nil || wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, err
	}
	r.stops.Forget(run.UID)
	r.setTerminal(run, c, events)
	return ctrl.Result{}, nil
}

// recordInput returns the Run's effective input, lowering and recording it (with the
// calibration in effect, and a re-search's baseline input) the first time; nil when the spec
// cannot be lowered, which ends the Run.
func (r *Reconciler) recordInput(ctx context.Context, run *v1beta2.DynamoGraphDeploymentRun, events *status.Events) (*aisimulate.Input, error) {
	a := run.Status.AISimulate
	fresh := a == nil || a.Input == nil || len(a.Input.Raw) == 0
	var profiles *calibration.Profiles
	if fresh {
		// Read before the effective input is recorded, with it in the same status write; a
		// failed read is retried rather than recorded as "no corrections". The Run's namespace's
		// profile, and the trusted namespaces' (the cluster profile): never another tenant's.
		ps, err := calibration.LoadFor(ctx, r.APIReader, run.Namespace, r.Config.Calibration.TrustedNamespaces)
		if err != nil && !errors.Is(err, calibration.ErrInvalidProfile) {
			return nil, err
		}
		if err != nil {
			// A damaged profile must not stop searches: the others are used.
			log.FromContext(ctx).Error(err, "a calibration profile is not used")
		}
		profiles = &ps
	}
	input, err := r.effectiveInput(run, profiles)
	if err != nil {
		r.setTerminal(run, &Completion{Reason: v1beta2.ReasonInvalidInput, Message: err.Error()}, events)
		return nil, nil
	}
	if fresh && research.IsRun(run) {
		if err := r.recordBaseline(ctx, run, input, events); err != nil {
			return nil, err
		}
	}
	return input, nil
}

// searchJob returns the Run's search Job to track, creating it when the Run has none yet
// (startSearch); nil when the Run ended or must wait (res says when to look again).
func (r *Reconciler) searchJob(ctx context.Context, run *v1beta2.DynamoGraphDeploymentRun, input *aisimulate.Input, events *status.Events) (*batchv1.Job, ctrl.Result, error) {
	key := types.NamespacedName{Namespace: run.Namespace, Name: naming.JobName(run.Name)}
	job := &batchv1.Job{}
	err := r.Client.Get(ctx, key, job)
	live := false // job is the API server's copy, not the cache's
	if apierrors.IsNotFound(err) && run.Status.JobRef != nil {
		// The Job was created: the cache holds it no more once it succeeded (jobcache), or not
		// yet when it was created a moment ago. The API server's copy is tracked once settled.
		if err = r.APIReader.Get(ctx, key, job); err == nil && !jobcache.Settled(job) {
			return nil, ctrl.Result{RequeueAfter: jobcache.Poll}, nil
		}
		live = err == nil
	}
	switch {
	case apierrors.IsNotFound(err) && run.Status.JobRef != nil:
		r.setTerminal(run, &Completion{Reason: v1beta2.ReasonSearchFailed, Message: fmt.Sprintf(
			"the search Job %s was deleted before the Run completed; create a new request generation to search again", run.Status.JobRef.Name)}, events)
		return nil, ctrl.Result{}, nil
	case apierrors.IsNotFound(err):
		if o := Preflight(input.Document, aisimulate.CapsFrom(r.Config.Limits)); o != nil {
			r.setTerminal(run, o, events)
			return nil, ctrl.Result{}, nil
		}
		return r.startSearch(ctx, run, events)
	case err != nil:
		return nil, ctrl.Result{}, err
	}
	if !ownedExactly(job, run) {
		// The cache may still hold a Job deleted a moment ago: that of a Run of the same name
		// that was replaced (a request deletes a Run it did not record in the foreground, so its
		// Job is gone before the new Run exists, but the Job informer may not have seen it).
		current := job
		if !live {
			current = &batchv1.Job{}
			if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(job), current); apierrors.IsNotFound(err) {
				return nil, ctrl.Result{RequeueAfter: time.Second}, nil
			} else if err != nil {
				return nil, ctrl.Result{}, err
			}
		}
		if !ownedExactly(current, run) {
			r.setTerminal(run, foreignObject("Job", current, "it is not tracked as the search"), events)
			return nil, ctrl.Result{}, nil
		}
	}
	// The Job the operator created is recorded in status.jobRef by the same reconcile. An owner
	// reference proves nothing by itself (whoever creates an object writes them): a Job that
	// replaced the recorded one is not the search, and one that is not recorded (an earlier
	// attempt's whose status write was lost, or a planted one) is replaced.
	if ref := run.Status.JobRef; ref != nil && ref.UID != "" && ref.UID != job.UID {
		r.setTerminal(run, &Completion{Reason: v1beta2.ReasonSearchFailed, Message: fmt.Sprintf(
			"Job %s/%s (uid %s) replaced the search Job the operator created (uid %s); it is not tracked as the search. Create a new request generation to search again",
			job.Namespace, job.Name, job.UID, ref.UID)}, events)
		return nil, ctrl.Result{}, nil
	}
	if run.Status.JobRef == nil {
		// The cache may show the Run from before the write that recorded the Job (another
		// writer's change came in between): only the API server's copy says it is unrecorded.
		live := &v1beta2.DynamoGraphDeploymentRun{}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(run), live); err != nil {
			return nil, ctrl.Result{}, client.IgnoreNotFound(err)
		}
		if live.UID != run.UID || live.Status.JobRef != nil {
			return nil, ctrl.Result{}, nil // the newer Run's event follows
		}
		err := r.Client.Delete(ctx, job, client.Preconditions{UID: ptr.To(job.UID)}, client.PropagationPolicy(metav1.DeletePropagationBackground))
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, ctrl.Result{}, fmt.Errorf("replacing the unrecorded search Job %s: %w", job.Name, err)
		}
		log.FromContext(ctx).Info("replacing a search Job the Run has not recorded", "job", job.Name, "uid", job.UID)
		return nil, ctrl.Result{RequeueAfter: time.Second}, nil
	}
	return job, ctrl.Result{}, nil
}

// effectiveInput returns the Run's effective input, lowering the spec only the first time and
// recording it in status.aisimulate (and the price of its GPU system in status.pricing, and the
// corrections of profiles, when read, for its GPU system and model in status.calibration);
// afterwards the recorded document is used as is. Errors are user-facing (InvalidInput).
func (r *Reconciler) effectiveInput(run *v1beta2.DynamoGraphDeploymentRun, profiles *calibration.Profiles) (*aisimulate.Input, error) {
	var input *aisimulate.Input
	if a := run.Status.AISimulate; a != nil && a.Input != nil && len(a.Input.Raw) > 0 {
		in, err := aisimulate.Canonicalize(a.Input.Raw)
		if err != nil {
			return nil, fmt.Errorf("status.aisimulate.input is not a JSON object: %v", err)
		}
		input = in
	} else {
		opts := aisimulate.OptionsFrom(r.Config)
		in, errs := aisimulate.Lower(searchedSpec(run), opts)
		if len(errs) > 0 {
			return nil, fmt.Errorf("the spec cannot be lowered to an AISimulate input: %v; fix the request spec", errs.ToAggregate())
		}
		input = in
		run.Status.AISimulate = &v1beta2.AISimulateStatus{
			Input:     &runtime.RawExtension{Raw: append([]byte(nil), in.JSON...)},
			InputHash: in.Hash,
		}
		// The price the lowering used is the one the reporter computes costs with.
		if h := run.Spec.Hardware; h != nil && h.GPU != nil {
			run.Status.Pricing = opts.Prices.For(h.GPU.SKU)
			if profiles != nil {
				run.Status.Calibration = profiles.For(h.GPU.SKU, run.Spec.Model.Name, ptr.Deref(r.Config.Calibration.MinObservations, config.DefaultMinObservations))
			}
		}
	}
	return input, nil
}

// searchedSpec is what a Run searches: its spec, or for a re-search Run the spec over its window
// of captured traffic.
func searchedSpec(run *v1beta2.DynamoGraphDeploymentRun) *v1beta2.DynamoGraphDeploymentRequestSpec {
	if research.IsRun(run) {
		return research.SearchSpec(&run.Spec)
	}
	return &run.Spec
}

// Preflight checks an effective input before its Job exists: AISimulate's rules (the bundled
// schema may be newer than the admission that accepted the request, and Runs are not admitted by
// the request webhook) and the operator's caps. It is never applied once the Job exists, so a
// configuration change does not fail running searches. It returns nil when the input may run.
func Preflight(doc map[string]any, caps aisimulate.Caps) *Completion {
	if problems := aisimulate.CheckInput(doc); len(problems) > 0 {
		return &Completion{Reason: v1beta2.ReasonInvalidInput, Message: invalidInputMessage(problems)}
	}
	if errs := caps.Check(doc); len(errs) > 0 {
		return &Completion{Reason: v1beta2.ReasonInvalidInput, Message: fmt.Sprintf(
			"the effective input (status.aisimulate.input) exceeds the operator's limits: %v", errs.ToAggregate())}
	}
	return nil
}

// invalidInputMessage lists the problems of an effective input, bounded for the status.
func invalidInputMessage(problems []aisimulate.Problem) string {
	var b strings.Builder
	b.WriteString("the effective AISimulate input (status.aisimulate.input) is invalid for the bundled AISimulate schema " + aisimulate.SchemaVersion + ": ")
	for i, p := range problems {
		if i > 0 {
			b.WriteString("; ")
		}
		if b.Len() > 3500 {
			fmt.Fprintf(&b, "and %d more", len(problems)-i)
			break
		}
		b.WriteString(p.String())
	}
	b.WriteString(". Fix spec.aisimulate.inputOverrides (or the typed fields) of the request.")
	return b.String()
}

// startSearch creates the Job of a Run that has none yet when a slot is free, and returns it to
// track.
func (r *Reconciler) startSearch(ctx context.Context, run *v1beta2.DynamoGraphDeploymentRun, events *status.Events) (*batchv1.Job, ctrl.Result, error) {
	if QueueName(run) == "" {
		if start := r.admit(run, events); !start {
			return nil, ctrl.Result{}, nil
		}
	}

	if o, err := r.checkTraceSource(ctx, run); err != nil || o != nil {
		if o != nil {
			r.setTerminal(run, o, events)
		}
		return nil, ctrl.Result{}, err
	}
	// Each search gets an identity of its own (docs/operate/security.md): a ServiceAccount and a
	// RoleBinding to the namespace's reporter Role, which the search-identity admission policy
	// confines to this Run.
	if o, err := r.ensureSearchIdentity(ctx, run); err != nil || o != nil {
		if o != nil {
			r.setTerminal(run, o, events)
		}
		return nil, ctrl.Result{}, err
	}
	// The Job's input init container reads the input from status.aisimulate, which the status
	// write after this reconcile records (it waits for it): no separate object carries it.
	job := BuildJob(run, r.Config)
	if err := r.Client.Create(ctx, job); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return nil, ctrl.Result{}, fmt.Errorf("creating the search Job: %w", err)
		}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(job), job); err != nil {
			return nil, ctrl.Result{}, err
		}
		if !madeFor(job, run) {
			r.setTerminal(run, foreignObject("Job", job, "it is not tracked as the search"), events)
			return nil, ctrl.Result{}, nil
		}
	}
	now := metav1.NewTime(r.Now())
	run.Status.JobRef = &v1beta2.JobReference{Name: job.Name, UID: job.UID}
	run.Status.StartTime = &now
	// No event here: the Run's status (jobRef, startTime, Completed=False EvaluatingCandidates)
	// says the search started, and an event per search start would be one more API write per
	// request (docs/develop/performance.md, P4).
	log.FromContext(ctx).Info("created search job", "job", job.Name, "image", r.Config.Planner.Image)
	return job, ctrl.Result{}, nil
}

// track mirrors the search Job into the Run's phase and conditions, starts a re-search's
// baseline once the search's window is cut, and ends the Run when the search ends (searchEnded).
func (r *Reconciler) track(ctx context.Context, run *v1beta2.DynamoGraphDeploymentRun, job *batchv1.Job, events *status.Events) (ctrl.Result, error) {
	if run.Status.JobRef == nil || run.Status.JobRef.UID != job.UID {
		run.Status.JobRef = &v1beta2.JobReference{Name: job.Name, UID: job.UID}
	}
	if run.Status.StartTime == nil {
		t := job.CreationTimestamp
		run.Status.StartTime = &t
	}
	// A window with too little traffic, or one the input container refused to cut, ends the Run as
	// soon as the input container says so: its failed pod is not a start failure.
	if ended, err := r.recordWindow(ctx, run, job); err != nil || ended != nil {
		if ended != nil {
			r.startFailures.Forget(run.UID)
			r.setTerminal(run, ended, events)
		}
		return ctrl.Result{}, err
	}
	if jobcache.Finished(job) != nil {
		r.startFailures.Forget(run.UID)
		pods, err := r.jobPods(ctx, job)
		if err != nil {
			return ctrl.Result{}, err
		}
		return r.searchEnded(ctx, run, Classify(job, pods, &run.Status, *r.Config.Job.ActiveDeadlineSeconds), events)
	}
	// A pod that cannot start ends the Run within job.startFailureGraceSeconds, not at the
	// Job's deadline; res requeues the Run when the grace of a failing container runs out.
	pods, err := r.runningPods(ctx, run, job)
	if err != nil {
		return ctrl.Result{}, err
	}
	done, res, err := r.checkStart(ctx, run, pods, events)
	if done || err != nil {
		return res, err
	}
	if err := r.startBaseline(ctx, run); err != nil {
		return ctrl.Result{}, err
	}
	r.setSearching(run, job)
	return res, nil
}

// setSearching says in the Run's phase and conditions where its search Job is.
func (r *Reconciler) setSearching(run *v1beta2.DynamoGraphDeploymentRun, job *batchv1.Job) {
	queued, phase, reason := metav1.ConditionFalse, v1beta2.RunPhasePending, v1beta2.ReasonPending
	msg := fmt.Sprintf("waiting for the search Job %s to start", job.Name)
	switch {
	case job.Spec.Suspend != nil && *job.Spec.Suspend:
		queued, reason = metav1.ConditionTrue, v1beta2.ReasonWaitingForAdmission
		msg = fmt.Sprintf("the search Job %s is suspended until Kueue admits it (queue %s)", job.Name, QueueName(run))
	case job.Status.Active > 0:
		phase, reason, msg = v1beta2.RunPhaseRunning, v1beta2.ReasonEvaluatingCandidates, "the search is running"
	}
	run.Status.Phase = phase
	run.Status.Message = msg
	r.setCondition(run, v1beta2.ConditionQueued, queued, reason, msg)
	r.setCondition(run, v1beta2.ConditionCompleted, metav1.ConditionFalse, reason, msg)
}

// searchEnded ends the Run the way its search ended (c), except a re-search whose search
// succeeded: it waits for its baseline, keeping how the search ended in the Searched condition
// meanwhile, since the request judges the re-search by its status.baseline once it has ended.
// A search that did not succeed ends the Run at once: there is nothing to compare.
func (r *Reconciler) searchEnded(ctx context.Context, run *v1beta2.DynamoGraphDeploymentRun, c *Completion, events *status.Events) (ctrl.Result, error) {
	if c.Reason != v1beta2.ReasonSucceeded || baselineInput(run) == nil {
		r.setTerminal(run, c, events)
		return ctrl.Result{}, nil
	}
	r.setCondition(run, v1beta2.ConditionSearched, metav1.ConditionTrue, c.Reason, c.Message)
	return r.awaitBaseline(ctx, run, c, events)
}

// awaitBaseline ends a re-search whose search ended as searched once its baseline ended too
// (baselineEnded: published, or failed with status.baseline.error, at the latest at
// job.baselineDeadlineSeconds); meanwhile the Run runs with reason EvaluatingBaseline.
func (r *Reconciler) awaitBaseline(ctx context.Context, run *v1beta2.DynamoGraphDeploymentRun, searched *Completion, events *status.Events) (ctrl.Result, error) {
	ended, again, err := r.baselineEnded(ctx, run)
	if err != nil {
		return ctrl.Result{}, err
	}
	if ended {
		r.setTerminal(run, searched, events)
		return ctrl.Result{}, nil
	}
	msg := fmt.Sprintf("the search finished; waiting for the baseline Job %s to predict the deployed candidate %s", naming.BaselineJobName(run.Name), baselineInput(run).Candidate)
	run.Status.Phase = v1beta2.RunPhaseRunning
	run.Status.Message = msg
	r.setCondition(run, v1beta2.ConditionQueued, metav1.ConditionFalse, v1beta2.ReasonEvaluatingBaseline, msg)
	r.setCondition(run, v1beta2.ConditionCompleted, metav1.ConditionFalse, v1beta2.ReasonEvaluatingBaseline, msg)
	return ctrl.Result{RequeueAfter: again}, nil
}

// jobPods lists the pods a Job controls from the cache and, when none of them has ended yet,
// from the API server (the cache may lag behind the Job status). Pods that only carry the Job's
// labels are not its pods (controlledBy).
func (r *Reconciler) jobPods(ctx context.Context, job *batchv1.Job) ([]corev1.Pod, error) {
	pods, err := podstart.Pods(ctx, r.Client, job)
	if err != nil || ended(pods) {
		return pods, err
	}
	return podstart.Pods(ctx, r.APIReader, job)
}

// ended tells whether one of pods has ended (Succeeded or Failed).
func ended(pods []corev1.Pod) bool {
	return slices.ContainsFunc(pods, func(p corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
}

// Bounds of the wait for a stopped search's pod (stoppingSearch).
const (
	// stopMargin is how long past its pod's deletion deadline a reporter may still be writing.
	stopMargin = 10 * time.Second
	// stopPatience bounds the whole wait, for a pod that is never deleted (no garbage collector).
	stopPatience = 2 * time.Minute
	// stopPoll re-checks a pod not yet marked for deletion; pod events wake the Run sooner.
	stopPoll = 2 * time.Second
)

// stoppingSearch returns how long a stopped Run must wait before it ends. Its search pod, sent
// SIGTERM when its Job is deleted, still runs the reporter, which publishes the artifacts it
// holds; the Run's search identity may write only while the Run is not terminal, and is deleted
// when it ends. So the Run ends once the Job's running pods are gone, or past their deletion
// deadline plus stopMargin, or after stopPatience.
func (r *Reconciler) stoppingSearch(ctx context.Context, run *v1beta2.DynamoGraphDeploymentRun) (time.Duration, error) {
	ref := run.Status.JobRef
	if ref == nil || ref.UID == "" {
		return 0, nil
	}
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(run.Namespace), client.MatchingLabels{v1beta2.LabelRunUID: string(run.UID)}); err != nil {
		return 0, err
	}
	now := r.Now()
	if now.Sub(r.stops.Since(run.UID, "stopped", now)) >= stopPatience {
		return 0, nil
	}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: run.Namespace, Name: ref.Name, UID: ref.UID}}
	var wait time.Duration
	for _, p := range podstart.ControlledBy(pods.Items, job) {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		d := stopPoll
		if p.DeletionTimestamp != nil {
			d = p.DeletionTimestamp.Add(stopMargin).Sub(now)
		}
		wait = max(wait, d)
	}
	return wait, nil
}

// deleteJob stops the search: the Job is deleted with background propagation so its pods go too.
// Only the Run's own Job is: the recorded one (by its UID), or, before one is recorded, one the
// operator made for the Run (madeFor). Whatever else holds the name is not the search, and
// the operator's fence would refuse to delete it.
func (r *Reconciler) deleteJob(ctx context.Context, run *v1beta2.DynamoGraphDeploymentRun) error {
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: run.Namespace, Name: naming.JobName(run.Name)}}
	var uid types.UID
	if ref := run.Status.JobRef; ref != nil {
		job.Name, uid = ref.Name, ref.UID
	}
	if uid == "" {
		err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(job), job)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the search Job: %w", err)
		}
		if !madeFor(job, run) {
			return nil
		}
		uid = job.UID
	}
	err := r.Client.Delete(ctx, job, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	// Conflict: the UID differs, another Job holds the name.
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting the search Job: %w", err)
	}
	return nil
}

// setTerminal ends the Run.
func (r *Reconciler) setTerminal(run *v1beta2.DynamoGraphDeploymentRun, o *Completion, events *status.Events) {
	now := metav1.NewTime(r.Now())
	run.Status.Phase = Phase(o.Reason)
	run.Status.Message = o.Message
	run.Status.CompletionTime = &now
	r.setCondition(run, v1beta2.ConditionQueued, metav1.ConditionFalse, o.Reason, o.Message)
	r.setCondition(run, v1beta2.ConditionCompleted, metav1.ConditionTrue, o.Reason, o.Message)
	e := status.Event{Type: corev1.EventTypeWarning, Reason: EventFailed, Action: "Complete", Note: fmt.Sprintf("%s: %s", o.Reason, o.Message)}
	switch o.Reason {
	case v1beta2.ReasonSucceeded:
		e.Type, e.Reason = corev1.EventTypeNormal, EventCompleted
	case v1beta2.ReasonCancelled:
		e.Type, e.Reason, e.Action = corev1.EventTypeNormal, EventCancelled, "Cancel"
	case v1beta2.ReasonSuperseded:
		e.Type, e.Reason, e.Action = corev1.EventTypeNormal, EventSuperseded, "Supersede"
	}
	events.Add(e)
}

func (r *Reconciler) setCondition(run *v1beta2.DynamoGraphDeploymentRun, typ string, status metav1.ConditionStatus, reason, msg string) {
	if len(msg) > 32768 {
		msg = msg[:32768]
	}
	meta.SetStatusCondition(&run.Status.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: run.Generation,
	})
}
