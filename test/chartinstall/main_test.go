//go:build chartinstall

// The chartinstall suite installs the operator the way a platform team does, with the packaged
// Helm chart of the release (the real helm, built into bin/), into a sandbox started without its
// own operator (dgdr-sandbox up --no-operator), and checks that the installed chart serves admission over
// its webhook Service (self-signed certificates issued and injected by the operator) and
// reconciles requests into Runs, search Jobs and Candidates. The package (DGDR_CHART_PACKAGE)
// pins the operator image by digest; the sandbox's node agent runs that reference from the OCI
// image layout it was built into (DGDR_IMAGE_LAYOUT), so the operator and every reporter run the
// binary the image ships. Run with `make test-chart-install` (DGDR_CHART_INSTALL=1, -tags
// chartinstall), which builds both. A running --no-operator sandbox is reused (and
// left running); otherwise TestMain starts one and stops it at the end unless
// DGDR_CHART_INSTALL_KEEP=1.
package chartinstall

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta1"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/upstreamcrd"
	"github.com/dgdr-operator/dgdr-operator/test/sandboxtest"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/manager"
)

// The release under test.
const (
	release   = "dgdr"
	namespace = "dgdr-system"
	fullname  = "dgdr-dgdr-operator"
)

var (
	env  *sandboxtest.Env
	k8s  client.Client
	root string
	// chartPackage is the packaged chart under test.
	chartPackage string
	// operatorImage is the image reference the package pins (repository:tag@digest).
	operatorImage string
)

func TestMain(m *testing.M) {
	if os.Getenv("DGDR_CHART_INSTALL") != "1" {
		fmt.Println("chartinstall: skipped (set DGDR_CHART_INSTALL=1, or run make test-chart-install)")
		os.Exit(0)
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	chartPackage = os.Getenv("DGDR_CHART_PACKAGE")
	layout := os.Getenv("DGDR_IMAGE_LAYOUT")
	if chartPackage == "" || layout == "" {
		fmt.Fprintln(os.Stderr, "chartinstall: DGDR_CHART_PACKAGE and DGDR_IMAGE_LAYOUT name the packaged chart and the image layout (make test-chart-install builds and sets both)")
		return 1
	}
	var err error
	if operatorImage, err = pinnedImage(chartPackage); err != nil {
		fmt.Fprintln(os.Stderr, "chartinstall:", err)
		return 1
	}
	fmt.Printf("chartinstall: installing %s; the node agent runs its image %s from %s\n", chartPackage, operatorImage, layout)
	env, err = sandboxtest.Setup(sandboxtest.Options{Suite: "chartinstall", QPS: 50, Burst: 100, NoOperator: true,
		OperatorUser: "system:serviceaccount:" + namespace + ":" + fullname,
		ImageLayouts: []manager.ImageLayout{{Ref: operatorImage, Dir: layout}}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "chartinstall:", err)
		return 1
	}
	root, k8s = env.Root, env.Client
	code := 0
	if err := requireRoutableNode(); err != nil {
		fmt.Fprintln(os.Stderr, "chartinstall:", err)
		code = 1
	} else if err := preinstallDynamoPlatformCRD(); err != nil {
		fmt.Fprintln(os.Stderr, "chartinstall:", err)
		code = 1
	} else if err := install(); err != nil {
		fmt.Fprintln(os.Stderr, "chartinstall:", err)
		code = 1
	} else {
		code = m.Run()
	}
	if code != 0 {
		dumpOperatorLog()
	}
	return env.Finish(code, "DGDR_CHART_INSTALL_KEEP")
}

// requireRoutableNode fails early, with the reason, on a host whose only IPv4 address is
// loopback: the API server rejects loopback endpoints, so the webhook Service would have none.
func requireRoutableNode() error {
	var node corev1.Node
	if err := k8s.Get(context.Background(), client.ObjectKey{Name: manager.CPUNode.Name}, &node); err != nil {
		return err
	}
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			if ip := net.ParseIP(a.Address); ip == nil || ip.IsLoopback() {
				return fmt.Errorf("the sandbox node's InternalIP is %s: this host has no non-loopback IPv4 address, so Services (the chart's webhook Service) get no endpoints (docs/develop/sandbox.md, Addresses)", a.Address)
			}
			return nil
		}
	}
	return fmt.Errorf("the sandbox node has no InternalIP")
}

// The Dynamo platform's side: its request CRD and one of its requests exist before the chart is
// installed (issue #15).
const (
	dynamoNamespace = "dynamo-platform"
	dynamoRequest   = "dynamo-owned"
)

// preinstallDynamoPlatformCRD installs the Dynamo platform's own DynamoGraphDeploymentRequest CRD
// (test/crds/upstream/dynamo, copied unchanged from ai-dynamo/dynamo: v1beta1 served and stored,
// v1alpha1 served) unless the CRD exists (a reused sandbox), and a v1beta1 request.
func preinstallDynamoPlatformCRD() error {
	ctx := context.Background()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	err := k8s.Get(ctx, client.ObjectKey{Name: "dynamographdeploymentrequests.nvidia.com"}, crd)
	if apierrors.IsNotFound(err) {
		if err := manager.InstallCRDFiles(ctx, env.Kubeconfig, filepath.Join(upstreamcrd.Dir(), upstreamcrd.DGDRFile)); err != nil {
			return fmt.Errorf("the Dynamo platform's CRD: %w", err)
		}
	} else if err != nil {
		return err
	}
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: dynamoNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	req := builders.V1Beta1Request(dynamoNamespace, dynamoRequest, "Qwen/Qwen3-0.6B", v1beta1.BackendVLLM)
	// The client's discovery may predate the CRD: retry until it knows the kind.
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := k8s.Create(ctx, req.DeepCopy())
		return err == nil || apierrors.IsAlreadyExists(err), nil
	})
}

// pinnedImage is the operator image a packaged chart installs by default:
// image.repository:(image.tag or appVersion)@image.digest, digest required.
func pinnedImage(pkg string) (string, error) {
	files, err := readChartPackage(pkg, "Chart.yaml", "values.yaml")
	if err != nil {
		return "", err
	}
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	var values struct {
		Image struct {
			Repository string `json:"repository"`
			Tag        string `json:"tag"`
			Digest     string `json:"digest"`
		} `json:"image"`
	}
	if err := yaml.Unmarshal(files["Chart.yaml"], &chart); err != nil {
		return "", fmt.Errorf("%s: Chart.yaml: %w", pkg, err)
	}
	if err := yaml.Unmarshal(files["values.yaml"], &values); err != nil {
		return "", fmt.Errorf("%s: values.yaml: %w", pkg, err)
	}
	img := values.Image
	if img.Digest == "" {
		return "", fmt.Errorf("%s: image.digest is empty: the packaged chart must pin the image it was built with", pkg)
	}
	tag := img.Tag
	if tag == "" {
		tag = chart.AppVersion
	}
	return img.Repository + ":" + tag + "@" + img.Digest, nil
}

// readChartPackage reads files of the chart's top directory from a packaged chart (.tgz).
func readChartPackage(pkg string, names ...string) (map[string][]byte, error) {
	f, err := os.Open(pkg)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", pkg, err)
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	out := map[string][]byte{}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", pkg, err)
		}
		_, rest, _ := strings.Cut(h.Name, "/")
		if want[rest] {
			if out[rest], err = io.ReadAll(tr); err != nil {
				return nil, err
			}
		}
	}
	for _, n := range names {
		if out[n] == nil {
			return nil, fmt.Errorf("%s has no %s", pkg, n)
		}
	}
	return out, nil
}

// install runs `helm install` (or `helm upgrade --install` on a reused sandbox) of the packaged
// chart with its own operator image, the sandbox's Planner image and free ports: every pod of the
// sandbox shares the host's network.
func install() error {
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	t0 := time.Now()
	out, err := helm("upgrade", "--install", release, chartPackage,
		"--namespace", namespace, "--create-namespace",
		"--values", filepath.Join(root, "test", "chartinstall", "testdata", "sandbox-values.yaml"),
		"--set", "planner.image="+manager.PlannerImage,
		"--set", "metrics.port="+strconv.Itoa(ports[0]),
		"--set", "health.port="+strconv.Itoa(ports[1]),
		"--set", "webhook.port="+strconv.Itoa(ports[2]),
		"--wait", "--timeout", "3m")
	if err != nil {
		return fmt.Errorf("helm install: %w\n%s", err, out)
	}
	fmt.Printf("chartinstall: chart installed in %s (ports metrics %d, health %d, webhook %d)\n",
		time.Since(t0).Round(100*time.Millisecond), ports[0], ports[1], ports[2])
	return nil
}

// freePorts returns n ports that are free on every interface (the operator binds ":port").
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", ":0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// tool runs a binary of bin/ against the sandbox and returns its combined output.
func tool(name string, args ...string) ([]byte, error) { return toolEnv(nil, name, args...) }

func helm(args ...string) ([]byte, error) {
	dir, err := os.MkdirTemp("", "chartinstall-helm-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	return toolEnv([]string{"HELM_CACHE_HOME=" + dir, "HELM_CONFIG_HOME=" + dir, "HELM_DATA_HOME=" + dir}, "helm", args...)
}

func toolEnv(extra []string, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "bin", name), args...)
	cmd.Env = append(append(os.Environ(), "KUBECONFIG="+env.Kubeconfig), extra...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

// dumpOperatorLog prints the end of the chart-installed operator's log (its pod directory on
// the sandbox node).
func dumpOperatorLog() {
	logs, _ := filepath.Glob(filepath.Join(manager.StateDir(root), "pods", namespace+"_"+fullname+"-*", "logs", "manager.log"))
	for _, l := range logs {
		sandboxtest.PrintTail(l, 40)
	}
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond sandboxtest.Condition) {
	t.Helper()
	sandboxtest.WaitFor(t, timeout, 250*time.Millisecond, what, cond)
}
