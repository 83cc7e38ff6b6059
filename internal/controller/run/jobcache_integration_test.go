package run_test

import (
	"context"
	"errors"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	ct "github.com/dgdr-operator/dgdr-operator/internal/controller/controllertest"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/poll"
)

// TestSucceededSearchJobIsFollowedFromTheAPIServer: the operator's cache drops a search Job, and
// its pod, once the pod succeeded (jobcache); the Run follows the Job on the API server from then
// on (and reads the pod's outcome there), also while the Job controller has counted the pod but
// not yet marked the Job Complete (its pods still terminating), a change no event reports.
func TestSucceededSearchJobIsFollowedFromTheAPIServer(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k8s, "t")
	r := createRun(t, ns, "succeeds", nil)
	job := waitForJob(t, r)
	pod, err := ct.CreatePod(ctx, k8s, job, &ct.Terminated{}, &ct.Terminated{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	job.Status.StartTime = &now
	job.Status.Succeeded = 1
	job.Status.Ready, job.Status.Terminating = ptr.To[int32](0), ptr.To[int32](0)
	job.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue,
		Reason: batchv1.JobReasonCompletionsReached, LastTransitionTime: now, LastProbeTime: now}}
	if err := k8s.Status().Update(ctx, job); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, wait, "the succeeded Job and pod gone from the operator's cache", func() (bool, error) {
		errJob := cached.Get(ctx, client.ObjectKeyFromObject(job), &batchv1.Job{})
		errPod := cached.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{})
		return apierrors.IsNotFound(errJob) && apierrors.IsNotFound(errPod), errors.Join(client.IgnoreNotFound(errJob), client.IgnoreNotFound(errPod))
	})
	time.Sleep(2 * time.Second) // a poll or two of the Run controller
	if c := meta.FindStatusCondition(getRun(t, r).Status.Conditions, v1beta2.ConditionCompleted); c != nil && c.Status == metav1.ConditionTrue {
		t.Fatalf("the Run ended (%s: %s) before its Job finished", c.Reason, c.Message)
	}

	now = metav1.Now()
	job.Status.CompletionTime = &now
	job.Status.Conditions = append(job.Status.Conditions, batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue,
		Reason: batchv1.JobReasonCompletionsReached, LastTransitionTime: now, LastProbeTime: now})
	if err := k8s.Status().Update(ctx, job); err != nil {
		t.Fatal(err)
	}
	got := waitForReason(t, r, v1beta2.ReasonSucceeded)
	if got.Status.JobRef == nil || got.Status.JobRef.UID != job.UID {
		t.Errorf("jobRef = %+v, want the Job %s", got.Status.JobRef, job.UID)
	}
}

// TestWindowOfASucceededPodIsRead: a re-search's search pod succeeded before the Run controller
// saw its input container's report of the window. The cache holds no pod that succeeded
// (jobcache), so the report is read from the API server: the window is recorded and the
// baseline Job, which checks its cut against it, starts.
func TestWindowOfASucceededPodIsRead(t *testing.T) {
	ctx := context.Background()
	r := researchRun(t)
	job := waitForJob(t, r)
	pod, err := ct.CreatePod(ctx, k8s, job, &ct.Terminated{}, &ct.Terminated{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: jobcontract.InputContainer, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		Message: `{"requests":42,"sha256":"` + windowSHA256 + `","segments":3,"truncatedSegments":0,"pods":2}`}}}}
	if err := k8s.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := ct.FinishJob(ctx, k8s, job, ""); err != nil {
		t.Fatal(err)
	}
	waitForBaselineJob(t, r)
	if w := getRun(t, r).Status.AISimulate.Trace.Window; w.Requests == nil || *w.Requests != 42 || w.SHA256 != "sha256:"+windowSHA256 {
		t.Errorf("status.aisimulate.trace.window = %+v, want the input container's report", w)
	}
}
