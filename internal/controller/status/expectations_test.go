package status

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// at is the object uid as the cache shows it at resourceVersion rv.
func at(uid types.UID, rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid, ResourceVersion: rv}}
}

func TestExpectations(t *testing.T) {
	// step is one call: a write of uid from version from to version to (when written), or a
	// read of uid at version rv asking whether it may be reconciled.
	type step struct {
		written  bool
		uid      types.UID
		from, rv string
		want     bool // Satisfied, for reads
	}
	write := func(uid types.UID, from, to string) step { return step{written: true, uid: uid, from: from, rv: to} }
	read := func(uid types.UID, rv string, want bool) step { return step{uid: uid, rv: rv, want: want} }
	cases := []struct {
		name  string
		steps []step
	}{
		{"nothing written: every read is reconciled", []step{read("a", "1", true), read("a", "1", true)}},
		{"the version a write was computed from is skipped until another shows", []step{
			write("a", "1", "2"), read("a", "1", false), read("a", "1", false), read("a", "2", true)}},
		{"any other version settles the write (versions are opaque)", []step{
			write("a", "5", "7"), read("a", "6", true), read("a", "5", true)}},
		{"a write that changed nothing is no write to wait for", []step{write("a", "1", "1"), read("a", "1", true)}},
		{"objects are apart", []step{write("a", "1", "2"), read("b", "1", true), read("a", "1", false)}},
		{"the last write counts", []step{
			write("a", "1", "2"), write("a", "2", "3"), read("a", "2", false), read("a", "3", true), read("a", "2", true)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var e Expectations
			var got, want []bool
			for _, s := range tc.steps {
				if s.written {
					e.ExpectWritten(at(s.uid, s.rv), s.from)
					continue
				}
				got, want = append(got, e.Satisfied(at(s.uid, s.rv))), append(want, s.want)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Satisfied of the reads (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSightings(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	// step observes key on uid at t0+sec, or forgets uid when key is "forget".
	type step struct {
		uid types.UID
		key string
		sec int
	}
	cases := []struct {
		name      string
		steps     []step
		wantSince []int // seconds after t0 returned by each observation
	}{
		{"the first sighting starts the clock", []step{{"a", "x", 5}}, []int{5}},
		{"the same key keeps it", []step{{"a", "x", 5}, {"a", "x", 9}, {"a", "x", 20}}, []int{5, 5, 5}},
		{"another key restarts it", []step{{"a", "x", 5}, {"a", "y", 9}, {"a", "y", 12}, {"a", "x", 13}}, []int{5, 9, 9, 13}},
		{"forgetting restarts it", []step{{"a", "x", 5}, {"a", "forget", 6}, {"a", "x", 9}}, []int{5, 9}},
		{"objects are apart", []step{{"a", "x", 5}, {"b", "x", 7}, {"b", "forget", 8}, {"a", "x", 9}}, []int{5, 7, 5}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var s Sightings
			var got []int
			for _, st := range tc.steps {
				if st.key == "forget" {
					s.Forget(st.uid)
					continue
				}
				since := s.Since(st.uid, st.key, t0.Add(time.Duration(st.sec)*time.Second))
				got = append(got, int(since.Sub(t0)/time.Second))
			}
			if diff := cmp.Diff(tc.wantSince, got); diff != "" {
				t.Errorf("Since (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWorkers(t *testing.T) {
	n := func(v int32) *int32 { return &v }
	cases := []struct {
		configured *int32
		want       int
	}{{nil, 1}, {n(0), 1}, {n(-3), 1}, {n(1), 1}, {n(8), 8}}
	for _, tc := range cases {
		if got := Workers(tc.configured); got != tc.want {
			t.Errorf("Workers(%v) = %d, want %d", tc.configured, got, tc.want)
		}
	}
}

// TestForgetOnDelete: a deleted object's entries go from every record it is given, the entries of
// other objects stay, and nothing is enqueued.
func TestForgetOnDelete(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	var e Expectations
	var s Sightings
	for _, uid := range []types.UID{"gone", "kept"} {
		e.ExpectWritten(at(uid, "2"), "1")
		s.Since(uid, "x", t0)
	}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	ForgetOnDelete(&e, &s).Delete(context.Background(), event.DeleteEvent{Object: at("gone", "2")}, q)

	later := t0.Add(time.Minute)
	type state struct {
		Satisfied bool
		Since     time.Time
	}
	got := map[types.UID]state{}
	for _, uid := range []types.UID{"gone", "kept"} {
		got[uid] = state{Satisfied: e.Satisfied(at(uid, "1")), Since: s.Since(uid, "x", later)}
	}
	want := map[types.UID]state{
		"gone": {Satisfied: true, Since: later}, // no entry left: a new clock, no write to wait for
		"kept": {Satisfied: false, Since: t0},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("records after the deletion (-want +got):\n%s", diff)
	}
	if q.Len() != 0 {
		t.Errorf("enqueued %d requests, want none", q.Len())
	}
}
