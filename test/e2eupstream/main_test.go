//go:build e2eupstream

// The upstream e2e suite runs searches on the sandbox with the real AISimulate: the sandbox's
// Planner image plays bin/upstream/bin/aisimulate (make upstream), not aisim, so the path a
// cluster takes in production (the operator's Job runs `aisimulate recommend`, the reporter
// reads its real output) is exercised end to end. Run with `make test-e2e-upstream`
// (DGDR_E2E_UPSTREAM=1, -tags e2eupstream). A running sandbox is reused only when it runs the
// real AISimulate too.
package e2eupstream

import (
	"fmt"
	"os"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/internal/upstreamtest"
	"github.com/dgdr-operator/dgdr-operator/test/sandboxtest"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/manager"
)

var (
	env  *sandboxtest.Env
	root string
	k8s  client.Client
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

// run checks the venv first (a missing one names make upstream), and installs the Dynamo
// platform's DynamoGraphDeployment CRD so that rendered deployments are judged by it.
func run(m *testing.M) int {
	if os.Getenv("DGDR_E2E_UPSTREAM") == "1" {
		if _, err := upstreamtest.Executable("aisimulate"); err != nil {
			fmt.Fprintln(os.Stderr, "e2e-upstream:", err)
			return 1
		}
	}
	return sandboxtest.Main(m, "DGDR_E2E_UPSTREAM", "DGDR_E2E_UPSTREAM_KEEP", sandboxtest.Options{
		Suite: "e2e-upstream", QPS: 20, Burst: 40,
		Recommender: manager.RecommenderAISimulate,
	}, func(e *sandboxtest.Env) { env, root, k8s = e, e.Root, e.Client })
}
