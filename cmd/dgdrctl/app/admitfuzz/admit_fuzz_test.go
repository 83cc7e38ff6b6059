// Package admitfuzz fuzzes the admission pipeline dgdrctl shares with the webhooks. It lives
// apart from the dgdrctl tests, whose TestMain starts an API server in every fuzz worker.
package admitfuzz_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/dgdr-operator/dgdr-operator/cmd/dgdrctl/app"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/config"
)

// FuzzAdmit drives arbitrary request documents through decode → schema + CEL → default →
// validate → lower, the path of admission. Invariants: no panic; every rejection names a field;
// an admitted request lowers to an input the bundled AISimulate schema accepts, deterministically.
func FuzzAdmit(f *testing.F) {
	for _, glob := range []string{"../../../../examples/*.yaml", "../testdata/invalid/*.yaml"} {
		files, _ := filepath.Glob(glob)
		if len(files) == 0 {
			f.Fatalf("no seed documents match %s", glob)
		}
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	cfg := config.Default()
	f.Fuzz(func(t *testing.T, data []byte) {
		admitted, errs, err := app.Admit(context.Background(), data, cfg)
		if err != nil {
			return // not a YAML object at all: reported as a plain error
		}
		for _, e := range errs {
			if e.Field == "" || e.Field == "<nil>" {
				t.Fatalf("rejection without a field path: %v", e)
			}
		}
		if admitted == nil {
			return
		}
		if ps := aisimulate.CheckInput(admitted.Input.Document); len(ps) > 0 {
			t.Fatalf("admitted request lowers to an invalid input: %v", ps)
		}
		again, lowerErrs := aisimulate.Lower(&admitted.Request.Spec, aisimulate.Options{})
		if len(lowerErrs) > 0 || again.Hash != admitted.Input.Hash {
			t.Fatalf("lowering is not deterministic: %v", lowerErrs)
		}
	})
}
