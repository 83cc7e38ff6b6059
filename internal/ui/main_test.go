package ui_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/dgdr-operator/dgdr-operator/internal/testenv"
)

var (
	env      *testenv.Env
	aisimBin string
)

// TestMain starts one real API server (with the test-only DynamoGraphDeployment CRD, so a
// promotion is really created) and builds the real aisim recommender, whose output the real
// reporter publishes in the fixtures.
func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	ctrllog.SetLogger(logr.Discard())
	tmp, err := os.MkdirTemp("", "ui-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	aisimBin = filepath.Join(tmp, "aisim")
	if prebuilt := os.Getenv("AISIM_BIN"); prebuilt != "" {
		aisimBin = prebuilt // a given aisim binary (e.g. bin/aisim of the same tree)
	} else if out, err := exec.Command("go", "build", "-o", aisimBin, "github.com/dgdr-operator/dgdr-operator/tools/aisim/cmd/aisim").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building aisim: %v\n%s", err, out)
		return 1
	}
	env, err = testenv.Start(testenv.Options{ExtraCRDDirs: []string{filepath.Join(testenv.Root(), "test", "crds")}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the control plane:", err)
		return 1
	}
	defer env.Stop()
	return m.Run()
}
