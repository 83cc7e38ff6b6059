package ui_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/dgdr-operator/dgdr-operator/internal/reporter/reportertest"
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
	if aisimBin, err = reportertest.BuildAISim(tmp); err != nil {
		fmt.Fprintln(os.Stderr, err)
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
