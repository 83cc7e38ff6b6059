package webhook_test

import (
	"fmt"
	"os"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/internal/config"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
	"github.com/dgdr-operator/dgdr-operator/internal/webhook"
)

var (
	env *testenv.Env
	k8s client.Client
	// operatorConfig is the configuration the webhooks run with.
	operatorConfig *v1alpha1.OperatorConfiguration
)

// TestMain starts one real API server for the package, with the webhooks installed and served
// over TLS by a manager in this process.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	env, err = testenv.Start(testenv.Options{Webhooks: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the control plane:", err)
		return 1
	}
	defer env.Stop()
	mgr, err := env.NewManager()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cfg := config.Default()
	cfg.AutoApply.Enabled = true // the access tests deploy (TestAccessReview)
	// The API server has no GPU Nodes unless a test creates them: requests that name no SKU
	// get this one.
	cfg.Defaults.GPUSKU = "h200_sxm"
	// A price for a100_sxm only: the maxCostPerHour tests need a SKU with a price and one without.
	cfg.Pricing = &v1alpha1.PricingConfig{Currency: "USD", PricePerGPUHour: map[string]v1alpha1.Decimal{"a100_sxm": "2.00"}}
	operatorConfig = cfg
	if err := webhook.Setup(mgr, cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := env.StartManager(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	k8s = env.Client
	return m.Run()
}

func envtestAdmin() envtest.User {
	return envtest.User{Name: "admin", Groups: []string{"system:masters"}}
}
