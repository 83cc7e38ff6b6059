package run_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/controllertest"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/run"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
)

var (
	env *testenv.Env
	k8s client.Client
	// cached reads the operator manager's cache.
	cached client.Reader
	cfg    *v1alpha1.OperatorConfiguration
	// recorders gives tests that build their own Reconciler an event recorder.
	recorders interface {
		GetEventRecorder(name string) recorder.EventRecorder
	}
)

// maxActive is the per-namespace concurrency limit of this package's operator; every test uses
// its own namespace.
const maxActive = 2

// maxPending is the per-namespace cap on waiting Runs of this package's operator.
const maxPending = 2

// startFailureGrace is job.startFailureGraceSeconds of this package's operator.
const startFailureGrace = 3 * time.Second

// TestMain starts one real API server and one manager running the Run controller.
func TestMain(m *testing.M) { os.Exit(runTests(m)) }

func runTests(m *testing.M) int {
	var err error
	env, err = testenv.Start(testenv.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the control plane:", err)
		return 1
	}
	defer env.Stop()
	cfg = controllertest.Config()
	limit := int32(maxActive)
	cfg.Limits.MaxActiveRunsPerNamespace = &limit
	grace := int32(startFailureGrace / time.Second)
	cfg.Job.StartFailureGraceSeconds = &grace
	pendingCap := int32(maxPending)
	cfg.Limits.MaxPendingRunsPerNamespace = &pendingCap
	// The cluster profile of calibration_integration_test.go; its observations are for a system
	// no other test of this package searches on.
	cfg.Calibration.TrustedNamespaces = []string{trustedNamespace}
	cfg.Pricing = &v1alpha1.PricingConfig{Currency: "USD", PricePerGPUHour: map[string]v1alpha1.Decimal{"h200_sxm": "3.50"}}
	// The manager's API requests go through runReads, which counts its reads of Runs.
	counted := *env
	counted.Config = rest.CopyConfig(env.Config)
	counted.Config.Wrap(runReads.wrap)
	mgr, err := controllertest.NewManager(&counted, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	recorders = mgr
	cached = mgr.GetCache()
	if err := (&run.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Config: cfg,
		Recorder: mgr.GetEventRecorder(run.ControllerName)}).SetupWithManager(mgr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: trustedNamespace}}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	stop, err := controllertest.Start(env, mgr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stop()
	k8s = env.Client
	return m.Run()
}
