// Package env starts a real etcd + kube-apiserver (built by hack/setup-k8s.sh into bin/) with
// the generated CRDs installed, and optionally the admission webhooks served over TLS by a
// controller-runtime manager in the test process. One environment per test package (TestMain).
//
// The DynamoGraphDeploymentRequest CRD stores v1beta1 and serves v1beta2 through the conversion
// webhook, so every environment serves /convert over TLS: the manager's webhook server when
// Options.Webhooks is set (NewManager registers it), otherwise a conversion-only server that
// Start runs, so that even a bare environment converts as a cluster does.
//
// Namespace and UserClient serve the sandbox suites as well: a fresh namespace per test, and a
// client of a user who holds only the RBAC rules a test grants.
package env

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	"github.com/dgdr-operator/dgdr-operator/config/crd"
	"github.com/dgdr-operator/dgdr-operator/internal/crdinstall"
	"github.com/dgdr-operator/dgdr-operator/internal/scheme"
)

// Root is the repository root.
func Root() string {
	_, file, _, _ := goruntime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

// Options select what the environment provides.
type Options struct {
	// Webhooks installs config/webhook and returns a manager whose webhook server the caller
	// registers handlers on (and starts with Env.Start).
	Webhooks bool
	// ExtraCRDDirs are additional CRD directories (e.g. test-only CRDs).
	ExtraCRDDirs []string
	// CRDs are additional CRDs given as objects (e.g. upstreamcrd.DGD(), the Dynamo platform's
	// DynamoGraphDeployment CRD made installable without the Dynamo operator).
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// NoProjectCRDs leaves out config/crd/bases, for tests that install the CRDs themselves
	// (the chart, as on a fresh cluster).
	NoProjectCRDs bool
}

// Env is a running control plane.
type Env struct {
	Env     *envtest.Environment
	Config  *rest.Config
	Client  client.Client
	Manager ctrl.Manager // nil unless a manager was requested
	cancel  context.CancelFunc
	// stopConversion stops the conversion-only server (environments without Webhooks).
	stopConversion context.CancelFunc
}

// Start starts etcd and kube-apiserver from bin/ (KUBEBUILDER_ASSETS overrides).
func Start(opts Options) (*Env, error) {
	// The operator's components in the test process log through controller-runtime; the tests
	// judge state, not logs. Discarding them (as an unset logger does) also keeps
	// controller-runtime from printing, 30 s in, that no logger was set, with a stack trace. A
	// test that reads logs sets its logger before Start: only the first one counts.
	crlog.SetLogger(logr.Discard())
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(Root(), "bin")
	}
	if _, err := os.Stat(filepath.Join(assets, "kube-apiserver")); err != nil {
		return nil, fmt.Errorf("kube-apiserver not found in %s: run `make tools` (hack/setup-k8s.sh) first", assets)
	}
	crdDirs := opts.ExtraCRDDirs
	if !opts.NoProjectCRDs {
		crdDirs = append([]string{filepath.Join(Root(), "config", "crd", "bases")}, crdDirs...)
	}
	e := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     crdDirs,
		CRDs:                  opts.CRDs,
		ErrorIfCRDPathMissing: true,
		// The scheme tells envtest which CRDs convert: it points their conversion webhook at
		// the local serving address with its CA.
		Scheme: scheme.Scheme,
	}
	// Admission as in a hardened cluster (OpenShift enables it by default): setting
	// blockOwnerDeletion needs update on the owner's finalizers, so tests see what the generated
	// RBAC lacks.
	e.ControlPlane.GetAPIServer().Configure().Append("enable-admission-plugins", "NodeRestriction", "OwnerReferencesPermissionEnforcement")
	if opts.Webhooks {
		e.WebhookInstallOptions = envtest.WebhookInstallOptions{Paths: []string{filepath.Join(Root(), "config", "webhook")}}
	}
	cfg, err := e.Start()
	if err != nil {
		return nil, err
	}
	env := &Env{Env: e, Config: cfg}
	if !opts.Webhooks {
		if err := env.serveConversion(); err != nil {
			_ = e.Stop()
			return nil, err
		}
	}
	env.Client, err = client.New(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		env.Stop()
		return nil, err
	}
	return env, nil
}

// Webhooks reports whether the environment installed the admission webhooks, which a manager's
// webhook server must then serve (with /convert); otherwise Start serves /convert itself.
func (e *Env) Webhooks() bool {
	return e.stopConversion == nil && e.Env.WebhookInstallOptions.LocalServingPort != 0
}

// InstallProjectCRDs creates or updates the generated CRDs (config/crd/bases), their conversion
// webhooks pointed at this environment's webhook server, and waits until they are served: the
// install over a CRD another installer created (environments started with NoProjectCRDs).
//
// It installs the way the operator's installers do (internal/crdinstall: server-side apply
// merged over what exists), with the DGDRV1Beta2 gate on.
func (e *Env) InstallProjectCRDs() error {
	w := e.Env.WebhookInstallOptions
	url := fmt.Sprintf("https://%s%s", net.JoinHostPort(w.LocalServingHost, strconv.Itoa(w.LocalServingPort)), ConvertPath)
	crds, err := crdinstall.Desired(crd.Files, crdinstall.Options{V1Beta2: true,
		Conversion: &apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: w.LocalServingCAData}})
	if err != nil {
		return err
	}
	s := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		return err
	}
	c, err := client.New(e.Config, client.Options{Scheme: s})
	if err != nil {
		return err
	}
	return crdinstall.Apply(context.Background(), c, crds)
}

// serveConversion runs a webhook server with only /convert where envtest pointed the CRDs'
// conversion webhooks.
func (e *Env) serveConversion() error {
	w := e.Env.WebhookInstallOptions
	srv := webhook.NewServer(webhook.Options{Host: w.LocalServingHost, Port: w.LocalServingPort, CertDir: w.LocalServingCertDir})
	srv.Register(ConvertPath, conversion.NewWebhookHandler(scheme.Scheme, conversion.NewRegistry()))
	ctx, cancel := context.WithCancel(context.Background())
	e.stopConversion = cancel
	errCh := make(chan error, 1)
	go func() { errCh <- srv.Start(ctx) }()
	return waitStarted(errCh, srv.StartedChecker())
}

// ConvertPath is where controller-runtime serves CRD conversion.
const ConvertPath = "/convert"

// NewManager creates a manager on the environment; with webhooks installed, its webhook server
// listens where the installed webhook configurations point, over TLS with envtest's certificates.
func (e *Env) NewManager() (ctrl.Manager, error) {
	opts := ctrl.Options{
		Scheme:                 scheme.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	}
	w := e.Env.WebhookInstallOptions
	if e.Webhooks() {
		opts.WebhookServer = webhook.NewServer(webhook.Options{Host: w.LocalServingHost, Port: w.LocalServingPort, CertDir: w.LocalServingCertDir})
	}
	mgr, err := ctrl.NewManager(e.Config, opts)
	if err != nil {
		return nil, err
	}
	if e.Webhooks() {
		// The webhook builder registers /convert only with a v1beta2 request webhook; register
		// it here so that every manager-backed environment converts from the start.
		mgr.GetWebhookServer().Register(ConvertPath, conversion.NewWebhookHandler(mgr.GetScheme(), mgr.GetConverterRegistry()))
	}
	e.Manager = mgr
	return mgr, nil
}

// StartManager runs the manager in the background and, when webhooks are installed, waits until
// its webhook server accepts TLS connections.
func (e *Env) StartManager() error {
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	errCh := make(chan error, 1)
	go func() { errCh <- e.Manager.Start(ctx) }()
	if !e.Webhooks() {
		return nil
	}
	return waitStarted(errCh, e.Manager.GetWebhookServer().StartedChecker())
}

// waitStarted waits until a webhook server accepts TLS connections.
func waitStarted(errCh <-chan error, started healthz.Checker) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-errCh:
			return fmt.Errorf("webhook server stopped: %w", err)
		default:
		}
		if err := started(nil); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("webhook server did not start")
}

// Stop stops the manager and the control plane.
func (e *Env) Stop() {
	if e.cancel != nil {
		e.cancel()
	}
	if e.stopConversion != nil {
		e.stopConversion()
	}
	_ = e.Env.Stop()
}
