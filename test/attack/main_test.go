//go:build attack

package attack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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

// newNamespace creates a namespace for one test.
func newNamespace(t *testing.T) string {
	t.Helper()
	name := strings.ToLower(strings.ReplaceAll(t.Name(), "_", "-"))
	name = strings.ReplaceAll(name, "/", "-")
	if len(name) > 40 {
		name = name[:40]
	}
	name = strings.Trim(name, "-") + fmt.Sprintf("-%d", time.Now().UnixNano()%100000)
	ns := &corev1.Namespace{}
	ns.Name = name
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	return name
}
