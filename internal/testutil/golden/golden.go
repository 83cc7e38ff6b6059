// Package golden is internal/testing/golden under its former name, for the tests not yet moved.
package golden

import (
	"testing"

	"github.com/dgdr-operator/dgdr-operator/internal/testing/golden"
)

// Assert is golden.Assert.
func Assert(t testing.TB, path string, got []byte) {
	t.Helper()
	golden.Assert(t, path, got)
}
