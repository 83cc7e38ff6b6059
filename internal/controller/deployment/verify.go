package deployment

import (
	"context"
	"errors"
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
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/jobcache"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/podstart"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/request"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/status"
	"github.com/dgdr-operator/dgdr-operator/internal/naming"
	"github.com/dgdr-operator/dgdr-operator/internal/research"
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
// Deployed is True and verification is enabled. It returns when to look at a running Job again
// (0: its events will tell).
func (r *Reconciler) verify(ctx context.Context, dgdr *v1beta2.DynamoGraphDeploymentRequest, dgd *unstructured.Unstructured, events *status.Events) (time.Duration, error) {
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
	// Only the Job whose UID the status recorded when the operator created it is read: anyone
	// who may create Jobs can create one under the predictable name, with the operator's labels
	// and a controller reference to the request.
	var recorded types.UID
	if v != nil && v.JobName == base.JobName && v.Deployment == d.Name && v.DeploymentGeneration == gen {
		recorded = v.JobUID
	}
	job, lagging, err := r.recordedJob(ctx, dgdr, base.JobName, recorded)
	if err == nil && job != nil && job.UID != recorded {
		// The cache may show the request from before the status write that recorded the Job
		// (another controller's write since settles the expectations): ask the API server.
		var live types.UID
		if live, err = r.liveJobUID(ctx, dgdr, base); live != "" {
			recorded = live
		}
	}
	switch {
	case err != nil:
		return 0, err
	case lagging:
		return jobcache.Poll, nil
	case job == nil && recorded == "":
		full, _, plan, err := r.verificationPlan(ctx, dgdr, &base, events)
		if plan == nil || err != nil {
			return 0, err
		}
		return 0, r.startVerification(ctx, dgdr, full, plan, base, dgd, events)
	case job == nil:
		base.JobUID = recorded
		r.failVerification(dgdr, base, verification.ReasonJobFailed,
			fmt.Sprintf("Job %s (uid %s) was deleted before it ended", base.JobName, recorded), events)
		return 0, nil
	case job.UID != recorded:
		r.failVerification(dgdr, base, verification.ReasonForeignJob, foreignJobMessage(job, recorded), events)
		return 0, nil
	}
	base.JobUID = recorded
	finished, failed := jobFinished(job)
	if !finished {
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
	if err := r.recordCalibration(ctx, full, cand, &base, verification.CalibrationMetrics(measured)); err != nil {
		return 0, err
	}
	r.recordVerification(dgdr, base, plan, events)
	return 0, nil
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
	searched, err := r.searched(ctx, dgdr.Namespace, base.Run)
	if err != nil {
		return nil, nil, nil, err
	}
	plan, err := verification.Resolve(full, cand, searched)
	if err != nil {
		r.failVerification(dgdr, *base, verification.ReasonNoModeledMetrics, err.Error(), events)
		return nil, nil, nil, nil
	}
	base.Load, base.Trace, base.Requests, base.MaxDurationSeconds = nil, plan.Trace.Status(), plan.Requests, plan.MaxDurationSeconds
	if plan.Load.Concurrency != nil || plan.Load.RequestsPerSecond != nil {
		base.Load = plan.Load.DeepCopy()
	}
	base.LoadAsPredicted, base.LoadDifference = ptr.To(plan.LoadAsPredicted), status.Truncate(plan.LoadDifference, 1024)
	return full, cand, plan, nil
}

// searched is what the deployed candidate's Run replayed: its trace workload, unless the Run is
// a re-search, whose window of captured traffic the verification Job cannot mount. The Run
// owns the Candidate, so it exists while the Candidate does.
func (r *Reconciler) searched(ctx context.Context, ns, name string) (verification.Searched, error) {
	rn := &v1beta2.DynamoGraphDeploymentRun{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, rn); err != nil {
		return verification.Searched{}, fmt.Errorf("reading Run %s: %w", name, err)
	}
	if research.IsRun(rn) {
		return verification.Searched{Unmountable: fmt.Sprintf("it replayed the window of captured traffic re-search Run %s cut, which the Job cannot mount", name)}, nil
	}
	if w := rn.Spec.Workload; w != nil && w.Trace != nil {
		return verification.Searched{Trace: w.Trace.DeepCopy()}, nil
	}
	return verification.Searched{}, nil
}

// startVerification creates the Job of a generation, measuring only the ClusterIP Service the
// deployment owns (verification.CheckFrontend).
func (r *Reconciler) startVerification(ctx context.Context, dgdr, full *v1beta2.DynamoGraphDeploymentRequest, plan *verification.Plan, base v1beta2.VerificationStatus, dgd *unstructured.Unstructured, events *status.Events) error {
	gen := dgd.GetGeneration()
	svc := &corev1.Service{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: dgdr.Namespace, Name: frontendServiceName(base.Deployment)}, svc); err != nil {
		if apierrors.IsNotFound(err) {
			r.failVerification(dgdr, base, verification.ReasonFrontendUnreachable,
				fmt.Sprintf("the frontend Service %s does not exist", frontendServiceName(base.Deployment)), events)
			return nil
		}
		return err
	}
	if err := verification.CheckFrontend(svc, dgd.GetName(), dgd.GetUID()); err != nil {
		r.failVerification(dgdr, base, verification.ReasonFrontendUnreachable, err.Error(), events)
		return nil
	}
	target := verification.Target{URL: frontendURL(svc), Model: full.Spec.Model.Name, Deployment: base.Deployment, Generation: gen}
	job := verification.BuildJob(dgdr, plan, target, r.Config)
	if err := r.Client.Create(ctx, job); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating verification Job %s: %w", job.Name, err)
		}
		// The name is taken by a Job the status does not record (the cache holds only Jobs
		// carrying the operator's label: this one may carry none), or does not record as the
		// cache shows the request.
		existing := &batchv1.Job{}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(job), existing); err != nil {
			return client.IgnoreNotFound(err)
		}
		if live, err := r.liveJobUID(ctx, dgdr, base); err != nil || live == existing.UID {
			return err // the operator's own, recorded: its events bring the request back
		}
		r.failVerification(dgdr, base, verification.ReasonForeignJob, foreignJobMessage(existing, ""), events)
		return nil
	}
	base.JobUID = job.UID
	// Recorded at once, not with the reconcile's status write: a Job of that name the status
	// does not record is read as foreign, so none of the operator's may go unrecorded.
	if err := r.recordJob(ctx, dgdr, base); err != nil {
		derr := r.Client.Delete(ctx, job, client.Preconditions{UID: &job.UID}, client.PropagationPolicy(metav1.DeletePropagationBackground))
		return errors.Join(fmt.Errorf("recording verification Job %s (uid %s): %w", job.Name, job.UID, err), client.IgnoreNotFound(derr))
	}
	dgdr.Status.Verification = &base
	msg := fmt.Sprintf("Job %s measures DynamoGraphDeployment %s generation %d (candidate %s) at %s with %s, for at most %d s",
		job.Name, base.Deployment, gen, base.Candidate, loadText(plan), requestsText(plan), plan.MaxDurationSeconds)
	r.setPredictionHeld(dgdr, metav1.ConditionUnknown, v1beta2.ReasonVerifying, msg)
	events.Normal(EventVerificationStarted, "Verify", msg)
	return nil
}

// recordedJob reads the verification Job named name from the cache (nil when there is none). A
// recorded Job the cache does not show is read from the API server (nil when none): the cache
// holds no Job that succeeded, nor yet one created a moment ago; lagging while that Job is not
// settled (jobcache), when the caller looks again shortly.
func (r *Reconciler) recordedJob(ctx context.Context, dgdr *v1beta2.DynamoGraphDeploymentRequest, name string, recorded types.UID) (job *batchv1.Job, lagging bool, err error) {
	key := types.NamespacedName{Namespace: dgdr.Namespace, Name: name}
	job = &batchv1.Job{}
	err = r.Client.Get(ctx, key, job)
	switch {
	case err == nil:
		return job, false, nil
	case !apierrors.IsNotFound(err):
		return nil, false, err
	case recorded == "":
		return nil, false, nil
	}
	if err := r.APIReader.Get(ctx, key, job); err != nil {
		return nil, false, client.IgnoreNotFound(err)
	}
	return job, job.UID == recorded && !jobcache.Settled(job), nil
}

// recordJob writes status.verification (its jobUID the Job just created) on the request, as the
// deployment reconciler's field manager.
func (r *Reconciler) recordJob(ctx context.Context, dgdr *v1beta2.DynamoGraphDeploymentRequest, v v1beta2.VerificationStatus) error {
	return request.DeploymentOwner.PatchNow(ctx, r.Client, dgdr, map[string]any{"verification": v})
}

// liveJobUID is the verification Job UID the request's status records for base's Job name,
// deployment and generation, as the API server has the request ("" when none).
func (r *Reconciler) liveJobUID(ctx context.Context, dgdr *v1beta2.DynamoGraphDeploymentRequest, base v1beta2.VerificationStatus) (types.UID, error) {
	live := &v1beta2.DynamoGraphDeploymentRequest{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(dgdr), live); err != nil {
		return "", err
	}
	v := live.Status.Verification
	if live.UID != dgdr.UID || v == nil || v.JobName != base.JobName || v.Deployment != base.Deployment || v.DeploymentGeneration != base.DeploymentGeneration {
		return "", nil
	}
	return v.JobUID, nil
}

// foreignJobMessage says that job is not the verification Job the operator created (recorded:
// the UID the status records, "" when none).
func foreignJobMessage(job *batchv1.Job, recorded types.UID) string {
	made := "the operator created none under that name for this verification"
	if recorded != "" {
		made = fmt.Sprintf("the operator created the one with uid %s", recorded)
	}
	return fmt.Sprintf("Job %s/%s (uid %s, owners %s) is not the verification Job the operator created (%s); it is not read, and this deployment generation is not verified",
		job.Namespace, job.Name, job.UID, describeOwners(job), made)
}

// describeOwners names an object's owner references for messages.
func describeOwners(obj client.Object) string {
	refs := obj.GetOwnerReferences()
	if len(refs) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(refs))
	for _, ref := range refs {
		parts = append(parts, fmt.Sprintf("%s %s uid %s", ref.Kind, ref.Name, ref.UID))
	}
	return "[" + strings.Join(parts, ", ") + "]"
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

// loadText says what the Job offers, and whether it is the prediction's traffic.
func loadText(p *verification.Plan) string {
	var s string
	switch t, l := p.Trace, p.Load; {
	case t != nil && t.Speedup != nil:
		s = fmt.Sprintf("the %s trace replayed at its timestamps sped up %gx", t.Format, *t.Speedup)
	case t != nil:
		s = fmt.Sprintf("the %s trace replayed at concurrency %d", t.Format, *l.Concurrency)
	case l.Concurrency != nil:
		s = fmt.Sprintf("concurrency %d (ISL %d, OSL %d)", *l.Concurrency, *l.InputTokens, *l.OutputTokens)
	default:
		s = fmt.Sprintf("%g requests/s (ISL %d, OSL %d)", *l.RequestsPerSecond, *l.InputTokens, *l.OutputTokens)
	}
	if !p.LoadAsPredicted {
		s += ", not the prediction's traffic (" + p.LoadDifference + ")"
	}
	return s
}

// requestsText is how many requests the Job sends.
func requestsText(p *verification.Plan) string {
	if p.Requests == 0 {
		return "every request of the trace"
	}
	return fmt.Sprintf("%d requests", p.Requests)
}

// jobFinished tells whether a Job ended, and its Failed condition if it failed.
func jobFinished(job *batchv1.Job) (bool, *batchv1.JobCondition) {
	c := jobcache.Finished(job)
	if c != nil && c.Type == batchv1.JobFailed {
		return true, c
	}
	return c != nil, nil
}

// terminationMessage is the verification container's termination message (capped by the
// kubelet at 4 KiB; ParseResult refuses anything longer) and when it ended; nil when no pod of
// the Job has one.
func (r *Reconciler) terminationMessage(ctx context.Context, job *batchv1.Job) ([]byte, *metav1.Time, error) {
	// From the API server: the cache holds no pod that succeeded (jobcache), and the message of a
	// verification that measured is on one.
	pods, err := podstart.Pods(ctx, r.APIReader, job)
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
	// A measurement at another load than the prediction's says so first.
	var other string
	if !plan.LoadAsPredicted {
		other = "measured at another load than predicted (" + plan.LoadDifference + "), so kept out of the calibration profile: "
	}
	if len(outside) > 0 {
		msg := fmt.Sprintf("%scandidate %s of DynamoGraphDeployment %s generation %d is outside its error band: %s",
			other, v.Candidate, v.Deployment, v.DeploymentGeneration, strings.Join(outside, "; "))
		r.setPredictionHeld(dgdr, metav1.ConditionFalse, v1beta2.ReasonOutsideErrorBand, msg)
		events.Warning(EventPredictionMissed, "Verify", msg)
		return
	}
	names := make([]string, 0, len(metrics))
	for _, m := range metrics {
		names = append(names, fmt.Sprintf("%s %.1f%% off (tolerance %g%%)", m.Name, *m.RelativeErrorPct, *m.TolerancePct))
	}
	msg := fmt.Sprintf("%scandidate %s of DynamoGraphDeployment %s generation %d measured within tolerance: %s",
		other, v.Candidate, v.Deployment, v.DeploymentGeneration, strings.Join(names, ", "))
	r.setPredictionHeld(dgdr, metav1.ConditionTrue, v1beta2.ReasonWithinErrorBand, msg)
	events.Normal(EventPredictionHeld, "Verify", msg)
}

// failVerification records a verification that measured nothing usable.
func (r *Reconciler) failVerification(dgdr *v1beta2.DynamoGraphDeploymentRequest, v v1beta2.VerificationStatus, reason, msg string, events *status.Events) {
	v.Phase, v.Reason, v.Message = v1beta2.VerificationFailed, reason, status.Truncate(msg, 1024)
	dgdr.Status.Verification = &v
	full := fmt.Sprintf("verification of DynamoGraphDeployment %s generation %d failed (%s): %s", v.Deployment, v.DeploymentGeneration, reason, msg)
	r.setPredictionHeld(dgdr, metav1.ConditionUnknown, v1beta2.ReasonVerificationFailed, status.Truncate(full, 1024))
	events.Warning(EventVerificationFailed, "Verify", status.Truncate(full, 1024))
}

func (r *Reconciler) setPredictionHeld(dgdr *v1beta2.DynamoGraphDeploymentRequest, s metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&dgdr.Status.Conditions, metav1.Condition{
		Type: v1beta2.ConditionPredictionHeld, Status: s, Reason: reason, Message: status.Truncate(msg, 32768), ObservedGeneration: dgdr.Generation,
	})
}
