package run

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

func finishedJob(typ batchv1.JobConditionType, reason string) *batchv1.Job {
	return &batchv1.Job{Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{
		{Type: typ, Status: corev1.ConditionTrue, Reason: reason, Message: "job message"}}}}
}

func podWith(created time.Time, search, reporter *corev1.ContainerStateTerminated) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)}}
	if search != nil {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: "search", State: corev1.ContainerState{Terminated: search}})
	}
	if reporter != nil {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: "reporter", State: corev1.ContainerState{Terminated: reporter}})
	}
	return p
}

func exit(code int32, reason, msg string) *corev1.ContainerStateTerminated {
	return &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, Message: msg}
}

func TestClassify(t *testing.T) {
	now := time.Now()
	failed := finishedJob(batchv1.JobFailed, batchv1.JobReasonBackoffLimitExceeded)
	noFeasible := &v1beta2.DynamoGraphDeploymentRunStatus{Progress: &v1beta2.RunProgress{Settled: 10, Infeasible: 10}}
	cases := []struct {
		name       string
		job        *batchv1.Job
		pods       []corev1.Pod
		status     *v1beta2.DynamoGraphDeploymentRunStatus
		wantReason string
		wantInMsg  string
	}{
		{name: "not finished", job: &batchv1.Job{}},
		{name: "complete", job: finishedJob(batchv1.JobComplete, ""), wantReason: v1beta2.ReasonSucceeded},
		{name: "reporter failed", job: failed, pods: []corev1.Pod{podWith(now, exit(0, "Completed", ""), exit(1, "Error", "forbidden"))},
			wantReason: v1beta2.ReasonPublishFailed, wantInMsg: "forbidden"},
		{name: "exit 1 no feasible", job: failed, pods: []corev1.Pod{podWith(now, exit(1, "Error", ""), nil)}, status: noFeasible,
			wantReason: v1beta2.ReasonNoFeasibleCandidate},
		{name: "exit 1 recommendation says none feasible", job: failed, pods: []corev1.Pod{podWith(now, exit(1, "Error", ""), nil)},
			status: &v1beta2.DynamoGraphDeploymentRunStatus{Recommendation: &v1beta2.RecommendationSummary{Evaluated: 5}}, wantReason: v1beta2.ReasonNoFeasibleCandidate},
		{name: "exit 1 failure", job: failed, pods: []corev1.Pod{podWith(now, exit(1, "Error", "boom"), nil)}, wantReason: v1beta2.ReasonSearchFailed, wantInMsg: "boom"},
		{name: "exit 2", job: failed, pods: []corev1.Pod{podWith(now, exit(2, "Error", "bad field"), nil)}, wantReason: v1beta2.ReasonInvalidInput, wantInMsg: "bad field"},
		{name: "exit 3", job: failed, pods: []corev1.Pod{podWith(now, exit(3, "Error", ""), nil)}, wantReason: v1beta2.ReasonResourceLimited},
		{name: "exit 124", job: failed, pods: []corev1.Pod{podWith(now, exit(124, "Error", ""), nil)}, wantReason: v1beta2.ReasonDeadlineExceeded, wantInMsg: "124"},
		{name: "exit 137", job: failed, pods: []corev1.Pod{podWith(now, exit(137, "Error", ""), nil)}, wantReason: v1beta2.ReasonOOMKilled},
		{name: "OOMKilled reason", job: failed, pods: []corev1.Pod{podWith(now, exit(1, "OOMKilled", ""), nil)}, wantReason: v1beta2.ReasonOOMKilled},
		{name: "exit 130", job: failed, pods: []corev1.Pod{podWith(now, exit(130, "Error", ""), nil)}, wantReason: v1beta2.ReasonSearchFailed, wantInMsg: "interrupted"},
		{name: "other exit", job: failed, pods: []corev1.Pod{podWith(now, exit(42, "Error", ""), nil)}, wantReason: v1beta2.ReasonSearchFailed, wantInMsg: "42"},
		{name: "job deadline wins over the kill", job: finishedJob(batchv1.JobFailed, batchv1.JobReasonDeadlineExceeded),
			pods: []corev1.Pod{podWith(now, exit(137, "Error", ""), nil)}, wantReason: v1beta2.ReasonDeadlineExceeded, wantInMsg: "activeDeadlineSeconds (60s)"},
		{name: "no pod", job: failed, wantReason: v1beta2.ReasonSearchFailed, wantInMsg: "job message"},
		{name: "newest pod counts", job: failed, pods: []corev1.Pod{
			podWith(now.Add(-time.Minute), exit(3, "Error", ""), nil), podWith(now, exit(2, "Error", ""), nil)}, wantReason: v1beta2.ReasonInvalidInput},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status := tc.status
			if status == nil {
				status = &v1beta2.DynamoGraphDeploymentRunStatus{}
			}
			got := Classify(tc.job, tc.pods, status, 60)
			if tc.wantReason == "" {
				if got != nil {
					t.Fatalf("want nil, got %+v", got)
				}
				return
			}
			if got == nil || got.Reason != tc.wantReason {
				t.Fatalf("got %+v, want reason %s", got, tc.wantReason)
			}
			if !strings.Contains(got.Message, tc.wantInMsg) {
				t.Errorf("message %q does not contain %q", got.Message, tc.wantInMsg)
			}
		})
	}
}

func TestPhase(t *testing.T) {
	got := map[string]v1beta2.RunPhase{}
	for _, r := range []string{v1beta2.ReasonSucceeded, v1beta2.ReasonCancelled, v1beta2.ReasonSuperseded, v1beta2.ReasonSearchFailed,
		v1beta2.ReasonInvalidInput, v1beta2.ReasonOOMKilled, v1beta2.ReasonPublishFailed} {
		got[r] = Phase(r)
	}
	want := map[string]v1beta2.RunPhase{
		"Succeeded": "Succeeded", "Cancelled": "Cancelled", "Superseded": "Cancelled", "SearchFailed": "Failed",
		"InvalidInput": "Failed", "OOMKilled": "Failed", "PublishFailed": "Failed",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("phases (-want +got):\n%s", diff)
	}
}
