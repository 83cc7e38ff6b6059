package run

import (
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

var queueEpoch = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// queueRun is a Run created sec seconds after queueEpoch.
func queueRun(name string, sec int) *v1beta2.DynamoGraphDeploymentRun {
	return &v1beta2.DynamoGraphDeploymentRun{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Name: name, UID: types.UID("uid-" + name),
		CreationTimestamp: metav1.NewTime(queueEpoch.Add(time.Duration(sec) * time.Second)),
	}}
}

func withJob(r *v1beta2.DynamoGraphDeploymentRun) *v1beta2.DynamoGraphDeploymentRun {
	r = r.DeepCopy()
	r.Status.JobRef = &v1beta2.JobReference{Name: r.Name + "-search"}
	return r
}

func ended(r *v1beta2.DynamoGraphDeploymentRun) *v1beta2.DynamoGraphDeploymentRun {
	r = r.DeepCopy()
	meta.SetStatusCondition(&r.Status.Conditions, metav1.Condition{Type: v1beta2.ConditionCompleted, Status: metav1.ConditionTrue, Reason: v1beta2.ReasonSucceeded})
	return r
}

func names(keys []types.NamespacedName) []string {
	var out []string
	for _, k := range keys {
		out = append(out, k.Name)
	}
	return out
}

func mustAdmit(t *testing.T, q *runQueue, r *v1beta2.DynamoGraphDeploymentRun, want admitVerdict) admission {
	t.Helper()
	a := q.admit(r)
	if a.verdict != want {
		t.Fatalf("admit(%s) = %+v, want verdict %d", r.Name, a, want)
	}
	return a
}

func TestQueueAdmitsInCreationOrderAndWakesOnlyWhoMayStart(t *testing.T) {
	q := newRunQueue(ptr.To[int32](2), ptr.To[int32](0))
	// Created in this order; names tie-break equal timestamps (c-a before c-b).
	a, b, cb, ca := queueRun("a", 0), queueRun("b", 1), queueRun("c-b", 2), queueRun("c-a", 2)
	for _, r := range []*v1beta2.DynamoGraphDeploymentRun{a, b, cb, ca} {
		if got := names(q.observe(r)); !slices.Contains(got, r.Name) {
			t.Fatalf("a new waiting Run must be reconciled: observe(%s) woke %v", r.Name, got)
		}
	}
	// The two oldest may start; the later ones wait, whichever order the reconciles come in.
	mustAdmit(t, q, ca, admitWait)
	mustAdmit(t, q, b, admitStart)
	mustAdmit(t, q, a, admitStart)
	if w := mustAdmit(t, q, cb, admitWait); w.active != 2 || w.ahead != 1 {
		t.Errorf("c-b waits with %+v, want 2 active and 1 ahead", w)
	}
	// Progress of a running search wakes nobody.
	if got := q.observe(withJob(a)); len(got) != 0 {
		t.Errorf("an update of an active Run woke %v", got)
	}
	// a ends: exactly the oldest waiting Run (c-a, by name) is woken and may start.
	if got := names(q.observe(ended(withJob(a)))); !slices.Equal(got, []string{"c-a"}) {
		t.Fatalf("the end of a woke %v, want [c-a]", got)
	}
	mustAdmit(t, q, cb, admitWait)
	mustAdmit(t, q, ca, admitStart)
	// b is deleted: c-b is next.
	if got := names(q.forget("ns", "b", b.UID)); !slices.Equal(got, []string{"c-b"}) {
		t.Fatalf("deleting b woke %v, want [c-b]", got)
	}
	mustAdmit(t, q, cb, admitStart)
}

// TestQueueCountsAStartedRunWhileTheCacheLags: once admit let a Run start, it holds its slot
// although the informer still shows it without status.jobRef (its status write has not arrived),
// until the informer shows it ended.
func TestQueueCountsAStartedRunWhileTheCacheLags(t *testing.T) {
	q := newRunQueue(ptr.To[int32](1), ptr.To[int32](0))
	a, b := queueRun("a", 0), queueRun("b", 1)
	q.observe(a)
	q.observe(b)
	mustAdmit(t, q, a, admitStart)
	mustAdmit(t, q, a, admitStart) // a retried reconcile of the same Run keeps its slot
	q.observe(a)                   // an event of a without jobRef (the cache lags)
	mustAdmit(t, q, b, admitWait)
	// Cancelled before its jobRef reached the cache: its Job may exist, so it still counts.
	cancelled := a.DeepCopy()
	cancelled.Annotations = map[string]string{v1beta2.AnnotationCancel: "true"}
	if got := q.observe(cancelled); len(got) != 0 {
		t.Errorf("a started Run's cancellation woke %v before it ended", got)
	}
	mustAdmit(t, q, b, admitWait)
	if got := names(q.observe(ended(cancelled))); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("the end of a woke %v, want [b]", got)
	}
	mustAdmit(t, q, b, admitStart)
}

func TestQueueRefusesNewRunsBeyondThePendingCap(t *testing.T) {
	q := newRunQueue(ptr.To[int32](1), ptr.To[int32](2))
	runs := []*v1beta2.DynamoGraphDeploymentRun{queueRun("a", 0), queueRun("b", 1), queueRun("c", 2), queueRun("d", 3), queueRun("e", 4)}
	for _, r := range runs {
		q.observe(r)
	}
	mustAdmit(t, q, runs[0], admitStart)
	mustAdmit(t, q, runs[1], admitWait)
	mustAdmit(t, q, runs[2], admitWait)
	if a := mustAdmit(t, q, runs[3], admitRefuse); a.ahead != 2 {
		t.Errorf("d refused with %d ahead, want 2", a.ahead)
	}
	mustAdmit(t, q, runs[3], admitRefuse) // a retry after a failed status write refuses again
	// The refused Run no longer counts: e is refused for the two waiting ahead of it, not three.
	if a := mustAdmit(t, q, runs[4], admitRefuse); a.ahead != 2 {
		t.Errorf("e refused with %d ahead, want 2", a.ahead)
	}
	// A Run the status shows queued (e.g. by an earlier process) is never refused.
	f := queueRun("f", 5)
	meta.SetStatusCondition(&f.Status.Conditions, metav1.Condition{Type: v1beta2.ConditionQueued, Status: metav1.ConditionTrue, Reason: v1beta2.ReasonWaitingForSlot})
	q.observe(f)
	mustAdmit(t, q, f, admitWait)
	// A Run admit told to wait is never refused later either.
	mustAdmit(t, q, runs[2], admitWait)
	// Refused Runs leave the queue when they end.
	q.observe(ended(runs[3]))
	q.observe(ended(runs[4]))
	if ns := q.namespaces["ns"]; len(ns.runs) != 4 || len(ns.pending) != 3 || ns.active != 1 {
		t.Errorf("queue after the refusals: %d Runs, %d waiting, %d active", len(ns.runs), len(ns.pending), ns.active)
	}
}

func TestQueueIgnoresWhatItDoesNotCount(t *testing.T) {
	q := newRunQueue(ptr.To[int32](1), ptr.To[int32](0))
	// A Run the queue has not seen yet: its informer event reconciles it again.
	mustAdmit(t, q, queueRun("unseen", 0), admitUnknown)
	// Kueue Runs and Runs cancelled before their Job are not queued.
	kueue := queueRun("kueue", 0)
	kueue.Labels = map[string]string{v1beta2.LabelKueueQueueName: "q"}
	cancelled := queueRun("cancelled", 0)
	cancelled.Annotations = map[string]string{v1beta2.AnnotationCancel: "true"}
	deleting := queueRun("deleting", 0)
	deleting.DeletionTimestamp = ptr.To(metav1.Now())
	deleting.Finalizers = []string{"x"}
	for _, r := range []*v1beta2.DynamoGraphDeploymentRun{kueue, cancelled, deleting, ended(queueRun("done", 0))} {
		if got := q.observe(r); len(got) != 0 {
			t.Errorf("observe(%s) woke %v", r.Name, got)
		}
	}
	if len(q.namespaces) != 0 {
		t.Errorf("untracked Runs left a namespace queue: %+v", q.namespaces["ns"])
	}
	// A new Run under an old name replaces the old one.
	old := queueRun("x", 0)
	q.observe(withJob(old))
	renewed := queueRun("x", 9)
	renewed.UID = "uid-x-2"
	if got := names(q.observe(renewed)); !slices.Equal(got, []string{"x"}) {
		t.Fatalf("the new x woke %v, want [x]", got)
	}
	mustAdmit(t, q, renewed, admitStart)
	// Without a limit nobody is woken: every Run starts on its own events.
	unlimited := newRunQueue(ptr.To[int32](0), ptr.To[int32](0))
	unlimited.observe(withJob(queueRun("a", 0)))
	if got := names(unlimited.observe(queueRun("b", 1))); !slices.Equal(got, []string{"b"}) {
		t.Errorf("observe(b) woke %v, want only b itself", got)
	}
	mustAdmit(t, unlimited, queueRun("b", 1), admitStart)
}
