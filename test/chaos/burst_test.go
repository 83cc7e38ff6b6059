//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/test/sandboxtest"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/manager"
)

// secondGeneration is the edit that gives some requests a second generation.
const secondGeneration = `{"spec":{"aisimulate":{"inputOverrides":{"optimizer":{"max_trials":3}}}}}`

// TestBurstWithOperatorKills creates a burst of small requests over several namespaces, in
// waves (some edited once more after their first generation was accepted), while a goroutine SIGKILLs the
// operator at random moments and restarts it. Once everything is quiet, every namespace must
// satisfy the invariants of requireInvariants: exactly one Run per accepted generation, at most
// one Job per Run (exactly one for a succeeded Run), no orphaned Jobs, ConfigMaps or Candidates,
// every Run terminal, and request status references that name existing Runs.
//
// Knobs: DGDR_CHAOS_BURST (requests, default 200), DGDR_CHAOS_KILLS (default 20),
// DGDR_CHAOS_NAMESPACES (default 10), DGDR_CHAOS_SEED.
func TestBurstWithOperatorKills(t *testing.T) {
	burst := envInt(t, "DGDR_CHAOS_BURST", 200)
	kills := envInt(t, "DGDR_CHAOS_KILLS", 20)
	nsCount := envInt(t, "DGDR_CHAOS_NAMESPACES", 10)
	if nsCount == 0 {
		nsCount = 1
	}
	sd := seed(t)
	t.Logf("seed %d (DGDR_CHAOS_SEED=%d repeats the kill schedule); %d requests in %d namespaces, %d operator kills", sd, sd, burst, nsCount, kills)
	rng := rand.New(rand.NewSource(sd))
	namespaces := make([]string, nsCount)
	for i := range namespaces {
		namespaces[i] = newNamespace(t, fmt.Sprintf("chaos-burst-%d", i))
	}
	// Which requests get a second generation, from the seed too.
	edit := make([]bool, burst)
	for i := range edit {
		edit[i] = rng.Intn(5) == 0
	}
	killDelays := make([]time.Duration, kills)
	downtimes := make([]time.Duration, kills)
	for i := range killDelays {
		killDelays[i] = time.Duration(300+rng.Intn(2700)) * time.Millisecond
		downtimes[i] = time.Duration(rng.Intn(1000)) * time.Millisecond
	}

	// The requests arrive in 10 waves a few seconds apart, so that creations and edits go
	// through admission while the operator (and with it its webhooks) is being killed.
	const waves = 10
	waveGaps := make([]time.Duration, waves)
	for i := range waveGaps {
		waveGaps[i] = time.Duration(500+rng.Intn(2500)) * time.Millisecond
	}

	t0 := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// The killer.
	killerDone := make(chan error, 1)
	go func() {
		for i := 0; i < kills; i++ {
			time.Sleep(killDelays[i])
			pid, err := manager.PID(root, manager.Operator)
			if err != nil {
				killerDone <- err
				return
			}
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				killerDone <- fmt.Errorf("kill %d: SIGKILL pid %d: %w", i+1, pid, err)
				return
			}
			for j := 0; j < 100 && manager.Alive(pid); j++ {
				time.Sleep(20 * time.Millisecond)
			}
			time.Sleep(downtimes[i])
			if err := manager.Restart(root, manager.Operator); err != nil {
				killerDone <- fmt.Errorf("kill %d: restart: %w", i+1, err)
				return
			}
			newPID, _ := manager.PID(root, manager.Operator)
			t.Logf("kill %d/%d at +%s: SIGKILL operator pid %d, restarted after %s as pid %d", i+1, kills, time.Since(t0).Round(time.Millisecond), pid, downtimes[i], newPID)
		}
		killerDone <- nil
	}()

	// The burst: 8 writers; a write refused while the operator (its webhooks) is down is
	// retried. An AlreadyExists after a retry means the earlier attempt was stored.
	var created, edited, retries atomic.Int64
	var editWG sync.WaitGroup
	work := make(chan int)
	var wg sync.WaitGroup
	errs := make(chan error, burst)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				ns, name := namespaces[i%nsCount], fmt.Sprintf("b-%03d", i)
				err := retry(ctx, &retries, func() error {
					d, err := sandboxtest.ParseRequest(fmt.Sprintf(sandboxtest.TinyRequest, name))
					if err != nil {
						return err
					}
					d.Namespace = ns
					err = k8s.Create(ctx, d)
					if apierrors.IsAlreadyExists(err) {
						return nil
					}
					return err
				})
				if err != nil {
					errs <- fmt.Errorf("creating %s/%s: %w", ns, name, err)
					continue
				}
				created.Add(1)
				if edit[i] {
					editWG.Add(1)
					go func() {
						defer editWG.Done()
						if err := editOnceAccepted(ctx, &retries, ns, name); err != nil {
							errs <- err
							return
						}
						edited.Add(1)
					}()
				}
			}
		}()
	}
	for i := 0; i < burst; i++ {
		if w := i * waves / burst; i > 0 && w != (i-1)*waves/burst {
			time.Sleep(waveGaps[w])
		}
		work <- i
	}
	close(work)
	wg.Wait()
	t.Logf("created %d requests by +%s (%d writes retried)", created.Load(), time.Since(t0).Round(time.Millisecond), retries.Load())
	editWG.Wait()
	t.Logf("edited %d requests to a second generation by +%s", edited.Load(), time.Since(t0).Round(time.Millisecond))
	if err := <-killerDone; err != nil {
		t.Fatal(err)
	}
	t.Logf("%d operator kills done by +%s", kills, time.Since(t0).Round(time.Millisecond))
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
	waitOperatorReady(t, 2*time.Minute)
	waitQuiet(t, 10*time.Minute, namespaces...)
	t.Logf("quiet at +%s", time.Since(t0).Round(time.Millisecond))
	reasons := requireInvariants(t, namespaces...)
	t.Logf("terminal reasons: %v", reasons)
	runs := 0
	for r, n := range reasons {
		runs += n
		if r != "Succeeded" && r != "Superseded" {
			t.Errorf("%d Runs ended %s; a tiny search ends Succeeded, or Superseded by its edit", n, r)
		}
	}
	if want := int(created.Load() + edited.Load()); runs != want {
		t.Errorf("%d Runs, want %d (one per accepted generation)", runs, want)
	}
	for _, ns := range namespaces {
		_ = k8s.Delete(context.Background(), nsObject(ns))
	}
}

// editOnceAccepted waits until generation 1 of the request is accepted (so that it gets its
// own Run), then applies the second-generation edit.
func editOnceAccepted(ctx context.Context, retries *atomic.Int64, ns, name string) error {
	err := waitForErr(5*time.Minute, 500*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		d, err := getDGDR(ctx, ns, name)
		if err != nil {
			return false, "", err
		}
		return d.Status.ObservedGeneration >= 1, fmt.Sprintf("observedGeneration %d", d.Status.ObservedGeneration), nil
	})
	if err != nil {
		return fmt.Errorf("%s/%s: generation 1 not accepted: %w", ns, name, err)
	}
	err = retry(ctx, retries, func() error {
		d, err := getDGDR(ctx, ns, name)
		if err != nil {
			return err
		}
		return k8s.Patch(ctx, d, client.RawPatch("application/merge-patch+json", []byte(secondGeneration)))
	})
	if err != nil {
		return fmt.Errorf("editing %s/%s: %w", ns, name, err)
	}
	return nil
}

// retry calls f until it succeeds or ctx ends, counting the retries.
func retry(ctx context.Context, retries *atomic.Int64, f func() error) error {
	for {
		err := f()
		if err == nil {
			return nil
		}
		retries.Add(1)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
