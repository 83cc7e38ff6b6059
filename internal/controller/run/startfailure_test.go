package run_test

import (
	"context"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	ct "github.com/dgdr-operator/dgdr-operator/internal/controller/controllertest"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/run"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/poll"
)

// createStuckPod creates the Job's pod (as the Job controller would) with the given init and
// container statuses (as a kubelet would): there is no kubelet in these tests.
func createStuckPod(t *testing.T, job *batchv1.Job, init, containers []corev1.ContainerStatus) {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{batchv1.JobNameLabel: job.Name}
	for k, v := range job.Spec.Template.Labels {
		labels[k] = v
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: job.Name + "-stuck", Labels: labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))}},
		Spec: *job.Spec.Template.Spec.DeepCopy(),
	}
	if err := k8s.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase = corev1.PodPending
	pod.Status.InitContainerStatuses = init
	pod.Status.ContainerStatuses = containers
	if err := k8s.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
}

func waiting(name, reason, msg string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, Image: "img", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}
}

// TestPodThatCannotStartEndsTheRun: a search pod whose container stays unable to start ends the
// Run with SearchPodFailedToStart once job.startFailureGraceSeconds has passed (learnt from the
// pod watch, with the Job's status unchanged), and the Job is deleted; a failed init container
// ends it without waiting.
func TestPodThatCannotStartEndsTheRun(t *testing.T) {
	cases := []struct {
		name             string
		init, containers []corev1.ContainerStatus
		final            bool
		want             []string
	}{
		{name: "image pull error", final: false,
			init: []corev1.ContainerStatus{{Name: jobcontract.InputContainer, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed"}}}},
			containers: []corev1.ContainerStatus{
				waiting(jobcontract.SearchContainer, "ImagePullBackOff", `Back-off pulling image "registry.example/planner:nope"`),
				waiting(jobcontract.PublicationContainer, "ContainerCreating", ""),
			},
			want: []string{`container "search"`, "ImagePullBackOff", "registry.example/planner:nope", "planner.image", "Job was deleted"}},
		{name: "failed init container", final: true,
			init: []corev1.ContainerStatus{{Name: jobcontract.InputContainer, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 1, Reason: "Error", Message: "the recorded input does not match its hash"}}}},
			containers: []corev1.ContainerStatus{waiting(jobcontract.SearchContainer, "PodInitializing", ""), waiting(jobcontract.PublicationContainer, "PodInitializing", "")},
			want:       []string{`init container "input"`, "exit code 1", "does not match its hash"}},
	}
	ns := testenv.Namespace(t, k8s, "t")
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := createRun(t, ns, "nostart-"+string(rune('a'+i)), nil)
			job := waitForJob(t, r)
			start := time.Now()
			createStuckPod(t, job, tc.init, tc.containers)
			got := waitForReason(t, r, v1beta2.ReasonSearchPodFailedToStart)
			took := time.Since(start)
			if !tc.final && took < startFailureGrace {
				t.Errorf("the Run ended after %s, before the %s grace", took, startFailureGrace)
			}
			if tc.final && took >= startFailureGrace {
				t.Errorf("a final failure waited %s", took)
			}
			for _, w := range tc.want {
				if !strings.Contains(got.Status.Message, w) {
					t.Errorf("message %q does not contain %q", got.Status.Message, w)
				}
			}
			poll.Eventually(t, wait, "the Job to be deleted", func() (bool, error) {
				err := k8s.Get(context.Background(), client.ObjectKeyFromObject(job), &batchv1.Job{})
				return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
			})
		})
	}
}

// TestPodThatRecoversKeepsRunning: an image pull error that clears within the grace does not
// end the Run.
func TestPodThatRecoversKeepsRunning(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k8s, "t")
	r := createRun(t, ns, "recovers", nil)
	job := waitForJob(t, r)
	createStuckPod(t, job, nil, []corev1.ContainerStatus{waiting(jobcontract.SearchContainer, "ErrImagePull", "timeout")})
	time.Sleep(startFailureGrace / 3)
	var pod corev1.Pod
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: job.Name + "-stuck"}, &pod); err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase = corev1.PodRunning
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: jobcontract.SearchContainer, Image: "img",
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}}
	if err := k8s.Status().Update(ctx, &pod); err != nil {
		t.Fatal(err)
	}
	if err := ct.SetJobRunning(ctx, k8s, job); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * startFailureGrace)
	if got := getRun(t, r); run.IsTerminal(got) {
		t.Fatalf("the Run ended although its pod recovered: %s", got.Status.Message)
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(job), &batchv1.Job{}); err != nil {
		t.Fatalf("the Job: %v", err)
	}
}

// TestReporterRestartIsNoStartFailure: the reporter is a sidecar the kubelet starts again: a
// search pod whose reporter exited (killed mid-publication, not restarted yet) is left to its
// Job; a reporter that stays in CrashLoopBackOff for job.startFailureGraceSeconds ends the Run.
func TestReporterRestartIsNoStartFailure(t *testing.T) {
	exited := func(name string, code int32) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, Image: "img", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: "Error"}}}
	}
	running := func(name string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, Image: "img", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	}
	mains := []corev1.ContainerStatus{running(jobcontract.SearchContainer), running(jobcontract.PublicationContainer)}
	ns := testenv.Namespace(t, k8s, "t")

	killed := createRun(t, ns, "killed-reporter", nil)
	job := waitForJob(t, killed)
	createStuckPod(t, job, []corev1.ContainerStatus{exited(jobcontract.InputContainer, 0), exited(jobcontract.ReporterContainer, 137)}, mains)
	leftToItsJob(t, killed, job)

	looping := createRun(t, ns, "looping-reporter", nil)
	job = waitForJob(t, looping)
	createStuckPod(t, job, []corev1.ContainerStatus{exited(jobcontract.InputContainer, 0),
		waiting(jobcontract.ReporterContainer, "CrashLoopBackOff", "back-off 40s restarting failed container=reporter")}, mains)
	got := waitForReason(t, looping, v1beta2.ReasonSearchPodFailedToStart)
	for _, w := range []string{`init container "reporter"`, "CrashLoopBackOff", "job.startFailureGraceSeconds"} {
		if !strings.Contains(got.Status.Message, w) {
			t.Errorf("message %q does not contain %q", got.Status.Message, w)
		}
	}
}

// leftToItsJob checks that a reconcile of r (forced by touching it) neither ends it nor deletes
// its Job.
func leftToItsJob(t *testing.T, r *v1beta2.DynamoGraphDeploymentRun, job *batchv1.Job) {
	t.Helper()
	touched := getRun(t, r)
	touched.Annotations = map[string]string{"test": "touch"}
	if err := k8s.Update(context.Background(), touched); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if c := getRun(t, r); run.IsTerminal(c) {
		t.Errorf("Run %s was ended before its Job: %s", r.Name, c.Status.Message)
	}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(job), &batchv1.Job{}); err != nil {
		t.Errorf("the Job of Run %s: %v", r.Name, err)
	}
}
