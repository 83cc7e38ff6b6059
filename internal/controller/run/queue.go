package run

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/status"
)

// The slot queue (issue 17, "list storm"). Runs that wait for a search slot
// (limits.maxActiveRunsPerNamespace) are kept in memory, per namespace, ordered by
// (creationTimestamp, name), with the count of active Runs beside them: Kueue's queue manager
// in small. The Run informer's events feed it (runQueueHandler); a reconcile asks it whether its
// Run may start (admit). Nothing here reads the API server, waiting Runs have no timer, and a
// slot that frees wakes only the Runs that may now start, never the whole namespace.
//
// Cache lag. The informer may not yet show what this process just did. The only thing whose
// lag could break the limit is a Run that just got its Job: until its status.jobRef write
// reaches the cache, the cache shows it without a Job, like a waiting Run, and a slot
// computed from the cache alone would be handed out twice. So admit records, under the queue's
// lock and before the reconcile creates the Job, that it let the Run start (started), and the
// Run counts as active from that moment until the informer shows it terminal or gone, whatever
// the cache says meanwhile. This record is the controller's own account of the Jobs it
// creates: two workers can never both take the last slot, and a Run whose Job exists is never
// counted as waiting. The other direction of lag only delays: a Run the cache still shows
// active although it ended frees its slot when the informer delivers the end (that event wakes
// the next Run), and a Run the queue has not seen yet is simply not started by this reconcile
// (the informer's create event, which runQueueHandler turns into a reconcile, follows).
//
// A new process (restart, new leader) rebuilds the queue from the informer's initial list
// before its workers start (controller-runtime waits until every handler has received it):
// Runs whose status.jobRef is set are active. A Run whose Job a crashed process created without
// recording jobRef is counted as waiting, at its place in creation order, so it still gets the
// first free slot; its reconcile finds the Job and records it (as before this queue existed).

// admitVerdict is what admit tells a Run without a Job.
type admitVerdict int

const (
	// admitUnknown: the queue has not seen this version of the Run yet; its informer event
	// reconciles it again.
	admitUnknown admitVerdict = iota
	// admitStart: the Run may create its Job (it now counts as active).
	admitStart
	// admitWait: no slot is free for it; it waits in the queue.
	admitWait
	// admitRefuse: limits.maxPendingRunsPerNamespace Runs already wait ahead of it.
	admitRefuse
)

// admission is admit's answer.
type admission struct {
	verdict admitVerdict
	// active is the number of active Runs of the namespace, ahead the number of Runs that will
	// still wait ahead of this one once the free slots are taken.
	active, ahead int
}

// runQueue is the per-namespace slot queue.
type runQueue struct {
	mu sync.Mutex
	// maxActive and maxPending are the limits (0: unlimited).
	maxActive, maxPending int
	namespaces            map[string]*nsQueue
}

// nsQueue is one namespace's queue.
type nsQueue struct {
	runs map[string]*queuedRun // tracked Runs by name
	// pending are the waiting Runs in (creationTimestamp, name) order.
	pending []*queuedRun
	// active counts the Runs with a Job (or started by this process).
	active int
}

// queuedRun is what the queue knows of one Run that is not terminal, not being deleted, not a
// Kueue workload and not stopped before it got a Job.
type queuedRun struct {
	name    string
	uid     types.UID
	created time.Time
	// hasJob: the informer shows status.jobRef.
	hasJob bool
	// started: admit let the Run create its Job (this process's own record; see above).
	started bool
	// queued: admit told the Run to wait, so the pending cap never refuses it later.
	queued bool
	// refused: admit refused it (pending cap); it ends PendingLimitExceeded and counts nowhere.
	refused bool
}

func (e *queuedRun) isActive() bool  { return !e.refused && (e.hasJob || e.started) }
func (e *queuedRun) isPending() bool { return !e.refused && !e.hasJob && !e.started }

func compareQueued(a, b *queuedRun) int {
	return cmp.Or(a.created.Compare(b.created), strings.Compare(a.name, b.name))
}

func newRunQueue(maxActive, maxPending *int32) *runQueue {
	q := &runQueue{namespaces: map[string]*nsQueue{}}
	if maxActive != nil {
		q.maxActive = int(*maxActive)
	}
	if maxPending != nil {
		q.maxPending = int(*maxPending)
	}
	return q
}

// queueTracks tells whether a Run takes part in slot accounting: active Runs and waiting Runs.
// Terminal Runs, Runs being deleted and Kueue workloads do not; neither does a Run that was
// cancelled or superseded before it got a Job (its next reconcile ends it). started is the
// queue's own record that the Run may have a Job the cache does not show yet.
func queueTracks(run *v1beta2.DynamoGraphDeploymentRun, started bool) bool {
	if IsTerminal(run) || !run.DeletionTimestamp.IsZero() || QueueName(run) != "" {
		return false
	}
	if run.Status.JobRef == nil && !started {
		if reason, _ := stopRequest(run); reason != "" {
			return false
		}
	}
	return true
}

// observe records an informer event's Run and returns the Runs to reconcile: the Runs that may
// now start, and the Run itself when it just became a waiting Run.
func (q *runQueue) observe(run *v1beta2.DynamoGraphDeploymentRun) []types.NamespacedName {
	q.mu.Lock()
	defer q.mu.Unlock()
	ns := q.namespaces[run.Namespace]
	var e *queuedRun
	if ns != nil {
		e = ns.runs[run.Name]
		if e != nil && e.uid != run.UID {
			ns.drop(e) // a new Run under an old name
			e = nil
		}
	}
	if !queueTracks(run, e != nil && e.started) {
		if e == nil {
			return nil
		}
		ns.drop(e)
		return q.wakeLocked(run.Namespace, ns, nil)
	}
	if ns == nil {
		ns = &nsQueue{runs: map[string]*queuedRun{}}
		q.namespaces[run.Namespace] = ns
	}
	wasPending := false
	if e == nil {
		e = &queuedRun{name: run.Name, uid: run.UID, created: run.CreationTimestamp.Time}
		ns.runs[run.Name] = e
	} else {
		wasPending = e.isPending()
		ns.detach(e)
	}
	e.hasJob = run.Status.JobRef != nil
	ns.attach(e)
	var self *queuedRun
	if e.isPending() && !wasPending {
		self = e
	}
	return q.wakeLocked(run.Namespace, ns, self)
}

// forget removes a deleted Run and returns the Runs that may now start.
func (q *runQueue) forget(namespace, name string, uid types.UID) []types.NamespacedName {
	q.mu.Lock()
	defer q.mu.Unlock()
	ns := q.namespaces[namespace]
	if ns == nil {
		return nil
	}
	e := ns.runs[name]
	if e == nil || e.uid != uid {
		return nil
	}
	ns.drop(e)
	return q.wakeLocked(namespace, ns, nil)
}

// wakeLocked returns the waiting Runs that fit in the free slots (plus self), and forgets an
// empty namespace. With no limit every Run starts on its own events, so nobody is woken.
func (q *runQueue) wakeLocked(namespace string, ns *nsQueue, self *queuedRun) []types.NamespacedName {
	var out []types.NamespacedName
	if self != nil {
		out = append(out, types.NamespacedName{Namespace: namespace, Name: self.name})
	}
	if q.maxActive > 0 {
		free := min(max(q.maxActive-ns.active, 0), len(ns.pending))
		for _, e := range ns.pending[:free] {
			if e != self {
				out = append(out, types.NamespacedName{Namespace: namespace, Name: e.name})
			}
		}
	}
	if len(ns.runs) == 0 {
		delete(q.namespaces, namespace)
	}
	return out
}

// admit decides for a reconciled Run that has no Job. wasQueued says its status already shows
// it waiting (Queued=True, WaitingForSlot), e.g. recorded by an earlier process: the pending
// cap applies only to Runs entering the queue, never to Runs already in it.
func (q *runQueue) admit(run *v1beta2.DynamoGraphDeploymentRun) admission {
	q.mu.Lock()
	defer q.mu.Unlock()
	ns := q.namespaces[run.Namespace]
	if ns == nil {
		return admission{verdict: admitUnknown}
	}
	e := ns.runs[run.Name]
	switch {
	case e == nil || e.uid != run.UID:
		return admission{verdict: admitUnknown}
	case e.refused:
		return admission{verdict: admitRefuse, active: ns.active, ahead: q.maxPending}
	case e.started:
		return admission{verdict: admitStart, active: ns.active}
	case e.hasJob:
		// The queue saw a newer version of the Run (with a Job) than this reconcile.
		return admission{verdict: admitUnknown}
	}
	i, found := slices.BinarySearchFunc(ns.pending, e, compareQueued)
	if !found {
		return admission{verdict: admitUnknown}
	}
	free := max(q.maxActive-ns.active, 0)
	if q.maxActive == 0 || i < free {
		ns.detach(e)
		e.started = true
		ns.attach(e)
		return admission{verdict: admitStart, active: ns.active}
	}
	ahead := i - free
	c := meta.FindStatusCondition(run.Status.Conditions, v1beta2.ConditionQueued)
	wasQueued := e.queued || c != nil && c.Status == metav1.ConditionTrue && c.Reason == v1beta2.ReasonWaitingForSlot
	if !wasQueued && q.maxPending > 0 && ahead >= q.maxPending {
		ns.detach(e)
		e.refused = true
		return admission{verdict: admitRefuse, active: ns.active, ahead: ahead}
	}
	e.queued = true
	return admission{verdict: admitWait, active: ns.active, ahead: ahead}
}

// attach counts e as active or inserts it among the waiting Runs, by its state.
func (ns *nsQueue) attach(e *queuedRun) {
	switch {
	case e.isActive():
		ns.active++
	case e.isPending():
		i, _ := slices.BinarySearchFunc(ns.pending, e, compareQueued)
		ns.pending = slices.Insert(ns.pending, i, e)
	}
}

// detach undoes attach.
func (ns *nsQueue) detach(e *queuedRun) {
	switch {
	case e.isActive():
		ns.active--
	case e.isPending():
		if i, found := slices.BinarySearchFunc(ns.pending, e, compareQueued); found && ns.pending[i] == e {
			ns.pending = slices.Delete(ns.pending, i, i+1)
		}
	}
}

// drop forgets e.
func (ns *nsQueue) drop(e *queuedRun) {
	ns.detach(e)
	delete(ns.runs, e.name)
}

// runQueueHandler feeds the queue from the Run informer and enqueues the Runs it wakes.
type runQueueHandler struct{ q *runQueue }

var _ handler.EventHandler = runQueueHandler{}

type requestQueue = workqueue.TypedRateLimitingInterface[reconcile.Request]

func enqueue(wq requestQueue, keys []types.NamespacedName) {
	for _, k := range keys {
		wq.Add(reconcile.Request{NamespacedName: k})
	}
}

// Create implements handler.EventHandler.
func (h runQueueHandler) Create(_ context.Context, e event.CreateEvent, wq requestQueue) {
	if run, ok := e.Object.(*v1beta2.DynamoGraphDeploymentRun); ok {
		enqueue(wq, h.q.observe(run))
	}
}

// Update implements handler.EventHandler.
func (h runQueueHandler) Update(_ context.Context, e event.UpdateEvent, wq requestQueue) {
	if run, ok := e.ObjectNew.(*v1beta2.DynamoGraphDeploymentRun); ok {
		enqueue(wq, h.q.observe(run))
	}
}

// Delete implements handler.EventHandler.
func (h runQueueHandler) Delete(_ context.Context, e event.DeleteEvent, wq requestQueue) {
	if e.Object != nil {
		enqueue(wq, h.q.forget(e.Object.GetNamespace(), e.Object.GetName(), e.Object.GetUID()))
	}
}

// Generic implements handler.EventHandler.
func (runQueueHandler) Generic(context.Context, event.GenericEvent, requestQueue) {}

// slots returns the Reconciler's slot queue, made on first use with the configured limits.
// SetupWithManager connects it to the Run informer; a Reconciler that was not set up with a
// manager starts no Run that lacks a Job.
func (r *Reconciler) slots() *runQueue {
	r.slotQueueOnce.Do(func() {
		r.slotQueue = newRunQueue(r.Config.Limits.MaxActiveRunsPerNamespace, r.Config.Limits.MaxPendingRunsPerNamespace)
	})
	return r.slotQueue
}

// admit asks the slot queue whether a Run without a Job may create it now, and otherwise
// records in the Run's status that it waits (Queued=True, WaitingForSlot) or that it was
// refused (Completed=True, PendingLimitExceeded). A waiting Run gets no timer: the queue wakes
// it when a slot is its.
func (r *Reconciler) admit(run *v1beta2.DynamoGraphDeploymentRun, events *status.Events) bool {
	a := r.slots().admit(run)
	switch a.verdict {
	case admitStart:
		return true
	case admitUnknown:
		return false // the queue's informer event for this Run reconciles it again
	case admitRefuse:
		r.setTerminal(run, &Completion{Reason: v1beta2.ReasonPendingLimitExceeded, Message: fmt.Sprintf(
			"not queued: %d Runs already wait for a search slot in namespace %s, the limit (limits.maxPendingRunsPerNamespace: %d); "+
				"no search ran. Edit the request (a new generation) once the namespace's backlog has drained",
			a.ahead, run.Namespace, r.slots().maxPending)}, events)
		return false
	}
	msg := fmt.Sprintf("waiting for a free slot: %d of %d searches are active in namespace %s (limits.maxActiveRunsPerNamespace)",
		a.active, r.slots().maxActive, run.Namespace)
	if !meta.IsStatusConditionTrue(run.Status.Conditions, v1beta2.ConditionQueued) {
		events.Normal(EventQueued, "Queue", msg)
	}
	run.Status.Phase = v1beta2.RunPhasePending
	run.Status.Message = msg
	r.setCondition(run, v1beta2.ConditionQueued, metav1.ConditionTrue, v1beta2.ReasonWaitingForSlot, msg)
	r.setCondition(run, v1beta2.ConditionCompleted, metav1.ConditionFalse, v1beta2.ReasonWaitingForSlot, msg)
	return false
}
