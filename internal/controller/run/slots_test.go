package run

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/slotqueue"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
)

// TestSlotRun: what the slot queue learns of a Run. Terminal Runs, Runs being deleted and Kueue
// workloads are not counted; cancelled and superseded Runs are stopped.
func TestSlotRun(t *testing.T) {
	created := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	base := func(mutate func(*v1beta2.DynamoGraphDeploymentRun)) *v1beta2.DynamoGraphDeploymentRun {
		r := builders.Run("ns", "r").UID("uid-r").Created(created).Obj()
		mutate(r)
		return r
	}
	condition := func(typ, reason string) func(*v1beta2.DynamoGraphDeploymentRun) {
		return func(r *v1beta2.DynamoGraphDeploymentRun) {
			meta.SetStatusCondition(&r.Status.Conditions, metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: reason})
		}
	}
	want := func(mutate func(*slotqueue.Run)) slotqueue.Run {
		r := slotqueue.Run{Namespace: "ns", Name: "r", UID: "uid-r", Created: created, Counted: true}
		mutate(&r)
		return r
	}
	cases := []struct {
		name string
		run  *v1beta2.DynamoGraphDeploymentRun
		want slotqueue.Run
	}{
		{"waiting", base(func(*v1beta2.DynamoGraphDeploymentRun) {}), want(func(*slotqueue.Run) {})},
		{"with a Job", base(func(r *v1beta2.DynamoGraphDeploymentRun) { r.Status.JobRef = &v1beta2.JobReference{Name: "r-search"} }),
			want(func(r *slotqueue.Run) { r.HasJob = true })},
		{"queued in its status", base(condition(v1beta2.ConditionQueued, v1beta2.ReasonWaitingForSlot)),
			want(func(r *slotqueue.Run) { r.Queued = true })},
		{"queued for another reason", base(condition(v1beta2.ConditionQueued, v1beta2.ReasonWaitingForAdmission)),
			want(func(*slotqueue.Run) {})},
		{"terminal", base(condition(v1beta2.ConditionCompleted, v1beta2.ReasonSucceeded)),
			want(func(r *slotqueue.Run) { r.Counted = false })},
		{"being deleted", base(func(r *v1beta2.DynamoGraphDeploymentRun) {
			r.DeletionTimestamp, r.Finalizers = ptr.To(metav1.NewTime(created)), []string{"x"}
		}), want(func(r *slotqueue.Run) { r.Counted = false })},
		{"a Kueue workload", base(func(r *v1beta2.DynamoGraphDeploymentRun) {
			r.Labels = map[string]string{v1beta2.LabelKueueQueueName: "q"}
		}),
			want(func(r *slotqueue.Run) { r.Counted = false })},
		{"cancelled", base(func(r *v1beta2.DynamoGraphDeploymentRun) {
			r.Annotations = map[string]string{v1beta2.AnnotationCancel: "true"}
		}),
			want(func(r *slotqueue.Run) { r.Stopped = true })},
		{"superseded", base(func(r *v1beta2.DynamoGraphDeploymentRun) {
			r.Annotations = map[string]string{v1beta2.AnnotationSupersededBy: "r2"}
		}),
			want(func(r *slotqueue.Run) { r.Stopped = true })},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, slotRun(tc.run)); diff != "" {
				t.Errorf("slotRun (-want +got):\n%s", diff)
			}
		})
	}
}
