// Package slotqueue holds the Runs that wait for a search slot
// (limits.maxActiveRunsPerNamespace) in memory, per namespace, ordered by (creationTimestamp,
// name), with the count of active Runs beside them: Kueue's queue manager in small. The Run
// informer's events feed it (Handler); a reconcile asks it whether its Run may start (Admit).
// Nothing here reads the API server, waiting Runs have no timer, and a slot that frees wakes
// only the Runs that may now start, never the whole namespace.
//
// Cache lag. The informer may not yet show what this process just did. The only thing whose
// lag could break the limit is a Run that just got its Job: until its status.jobRef write
// reaches the cache, the cache shows it without a Job, like a waiting Run, and a slot
// computed from the cache alone would be handed out twice. So Admit records, under the queue's
// lock and before the reconcile creates the Job, that it let the Run start (started), and the
// Run counts as active from that moment until the informer shows it terminal or gone, whatever
// the cache says meanwhile. This record is the controller's own account of the Jobs it
// creates: two workers can never both take the last slot, and a Run whose Job exists is never
// counted as waiting. The other direction of lag only delays: a Run the cache still shows
// active although it ended frees its slot when the informer delivers the end (that event wakes
// the next Run), and a Run the queue has not seen yet is simply not started by this reconcile
// (the informer's create event, which Handler turns into a reconcile, follows).
//
// A new process (restart, new leader) rebuilds the queue from the informer's initial list
// before its workers start (controller-runtime waits until every handler has received it):
// Runs whose status.jobRef is set are active. A Run whose Job a crashed process created without
// recording jobRef is counted as waiting, at its place in creation order, so it still gets the
// first free slot; its reconcile finds the Job and records it.
package slotqueue

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Run is what the queue needs to know of a Run, as an informer event or a reconcile shows it.
type Run struct {
	Namespace, Name string
	UID             types.UID
	Created         time.Time
	// Counted: the Run takes part in slot accounting, being neither terminal, nor deleted, nor
	// a Kueue workload (Kueue admits those).
	Counted bool
	// Stopped: the Run was cancelled or superseded. Stopped before it got a Job, it no longer
	// waits (its next reconcile ends it).
	Stopped bool
	// HasJob: the Run's status.jobRef is set.
	HasJob bool
	// Queued: the Run's status shows it waiting for a slot (Queued=True, WaitingForSlot), e.g.
	// recorded by an earlier process.
	Queued bool
}

// Verdict is what Admit tells a Run without a Job.
type Verdict int

const (
	// Unknown: the queue has not seen this version of the Run yet; its informer event
	// reconciles it again.
	Unknown Verdict = iota
	// Start: the Run may create its Job (it now counts as active).
	Start
	// Wait: no slot is free for it; it waits in the queue.
	Wait
	// Refuse: limits.maxPendingRunsPerNamespace Runs already wait ahead of it.
	Refuse
)

// Admission is Admit's answer.
type Admission struct {
	Verdict Verdict
	// Active is the number of active Runs of the namespace, Ahead the number of Runs that will
	// still wait ahead of this one once the free slots are taken.
	Active, Ahead int
}

// Queue is the per-namespace slot queue.
type Queue struct {
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

// queuedRun is what the queue knows of one Run it tracks.
type queuedRun struct {
	name    string
	uid     types.UID
	created time.Time
	// hasJob: the informer shows status.jobRef.
	hasJob bool
	// started: Admit let the Run create its Job (this process's own record; see the package
	// comment).
	started bool
	// queued: Admit told the Run to wait, so the pending cap never refuses it later.
	queued bool
	// refused: Admit refused it (pending cap); it ends PendingLimitExceeded and counts nowhere.
	refused bool
}

func (e *queuedRun) isActive() bool  { return !e.refused && (e.hasJob || e.started) }
func (e *queuedRun) isPending() bool { return !e.refused && !e.hasJob && !e.started }

func compareQueued(a, b *queuedRun) int {
	return cmp.Or(a.created.Compare(b.created), strings.Compare(a.name, b.name))
}

// New returns an empty queue with the limits limits.maxActiveRunsPerNamespace and
// limits.maxPendingRunsPerNamespace (0: unlimited).
func New(maxActive, maxPending int) *Queue {
	return &Queue{maxActive: maxActive, maxPending: maxPending, namespaces: map[string]*nsQueue{}}
}

// MaxActive is the limit of active Runs per namespace (0: unlimited).
func (q *Queue) MaxActive() int { return q.maxActive }

// MaxPending is the limit of waiting Runs per namespace (0: unlimited).
func (q *Queue) MaxPending() int { return q.maxPending }

// tracks tells whether a Run takes part in slot accounting: active Runs and waiting Runs.
// started is the queue's own record that the Run may have a Job the cache does not show yet.
func tracks(run Run, started bool) bool {
	return run.Counted && (run.HasJob || started || !run.Stopped)
}

// Observe records an informer event's Run and returns the Runs to reconcile: the Runs that may
// now start, and the Run itself when it just became a waiting Run.
func (q *Queue) Observe(run Run) []types.NamespacedName {
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
	if !tracks(run, e != nil && e.started) {
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
		e = &queuedRun{name: run.Name, uid: run.UID, created: run.Created}
		ns.runs[run.Name] = e
	} else {
		wasPending = e.isPending()
		ns.detach(e)
	}
	e.hasJob = run.HasJob
	ns.attach(e)
	var self *queuedRun
	if e.isPending() && !wasPending {
		self = e
	}
	return q.wakeLocked(run.Namespace, ns, self)
}

// Forget removes a deleted Run and returns the Runs that may now start.
func (q *Queue) Forget(namespace, name string, uid types.UID) []types.NamespacedName {
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
func (q *Queue) wakeLocked(namespace string, ns *nsQueue, self *queuedRun) []types.NamespacedName {
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

// Admit decides for a reconciled Run that has no Job. The pending cap applies only to Runs
// entering the queue, never to Runs already in it (run.Queued, or told to wait before).
func (q *Queue) Admit(run Run) Admission {
	q.mu.Lock()
	defer q.mu.Unlock()
	ns := q.namespaces[run.Namespace]
	if ns == nil {
		return Admission{Verdict: Unknown}
	}
	e := ns.runs[run.Name]
	switch {
	case e == nil || e.uid != run.UID:
		return Admission{Verdict: Unknown}
	case e.refused:
		return Admission{Verdict: Refuse, Active: ns.active, Ahead: q.maxPending}
	case e.started:
		return Admission{Verdict: Start, Active: ns.active}
	case e.hasJob:
		// The queue saw a newer version of the Run (with a Job) than this reconcile.
		return Admission{Verdict: Unknown}
	}
	i, found := slices.BinarySearchFunc(ns.pending, e, compareQueued)
	if !found {
		return Admission{Verdict: Unknown}
	}
	free := max(q.maxActive-ns.active, 0)
	if q.maxActive == 0 || i < free {
		ns.detach(e)
		e.started = true
		ns.attach(e)
		return Admission{Verdict: Start, Active: ns.active}
	}
	ahead := i - free
	if !e.queued && !run.Queued && q.maxPending > 0 && ahead >= q.maxPending {
		ns.detach(e)
		e.refused = true
		return Admission{Verdict: Refuse, Active: ns.active, Ahead: ahead}
	}
	e.queued = true
	return Admission{Verdict: Wait, Active: ns.active, Ahead: ahead}
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

type requestQueue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// Handler feeds q from the Run informer and enqueues the Runs it wakes. describe says what
// the queue needs to know of an informer object, and false for an object that is no Run.
func Handler(q *Queue, describe func(client.Object) (Run, bool)) handler.EventHandler {
	observe := func(obj client.Object, wq requestQueue) {
		if run, ok := describe(obj); ok {
			enqueue(wq, q.Observe(run))
		}
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, wq requestQueue) { observe(e.Object, wq) },
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, wq requestQueue) { observe(e.ObjectNew, wq) },
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, wq requestQueue) {
			if e.Object != nil {
				enqueue(wq, q.Forget(e.Object.GetNamespace(), e.Object.GetName(), e.Object.GetUID()))
			}
		},
	}
}

func enqueue(wq requestQueue, keys []types.NamespacedName) {
	for _, k := range keys {
		wq.Add(reconcile.Request{NamespacedName: k})
	}
}
