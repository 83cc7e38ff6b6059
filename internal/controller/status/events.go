package status

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

// Events holds the events a reconcile decides on until its status write succeeded: an event
// must never announce what the object's status does not show (a failed write is retried, and
// the retry decides again). The zero value is an empty queue.
type Events struct {
	pending []Event
}

// Event is one queued event about the reconciled object.
type Event struct {
	// Type is corev1.EventTypeNormal or corev1.EventTypeWarning.
	Type string
	// Reason and Action are the event's machine-readable reason and action; Note tells a human.
	Reason, Action, Note string
}

// Normal queues a Normal event.
func (q *Events) Normal(reason, action, note string) {
	q.Add(Event{Type: corev1.EventTypeNormal, Reason: reason, Action: action, Note: note})
}

// Warning queues a Warning event.
func (q *Events) Warning(reason, action, note string) {
	q.Add(Event{Type: corev1.EventTypeWarning, Reason: reason, Action: action, Note: note})
}

// Add queues e.
func (q *Events) Add(e Event) { q.pending = append(q.pending, e) }

// Pending returns the queued events, oldest first.
func (q *Events) Pending() []Event { return q.pending }

// Drop discards the queued events (the status write failed).
func (q *Events) Drop() { q.pending = nil }

// Emit records the queued events about regarding, oldest first, and empties the queue.
func (q *Events) Emit(r recorder.EventRecorder, regarding runtime.Object) {
	for _, e := range q.pending {
		r.Eventf(regarding, nil, e.Type, e.Reason, e.Action, "%s", e.Note)
	}
	q.pending = nil
}

// Truncate caps a message at n bytes, marking the cut with "...": status messages and event
// notes have bounds, and the causes they quote (API errors, pod messages) do not.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
