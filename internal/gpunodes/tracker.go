package gpunodes

import (
	"context"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
// from before, as a reader of the store just before the update would.
type Tracker struct {
	reader client.Reader
	stale  atomic.Bool

	mu  sync.Mutex // serializes reading the Nodes again
	inv Inventory
}

// NewTracker returns a Tracker that reads the Nodes from reader (the manager's cache) and
// follows informer, the Node informer of that cache.
func NewTracker(reader client.Reader, informer cache.Informer) (*Tracker, error) {
	t := &Tracker{reader: reader}
	t.stale.Store(true)
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { t.stale.Store(true) },
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*corev1.Node)
			n, ok2 := newObj.(*corev1.Node)
			if !ok1 || !ok2 || Changed(o, n) {
				t.stale.Store(true)
			}
		},
		DeleteFunc: func(any) { t.stale.Store(true) },
	}); err != nil {
		return nil, err
	}
	return t, nil
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
