//go:build attack

package attack

import (
	"fmt"
	"os"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/internal/testing/upstreamcrd"
	"github.com/dgdr-operator/dgdr-operator/test/sandboxtest"
)

var (
	env        *sandboxtest.Env
	root       string
	kubeconfig string
	k8s        client.Client
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

// run installs the Dynamo platform's DynamoGraphDeployment CRD (upstreamcrd.DGD, written to a
// temporary file: the sandbox installs CRD files) so that promoted deployments are validated
// by the upstream schema.
func run(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "attack-crds-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "attack:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	dgd, err := upstreamcrd.WriteDGD(tmp)
	if err != nil {
		fmt.Fprintln(os.Stderr, "attack:", err)
		return 1
	}
	return sandboxtest.Main(m, "DGDR_ATTACK", "DGDR_ATTACK_KEEP", sandboxtest.Options{
		Suite: "attack", QPS: 200, Burst: 400,
		CRDFiles: []string{dgd},
	}, func(e *sandboxtest.Env) { env, root, kubeconfig, k8s = e, e.Root, e.Kubeconfig, e.Client })
}

// Timeouts of the scenarios.
const (
	searchTimeout = 3 * time.Minute
	poll          = 250 * time.Millisecond
)

// newNamespace creates a namespace for one test, named after it.
func newNamespace(t *testing.T) string { t.Helper(); return sandboxtest.Namespace(t, k8s, "") }
