package run

import (
	"context"
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/jobcache"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/status"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/internal/modelaccess"
	"github.com/dgdr-operator/dgdr-operator/internal/naming"
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

// baselineInput is the re-search baseline the operator recorded for the Run, or nil.
func baselineInput(run *v1beta2.DynamoGraphDeploymentRun) *v1beta2.BaselineInputStatus {
	if a := run.Status.AISimulate; a != nil {
		return a.Baseline
	}
	return nil
}

// BuildBaselineJob returns a re-search's baseline Job, nil for a Run without a recorded baseline.
// The deployed Candidate is predicted in a pod of its own, run by the Run's search identity like
// the search: the input container cuts the recorded window again from the capture claim,
// checked against the hash of the search's cut (so the baseline replays the traffic the search
// replayed), and writes the baseline input, checked against the hash the operator put on the
// Job; the baseline container runs planner.predictCommand on it; the reporter, in baseline
// mode, publishes the prediction as the Run's status.baseline. Its deadline is
// job.baselineDeadlineSeconds. Pure, like BuildJob.
func BuildBaselineJob(run *v1beta2.DynamoGraphDeploymentRun, cfg *v1alpha1.OperatorConfiguration) *batchv1.Job {
	b := baselineInput(run)
	if b == nil {
		return nil
	}
	predict := baselineContainer(run, cfg)
	traceVolumes, traceMounts := traceMount(run)
	predict.VolumeMounts = append(predict.VolumeMounts, traceMounts...)
	input := inputContainer(run, cfg, jobcontract.EnvBaselineInputHash, v1beta2.AnnotationBaselineInputHash)
	volumes := append(modelaccess.Volumes(&run.Spec.Model), traceVolumes...)
	if captureVolume, inputArgs, inputMounts := windowRecut(run); captureVolume != nil {
		volumes = append(volumes, *captureVolume)
		input.Args = append(input.Args, inputArgs...)
		input.VolumeMounts = append(input.VolumeMounts, inputMounts...)
	}
	return podJob(run, cfg, podParts{
		name: naming.BaselineJobName(run.Name), component: componentBaseline, deadline: cfg.Job.BaselineDeadlineSeconds,
		annotations: hashAnnotation(v1beta2.AnnotationBaselineInputHash, b.InputHash),
		input:       input, reporter: baselineReporter(run, cfg), main: predict, volumes: volumes,
	})
}

// baselineContainer predicts the deployed Candidate under the re-search's traffic: the search
// container's image, context, resources and model access with the predict command.
func baselineContainer(run *v1beta2.DynamoGraphDeploymentRun, cfg *v1alpha1.OperatorConfiguration) corev1.Container {
	b := searchContainer(run, cfg)
	b.Name = jobcontract.BaselineContainer
	b.Command = append([]string(nil), cfg.Planner.PredictCommand...)
	b.Args = append([]string(nil), jobcontract.BaselineArgs...)
	return b
}

// baselineReporter is the baseline pod's reporter: it publishes the baseline's prediction.
func baselineReporter(run *v1beta2.DynamoGraphDeploymentRun, cfg *v1alpha1.OperatorConfiguration) corev1.Container {
	reporter := reporterImageContainer(cfg, jobcontract.ReporterContainer, jobcontract.BaselineReporterArgs)
	reporter.Env = []corev1.EnvVar{
		runNameEnv(run),
		fieldEnv(jobcontract.EnvRunNamespace, "metadata.namespace"),
		fieldEnv(jobcontract.EnvPodName, "metadata.name"),
		{Name: jobcontract.EnvOutputDir, Value: jobcontract.BaselineOutputDir},
	}
	reporter.VolumeMounts = []corev1.VolumeMount{outputMount(), tokenMount(), publicationMount(false)}
	return reporter
}

// startBaseline creates a re-search's baseline Job once the search's input container has
// reported the window it cut (the baseline's cut is checked against its hash), and records it
// in status.baselineJobRef. Nothing for a Run without a recorded baseline, or whose baseline
// Job exists or whose status.baseline is written. A Job under the baseline's name that the
// operator did not make ends the baseline with status.baseline.error.
func (r *Reconciler) startBaseline(ctx context.Context, run *v1beta2.DynamoGraphDeploymentRun) error {
	b := baselineInput(run)
	if b == nil || run.Status.BaselineJobRef != nil || run.Status.Baseline != nil {
		return nil
	}
	if w := recordedWindow(run); w != nil && w.SHA256 == "" {
		return nil // the search's input container has not reported its cut yet
	}
	job := BuildBaselineJob(run, r.Config)
	if err := r.Client.Create(ctx, job); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating the baseline Job: %w", err)
		}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(job), job); err != nil {
			return err
		}
		if !madeFor(job, run) {
			run.Status.Baseline = baselineError(b.Candidate, fmt.Sprintf("Job %s/%s exists but was not created by the operator (owner references %s); the baseline was not predicted",
				job.Namespace, job.Name, describeOwners(job)))
			return nil
		}
	}
	run.Status.BaselineJobRef = &v1beta2.JobReference{Name: job.Name, UID: job.UID}
	log.FromContext(ctx).Info("created baseline job", "job", job.Name, "candidate", b.Candidate)
	return nil
}

// baselineEnded tells whether a re-search's baseline has ended: its reporter published
// status.baseline, or its Job ended (or went) without it, which this records as
// status.baseline.error. It creates the Job when the search ended before it was (startBaseline).
// A Run without a recorded baseline has none to wait for. again is when to look again at a Job
// only the API server shows (jobcache).
func (r *Reconciler) baselineEnded(ctx context.Context, run *v1beta2.DynamoGraphDeploymentRun) (ended bool, again time.Duration, err error) {
	b := baselineInput(run)
	if b == nil || run.Status.Baseline != nil {
		return true, 0, nil
	}
	ref := run.Status.BaselineJobRef
	if ref == nil {
		err := r.startBaseline(ctx, run)
		return run.Status.Baseline != nil, 0, err
	}
	job := &batchv1.Job{}
	key := types.NamespacedName{Namespace: run.Namespace, Name: ref.Name}
	err = r.Client.Get(ctx, key, job)
	if apierrors.IsNotFound(err) {
		// The cache holds no Job that succeeded (jobcache), and may not show one created
		// moments ago.
		if err = r.APIReader.Get(ctx, key, job); err == nil && !jobcache.Settled(job) {
			again = jobcache.Poll
		}
	}
	switch {
	case apierrors.IsNotFound(err):
		run.Status.Baseline = baselineError(b.Candidate, fmt.Sprintf("the baseline Job %s was deleted before the baseline was published", ref.Name))
		return true, 0, nil
	case err != nil:
		return false, 0, err
	case job.UID != ref.UID:
		run.Status.Baseline = baselineError(b.Candidate, fmt.Sprintf("Job %s (uid %s) replaced the baseline Job the operator created (uid %s)", ref.Name, job.UID, ref.UID))
		return true, 0, nil
	case jobcache.Finished(job) == nil:
		return false, again, nil
	}
	// The reporter writes status.baseline before its pod, and so the Job, can end: only a
	// cache behind the API server misses it.
	live := &v1beta2.DynamoGraphDeploymentRun{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(run), live); err != nil {
		return false, 0, err
	}
	if live.Status.Baseline != nil {
		run.Status.Baseline = live.Status.Baseline.DeepCopy()
		return true, 0, nil
	}
	pods, err := r.jobPods(ctx, job)
	if err != nil {
		return false, 0, err
	}
	run.Status.Baseline = BaselineFailure(b.Candidate, job, pods, *r.Config.Job.BaselineDeadlineSeconds)
	return true, 0, nil
}

// stopBaseline deletes a re-search's baseline Job that has not finished, when its Run ends
// without waiting for it (cancelled, superseded, or its search did not succeed): the prediction
// would compare with nothing.
func (r *Reconciler) stopBaseline(ctx context.Context, run *v1beta2.DynamoGraphDeploymentRun) error {
	ref := run.Status.BaselineJobRef
	if ref == nil || ref.UID == "" {
		return nil
	}
	job := &batchv1.Job{}
	// The cache holds no Job that succeeded (jobcache): one it does not hold needs no stop.
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: ref.Name}, job)
	if apierrors.IsNotFound(err) || (err == nil && (job.UID != ref.UID || jobcache.Finished(job) != nil)) {
		return nil
	}
	if err != nil {
		return err
	}
	err = r.Client.Delete(ctx, job, client.Preconditions{UID: ptr.To(ref.UID)}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting the baseline Job: %w", err)
	}
	return nil
}

// BaselineFailure is status.baseline of a baseline Job that finished without its reporter
// publishing it: why, from its input container (a window that is not the search's), its
// publication container (the reporter's outcome), or its deadline.
func BaselineFailure(candidate string, job *batchv1.Job, pods []corev1.Pod, deadlineSeconds int64) *v1beta2.BaselineStatus {
	fin := jobcache.Finished(job)
	_, reporter, _ := terminations(pods)
	input := inputTermination(pods)
	var msg string
	switch {
	case input != nil && input.ExitCode == jobcontract.InputExitWindowMismatch:
		msg = "the window cut again for the baseline is not the one the search replayed, so the deployed candidate was not predicted under it" + quote(input)
	case input != nil && input.ExitCode != 0:
		msg = fmt.Sprintf("the baseline's input container failed (exit code %d)%s", input.ExitCode, quote(input))
	case reporter != nil && reporter.ExitCode != 0:
		msg = fmt.Sprintf("the baseline's reporter could not publish it (exit code %d)%s", reporter.ExitCode, quote(reporter))
	case fin != nil && fin.Type == batchv1.JobFailed && fin.Reason == batchv1.JobReasonDeadlineExceeded:
		msg = fmt.Sprintf("the baseline prediction did not finish within job.baselineDeadlineSeconds (%ds) of the operator configuration", deadlineSeconds)
	case fin != nil:
		msg = fmt.Sprintf("the baseline Job %s ended (%s: %s) without publishing the baseline", job.Name, fin.Reason, strings.TrimSpace(fin.Message))
	default:
		msg = fmt.Sprintf("the baseline Job %s ended without publishing the baseline", job.Name)
	}
	return baselineError(candidate, msg)
}

// baselineError is status.baseline saying why the candidate has no predicted metrics.
func baselineError(candidate, msg string) *v1beta2.BaselineStatus {
	if len(msg) > maxBaselineError {
		msg = msg[:maxBaselineError-len("…")] + "…"
	}
	return &v1beta2.BaselineStatus{Candidate: candidate, Error: msg}
}

// maxBaselineError is the API's cap on status.baseline.error.
const maxBaselineError = 2048
