package reporter_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/internal/scheme"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
)

var (
	env      *testenv.Env
	k8s      client.WithWatch
	aisimBin string
)

// TestMain starts one real API server for the package and builds the real aisim recommender.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "reporter-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	aisimBin = filepath.Join(tmp, "aisim")
	build := exec.Command("go", "build", "-o", aisimBin, "github.com/dgdr-operator/dgdr-operator/tools/aisim/cmd/aisim")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building aisim: %v\n%s", err, out)
		return 1
	}
	env, err = testenv.Start(testenv.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the control plane:", err)
		return 1
	}
	defer env.Stop()
	k8s, err = client.NewWithWatch(env.Config, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	_ = context.Background
	return m.Run()
}
