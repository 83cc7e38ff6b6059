package slotqueue

import (
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

var queueEpoch = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// queueRun is a waiting Run created sec seconds after queueEpoch.
func queueRun(name string, sec int) Run {
	return Run{Namespace: "ns", Name: name, UID: types.UID("uid-" + name),
		Created: queueEpoch.Add(time.Duration(sec) * time.Second), Counted: true}
}

func withJob(r Run) Run {
	r.HasJob = true
	return r
}

// ended is r once terminal (or deleted, or a Kueue workload: the queue counts none of them).
func ended(r Run) Run {
	r.Counted = false
	return r
}

func cancelled(r Run) Run {
	r.Stopped = true
	return r
}

func names(keys []types.NamespacedName) []string {
	var out []string
	for _, k := range keys {
		out = append(out, k.Name)
	}
	return out
}

func mustAdmit(t *testing.T, q *Queue, r Run, want Verdict) Admission {
	t.Helper()
	a := q.Admit(r)
	if a.Verdict != want {
		t.Fatalf("admit(%s) = %+v, want verdict %d", r.Name, a, want)
	}
	return a
}

func TestQueueAdmitsInCreationOrderAndWakesOnlyWhoMayStart(t *testing.T) {
	q := New(2, 0)
	// Created in this order; names tie-break equal timestamps (c-a before c-b).
	a, b, cb, ca := queueRun("a", 0), queueRun("b", 1), queueRun("c-b", 2), queueRun("c-a", 2)
	for _, r := range []Run{a, b, cb, ca} {
		if got := names(q.Observe(r)); !slices.Contains(got, r.Name) {
			t.Fatalf("a new waiting Run must be reconciled: observe(%s) woke %v", r.Name, got)
		}
	}
	// The two oldest may start; the later ones wait, whichever order the reconciles come in.
	mustAdmit(t, q, ca, Wait)
	mustAdmit(t, q, b, Start)
	mustAdmit(t, q, a, Start)
	if w := mustAdmit(t, q, cb, Wait); w.Active != 2 || w.Ahead != 1 {
		t.Errorf("c-b waits with %+v, want 2 active and 1 ahead", w)
	}
	// Progress of a running search wakes nobody.
	if got := q.Observe(withJob(a)); len(got) != 0 {
		t.Errorf("an update of an active Run woke %v", got)
	}
	// a ends: exactly the oldest waiting Run (c-a, by name) is woken and may start.
	if got := names(q.Observe(ended(withJob(a)))); !slices.Equal(got, []string{"c-a"}) {
		t.Fatalf("the end of a woke %v, want [c-a]", got)
	}
	mustAdmit(t, q, cb, Wait)
	mustAdmit(t, q, ca, Start)
	// b is deleted: c-b is next.
	if got := names(q.Forget("ns", "b", b.UID)); !slices.Equal(got, []string{"c-b"}) {
		t.Fatalf("deleting b woke %v, want [c-b]", got)
	}
	mustAdmit(t, q, cb, Start)
}

// TestQueueCountsAStartedRunWhileTheCacheLags: once admit let a Run start, it holds its slot
// although the informer still shows it without status.jobRef (its status write has not arrived),
// until the informer shows it ended.
func TestQueueCountsAStartedRunWhileTheCacheLags(t *testing.T) {
	q := New(1, 0)
	a, b := queueRun("a", 0), queueRun("b", 1)
	q.Observe(a)
	q.Observe(b)
	mustAdmit(t, q, a, Start)
	mustAdmit(t, q, a, Start) // a retried reconcile of the same Run keeps its slot
	q.Observe(a)              // an event of a without jobRef (the cache lags)
	mustAdmit(t, q, b, Wait)
	// Cancelled before its jobRef reached the cache: its Job may exist, so it still counts.
	if got := q.Observe(cancelled(a)); len(got) != 0 {
		t.Errorf("a started Run's cancellation woke %v before it ended", got)
	}
	mustAdmit(t, q, b, Wait)
	if got := names(q.Observe(ended(cancelled(a)))); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("the end of a woke %v, want [b]", got)
	}
	mustAdmit(t, q, b, Start)
}

func TestQueueRefusesNewRunsBeyondThePendingCap(t *testing.T) {
	q := New(1, 2)
	runs := []Run{queueRun("a", 0), queueRun("b", 1), queueRun("c", 2), queueRun("d", 3), queueRun("e", 4)}
	for _, r := range runs {
		q.Observe(r)
	}
	mustAdmit(t, q, runs[0], Start)
	mustAdmit(t, q, runs[1], Wait)
	mustAdmit(t, q, runs[2], Wait)
	if a := mustAdmit(t, q, runs[3], Refuse); a.Ahead != 2 {
		t.Errorf("d refused with %d ahead, want 2", a.Ahead)
	}
	mustAdmit(t, q, runs[3], Refuse) // a retry after a failed status write refuses again
	// The refused Run no longer counts: e is refused for the two waiting ahead of it, not three.
	if a := mustAdmit(t, q, runs[4], Refuse); a.Ahead != 2 {
		t.Errorf("e refused with %d ahead, want 2", a.Ahead)
	}
	// A Run the status shows queued (e.g. by an earlier process) is never refused.
	f := queueRun("f", 5)
	f.Queued = true
	q.Observe(f)
	mustAdmit(t, q, f, Wait)
	// A Run admit told to wait is never refused later either.
	mustAdmit(t, q, runs[2], Wait)
	// Refused Runs leave the queue when they end.
	q.Observe(ended(runs[3]))
	q.Observe(ended(runs[4]))
	if ns := q.namespaces["ns"]; len(ns.runs) != 4 || len(ns.pending) != 3 || ns.active != 1 {
		t.Errorf("queue after the refusals: %d Runs, %d waiting, %d active", len(ns.runs), len(ns.pending), ns.active)
	}
}

func TestQueueIgnoresWhatItDoesNotCount(t *testing.T) {
	q := New(1, 0)
	// A Run the queue has not seen yet: its informer event reconciles it again.
	mustAdmit(t, q, queueRun("unseen", 0), Unknown)
	// Runs the queue does not count (terminal, deleted, Kueue workloads) and Runs cancelled
	// before their Job are not queued.
	for _, r := range []Run{cancelled(queueRun("cancelled", 0)), ended(queueRun("done", 0))} {
		if got := q.Observe(r); len(got) != 0 {
			t.Errorf("observe(%s) woke %v", r.Name, got)
		}
	}
	if len(q.namespaces) != 0 {
		t.Errorf("untracked Runs left a namespace queue: %+v", q.namespaces["ns"])
	}
	// A new Run under an old name replaces the old one.
	old := queueRun("x", 0)
	q.Observe(withJob(old))
	renewed := queueRun("x", 9)
	renewed.UID = "uid-x-2"
	if got := names(q.Observe(renewed)); !slices.Equal(got, []string{"x"}) {
		t.Fatalf("the new x woke %v, want [x]", got)
	}
	mustAdmit(t, q, renewed, Start)
	// Without a limit nobody is woken: every Run starts on its own events.
	unlimited := New(0, 0)
	unlimited.Observe(withJob(queueRun("a", 0)))
	if got := names(unlimited.Observe(queueRun("b", 1))); !slices.Equal(got, []string{"b"}) {
		t.Errorf("observe(b) woke %v, want only b itself", got)
	}
	mustAdmit(t, unlimited, queueRun("b", 1), Start)
}
