package dgdrealizer

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"
)

// Config is the realizer's configuration file (written by dgdr-sandbox up).
type Config struct {
	// Kubeconfig is the realizer's kubeconfig (its own ServiceAccount's in the sandbox).
	Kubeconfig string `json:"kubeconfig"`
	// StateDir holds one discovery directory per deployment.
	StateDir string `json:"stateDir"`
	// ModelDir is the tokenizer directory the workers serve (testdata/tiny-llama).
	ModelDir string `json:"modelDir"`
	// LauncherDir holds mocker_worker.py (python/).
	LauncherDir string `json:"launcherDir"`
	// AISSystem is the AISimulate system that times workers selecting no GPU product.
	AISSystem string `json:"aisSystem"`
}

// LoadConfig reads a configuration file; every field is required.
func LoadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Config
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for field, v := range map[string]string{"kubeconfig": c.Kubeconfig, "stateDir": c.StateDir, "modelDir": c.ModelDir, "launcherDir": c.LauncherDir, "aisSystem": c.AISSystem} {
		if v == "" {
			return nil, fmt.Errorf("%s: %s is required", path, field)
		}
	}
	return &c, nil
}

// Run waits until the cluster serves DynamoGraphDeployments (the e2e suite installs the Dynamo
// platform's CRD after the sandbox is up), then realizes them until ctx ends.
func Run(ctx context.Context, c *Config) error {
	ctrl.SetLogger(zap.New())
	rc, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return err
	}
	log := ctrl.Log.WithName("dgd-realizer")
	log.Info("waiting for the cluster to serve " + GVK.String())
	err = wait.PollUntilContextCancel(ctx, 2*time.Second, true, func(context.Context) (bool, error) {
		res, err := dc.ServerResourcesForGroupVersion(GVK.GroupVersion().String())
		if err != nil {
			return false, nil //nolint:nilerr // not served yet: keep waiting
		}
		for _, r := range res.APIResources {
			if r.Kind == GVK.Kind {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(rc, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		return err
	}
	dgd := &unstructured.Unstructured{}
	dgd.SetGroupVersionKind(GVK)
	r := &Reconciler{Client: mgr.GetClient(), Config: c, HTTP: &http.Client{Timeout: frontendHTTPTimout}, FreePort: FreeHostPort}
	if err := ctrl.NewControllerManagedBy(mgr).Named("dgd-realizer").For(dgd).Owns(&corev1.Pod{}).Complete(r); err != nil {
		return err
	}
	log.Info("realizing DynamoGraphDeployments in every namespace not labelled " + LabelRealize + "=false")
	return mgr.Start(ctx)
}
