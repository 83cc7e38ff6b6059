package request

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/calibration"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/podstart"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/run"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/status"
	"github.com/dgdr-operator/dgdr-operator/internal/naming"
	"github.com/dgdr-operator/dgdr-operator/internal/verification"
)

// The verification Job measures the deployed candidate through its frontend Service:
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=services,verbs=get

// Event reasons of verification.
const (
	EventVerificationStarted = "VerificationStarted"
	EventPredictionHeld      = "PredictionHeld"
	EventPredictionMissed    = "OutsideErrorBand"
	EventVerificationFailed  = "VerificationFailed"
)

// DynamoFrontendPort is the port of a Dynamo frontend Service that names none "http".
const DynamoFrontendPort = 8000

// frontendServiceName is the Service the Dynamo operator puts in front of a deployment's
// frontend.
func frontendServiceName(dgd string) string { return dgd + "-frontend" }

// verify runs one verification Job per ready DynamoGraphDeployment generation and records its
// result in status.verification and the PredictionHeld condition. It is called only while
// Deployed is True. It returns when to look at a running Job again (0: its events will tell).
func (r *Reconciler) verify(ctx context.Context, dgdr *v1beta2.DynamoGraphDeploymentRequest, dgd *unstructured.Unstructured, events *status.Events) (time.Duration, error) {
	if !verification.Enabled(dgdr) {
		dgdr.Status.Verification = nil
		meta.RemoveStatusCondition(&dgdr.Status.Conditions, v1beta2.ConditionPredictionHeld)
		return 0, nil
	}
	d := dgdr.Status.Deployment
	gen := dgd.GetGeneration()
	v := dgdr.Status.Verification
	if v != nil && v.Deployment == d.Name && v.DeploymentGeneration == gen && v.Candidate == d.Candidate && v.Phase != v1beta2.VerificationRunning {
		return 0, nil // this generation was measured
	}
	base := v1beta2.VerificationStatus{
		Phase: v1beta2.VerificationRunning, JobName: naming.VerificationJobName(dgdr.Name, gen),
		Deployment: d.Name, DeploymentGeneration: gen, Run: d.Run, Candidate: d.Candidate,
	}
	if r.Config.Verification.Image == "" {
		r.failVerification(dgdr, base, verification.ReasonNotConfigured,
			"the operator configuration sets no verification.image; nothing is measured", events)
		return 0, nil
	}
	job := &batchv1.Job{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: dgdr.Namespace, Name: base.JobName}, job)
	switch {
	case apierrors.IsNotFound(err):
		full, _, plan, err := r.verificationPlan(ctx, dgdr, &base, events)
		if plan == nil || err != nil {
			return 0, err
		}
		return 0, r.startVerification(ctx, dgdr, full, plan, base, gen, events)
	case err != nil:
		return 0, err
	case !metav1.IsControlledBy(job, dgdr):
		r.failVerification(dgdr, base, verification.ReasonJobFailed,
			fmt.Sprintf("a Job named %s exists and this request does not control it", base.JobName), events)
		return 0, nil
	}
	finished, failed := jobFinished(job)
	if !finished {
		if v == nil || v.JobName != base.JobName {
			// The status lost the Job it started (an older write, a restart): resolve it again.
			if _, _, plan, err := r.verificationPlan(ctx, dgdr, &base, events); plan == nil || err != nil {
				return 0, err
			}
			dgdr.Status.Verification = &base
		}
		ended, again, err := r.checkVerificationStart(ctx, dgdr, job, events)
		if err != nil || ended {
			return 0, err
		}
		r.setPredictionHeld(dgdr, metav1.ConditionUnknown, v1beta2.ReasonVerifying,
			fmt.Sprintf("Job %s measures DynamoGraphDeployment %s generation %d", base.JobName, d.Name, gen))
		return again, nil
	}
	full, cand, plan, err := r.verificationPlan(ctx, dgdr, &base, events)
	if plan == nil || err != nil {
		return 0, err
	}
	msg, finishedAt, err := r.terminationMessage(ctx, job)
	if err != nil {
		return 0, err
	}
	base.MeasuredAt = finishedAt
	if msg == nil {
		reason, why := verification.ReasonJobFailed, "its pod left no result"
		if failed != nil && failed.Reason == batchv1.JobReasonDeadlineExceeded {
			reason, why = verification.ReasonTimedOut, fmt.Sprintf("it ran past its deadline (maxDurationSeconds %d + %d s)", plan.MaxDurationSeconds, verification.StartGraceSeconds)
		}
		r.failVerification(dgdr, base, reason, fmt.Sprintf("Job %s ended without a measurement: %s", base.JobName, why), events)
		return 0, nil
	}
	out := verification.ParseResult(msg, plan.GPUs)
	base.Observed = out.Observed
	if out.FailReason != "" {
		r.failVerification(dgdr, base, out.FailReason, out.Message, events)
		return 0, nil
	}
	// The profile first: when Record fails the status still says Running, and the next reconcile
	// reads the finished Job again (Record replaces an earlier observation of the same source).
	measured, _ := verification.Judge(plan, base.Observed)
	if err := r.recordCalibration(ctx, full, cand, &base, measured); err != nil {
		return 0, err
	}
	r.recordVerification(dgdr, base, plan, events)
	return 0, nil
}

// recordCalibration adds a successful verification to the cluster's calibration profile, where
// the next searches find it (docs/design/results.md, "Calibration").
func (r *Reconciler) recordCalibration(ctx context.Context, dgdr *v1beta2.DynamoGraphDeploymentRequest, cand *v1beta2.DynamoGraphDeploymentCandidate, v *v1beta2.VerificationStatus, metrics []v1beta2.VerifiedMetric) error {
	ns := r.Config.Calibration.Namespace
	if ns == "" || v.MeasuredAt == nil {
		return nil
	}
	key, err := calibration.CandidateKey(&dgdr.Spec, cand)
	if err != nil {
		// A Candidate without a key has no place in the profile; the verification stands.
		ctrl.LoggerFrom(ctx).Info("verification not added to the calibration profile", "candidate", cand.Name, "reason", err.Error())
		return nil
	}
	obs := calibration.Observation{
		Key: key, Metrics: map[string]calibration.Pair{}, MeasuredAt: v.MeasuredAt.UTC(),
		Source: fmt.Sprintf("%s/%s@gen%d", dgdr.Namespace, dgdr.Name, v.DeploymentGeneration),
	}
	for _, m := range metrics {
		if m.Predicted != nil && m.Observed != nil && *m.Predicted > 0 && *m.Observed > 0 {
			obs.Metrics[string(m.Name)] = calibration.Pair{Predicted: *m.Predicted, Observed: *m.Observed}
		}
	}
	if len(obs.Metrics) == 0 {
		return nil
	}
	if err := calibration.Record(ctx, r.APIReader, r.Client, ns, obs); err != nil {
		return fmt.Errorf("recording the verification in the calibration profile: %w", err)
	}
	return nil
}

// verificationPlan reads the request whole and the deployed Candidate (the cache keeps neither
// the workload nor the metrics) and resolves the verification, filling base with it. A nil plan
// without an error means the verification failed (recorded).
func (r *Reconciler) verificationPlan(ctx context.Context, dgdr *v1beta2.DynamoGraphDeploymentRequest, base *v1beta2.VerificationStatus, events *status.Events) (*v1beta2.DynamoGraphDeploymentRequest, *v1beta2.DynamoGraphDeploymentCandidate, *verification.Plan, error) {
	full := &v1beta2.DynamoGraphDeploymentRequest{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(dgdr), full); err != nil {
		return nil, nil, nil, err
	}
	cand := &v1beta2.DynamoGraphDeploymentCandidate{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: dgdr.Namespace, Name: base.Candidate}, cand); err != nil {
		return nil, nil, nil, err
	}
	plan, err := verification.Resolve(full, cand)
	if err != nil {
		r.failVerification(dgdr, *base, verification.ReasonNoModeledMetrics, err.Error(), events)
		return nil, nil, nil, nil
	}
	base.Load, base.Requests, base.MaxDurationSeconds = &plan.Load, plan.Requests, plan.MaxDurationSeconds
	return full, cand, plan, nil
}

// startVerification creates the Job of a generation.
func (r *Reconciler) startVerification(ctx context.Context, dgdr, full *v1beta2.DynamoGraphDeploymentRequest, plan *verification.Plan, base v1beta2.VerificationStatus, gen int64, events *status.Events) error {
	svc := &corev1.Service{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: dgdr.Namespace, Name: frontendServiceName(base.Deployment)}, svc); err != nil {
		if apierrors.IsNotFound(err) {
			r.failVerification(dgdr, base, verification.ReasonFrontendUnreachable,
				fmt.Sprintf("the frontend Service %s does not exist", frontendServiceName(base.Deployment)), events)
			return nil
		}
		return err
	}
	target := verification.Target{URL: frontendURL(svc), Model: full.Spec.Model.Name, Deployment: base.Deployment, Generation: gen}
	job := verification.BuildJob(dgdr, plan, target, r.Config)
	if err := r.Client.Create(ctx, job); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating verification Job %s: %w", job.Name, err)
	}
	dgdr.Status.Verification = &base
	msg := fmt.Sprintf("Job %s measures DynamoGraphDeployment %s generation %d (candidate %s) at %s with %d requests, for at most %d s",
		job.Name, base.Deployment, gen, base.Candidate, loadText(plan.Load), plan.Requests, plan.MaxDurationSeconds)
	r.setPredictionHeld(dgdr, metav1.ConditionUnknown, v1beta2.ReasonVerifying, msg)
	events.Normal(EventVerificationStarted, "Verify", msg)
	return nil
}

// frontendURL is the Service's in-cluster address, on its port named http or its first port.
func frontendURL(svc *corev1.Service) string {
	port := int32(DynamoFrontendPort)
	for i, p := range svc.Spec.Ports {
		if i == 0 || p.Name == "http" {
			port = p.Port
		}
	}
	return "http://" + net.JoinHostPort(svc.Name+"."+svc.Namespace+".svc", strconv.Itoa(int(port)))
}

func loadText(l v1beta2.VerificationLoad) string {
	if l.Concurrency != nil {
		return fmt.Sprintf("concurrency %d (ISL %d, OSL %d)", *l.Concurrency, *l.InputTokens, *l.OutputTokens)
	}
	return fmt.Sprintf("%g requests/s (ISL %d, OSL %d)", *l.RequestsPerSecond, *l.InputTokens, *l.OutputTokens)
}

// jobFinished tells whether a Job ended, and its Failed condition if it failed.
func jobFinished(job *batchv1.Job) (bool, *batchv1.JobCondition) {
	for i, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return true, nil
		case batchv1.JobFailed:
			return true, &job.Status.Conditions[i]
		}
	}
	return false, nil
}

// verificationPods lists the pods of a verification Job from the informer cache; only those the
// Job controls count (podstart.ControlledBy): anyone who may create pods can give one the Job's
// labels.
func (r *Reconciler) verificationPods(ctx context.Context, job *batchv1.Job) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(job.Namespace), client.MatchingLabels{batchv1.JobNameLabel: job.Name}); err != nil {
		return nil, err
	}
	return podstart.ControlledBy(pods.Items, job), nil
}

// verificationStartRule is what counts as a start failure of a verification pod: the rule of
// search pods, and a pod no node can hold (the deployment it measures already runs).
var verificationStartRule = podstart.Rule{First: verification.ContainerName, Unschedulable: true}

// checkVerificationStart ends the running verification of job when its pod cannot start
// (verificationStartRule): at once for a final failure, once it has lasted
// job.startFailureGraceSeconds for one the kubelet retries (an image it cannot pull, a
// configuration error, a crash loop) or a pod no node can hold; and when the Job has created no
// pod that long after its creation (its pods are refused). It deletes the Job, so that its pod
// does not wait for the Job's deadline. Otherwise again is when a failure's grace runs out.
func (r *Reconciler) checkVerificationStart(ctx context.Context, dgdr *v1beta2.DynamoGraphDeploymentRequest, job *batchv1.Job, events *status.Events) (ended bool, again time.Duration, err error) {
	pods, err := r.verificationPods(ctx, job)
	if err != nil {
		return false, 0, err
	}
	grace := time.Duration(*r.Config.Job.StartFailureGraceSeconds) * time.Second
	now := r.now()
	var msg string
	if f := verificationStartRule.Newest(pods); f != nil {
		due, lasted, wait := podstart.Due(&r.verificationStarts, dgdr.UID, f, now, grace)
		if !due {
			return false, wait, nil
		}
		msg = fmt.Sprintf("the verification pod %s could not start: %s; Job %s was deleted. %s",
			f.Pod, f.Describe(lasted, 1024), job.Name, verificationStartAdvice(f.Kind()))
	} else {
		r.verificationStarts.Forget(dgdr.UID)
		if no, wait := podstart.NoPod(job, pods, now, grace); !no {
			return false, wait, nil
		}
		// The cache keeps of a Job only its active count; the API server's copy says whether a
		// pod of it ever ran.
		live := &batchv1.Job{}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(job), live); err != nil {
			return false, 0, client.IgnoreNotFound(err)
		}
		if no, _ := podstart.NoPod(live, pods, now, grace); !no || live.UID != job.UID {
			return false, 0, nil
		}
		msg = fmt.Sprintf("Job %s created no pod within %s (job.startFailureGraceSeconds): the API server refuses its pods "+
			"(admission, a ResourceQuota or a LimitRange; the Job's FailedCreate events say which), or the Job controller is not running; the Job was deleted",
			job.Name, grace)
	}
	r.verificationStarts.Forget(dgdr.UID)
	err = r.Client.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: &job.UID})
	if client.IgnoreNotFound(err) != nil {
		return false, 0, fmt.Errorf("deleting verification Job %s: %w", job.Name, err)
	}
	r.failVerification(dgdr, *dgdr.Status.Verification, verification.ReasonPodFailedToStart, msg, events)
	return true, 0, nil
}

// verificationStartAdvice says what to check when the verification pod cannot start.
func verificationStartAdvice(k podstart.Kind) string {
	switch k {
	case podstart.KindImage:
		return "Check that verification.image of the operator configuration exists and that the node can pull it"
	case podstart.KindCrash:
		return "See the container's logs"
	case podstart.KindUnschedulable:
		return "Check that a node can hold the verification pod: job.nodeSelector, job.tolerations, job.priorityClassName and verification.resources of the operator configuration"
	default:
		return "Check that verification.image runs as the non-root job.runAsUser/runAsGroup of the operator configuration with a read-only root file system"
	}
}

// verificationPodWatch is the pod source of the request controller: a verification pod that
// cannot start reaches its request (checkVerificationStart); its Job's status says nothing while
// the pod waits. Other pod changes reach the request through its Job.
func verificationPodWatch() (client.Object, handler.EventHandler, builder.WatchesOption) {
	cannotStart := func(obj client.Object) bool {
		pod, ok := obj.(*corev1.Pod)
		return ok && pod.Labels[run.LabelComponent] == verification.ComponentValue && verificationStartRule.Of(pod) != nil
	}
	toRequest := func(_ context.Context, obj client.Object) []reconcile.Request {
		name := obj.GetLabels()[v1beta2.LabelRequestName]
		if name == "" || obj.GetLabels()[run.LabelComponent] != verification.ComponentValue {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}}}
	}
	return &corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(toRequest), builder.WithPredicates(predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return cannotStart(e.Object) },
		UpdateFunc:  func(e event.UpdateEvent) bool { return cannotStart(e.ObjectNew) },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	})
}

// terminationMessage is the verification container's termination message (capped by the
// kubelet at 4 KiB; ParseResult refuses anything longer) and when it ended; nil when no pod of
// the Job has one.
func (r *Reconciler) terminationMessage(ctx context.Context, job *batchv1.Job) ([]byte, *metav1.Time, error) {
	pods, err := r.verificationPods(ctx, job)
	if err != nil {
		return nil, nil, err
	}
	for _, p := range pods {
		for _, cs := range p.Status.ContainerStatuses {
			if t := cs.State.Terminated; cs.Name == verification.ContainerName && t != nil && strings.TrimSpace(t.Message) != "" {
				at := t.FinishedAt
				return []byte(t.Message), &at, nil
			}
		}
	}
	return nil, &metav1.Time{Time: time.Now()}, nil
}

// recordVerification sets a successful measurement and PredictionHeld.
func (r *Reconciler) recordVerification(dgdr *v1beta2.DynamoGraphDeploymentRequest, v v1beta2.VerificationStatus, plan *verification.Plan, events *status.Events) {
	metrics, outside := verification.Judge(plan, v.Observed)
	v.Phase, v.Metrics = v1beta2.VerificationSucceeded, metrics
	dgdr.Status.Verification = &v
	if len(outside) > 0 {
		msg := fmt.Sprintf("candidate %s of DynamoGraphDeployment %s generation %d is outside its error band: %s",
			v.Candidate, v.Deployment, v.DeploymentGeneration, strings.Join(outside, "; "))
		r.setPredictionHeld(dgdr, metav1.ConditionFalse, v1beta2.ReasonOutsideErrorBand, msg)
		events.Warning(EventPredictionMissed, "Verify", msg)
		return
	}
	names := make([]string, 0, len(metrics))
	for _, m := range metrics {
		names = append(names, fmt.Sprintf("%s %.1f%% off (tolerance %g%%)", m.Name, *m.RelativeErrorPct, *m.TolerancePct))
	}
	msg := fmt.Sprintf("candidate %s of DynamoGraphDeployment %s generation %d measured within tolerance: %s",
		v.Candidate, v.Deployment, v.DeploymentGeneration, strings.Join(names, ", "))
	r.setPredictionHeld(dgdr, metav1.ConditionTrue, v1beta2.ReasonWithinErrorBand, msg)
	events.Normal(EventPredictionHeld, "Verify", msg)
}

// failVerification records a verification that measured nothing usable.
func (r *Reconciler) failVerification(dgdr *v1beta2.DynamoGraphDeploymentRequest, v v1beta2.VerificationStatus, reason, msg string, events *status.Events) {
	v.Phase, v.Reason, v.Message = v1beta2.VerificationFailed, reason, truncate(msg, 1024)
	dgdr.Status.Verification = &v
	full := fmt.Sprintf("verification of DynamoGraphDeployment %s generation %d failed (%s): %s", v.Deployment, v.DeploymentGeneration, reason, msg)
	r.setPredictionHeld(dgdr, metav1.ConditionUnknown, v1beta2.ReasonVerificationFailed, truncate(full, 1024))
	events.Warning(EventVerificationFailed, "Verify", truncate(full, 1024))
}

func (r *Reconciler) setPredictionHeld(dgdr *v1beta2.DynamoGraphDeploymentRequest, s metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&dgdr.Status.Conditions, metav1.Condition{
		Type: v1beta2.ConditionPredictionHeld, Status: s, Reason: reason, Message: truncate(msg, 32768), ObservedGeneration: dgdr.Generation,
	})
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
