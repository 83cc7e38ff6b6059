package deployment_test

import (
	"context"
	"strings"
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
	"github.com/dgdr-operator/dgdr-operator/internal/verification"
)

// stuckVerificationPod creates a pod of the verification Job in state, as the Job controller and
// a kubelet would (there is neither here); controlled says whether the Job is its controller
// (false: a pod someone else created with the Job's labels).
func stuckVerificationPod(t *testing.T, job *batchv1.Job, name string, controlled bool, state func(*corev1.PodStatus)) {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{batchv1.JobNameLabel: job.Name}
	for k, v := range job.Spec.Template.Labels {
		labels[k] = v
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: name, Labels: labels},
		Spec: *job.Spec.Template.Spec.DeepCopy()}
	if controlled {
		pod.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))}
	}
	if err := k8s.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase = corev1.PodPending
	state(&pod.Status)
	if err := k8s.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
}

func imagePullError(s *corev1.PodStatus) {
	s.ContainerStatuses = []corev1.ContainerStatus{{Name: verification.ContainerName, Image: verificationImage,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull",
			Message: `failed to pull and unpack image "` + verificationImage + `": not found`}}}}
}

func unschedulable(s *corev1.PodStatus) {
	s.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: "0/1 nodes are available: 1 Insufficient cpu."}}
}

// TestVerificationPodThatCannotStart: a verification whose pod cannot start ends Failed with
// reason PodFailedToStart once job.startFailureGraceSeconds has passed (learnt from the pod watch;
// the Job's status is unchanged), not at the Job's deadline (maxDurationSeconds + 120 s; this
// API server has no Job controller, so it would stay Running for good). status.verification and
// PredictionHeld name the container and the cause, and the Job is deleted. A pod carrying the
// Job's labels that the Job does not control (anyone who may create pods can make one) changes
// nothing; no node holding the pod, and a Job that never gets a pod (its pods refused), end it
// the same way.
func TestVerificationPodThatCannotStart(t *testing.T) {
	ns := testenv.Namespace(t, k8s, "v")
	on := &v1beta2.VerificationSpec{Enabled: ptr.To(true)}
	cases := []struct {
		name     string
		impostor bool
		state    func(*corev1.PodStatus) // nil: the Job gets no pod
		want     []string
	}{
		{name: "nopull", impostor: true, state: imagePullError,
			want: []string{`container "aiperf" stayed in ErrImagePull`, verificationImage, "job.startFailureGraceSeconds", "verification.image", "was deleted"}},
		{name: "nonode", state: unschedulable,
			want: []string{"no node could hold it, Unschedulable (0/1 nodes are available: 1 Insufficient cpu.)", "verification.resources", "was deleted"}},
		{name: "nopod",
			want: []string{"created no pod within 5s", "FailedCreate", "was deleted"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := deployed(t, ns, tc.name, on, predicted())
			job := createdVerificationJob(t, d)
			if tc.state != nil {
				if err := ct.SetJobRunning(context.Background(), k8s, job); err != nil {
					t.Fatal(err)
				}
			}
			if tc.impostor {
				stuckVerificationPod(t, job, "impostor", false, tc.state)
				time.Sleep(2 * startFailureGrace)
				if v := getRequest(t, d).Status.Verification; v == nil || v.Phase != v1beta2.VerificationRunning {
					t.Fatalf("a pod the Job does not control ended the verification: %+v", v)
				}
			}
			start := job.CreationTimestamp.Time
			if tc.state != nil {
				start = time.Now()
				stuckVerificationPod(t, job, job.Name+"-x1", true, tc.state)
			}
			assertFailed(t, d, verification.ReasonPodFailedToStart, tc.want[0])
			if took := time.Since(start); took < startFailureGrace {
				t.Errorf("the verification ended after %s, before the %s grace", took, startFailureGrace)
			}
			got := getRequest(t, d)
			held := meta.FindStatusCondition(got.Status.Conditions, v1beta2.ConditionPredictionHeld)
			for _, w := range tc.want {
				if !strings.Contains(got.Status.Verification.Message, w) || !strings.Contains(held.Message, w) {
					t.Errorf("verification message %q or PredictionHeld message %q lacks %q", got.Status.Verification.Message, held.Message, w)
				}
			}
			poll.Eventually(t, wait, "the verification Job to be deleted", func() (bool, error) {
				var j batchv1.Job
				err := k8s.Get(context.Background(), client.ObjectKeyFromObject(job), &j)
				return apierrors.IsNotFound(err) || (err == nil && j.DeletionTimestamp != nil), client.IgnoreNotFound(err)
			})
			waitForEvent(t, ns, d.Name, "VerificationFailed")
		})
	}
}

func getRequest(t *testing.T, d *v1beta2.DynamoGraphDeploymentRequest) *v1beta2.DynamoGraphDeploymentRequest {
	t.Helper()
	got := &v1beta2.DynamoGraphDeploymentRequest{}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(d), got); err != nil {
		t.Fatal(err)
	}
	return got
}
