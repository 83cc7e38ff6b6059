//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/test/sandboxtest"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/manager"
)

var (
	env        *sandboxtest.Env
	root       string
	kubeconfig string
	restConfig *rest.Config
	k8s        client.Client
)

func TestMain(m *testing.M) {
	os.Exit(sandboxtest.Main(m, "DGDR_CHAOS", "DGDR_CHAOS_KEEP",
		sandboxtest.Options{Suite: "chaos", QPS: 200, Burst: 400, Timeout: 20 * time.Second},
		func(e *sandboxtest.Env) {
			env, root, kubeconfig, restConfig, k8s = e, e.Root, e.Kubeconfig, e.Config, e.Client
		}))
}

// envInt reads a non-negative integer knob, with def when unset.
func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want a non-negative integer", name, v)
	}
	return n
}

// seed is DGDR_CHAOS_SEED or the current time; it is logged so a run can be repeated.
func seed(t *testing.T) int64 {
	t.Helper()
	if v := os.Getenv("DGDR_CHAOS_SEED"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("DGDR_CHAOS_SEED=%q: %v", v, err)
		}
		return n
	}
	return time.Now().UnixNano()
}

const poll = 250 * time.Millisecond

// newNamespace creates a namespace named prefix-<suffix>.
func newNamespace(t *testing.T, prefix string) string {
	t.Helper()
	return sandboxtest.Namespace(t, k8s, prefix)
}

// waitFor polls cond until it returns true; after timeout the test fails with cond's last
// description.
func waitFor(t *testing.T, timeout time.Duration, what string, cond sandboxtest.Condition) {
	t.Helper()
	sandboxtest.WaitFor(t, timeout, poll, what, cond)
}

func waitForErr(timeout, every time.Duration, cond sandboxtest.Condition) error {
	return sandboxtest.Poll(timeout, every, cond)
}

// tinyRequest is a search of a few seconds.
const tinyRequest = `
apiVersion: nvidia.com/v1beta2
kind: DynamoGraphDeploymentRequest
metadata:
  name: %s
spec:
  model:
    name: meta-llama/Llama-3.1-8B-Instruct
  aisimulate:
    inputOverrides:
      optimizer:
        max_trials: 4
      traffic:
        stop:
          requests: 50
`

// slowRequest runs about 15 s, long enough to act on it mid-search.
var slowRequest = sandboxtest.SlowRequest

func parseDGDR(t *testing.T, doc string) *v1beta2.DynamoGraphDeploymentRequest {
	t.Helper()
	var d v1beta2.DynamoGraphDeploymentRequest
	if err := yaml.UnmarshalStrict([]byte(doc), &d); err != nil {
		t.Fatalf("parsing request: %v", err)
	}
	return &d
}

func createDGDR(t *testing.T, ns, doc string) {
	t.Helper()
	d := parseDGDR(t, doc)
	d.Namespace = ns
	if err := k8s.Create(context.Background(), d); err != nil {
		t.Fatalf("creating %s/%s: %v", ns, d.Name, err)
	}
}

func getDGDR(ctx context.Context, ns, name string) (*v1beta2.DynamoGraphDeploymentRequest, error) {
	var d v1beta2.DynamoGraphDeploymentRequest
	err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &d)
	return &d, err
}

func getRun(ctx context.Context, ns, name string) (*v1beta2.DynamoGraphDeploymentRun, error) {
	var r v1beta2.DynamoGraphDeploymentRun
	err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &r)
	return &r, err
}

// completed returns the Run's Completed condition when it is True.
func completed(r *v1beta2.DynamoGraphDeploymentRun) (reason, message string, done bool) {
	for _, c := range r.Status.Conditions {
		if c.Type == v1beta2.ConditionCompleted && c.Status == "True" {
			return c.Reason, c.Message, true
		}
	}
	return "", "", false
}

// waitRunOf waits (up to a minute) until the request has a Run of its first generation and
// returns its name.
func waitRunOf(t *testing.T, ns, request string) string {
	t.Helper()
	const gen = 1
	name := ""
	waitFor(t, time.Minute, fmt.Sprintf("a Run of %s/%s generation %d", ns, request, gen), func(ctx context.Context) (bool, string, error) {
		var l v1beta2.DynamoGraphDeploymentRunList
		if err := k8s.List(ctx, &l, client.InNamespace(ns), client.MatchingLabels{v1beta2.LabelRequestName: request}); err != nil {
			return false, "", err
		}
		for _, r := range l.Items {
			if r.Labels[v1beta2.LabelRequestGeneration] == fmt.Sprint(gen) {
				name = r.Name
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("%d runs", len(l.Items)), nil
	})
	return name
}

// waitRunDone waits until a Run is terminal and returns it.
func waitRunDone(t *testing.T, ns, name string, timeout time.Duration) *v1beta2.DynamoGraphDeploymentRun {
	t.Helper()
	var run *v1beta2.DynamoGraphDeploymentRun
	waitFor(t, timeout, "Run "+name+" to complete", func(ctx context.Context) (bool, string, error) {
		r, err := getRun(ctx, ns, name)
		if err != nil {
			return false, "", err
		}
		run = r
		_, _, done := completed(r)
		return done, fmt.Sprintf("phase=%s conditions=%v", r.Status.Phase, r.Status.Conditions), nil
	})
	return run
}

// waitOperatorReady waits until admission calls the operator's webhooks again.
func waitOperatorReady(t *testing.T, timeout time.Duration) {
	t.Helper()
	waitFor(t, timeout, "the operator's webhooks", func(ctx context.Context) (bool, string, error) {
		return operatorAdmits(ctx)
	})
}

func operatorAdmits(ctx context.Context) (bool, string, error) {
	var d v1beta2.DynamoGraphDeploymentRequest
	if err := yaml.UnmarshalStrict([]byte(fmt.Sprintf(tinyRequest, "probe")), &d); err != nil {
		return false, "", err
	}
	d.Namespace = "default"
	err := k8s.Create(ctx, &d, client.DryRunAll)
	if apierrors.IsAlreadyExists(err) {
		err = nil
	}
	return err == nil, "", err
}

// podDirs returns the node agent's directories of the pods of a Run's Job.
func podDirs(ns, jobName string) []string {
	dirs, _ := filepath.Glob(filepath.Join(manager.StateDir(root), "pods", ns+"_"+jobName+"-*"))
	return dirs
}

func nsObject(name string) *corev1.Namespace {
	ns := &corev1.Namespace{}
	ns.Name = name
	return ns
}
