package manager

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/config/crd"
	"github.com/dgdr-operator/dgdr-operator/internal/config"
	"github.com/dgdr-operator/dgdr-operator/internal/crdinstall"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/controlplane"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/nodeagent"
)

// OperatorNamespace stands for the namespace an installed operator runs in (its POD_NAMESPACE).
const OperatorNamespace = controlplane.OperatorNamespace

// TrustedCalibrationNamespace is the one namespace of the sandbox operator's
// calibration.trustedNamespaces: the cluster profile is its profile.
const TrustedCalibrationNamespace = "dgdr-calibration-trusted"

// ensureNamespace creates namespace name unless it exists.
func (k *kube) ensureNamespace(ctx context.Context, name string) error {
	_, err := k.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

type kube struct {
	rc  *rest.Config
	cs  kubernetes.Interface
	ext apiextensionsclient.Interface
	dyn dynamic.Interface
}

func newKube(kubeconfig string) (*kube, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	k := &kube{rc: rc}
	if k.cs, err = kubernetes.NewForConfig(rc); err != nil {
		return nil, err
	}
	if k.ext, err = apiextensionsclient.NewForConfig(rc); err != nil {
		return nil, err
	}
	if k.dyn, err = dynamic.NewForConfig(rc); err != nil {
		return nil, err
	}
	return k, nil
}

// InstallCRDFiles creates or updates the CRDs in files and waits until they are Established.
func InstallCRDFiles(ctx context.Context, kubeconfig string, files ...string) error {
	k, err := newKube(kubeconfig)
	if err != nil {
		return err
	}
	return k.applyCRDs(ctx, files)
}

// installCRDs installs the operator's CRDs the way the operator's installers do
// (internal/crdinstall: server-side apply merged over a CRD another installer may have created,
// never removing a version), with the DGDRV1Beta2 gate on and the request CRD's conversion
// webhook on loopback with the sandbox's webhook CA.
func (k *kube) installCRDs(ctx context.Context, webhookPort int, caFile string) error {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return err
	}
	url := fmt.Sprintf("https://127.0.0.1:%d/convert", webhookPort)
	crds, err := crdinstall.Desired(crd.Files, crdinstall.Options{V1Beta2: true,
		Conversion: &apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: ca}})
	if err != nil {
		return err
	}
	s := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		return err
	}
	c, err := client.New(k.rc, client.Options{Scheme: s})
	if err != nil {
		return err
	}
	return crdinstall.Apply(ctx, c, crds)
}

func (k *kube) applyCRDs(ctx context.Context, files []string) error {
	crds := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(files))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(b, &crd); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		crds = append(crds, &crd)
	}
	return k.applyCRDObjects(ctx, crds...)
}

// applyCRDObjects creates or updates crds and waits until they are Established.
func (k *kube) applyCRDObjects(ctx context.Context, crds ...*apiextensionsv1.CustomResourceDefinition) error {
	var names []string
	for _, c := range crds {
		crd := c.DeepCopy()
		api := k.ext.ApiextensionsV1().CustomResourceDefinitions()
		old, err := api.Get(ctx, crd.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err = api.Create(ctx, crd, metav1.CreateOptions{})
		case err == nil:
			crd.ResourceVersion = old.ResourceVersion
			_, err = api.Update(ctx, crd, metav1.UpdateOptions{})
		}
		if err != nil {
			return fmt.Errorf("installing CRD %s: %w", crd.Name, err)
		}
		names = append(names, crd.Name)
	}
	for _, n := range names {
		err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			crd, err := k.ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			for _, c := range crd.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s not established: %w", n, err)
		}
	}
	return nil
}

func (k *kube) waitNodeReady(ctx context.Context, name string) error {
	return wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		n, err := k.cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}

// waitWebhooks waits until a server-side dry-run create of a request passes admission, which
// calls the operator's mutating and validating webhooks.
func (k *kube) waitWebhooks(ctx context.Context) error {
	gvr := schema.GroupVersionResource{Group: "nvidia.com", Version: "v1beta2", Resource: "dynamographdeploymentrequests"}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "nvidia.com/v1beta2", "kind": "DynamoGraphDeploymentRequest",
		"metadata": map[string]any{"name": "sandbox-readiness-probe", "namespace": "default"},
		"spec":     map[string]any{"model": map[string]any{"name": "meta-llama/Llama-3.1-8B-Instruct"}},
	}}
	var last error
	err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, last = k.dyn.Resource(gvr).Namespace("default").Create(ctx, obj.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("%w (last: %v)", err, last)
	}
	return nil
}

func httpClient() *http.Client { return &http.Client{Timeout: 5 * time.Second} }

// nodeAgentConfig is the configuration of node n's agent: images map to local programs, the
// Planner image to recommender (bin/aisim, or the real aisimulate of the upstream venv), and the
// images of fromLayouts to binaries extracted from OCI image layouts. Every agent keeps its
// pods' directories under the same pods/ directory.
func nodeAgentConfig(n Node, bin, dir string, cl *controlplane.Cluster, recommender string, fromLayouts map[string]nodeagent.Image) *nodeagent.Config {
	cfg := &nodeagent.Config{
		NodeName:      n.Name,
		Kubeconfig:    cl.Kubeconfig(),
		APIServerHost: "127.0.0.1",
		APIServerPort: cl.Ports.APIServer,
		StateDir:      filepath.Join(dir, "pods"),
		Capacity:      n.Capacity(),
		Labels:        n.Labels(),
		Taints:        n.Taints(),
		Images: map[string]nodeagent.Image{
			// The Planner image runs aisim, the local AISimulate-compatible recommender, or the
			// real AISimulate, under the name the Job's command uses (aisimulate).
			PlannerImage: {Binary: recommender, Entrypoint: []string{"aisimulate"}},
			// The operator image (the reporter container runs "dgdr-operator report").
			OperatorImage: {Binary: filepath.Join(bin, "dgdr-operator"), Entrypoint: []string{"dgdr-operator"}},
			// The attack suite's hostile search (tools/sandbox/hostile).
			HostileSearchImage: {Binary: filepath.Join(bin, "dgdr-sandbox"), Entrypoint: []string{HostileSearchCommand, "hostile-search"}},
		},
	}
	maps.Copy(cfg.Images, fromLayouts)
	return cfg
}

// operatorConfig is the development configuration of the operator in the sandbox.
func operatorConfig(p controlplane.Ports, certDir string, r Recommender) *v1alpha1.OperatorConfiguration {
	return operatorConfigFor(OperatorPorts{Metrics: p.Metrics, Health: p.Health, Webhook: p.Webhook}, certDir, nil, r)
}

// operatorConfigFor is the development configuration of config/dev (feature gate on; a test
// keeps the two in step) with what the sandbox changes: loopback ports, the sandbox's images
// (the node agent maps them to bin/aisim and bin/dgdr-operator), a 10-minute search deadline,
// four searches per namespace (and up to 3,000 waiting ones), and leader election when le is
// not nil (chaos tests run two replicas). With the real AISimulate (r) a search takes minutes
// and a 1.5 GB process per search: the deadline is an hour and the search container gets the
// chart's default resources.
func operatorConfigFor(p OperatorPorts, certDir string, le *LeaderElection, r Recommender) *v1alpha1.OperatorConfiguration {
	resources := func(reqCPU, reqMem, limCPU, limMem string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(reqCPU), corev1.ResourceMemory: resource.MustParse(reqMem)},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(limCPU), corev1.ResourceMemory: resource.MustParse(limMem)},
		}
	}
	cfg := &v1alpha1.OperatorConfiguration{
		TypeMeta:     metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion, Kind: v1alpha1.Kind},
		FeatureGates: map[string]bool{"DGDRV1Beta2": true},
		Planner: v1alpha1.PlannerConfig{
			Image:          PlannerImage,
			Command:        []string{"aisimulate", "recommend"},
			PredictCommand: []string{"aisimulate", "predict"},
			Resources:      resources("500m", "512Mi", "2", "2Gi"),
		},
		Reporter: v1alpha1.ReporterConfig{Image: OperatorImage, Resources: resources("50m", "64Mi", "500m", "256Mi")},
		Job: v1alpha1.JobConfig{
			ActiveDeadlineSeconds:   ptr.To[int64](600),
			TTLSecondsAfterFinished: ptr.To[int32](3600),
		},
		// GPU discovery sees two products (H200Node, H100Node): requests that name no SKU are
		// searched for the default, one of them.
		Defaults:     v1alpha1.DefaultsConfig{GPUSKU: DefaultGPUSKU},
		RunRetention: ptr.To[int32](5),
		Limits: v1alpha1.LimitsConfig{
			MaxActiveRunsPerNamespace: ptr.To[int32](4),
			// The attack suite keeps 2,000 Runs waiting in one namespace (test/attack).
			MaxPendingRunsPerNamespace: ptr.To[int32](3000),
			MaxTrials:                  ptr.To[int32](2000),
			MaxParallelism:             ptr.To[int32](16),
		},
		// The e2e and attack suites deploy with autoApply (off by default; docs/operate/security.md).
		AutoApply: v1alpha1.AutoApplyConfig{Enabled: true},
		// The node agent runs it as the AIPerf of bin/aiperf (make aiperf), as config/dev.
		Verification: v1alpha1.VerificationConfig{Image: VerificationImage},
		// One verification is enough here: the e2e suite proves that a verified deployment
		// calibrates the next search (an installed operator waits for 3 by default). The attack
		// suite's trusted namespace makes up the cluster profile.
		Calibration: v1alpha1.CalibrationConfig{TrustedNamespaces: []string{TrustedCalibrationNamespace}, MinObservations: ptr.To[int32](1)},
		// Re-searches every minute, so the e2e suite sees ticks (an installed operator allows an
		// hour at least), as config/dev.
		Research:      v1alpha1.ResearchConfig{MinInterval: &metav1.Duration{Duration: time.Minute}},
		RuntimeImages: maps.Clone(config.DefaultRuntimeImages),
		// Example prices, made up for the demo (not quotes), as in config/dev.
		Pricing: &v1alpha1.PricingConfig{Currency: "USD", PricePerGPUHour: map[string]v1alpha1.Decimal{
			"a100_sxm": "1.60", "h100_sxm": "2.50", "h200_sxm": "3.50", "b200_sxm": "5.00",
		}},
		Metrics: v1alpha1.MetricsConfig{BindAddress: fmt.Sprintf("127.0.0.1:%d", p.Metrics), CertDir: certDir},
		Health:  v1alpha1.HealthConfig{BindAddress: fmt.Sprintf("127.0.0.1:%d", p.Health)},
		Webhook: v1alpha1.WebhookConfig{Host: "127.0.0.1", Port: ptr.To(int32(p.Webhook)), CertDir: certDir},
	}
	if r.orDefault() == RecommenderAISimulate {
		cfg.Job.ActiveDeadlineSeconds = ptr.To[int64](3600)
		cfg.Planner.Resources = resources("2", "4Gi", "8", "16Gi")
	}
	if le != nil {
		cfg.LeaderElection = v1alpha1.LeaderElectionConfig{
			Enabled:       true,
			Namespace:     le.Namespace,
			LeaseDuration: &metav1.Duration{Duration: le.LeaseDuration},
			RenewDeadline: &metav1.Duration{Duration: le.RenewDeadline},
			RetryPeriod:   &metav1.Duration{Duration: le.RetryPeriod},
		}
	}
	return cfg
}

// writeConfig writes a configuration file generated by dgdr-sandbox as YAML.
func writeConfig(path string, cfg any) error {
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte("# Generated by dgdr-sandbox up.\n"), b...), 0o644)
}
