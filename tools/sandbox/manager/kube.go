package manager

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/controlplane"
)

// The Node the agent registers and its GPU product label.
const (
	NodeName   = "sandbox-node"
	GPUProduct = "NVIDIA-H200"
)

type kube struct {
	cs  kubernetes.Interface
	ext apiextensionsclient.Interface
	dyn dynamic.Interface
}

func newKube(kubeconfig string) (*kube, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	k := &kube{}
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

func (k *kube) installCRDs(ctx context.Context, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no CRDs in %s: %v", dir, err)
	}
	return k.applyCRDs(ctx, files)
}

func (k *kube) applyCRDs(ctx context.Context, files []string) error {
	var names []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(b, &crd); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		api := k.ext.ApiextensionsV1().CustomResourceDefinitions()
		old, err := api.Get(ctx, crd.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err = api.Create(ctx, &crd, metav1.CreateOptions{})
		case err == nil:
			crd.ResourceVersion = old.ResourceVersion
			_, err = api.Update(ctx, &crd, metav1.UpdateOptions{})
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

// installWebhooks installs the generated webhook configurations with the service references
// replaced by URLs on loopback and the sandbox's webhook CA as caBundle.
func (k *kube) installWebhooks(ctx context.Context, manifests string, port int, caFile string) error {
	b, err := os.ReadFile(manifests)
	if err != nil {
		return err
	}
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return err
	}
	url := func(cc *admissionregistrationv1.WebhookClientConfig) {
		path := ""
		if cc.Service != nil && cc.Service.Path != nil {
			path = *cc.Service.Path
		}
		u := fmt.Sprintf("https://127.0.0.1:%d%s", port, path)
		cc.Service, cc.URL, cc.CABundle = nil, &u, ca
	}
	for _, doc := range bytes.Split(b, []byte("\n---")) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil || meta.Kind == "" {
			continue
		}
		var obj any
		var resource string
		switch meta.Kind {
		case "MutatingWebhookConfiguration":
			w := &admissionregistrationv1.MutatingWebhookConfiguration{}
			if err := yaml.Unmarshal(doc, w); err != nil {
				return err
			}
			for i := range w.Webhooks {
				url(&w.Webhooks[i].ClientConfig)
			}
			obj, resource = w, "mutatingwebhookconfigurations"
		case "ValidatingWebhookConfiguration":
			w := &admissionregistrationv1.ValidatingWebhookConfiguration{}
			if err := yaml.Unmarshal(doc, w); err != nil {
				return err
			}
			for i := range w.Webhooks {
				url(&w.Webhooks[i].ClientConfig)
			}
			obj, resource = w, "validatingwebhookconfigurations"
		default:
			continue
		}
		// One server-side apply creates or updates either kind.
		data, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		gvr := admissionregistrationv1.SchemeGroupVersion.WithResource(resource)
		name := obj.(metav1.Object).GetName()
		if _, err := k.dyn.Resource(gvr).Patch(ctx, name, types.ApplyPatchType, data,
			metav1.PatchOptions{FieldManager: "dgdr-sandbox", Force: ptr.To(true)}); err != nil {
			return fmt.Errorf("applying %s %s: %w", meta.Kind, name, err)
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

// nodeAgentConfig is the node agent's configuration: images map to bin/ binaries.
func nodeAgentConfig(bin, dir string, cl *controlplane.Cluster) string {
	return fmt.Sprintf(`# Generated by dgdr-sandbox up.
nodeName: %s
kubeconfig: %s
apiServerHost: 127.0.0.1
apiServerPort: %d
stateDir: %s
capacity: {cpu: "16", memory: 64Gi, pods: "110", ephemeral-storage: 100Gi, nvidia.com/gpu: "8"}
labels:
  nvidia.com/gpu.product: %s
  nvidia.com/gpu.count: "8"
images:
  # The Planner image runs aisim, the local AISimulate-compatible recommender, under the
  # name the Job's command uses (aisimulate).
  %s:
    binary: %s
    entrypoint: [aisimulate]
  # The operator image (the reporter container runs "dgdr-operator report").
  %s:
    binary: %s
    entrypoint: [dgdr-operator]
`, NodeName, cl.Kubeconfig(), cl.Ports.APIServer, filepath.Join(dir, "pods"), GPUProduct,
		PlannerImage, filepath.Join(bin, "aisim"), OperatorImage, filepath.Join(bin, "dgdr-operator"))
}

// operatorConfig is the development configuration of the operator in the sandbox.
func operatorConfig(p controlplane.Ports, certDir string) string {
	return operatorConfigFor(OperatorPorts{Metrics: p.Metrics, Health: p.Health, Webhook: p.Webhook}, certDir, nil)
}

// operatorConfigFor is operatorConfig with the given ports and, when le is not nil, leader
// election on (chaos tests run two replicas).
func operatorConfigFor(p OperatorPorts, certDir string, le *LeaderElection) string {
	leader := "leaderElection:\n  enabled: false\n"
	if le != nil {
		leader = fmt.Sprintf("leaderElection:\n  enabled: true\n  namespace: %s\n  leaseDuration: %s\n  renewDeadline: %s\n  retryPeriod: %s\n",
			le.Namespace, le.LeaseDuration, le.RenewDeadline, le.RetryPeriod)
	}
	return strings.TrimLeft(fmt.Sprintf(`
# Generated by dgdr-sandbox up: the development configuration (feature gate on) with loopback
# ports and the sandbox's images, which the node agent maps to bin/aisim and bin/dgdr-operator.
apiVersion: config.dgdr.nvidia.com/v1alpha1
kind: OperatorConfiguration
featureGates:
  DGDRV1Beta2: true
planner:
  image: %s
  command: [aisimulate, recommend]
  resources:
    requests: {cpu: 500m, memory: 512Mi}
    limits: {cpu: "2", memory: 2Gi}
reporter:
  image: %s
  resources:
    requests: {cpu: 50m, memory: 64Mi}
    limits: {cpu: 500m, memory: 256Mi}
job:
  activeDeadlineSeconds: 600
  ttlSecondsAfterFinished: 3600
defaults:
  gpuSKU: h200_sxm
runRetention: 5
limits:
  maxActiveRunsPerNamespace: 4
  maxTrials: 2000
  maxParallelism: 16
runtimeImages:
  vllm: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.6.0
  sglang: nvcr.io/nvidia/ai-dynamo/sglang-runtime:1.6.0
  trtllm: nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:1.6.0
%smetrics:
  bindAddress: "127.0.0.1:%d"
health:
  bindAddress: "127.0.0.1:%d"
webhook:
  host: 127.0.0.1
  port: %d
  certDir: %s
`, PlannerImage, OperatorImage, leader, p.Metrics, p.Health, p.Webhook, certDir), "\n")
}
