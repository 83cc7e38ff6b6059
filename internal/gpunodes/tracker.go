package gpunodes

import (
	"context"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// Tracker keeps the inventory of the GPU Nodes for readers that need it far more often than the
// Nodes change: every defaulting admission discovers GPU products. It reads the Nodes again
// (Read) only after the Node informer it tracks reported a Node added, deleted, or changed in
// what it offers (Changed); Node updates that change nothing of that (status heartbeats, other
// labels) cost nothing.
//
// The informer runs its event handlers after it updated its store, so an inventory read after
// the event reflects the change; between the store's update and the handler's call (the
// informer's delivery, normally well under a millisecond) a reader may still get the inventory
// from before, as a reader of the store just before the update would. A controller that must
// act on every change queues its work from Changes, which fires only after the Tracker marked
// its inventory stale.
type Tracker struct {
	reader client.Reader
	stale  atomic.Bool

	mu  sync.Mutex // serializes reading the Nodes again
	inv Inventory

	subMu sync.Mutex
	subs  []chan event.GenericEvent
}

// NewTracker returns a Tracker of c's Node informer that reads the Nodes from c (the manager's
// cache). It may be called before or after the cache started: registering the handler waits for
// no sync, and the informer replays its Nodes to it.
func NewTracker(ctx context.Context, c cache.Cache) (*Tracker, error) {
	informer, err := c.GetInformer(ctx, &corev1.Node{}, cache.BlockUntilSynced(false))
	if err != nil {
		return nil, err
	}
	t := &Tracker{reader: c}
	t.stale.Store(true)
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { t.invalidate() },
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*corev1.Node)
			n, ok2 := newObj.(*corev1.Node)
			if !ok1 || !ok2 || Changed(o, n) {
				t.invalidate()
			}
		},
		DeleteFunc: func(any) { t.invalidate() },
	}); err != nil {
		return nil, err
	}
	return t, nil
}

// Changes returns a channel (for source.Channel) that receives an event after each change that
// made the inventory stale, so that an inventory read once the event is received reflects the
// change. An event not yet received stands for every change before it: the channel holds one,
// and the informer's delivery never waits for its reader. The event's object names no Node.
func (t *Tracker) Changes() <-chan event.GenericEvent {
	ch := make(chan event.GenericEvent, 1)
	t.subMu.Lock()
	t.subs = append(t.subs, ch)
	t.subMu.Unlock()
	return ch
}

func (t *Tracker) invalidate() {
	t.stale.Store(true)
	t.subMu.Lock()
	defer t.subMu.Unlock()
	for _, ch := range t.subs {
		select {
		case ch <- event.GenericEvent{Object: &corev1.Node{}}:
		default: // an event is pending; its reader reads the inventory after this change
		}
	}
}

// Inventory is the inventory of the GPU Nodes. The caller must not modify it: its Products are
// shared with other callers.
func (t *Tracker) Inventory(ctx context.Context) (Inventory, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stale.Swap(false) {
		inv, err := Read(ctx, t.reader)
		if err != nil {
			t.stale.Store(true)
			return Inventory{}, err
		}
		t.inv = inv
	}
	return t.inv, nil
}

// Changed tells whether a Node update changes what the Node offers: its GPU product, whether it
// is cordoned, or its allocatable GPUs.
func Changed(o, n *corev1.Node) bool {
	oq, nq := o.Status.Allocatable[GPUResource], n.Status.Allocatable[GPUResource]
	return o.Labels[ProductLabel] != n.Labels[ProductLabel] ||
		o.Spec.Unschedulable != n.Spec.Unschedulable || oq.Cmp(nq) != 0
}
