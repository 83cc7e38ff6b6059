package request_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/internal/controller"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/controllertest"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
	"github.com/dgdr-operator/dgdr-operator/internal/webhook"
)

var (
	env *testenv.Env
	k8s client.Client
	cfg *v1alpha1.OperatorConfiguration
	// stopManager stops the running operator (the restart test replaces it).
	stopManager func()
)

const retention = 2

// clusterNode is the H200 Node with 8 GPUs that TestMain creates.
const clusterNode = "gpu-h200-a"

// TestMain starts one real API server with the admission webhooks, and the operator (its
// controllers and the webhooks) in this process. After the tests, no reconciler may have written
// outside its share of a request's status.
func TestMain(m *testing.M) { os.Exit(runTests(m)) }

func runTests(m *testing.M) int {
	var err error
	env, err = testenv.Start(testenv.Options{Webhooks: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the control plane:", err)
		return 1
	}
	defer env.Stop()
	cfg = controllertest.Config()
	r := int32(retention)
	cfg.RunRetention = &r
	// The cluster's one GPU Node: requests that name no SKU get h200_sxm from it (discovery),
	// and candidates of up to 8 GPUs fit it.
	if _, err := controllertest.GPUNode(context.Background(), env.Client, clusterNode, "NVIDIA-H200", 8); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := startOperator(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { stopManager() }()
	k8s = env.Client
	code := m.Run()
	if err := controllertest.CheckStatusOwners(context.Background(), env.Client); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return code
}

// startOperator starts a manager wired like cmd/dgdr-operator with the gate on.
func startOperator() error {
	mgr, err := controllertest.NewManager(env, cfg)
	if err != nil {
		return err
	}
	if err := setup(mgr); err != nil {
		return err
	}
	stopManager, err = controllertest.Start(env, mgr)
	return err
}

func setup(mgr ctrl.Manager) error {
	if err := webhook.Setup(mgr, cfg); err != nil {
		return err
	}
	return controller.Setup(mgr, cfg)
}
