// Command dgdr-operator is the controller manager of the nvidia.com/v1beta2 search API
// (controllers, admission webhooks, metrics and health endpoints, leader election), and, as
// `dgdr-operator report`, the reporter that runs inside every search Job.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/go-logr/logr"
	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/config/crd"
	"github.com/dgdr-operator/dgdr-operator/internal/config"
	"github.com/dgdr-operator/dgdr-operator/internal/controller"
	"github.com/dgdr-operator/dgdr-operator/internal/crdinstall"
	"github.com/dgdr-operator/dgdr-operator/internal/features"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/internal/metrics"
	"github.com/dgdr-operator/dgdr-operator/internal/scheme"
	"github.com/dgdr-operator/dgdr-operator/internal/version"
	dgdrwebhook "github.com/dgdr-operator/dgdr-operator/internal/webhook"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "dgdr-operator:", err)
		os.Exit(exitCode(err))
	}
}

// exitCode is the process exit code of err: the code an error carries (the reporter's exit codes
// of internal/jobcontract, which the Run controller classifies), 1 otherwise.
func exitCode(err error) int {
	var coded interface{ ExitCode() int }
	if errors.As(err, &coded) && coded.ExitCode() > 0 {
		return coded.ExitCode()
	}
	return 1
}

// newRootCommand: the default command runs the manager; subcommands add the reporter.
func newRootCommand() *cobra.Command {
	var configFile string
	zapOpts := zap.Options{}
	cmd := &cobra.Command{
		Use:   "dgdr-operator --config FILE",
		Short: "Operator for DynamoGraphDeploymentRequests (nvidia.com/v1beta2)",
		Long: `dgdr-operator runs the controller manager: it turns every accepted DynamoGraphDeploymentRequest
generation into an immutable DynamoGraphDeploymentRun and runs its search Job. Everything except
the configuration file path and logging is set in the configuration file (OperatorConfiguration,
config.dgdr.nvidia.com/v1alpha1); see docs/operate/operator.md.`,
		Version:       version.Get().Version,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts), zap.WriteTo(cmd.ErrOrStderr())))
			return runManager(ctrl.SetupSignalHandler(), configFile)
		},
	}
	cmd.SetVersionTemplate("dgdr-operator " + version.Get().String() + "\n")
	cmd.Flags().StringVar(&configFile, "config", "", "operator configuration file (OperatorConfiguration, required)")
	_ = cmd.MarkFlagRequired("config")
	goFlags := flag.NewFlagSet("zap", flag.ContinueOnError)
	zapOpts.BindFlags(goFlags)
	cmd.Flags().AddGoFlagSet(goFlags)
	cmd.AddCommand(subcommands()...)
	return cmd
}

// subcommands are the other entry points of the binary: `report`, the reporter of every search
// Job (version-locked to the operator because it is the same image).
func subcommands() []*cobra.Command {
	return []*cobra.Command{newReportCommand(&reportOptions{})}
}

// runManager loads the configuration and runs the manager until ctx ends.
func runManager(ctx context.Context, configFile string) error {
	log := ctrl.Log.WithName("setup")
	log.Info("starting dgdr-operator", version.Get().KeysAndValues()...)
	cfg, err := config.Load(configFile)
	if err != nil {
		return err
	}
	gates, err := features.FromConfig(cfg.FeatureGates)
	if err != nil {
		return err
	}
	restCfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	if err := installCRDs(ctx, restCfg, cfg, gates.Enabled(features.DGDRV1Beta2)); err != nil {
		return err
	}
	if err := installSearchIdentityPolicy(ctx, restCfg); err != nil {
		return err
	}
	opts := managerOptions(cfg)
	if !gates.Enabled(features.DGDRV1Beta2) {
		// With the gate off the nvidia.com/v1beta2 kinds may not be served at all (the CRD
		// install removed v1beta2): the cache must not need their REST mappings.
		opts.Cache.ByObject = nil
	}
	mgr, err := ctrl.NewManager(restCfg, opts)
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	webhooks := newWebhookStarter(mgr, cfg)
	enabled, err := setupV1Beta2(log, gates, v1beta2Setup{
		Controllers: func() error { return controller.Setup(mgr, cfg) },
		Webhooks:    webhooks.setup,
	})
	if err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	readyz := healthz.Ping
	if enabled {
		readyz = webhooks.ready
	}
	if err := mgr.AddReadyzCheck("readyz", readyz); err != nil {
		return err
	}
	log.Info("starting the manager", "plannerImage", cfg.Planner.Image, "reporterImage", cfg.Reporter.Image,
		"namespaces", cfg.Namespaces, "leaderElection", cfg.LeaderElection.Enabled)
	return mgr.Start(ctx)
}

// installCRDs installs or upgrades the CRDs when the configuration asks for it (crds), before
// the manager starts watching them.
func installCRDs(ctx context.Context, restCfg *rest.Config, cfg *v1alpha1.OperatorConfiguration, v1beta2 bool) error {
	if cfg.CRDs == nil {
		return nil
	}
	svc := cfg.CRDs.ConversionService
	crds, err := crdinstall.Desired(crd.Files, crdinstall.Options{
		V1Beta2: v1beta2,
		Conversion: &apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{
			Namespace: svc.Namespace, Name: svc.Name, Path: ptr.To("/convert"), Port: ptr.To[int32](443)}},
		Annotations: cfg.CRDs.Annotations,
	})
	if err != nil {
		return err
	}
	s := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		return err
	}
	c, err := client.New(restCfg, client.Options{Scheme: s})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := crdinstall.Apply(ctx, c, crds); err != nil {
		return fmt.Errorf("installing the CRDs: %w", err)
	}
	ctrl.Log.WithName("setup").Info("CRDs installed", "v1beta2", v1beta2, "count", len(crds))
	return nil
}

// installSearchIdentityPolicy applies the admission policy that confines each search identity
// to its own Run before any search can start (docs/operate/security.md).
func installSearchIdentityPolicy(ctx context.Context, restCfg *rest.Config) error {
	c, err := client.New(restCfg, client.Options{})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := jobcontract.ApplySearchIdentityPolicy(ctx, c); err != nil {
		return err
	}
	ctrl.Log.WithName("setup").Info("search identity policy installed", "policy", jobcontract.SearchIdentityPolicyName)
	return nil
}

// requestCRDName is the DynamoGraphDeploymentRequest CRD, whose conversion webhook (/convert)
// the operator serves next to its admission webhooks.
const requestCRDName = "dynamographdeploymentrequests.nvidia.com"

// webhookStarter registers the admission webhooks. With self-signed certificates the operator
// first creates (or loads) its CA and serving certificate with cert-controller's rotator, which
// also injects the CA bundle into the webhook configurations and the request CRD's conversion
// webhook; the webhook server is added to the
// manager only once the certificate is on disk, because the server reads it when it starts.
type webhookStarter struct {
	mgr        ctrl.Manager
	cfg        *v1alpha1.OperatorConfiguration
	registered chan struct{}
}

func newWebhookStarter(mgr ctrl.Manager, cfg *v1alpha1.OperatorConfiguration) *webhookStarter {
	return &webhookStarter{mgr: mgr, cfg: cfg, registered: make(chan struct{})}
}

func (w *webhookStarter) setup() error {
	ss := w.cfg.Webhook.SelfSignedCertificates
	if ss == nil {
		if err := dgdrwebhook.Setup(w.mgr, w.cfg); err != nil {
			return err
		}
		close(w.registered)
		return nil
	}
	if ss.Namespace == "" {
		return fmt.Errorf("webhook.selfSignedCertificates.namespace is empty and POD_NAMESPACE is not set")
	}
	if err := ensureSecret(w.mgr, types.NamespacedName{Namespace: ss.Namespace, Name: ss.SecretName}); err != nil {
		return err
	}
	certsReady := make(chan struct{})
	service := ss.ServiceName + "." + ss.Namespace + ".svc"
	if err := rotator.AddRotator(w.mgr, &rotator.CertRotator{
		SecretKey:      types.NamespacedName{Namespace: ss.Namespace, Name: ss.SecretName},
		CertDir:        w.cfg.Webhook.CertDir,
		CAName:         "dgdr-operator-ca",
		CAOrganization: "dgdr-operator",
		DNSName:        service,
		ExtraDNSNames:  []string{service + ".cluster.local"},
		IsReady:        certsReady,
		Webhooks: []rotator.WebhookInfo{
			{Name: ss.MutatingWebhookConfigurationName, Type: rotator.Mutating},
			{Name: ss.ValidatingWebhookConfigurationName, Type: rotator.Validating},
			// The DGDR CRD converts v1beta1 ⇄ v1beta2 through this same webhook server.
			{Name: requestCRDName, Type: rotator.CRDConversion},
		},
		// Every replica serves admission requests, so every replica needs the certificate.
		RequireLeaderElection: false,
	}); err != nil {
		return fmt.Errorf("setting up self-signed webhook certificates: %w", err)
	}
	go func() {
		<-certsReady
		if err := dgdrwebhook.Setup(w.mgr, w.cfg); err != nil {
			ctrl.Log.WithName("setup").Error(err, "registering the webhooks")
			return
		}
		close(w.registered)
	}()
	return nil
}

// ensureSecret creates the (empty) certificate Secret if it does not exist yet: the rotator only
// updates an existing Secret. Creating it here, rather than in the chart, keeps `helm upgrade`
// from wiping the certificate.
func ensureSecret(mgr ctrl.Manager, key types.NamespacedName) error {
	c, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme()})
	if err != nil {
		return err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
		Labels: map[string]string{"app.kubernetes.io/managed-by": "dgdr-operator"}}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the webhook certificate Secret %s: %w", key, err)
	}
	return nil
}

// ready reports ready once the webhooks are registered and their server accepts connections.
func (w *webhookStarter) ready(req *http.Request) error {
	select {
	case <-w.registered:
		return w.mgr.GetWebhookServer().StartedChecker()(req)
	default:
		return fmt.Errorf("webhook certificates are not ready yet")
	}
}

// managerOptions maps the configuration onto the manager.
func managerOptions(cfg *v1alpha1.OperatorConfiguration) ctrl.Options {
	le := cfg.LeaderElection
	return ctrl.Options{
		Scheme:                  scheme.Scheme,
		Cache:                   controller.CacheOptions(cfg),
		Controller:              controller.ControllerConfig(cfg),
		Metrics:                 metrics.ServerOptions(cfg.Metrics),
		HealthProbeBindAddress:  cfg.Health.BindAddress,
		LeaderElection:          le.Enabled,
		LeaderElectionID:        le.LeaseName,
		LeaderElectionNamespace: le.Namespace,
		LeaseDuration:           &le.LeaseDuration.Duration,
		RenewDeadline:           &le.RenewDeadline.Duration,
		RetryPeriod:             &le.RetryPeriod.Duration,
		// Every webhook path, /convert included, reads its body within a size limit and a read
		// timeout (docs/operate/security.md).
		WebhookServer: dgdrwebhook.NewServer(webhook.Options{
			Host: cfg.Webhook.Host, Port: int(*cfg.Webhook.Port), CertDir: cfg.Webhook.CertDir,
		}, dgdrwebhook.LimitsFromConfig(cfg)),
	}
}

// v1beta2Setup registers the v1beta2 controllers and webhooks.
type v1beta2Setup struct {
	Controllers func() error
	Webhooks    func() error
}

// setupV1Beta2 registers the v1beta2 controllers and webhooks only when the DGDRV1Beta2 gate is
// on, and logs why when it is off. It reports whether they were registered.
func setupV1Beta2(log logr.Logger, gates featuregate.FeatureGate, s v1beta2Setup) (bool, error) {
	if !gates.Enabled(features.DGDRV1Beta2) {
		log.Info("feature gate DGDRV1Beta2 is off: the nvidia.com/v1beta2 controllers and webhooks are not started; set featureGates: {DGDRV1Beta2: true} in the configuration to enable them")
		return false, nil
	}
	if err := s.Webhooks(); err != nil {
		return false, fmt.Errorf("setting up the v1beta2 webhooks: %w", err)
	}
	if err := s.Controllers(); err != nil {
		return false, fmt.Errorf("setting up the v1beta2 controllers: %w", err)
	}
	log.Info("feature gate DGDRV1Beta2 is on: v1beta2 controllers and webhooks registered")
	return true, nil
}
