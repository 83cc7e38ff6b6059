package gpunodes_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/dgdr-operator/dgdr-operator/internal/gpunodes"
)

// TestTrackerChanges: every subscriber hears of a Node added, changed in what it offers or
// deleted, and of no other update, and the inventory read after the event reflects the change;
// events a subscriber has not received yet coalesce into one instead of holding up the informer.
func TestTrackerChanges(t *testing.T) {
	ctx := context.Background()
	h200 := node("NVIDIA-H200", 8, false)
	h200.Name = "a"
	c := fake.NewClientBuilder().WithObjects(&h200).Build()
	informers := &informertest.FakeInformers{}
	tracker, err := gpunodes.NewTracker(ctx, nodeCache{FakeInformers: informers, reader: c})
	if err != nil {
		t.Fatal(err)
	}
	informer, err := informers.FakeInformerFor(ctx, &corev1.Node{})
	if err != nil {
		t.Fatal(err)
	}
	first, second := tracker.Changes(), tracker.Changes()
	pending := func(ch <-chan event.GenericEvent) int {
		n := 0
		for {
			select {
			case <-ch:
				n++
			default:
				return n
			}
		}
	}
	gpus := func() int64 {
		inv, err := tracker.Inventory(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return inv.Pool("h200_sxm").GPUs
	}
	if got := gpus(); got != 8 {
		t.Fatalf("GPUs at the start: %d, want 8", got)
	}

	// A Node added, its event delivered twice before the subscribers read: one event each, and
	// the inventory has the Node.
	b := node("NVIDIA-H200", 4, false)
	b.Name = "b"
	if err := c.Create(ctx, &b); err != nil {
		t.Fatal(err)
	}
	informer.Add(&b)
	informer.Add(&b)
	if diff := cmp.Diff([]int{1, 1}, []int{pending(first), pending(second)}); diff != "" {
		t.Errorf("events after two additions (-want +got):\n%s", diff)
	}
	if got := gpus(); got != 12 {
		t.Errorf("GPUs after the addition: %d, want 12", got)
	}

	// A heartbeat changes nothing the inventory holds: no event, no reading.
	beat := b.DeepCopy()
	beat.Labels["other"] = "x"
	beat.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, LastHeartbeatTime: metav1.Now()}}
	informer.Update(&b, beat)
	if diff := cmp.Diff([]int{0, 0}, []int{pending(first), pending(second)}); diff != "" {
		t.Errorf("events after a heartbeat (-want +got):\n%s", diff)
	}

	// A cordon and a deletion: one event each, and the inventory follows.
	cordoned := b.DeepCopy()
	cordoned.Spec.Unschedulable = true
	if err := c.Update(ctx, cordoned); err != nil {
		t.Fatal(err)
	}
	informer.Update(&b, cordoned)
	if diff := cmp.Diff([]int{1, 1}, []int{pending(first), pending(second)}); diff != "" {
		t.Errorf("events after a cordon (-want +got):\n%s", diff)
	}
	if got := gpus(); got != 8 {
		t.Errorf("GPUs after the cordon: %d, want 8", got)
	}
	if err := c.Delete(ctx, &h200); err != nil {
		t.Fatal(err)
	}
	informer.Delete(&h200)
	if diff := cmp.Diff([]int{1, 1}, []int{pending(first), pending(second)}); diff != "" {
		t.Errorf("events after a deletion (-want +got):\n%s", diff)
	}
	if got := gpus(); got != 0 {
		t.Errorf("GPUs after the deletion: %d, want 0", got)
	}
}

// nodeCache is a cache whose informers are fakes the test drives and whose reads are served by a
// fake client holding the same Nodes.
type nodeCache struct {
	*informertest.FakeInformers
	reader client.Reader
}

func (c nodeCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return c.reader.Get(ctx, key, obj, opts...)
}

func (c nodeCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return c.reader.List(ctx, list, opts...)
}
