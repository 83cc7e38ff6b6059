// Package golden compares test output with golden files, and rewrites them on request
// (UPDATE_GOLDEN=true, or -update). Only tests import it.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", os.Getenv("UPDATE_GOLDEN") == "true", "rewrite golden files (also UPDATE_GOLDEN=true)")

// Assert fails t when got differs from the file at path, showing the diff. When updating, it
// first writes got to path (creating its directory).
func Assert(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (regenerate with UPDATE_GOLDEN=true)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("output differs from %s (-want +got):\n%s", path, diff)
	}
}
