package ui_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/dgdr-operator/dgdr-operator/internal/reporter/reportertest"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
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
	if env, aisimBin, err = reportertest.Start(tmp); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer env.Stop()
	return m.Run()
}
