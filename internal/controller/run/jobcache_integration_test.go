package run_test

import (
	"context"
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
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/poll"
)

// TestSucceededSearchJobIsFollowedFromTheAPIServer: the operator's cache drops a search Job once
// a pod of it succeeded (jobcache), and the Run follows the Job on the API server from then on,
// also while the Job controller has counted the pod but not yet marked the Job Complete (its
// pods still terminating), a change no event reports.
func TestSucceededSearchJobIsFollowedFromTheAPIServer(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k8s, "t")
	r := createRun(t, ns, "succeeds", nil)
	job := waitForJob(t, r)
	if _, err := ct.CreatePod(ctx, k8s, job, &ct.Terminated{}, &ct.Terminated{}); err != nil {
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
	poll.Eventually(t, wait, "the succeeded Job gone from the operator's cache", func() (bool, error) {
		err := cached.Get(ctx, client.ObjectKeyFromObject(job), &batchv1.Job{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
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
