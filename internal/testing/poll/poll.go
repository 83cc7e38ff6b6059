// Package poll is how tests wait for a condition: wait.PollUntilContextTimeout, keeping the last
// state the condition described (or the last error it returned) for the failure message. The
// envtest packages use it directly; the sandbox suites through test/sandboxtest.
package poll

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Condition reports whether what a test waits for holds, and describes the current state. An
// error does not end the wait: it is kept as the state, and the condition is tried again.
type Condition func(ctx context.Context) (done bool, state string, err error)

// Until calls cond at once and then every period until it is done without error, or returns an
// error with the last state (or error) cond gave once timeout passed.
func Until(timeout, period time.Duration, cond Condition) error {
	last := ""
	err := wait.PollUntilContextTimeout(context.Background(), period, timeout, true, func(ctx context.Context) (bool, error) {
		done, state, err := cond(ctx)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = state
		return done, nil
	})
	if err != nil {
		return fmt.Errorf("timed out after %s; last state: %s", timeout, last)
	}
	return nil
}

// WaitFor is Until that fails the test, naming what it waited for.
func WaitFor(t testing.TB, timeout, period time.Duration, what string, cond Condition) {
	t.Helper()
	if err := Until(timeout, period, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// Eventually is WaitFor, every 100 ms, for a condition that has no state to describe.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	WaitFor(t, timeout, 100*time.Millisecond, what, func(context.Context) (bool, string, error) {
		ok, err := cond()
		return ok, "not yet", err
	})
}
