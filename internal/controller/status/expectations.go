package status

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Expectations is a controller's record of its own status writes that the informer cache may
// not show yet, in the manner of Kueue's expectations store. After a write computed from
// version v of an object, a reconcile that still reads v from the cache (typically one
// triggered by a child object's event right after the write) would recompute and resend what
// was just written; it is skipped instead, and the write's own watch event reconciles the
// object again. resourceVersions are opaque, so any other version observed settles the record.
// The zero value is ready to use; it is safe for concurrent reconciles.
type Expectations struct {
	mu sync.Mutex
	// writtenFrom maps an object's UID to the resourceVersion its last write was computed from.
	writtenFrom map[types.UID]string
}

// ExpectWritten records that obj's status was just written from version from. A write the
// API server found to change nothing (same resourceVersion) is no write to wait for.
func (e *Expectations) ExpectWritten(obj client.Object, from string) {
	if obj.GetResourceVersion() == from {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.writtenFrom == nil {
		e.writtenFrom = map[types.UID]string{}
	}
	e.writtenFrom[obj.GetUID()] = from
}

// Satisfied tells whether the cache's obj may be reconciled: false while it is the version the
// last write was computed from. Any other version settles the expectation.
func (e *Expectations) Satisfied(obj client.Object) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	from, ok := e.writtenFrom[obj.GetUID()]
	if !ok {
		return true
	}
	if from == obj.GetResourceVersion() {
		return false
	}
	delete(e.writtenFrom, obj.GetUID())
	return true
}

// Forget drops the record of the object uid: the object is gone.
func (e *Expectations) Forget(uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.writtenFrom, uid)
}

// PerObject is a controller's record kept per object UID (Expectations, Sightings).
type PerObject interface {
	Forget(uid types.UID)
}

// ForgetOnDelete is an event handler for a controller's own kind that drops the object's entry
// from each record when the informer reports the object deleted, and enqueues nothing. A
// reconcile of a deleted object finds nothing and cannot clean up (it has no UID), so without it
// an entry written just before the deletion (a status write whose event never gets reconciled,
// a search stopped while its Run was deleted) would stay for the life of the process.
func ForgetOnDelete(records ...PerObject) handler.EventHandler {
	return handler.Funcs{
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if e.Object == nil {
				return
			}
			for _, r := range records {
				r.Forget(e.Object.GetUID())
			}
		},
	}
}

// Sightings remembers, per object, since when a condition has been observed without
// interruption: a failing container waiting out its grace, a stopped search waiting for its
// pod. A condition is identified by a key (e.g. which container fails); observing another key
// restarts the clock. The zero value is ready to use; it is safe for concurrent reconciles.
type Sightings struct {
	mu    sync.Mutex
	since map[types.UID]sighting
}

type sighting struct {
	key string
	at  time.Time
}

// Since records that key is observed on the object uid at now and returns since when it has
// been observed: now when it is new or another key was observed before.
func (s *Sightings) Since(uid types.UID, key string, now time.Time) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.since[uid]; ok && old.key == key {
		return old.at
	}
	if s.since == nil {
		s.since = map[types.UID]sighting{}
	}
	s.since[uid] = sighting{key: key, at: now}
	return now
}

// Forget ends the observation of the object uid: the condition is gone, or the object is done.
func (s *Sightings) Forget(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.since, uid)
}
