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
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

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

func getDGDR(ctx context.Context, ns, name string) (*v1beta2.DynamoGraphDeploymentRequest, error) {
	var d v1beta2.DynamoGraphDeploymentRequest
	err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &d)
	return &d, err
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

// waitOperatorReady waits until admission calls the operator's webhooks again.
func waitOperatorReady(t *testing.T, timeout time.Duration) {
	t.Helper()
	waitFor(t, timeout, "the operator's webhooks", func(ctx context.Context) (bool, string, error) {
		return env.OperatorAdmits(ctx)
	})
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
