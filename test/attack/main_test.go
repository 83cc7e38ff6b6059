//go:build attack

package attack

import (
	"os"
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

func TestMain(m *testing.M) { os.Exit(run(m)) }

// run runs the suite on the sandbox, which serves the Dynamo platform's DynamoGraphDeployment
// CRD (promoted deployments are validated by the upstream schema).
func run(m *testing.M) int {
	return sandboxtest.Main(m, "DGDR_ATTACK", "DGDR_ATTACK_KEEP", sandboxtest.Options{
		Suite: "attack", QPS: 200, Burst: 400,
	}, func(e *sandboxtest.Env) { env, root, kubeconfig, k8s = e, e.Root, e.Kubeconfig, e.Client })
}

// Timeouts of the scenarios.
const (
	searchTimeout = 3 * time.Minute
	poll          = 250 * time.Millisecond
)

// newNamespace creates a namespace for one test, named after it, that the sandbox's realizer
// leaves alone: the attacks need no running deployment.
func newNamespace(t *testing.T) string {
	t.Helper()
	return sandboxtest.UnrealizedNamespace(t, k8s, "")
}
