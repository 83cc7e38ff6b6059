// Package poll is internal/testing/poll under its former name, for the tests not yet moved.
package poll

import (
	"testing"
	"time"

	"github.com/dgdr-operator/dgdr-operator/internal/testing/poll"
)

// Condition is poll.Condition.
type Condition = poll.Condition

// Until is poll.Until.
func Until(timeout, period time.Duration, cond Condition) error {
	return poll.Until(timeout, period, cond)
}

// WaitFor is poll.WaitFor.
func WaitFor(t testing.TB, timeout, period time.Duration, what string, cond Condition) {
	t.Helper()
	poll.WaitFor(t, timeout, period, what, cond)
}
