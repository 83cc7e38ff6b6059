//go:build attack

package attack

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/test/sandboxtest"
)

var (
	env        *sandboxtest.Env
	root       string
	kubeconfig string
	k8s        client.Client
)

func TestMain(m *testing.M) {
	if os.Getenv("DGDR_ATTACK") != "1" {
		fmt.Println("attack: skipped (set DGDR_ATTACK=1, or run make test-attack)")
		os.Exit(0)
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	env, err = sandboxtest.Setup(sandboxtest.Options{
		Suite: "attack", QPS: 200, Burst: 400,
		CRDFiles: []string{filepath.Join("test", "crds", "dynamographdeployment-v1beta1.yaml")},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "attack:", err)
		return 1
	}
	root, kubeconfig, k8s = env.Root, env.Kubeconfig, env.Client
	code := m.Run()
	env.Teardown(code, "DGDR_ATTACK_KEEP")
	return code
}

// Timeouts of the scenarios.
const (
	searchTimeout = 3 * time.Minute
	poll          = 250 * time.Millisecond
)

// newNamespace creates a namespace for one test, named after it.
func newNamespace(t *testing.T) string { t.Helper(); return sandboxtest.Namespace(t, k8s, "") }
