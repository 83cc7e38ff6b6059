package run_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/naming"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/poll"
)

// runReads records the manager's API requests that read Runs (GET and LIST, not WATCH), by
// namespace. main_test.go wraps the manager's transport with it.
var runReads = &readRecorder{byNamespace: map[string][]string{}}

type readRecorder struct {
	mu          sync.Mutex
	byNamespace map[string][]string
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func (c *readRecorder) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if ns, ok := runRead(req); ok {
			c.mu.Lock()
			c.byNamespace[ns] = append(c.byNamespace[ns], req.Method+" "+req.URL.RequestURI())
			c.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

// runRead tells whether req reads Runs of a namespace: a GET of
// /apis/nvidia.com/<version>/namespaces/<ns>/dynamographdeploymentruns[/...] that is no watch.
func runRead(req *http.Request) (string, bool) {
	if req.Method != http.MethodGet {
		return "", false
	}
	if w := req.URL.Query().Get("watch"); w == "true" || w == "1" {
		return "", false
	}
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	for i := 0; i+2 < len(parts); i++ {
		if parts[i] == "namespaces" && parts[i+2] == "dynamographdeploymentruns" {
			return parts[i+1], true
		}
	}
	return "", false
}

func (c *readRecorder) reads(ns string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.byNamespace[ns]...)
}

func (c *readRecorder) reset(ns string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.byNamespace, ns)
}

func queuedCondition(t *testing.T, r *v1beta2.DynamoGraphDeploymentRun) *metav1.Condition {
	t.Helper()
	return meta.FindStatusCondition(getRun(t, r).Status.Conditions, v1beta2.ConditionQueued)
}

// waitQueued waits until the Run waits for a slot (Queued=True, WaitingForSlot).
func waitQueued(t *testing.T, r *v1beta2.DynamoGraphDeploymentRun) {
	t.Helper()
	poll.Eventually(t, wait, r.Name+" Queued=True WaitingForSlot", func() (bool, error) {
		c := queuedCondition(t, r)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == v1beta2.ReasonWaitingForSlot, nil
	})
}

// requireNoJob fails when the Run has a search Job.
func requireNoJob(t *testing.T, r *v1beta2.DynamoGraphDeploymentRun) {
	t.Helper()
	err := k8s.Get(context.Background(), client.ObjectKey{Namespace: r.Namespace, Name: naming.JobName(r.Name)}, &batchv1.Job{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("%s must not have a search Job yet (get: %v)", r.Name, err)
	}
}

// cancelRun sets the cancel annotation; the Run's end frees its slot.
func cancelRun(t *testing.T, r *v1beta2.DynamoGraphDeploymentRun) {
	t.Helper()
	cur := getRun(t, r)
	patch := client.MergeFrom(cur.DeepCopy())
	if cur.Annotations == nil {
		cur.Annotations = map[string]string{}
	}
	cur.Annotations[v1beta2.AnnotationCancel] = "true"
	if err := k8s.Patch(context.Background(), cur, patch); err != nil {
		t.Fatal(err)
	}
	waitForReason(t, r, v1beta2.ReasonCancelled)
}

// slotTakers creates maxActive Runs, which take all the namespace's slots, and waits for their
// Jobs.
func slotTakers(t *testing.T, ns string) []*v1beta2.DynamoGraphDeploymentRun {
	t.Helper()
	var runs []*v1beta2.DynamoGraphDeploymentRun
	for i := range maxActive {
		r := createRun(t, ns, fmt.Sprintf("a-%d", i+1), nil)
		waitForJob(t, r)
		runs = append(runs, r)
	}
	return runs
}

// TestQueueStartsWaitingRunsInCreationOrder: with both slots taken, Runs queue; each freed slot
// starts exactly the oldest waiting Run (creation time first, whatever the names say), and a
// waiting Run gets the Queued event once.
func TestQueueStartsWaitingRunsInCreationOrder(t *testing.T) {
	ns := testenv.Namespace(t, k8s, "t")
	active := slotTakers(t, ns)
	// Created in this order, named against it: the name is only the tie-breaker.
	var waiting []*v1beta2.DynamoGraphDeploymentRun
	for _, name := range []string{"w-3", "w-2"} {
		time.Sleep(1100 * time.Millisecond) // distinct creation timestamps (seconds)
		r := createRun(t, ns, name, nil)
		waitQueued(t, r)
		waiting = append(waiting, r)
	}
	if got := getRun(t, waiting[0]); !strings.Contains(got.Status.Message, fmt.Sprintf("%d of %d searches are active", maxActive, maxActive)) {
		t.Errorf("waiting message %q", got.Status.Message)
	}
	poll.Eventually(t, wait, "the Queued event of "+waiting[0].Name, func() (bool, error) {
		var events eventsv1.EventList
		if err := k8s.List(context.Background(), &events, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.Regarding.Name == waiting[0].Name && e.Reason == "Queued" {
				return true, nil
			}
		}
		return false, nil
	})

	cancelRun(t, active[0])
	waitForJob(t, waiting[0])
	poll.Eventually(t, wait, waiting[0].Name+" records its Job", func() (bool, error) {
		return getRun(t, waiting[0]).Status.JobRef != nil, nil
	})
	requireNoJob(t, waiting[1])
	if c := queuedCondition(t, waiting[1]); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("%s must still wait: %+v", waiting[1].Name, c)
	}

	cancelRun(t, active[1])
	waitForJob(t, waiting[1])
	poll.Eventually(t, wait, waiting[1].Name+" no longer queued", func() (bool, error) {
		c := queuedCondition(t, waiting[1])
		return c != nil && c.Status == metav1.ConditionFalse, nil
	})
}

// TestWaitingRunCausesNoAPIRead: a waiting Run is kept in the operator's memory. The events that
// used to make every waiting Run list its whole namespace from the API server (progress patches
// of the running searches, an edit of the waiting Run, a freed slot) cause no read of any Run
// through the API server, neither while it waits nor when it starts. Before the slot queue,
// each of those events made the operator LIST the namespace's Runs once per waiting Run: with
// the slot decision of commit 94af075 (slotFree, waitingRuns) put back into the current
// controller, this test failed with 11 LISTs in the first window.
func TestWaitingRunCausesNoAPIRead(t *testing.T) {
	ns := testenv.Namespace(t, k8s, "t")
	active := slotTakers(t, ns)
	w := createRun(t, ns, "w-1", nil)
	waitQueued(t, w)
	runReads.reset(ns)

	for i := range 5 {
		for _, a := range active {
			publishProgress(t, a, &v1beta2.RunProgress{Budget: 100, Settled: int64(i + 1)})
		}
	}
	cur := getRun(t, w)
	patch := client.MergeFrom(cur.DeepCopy())
	cur.Labels["example.com/touched"] = "yes"
	if err := k8s.Patch(context.Background(), cur, patch); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // the controller handles the events
	if reads := runReads.reads(ns); len(reads) > 0 {
		t.Fatalf("a waiting Run made the operator read Runs from the API server %d times: %v", len(reads), reads)
	}
	requireNoJob(t, w)

	cancelRun(t, active[0])
	waitForJob(t, w)
	poll.Eventually(t, wait, w.Name+" records its Job", func() (bool, error) {
		return getRun(t, w).Status.JobRef != nil, nil
	})
	if reads := runReads.reads(ns); len(reads) > 0 {
		t.Fatalf("starting a waiting Run read Runs from the API server %d times: %v", len(reads), reads)
	}
}

// TestPendingCapRefusesRunsBeyondIt: with both slots taken and maxPending Runs waiting, a new
// Run is not queued: it ends at once, Completed=True PendingLimitExceeded naming the limit,
// without a Job. Runs already waiting are never refused, and once the queue moves a new Run is
// queued again.
func TestPendingCapRefusesRunsBeyondIt(t *testing.T) {
	ns := testenv.Namespace(t, k8s, "t")
	active := slotTakers(t, ns)
	var waiting []*v1beta2.DynamoGraphDeploymentRun
	for i := range maxPending {
		r := createRun(t, ns, fmt.Sprintf("b-%d", i+1), nil)
		waitQueued(t, r)
		waiting = append(waiting, r)
	}

	over := createRun(t, ns, "c-1", nil)
	got := waitForReason(t, over, v1beta2.ReasonPendingLimitExceeded)
	want := fmt.Sprintf("%d Runs already wait for a search slot in namespace %s, the limit (limits.maxPendingRunsPerNamespace: %d)", maxPending, ns, maxPending)
	if !strings.Contains(got.Status.Message, want) {
		t.Errorf("message %q does not contain %q", got.Status.Message, want)
	}
	if q := meta.FindStatusCondition(got.Status.Conditions, v1beta2.ConditionQueued); q == nil || q.Status != metav1.ConditionFalse || q.Reason != v1beta2.ReasonPendingLimitExceeded {
		t.Errorf("Queued condition %+v, want False PendingLimitExceeded", q)
	}
	if got.Status.Phase != v1beta2.RunPhaseFailed || got.Status.JobRef != nil || got.Status.StartTime != nil {
		t.Errorf("refused Run: phase %s, jobRef %v, startTime %v", got.Status.Phase, got.Status.JobRef, got.Status.StartTime)
	}
	requireNoJob(t, over)
	for _, w := range waiting {
		if c := queuedCondition(t, w); c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1beta2.ReasonWaitingForSlot {
			t.Errorf("%s was queued before the cap was reached and must still wait: %+v", w.Name, c)
		}
	}

	// A slot frees: the oldest waiting Run starts, so there is room in the queue again.
	cancelRun(t, active[0])
	waitForJob(t, waiting[0])
	late := createRun(t, ns, "c-2", nil)
	waitQueued(t, late)
	requireNoJob(t, late)
}
