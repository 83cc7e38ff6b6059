package run

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/slotqueue"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/status"
)

// slots returns the Reconciler's slot queue, made on first use with the configured limits.
// SetupWithManager connects it to the Run informer; a Reconciler that was not set up with a
// manager starts no Run that lacks a Job.
func (r *Reconciler) slots() *slotqueue.Queue {
	r.slotQueueOnce.Do(func() {
		limits := r.Config.Limits
		r.slotQueue = slotqueue.New(int(ptr.Deref(limits.MaxActiveRunsPerNamespace, 0)), int(ptr.Deref(limits.MaxPendingRunsPerNamespace, 0)))
	})
	return r.slotQueue
}

// slotRun is what the slot queue knows of run.
func slotRun(run *v1beta2.DynamoGraphDeploymentRun) slotqueue.Run {
	stop, _ := stopRequest(run)
	queued := meta.FindStatusCondition(run.Status.Conditions, v1beta2.ConditionQueued)
	return slotqueue.Run{
		Namespace: run.Namespace, Name: run.Name, UID: run.UID, Created: run.CreationTimestamp.Time,
		Counted: !IsTerminal(run) && run.DeletionTimestamp.IsZero() && QueueName(run) == "",
		Stopped: stop != "",
		HasJob:  run.Status.JobRef != nil,
		Queued:  queued != nil && queued.Status == metav1.ConditionTrue && queued.Reason == v1beta2.ReasonWaitingForSlot,
	}
}

// describeSlotRun feeds the slot queue from the Run informer.
func describeSlotRun(obj client.Object) (slotqueue.Run, bool) {
	run, ok := obj.(*v1beta2.DynamoGraphDeploymentRun)
	if !ok {
		return slotqueue.Run{}, false
	}
	return slotRun(run), true
}

// admit asks the slot queue whether a Run without a Job may create it now, and otherwise
// records in the Run's status that it waits (Queued=True, WaitingForSlot) or that it was
// refused (Completed=True, PendingLimitExceeded). A waiting Run gets no timer: the queue wakes
// it when a slot is its.
func (r *Reconciler) admit(run *v1beta2.DynamoGraphDeploymentRun, events *status.Events) bool {
	a := r.slots().Admit(slotRun(run))
	switch a.Verdict {
	case slotqueue.Start:
		return true
	case slotqueue.Unknown:
		return false // the queue's informer event for this Run reconciles it again
	case slotqueue.Refuse:
		r.setTerminal(run, &Completion{Reason: v1beta2.ReasonPendingLimitExceeded, Message: fmt.Sprintf(
			"not queued: %d Runs already wait for a search slot in namespace %s, the limit (limits.maxPendingRunsPerNamespace: %d); "+
				"no search ran. Edit the request (a new generation) once the namespace's backlog has drained",
			a.Ahead, run.Namespace, r.slots().MaxPending())}, events)
		return false
	}
	msg := fmt.Sprintf("waiting for a free slot: %d of %d searches are active in namespace %s (limits.maxActiveRunsPerNamespace)",
		a.Active, r.slots().MaxActive(), run.Namespace)
	if !meta.IsStatusConditionTrue(run.Status.Conditions, v1beta2.ConditionQueued) {
		events.Normal(EventQueued, "Queue", msg)
	}
	run.Status.Phase = v1beta2.RunPhasePending
	run.Status.Message = msg
	r.setCondition(run, v1beta2.ConditionQueued, metav1.ConditionTrue, v1beta2.ReasonWaitingForSlot, msg)
	r.setCondition(run, v1beta2.ConditionCompleted, metav1.ConditionFalse, v1beta2.ReasonWaitingForSlot, msg)
	return false
}
