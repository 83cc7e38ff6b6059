// Package sandboxtest is what the suites that run against the dgdr-sandbox share (test/e2e,
// test/chaos): reusing or starting the sandbox, a client for it, logs on failure, and common
// waits and requests.
package sandboxtest

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/internal/scheme"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/poll"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/dgdrealizer"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/manager"
)

// Env is a running sandbox and a client for it.
type Env struct {
	Root       string
	Kubeconfig string
	Config     *rest.Config
	Client     client.Client
	suite      string
	started    bool
	// operatorUser is the operator's user, whose refused requests fail the suite (CheckAudit);
	// since is when the suite began.
	operatorUser string
	since        time.Time
}

// Options shape the client and the sandbox.
type Options struct {
	// Suite names the suite in messages ("e2e", "chaos").
	Suite string
	// QPS and Burst of the client.
	QPS   float32
	Burst int
	// Timeout of each API call (0: none).
	Timeout time.Duration
	// CRDFiles are extra CRDs to install (paths relative to the repository root, or absolute,
	// e.g. upstreamcrd.WriteDGD's variant in a temporary directory).
	CRDFiles []string
	// NoOperator wants a sandbox without its own operator, CRDs and webhooks (the suite
	// installs the operator with its chart).
	NoOperator bool
	// Recommender is what the sandbox's Planner image runs (default aisim).
	Recommender manager.Recommender
	// ImageLayouts are images the node agent runs from OCI image layouts (make images).
	ImageLayouts []manager.ImageLayout
	// OperatorUser is the operator's user (default manager.OperatorUsername(): the sandbox's
	// chart ServiceAccount); the suite fails when the API server refused it anything.
	OperatorUser string
}

// Main is the body of a suite's TestMain: it skips the suite unless $enableEnv is "1", sets up
// (or reuses) the sandbox, hands it to use, runs the tests and tears down (keeping the sandbox
// when $keepEnv is "1"). It returns the exit code.
func Main(m *testing.M, enableEnv, keepEnv string, opts Options, use func(*Env)) int {
	if os.Getenv(enableEnv) != "1" {
		fmt.Printf("%s: skipped (set %s=1, or run its make target)\n", opts.Suite, enableEnv)
		return 0
	}
	env, err := Setup(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, opts.Suite+":", err)
		return 1
	}
	use(env)
	return env.Finish(m.Run(), keepEnv)
}

// Finish ends a suite whose tests returned code: it fails the suite (code 1) when the audit log
// shows a request of the operator the API server refused (CheckAudit), then tears down.
func (e *Env) Finish(code int, keepEnv string) int {
	audit := e.CheckAudit(e.operatorUser, e.since)
	if audit != nil {
		code = 1
	}
	e.Teardown(code, keepEnv)
	// Last, after the logs Teardown prints: a CI log's tail shows why the suite failed.
	if audit != nil {
		fmt.Fprintln(os.Stderr, e.suite+": FAIL:", audit)
	}
	if code != 0 {
		fmt.Fprintf(os.Stderr, "%s: FAIL (see the --- FAIL lines above, or the audit finding)\n", e.suite)
	}
	return code
}

// Setup reuses a running sandbox or starts one (and then stops it in Teardown).
func Setup(opts Options) (*Env, error) {
	ctrllog.SetLogger(logr.Discard())
	root, err := manager.FindRoot()
	if err != nil {
		return nil, err
	}
	e := &Env{Root: root, suite: opts.Suite, operatorUser: opts.OperatorUser, since: time.Now()}
	if e.operatorUser == "" {
		e.operatorUser = manager.OperatorUsername()
	}
	ctx := context.Background()
	if st, err := manager.LoadState(root); err == nil && isRunning(root) {
		if st.NoOperator != opts.NoOperator {
			return nil, fmt.Errorf("the running sandbox was started %s; the %s suite needs the other mode: stop it (bin/dgdr-sandbox down)", modeOf(st.NoOperator), opts.Suite)
		}
		if st.Recommender != opts.Recommender && (st.Recommender == manager.RecommenderAISimulate || opts.Recommender == manager.RecommenderAISimulate) {
			return nil, fmt.Errorf("the running sandbox's Planner image runs %q; the %s suite needs %q: stop it (bin/dgdr-sandbox down)", st.Recommender, opts.Suite, opts.Recommender)
		}
		if !slices.Equal(st.ImageLayouts, opts.ImageLayouts) {
			return nil, fmt.Errorf("the running sandbox runs images from layouts %v; the %s suite needs %v: stop it (bin/dgdr-sandbox down)", st.ImageLayouts, opts.Suite, opts.ImageLayouts)
		}
	}
	if !isRunning(root) {
		t0 := time.Now()
		if _, err := manager.Up(ctx, manager.Options{Root: root, Out: os.Stdout, NoOperator: opts.NoOperator, Recommender: opts.Recommender, ImageLayouts: opts.ImageLayouts}); err != nil {
			e.DumpLogs()
			_ = manager.Down(root, os.Stdout)
			return nil, fmt.Errorf("starting the sandbox: %w", err)
		}
		e.started = true
		fmt.Printf("%s: sandbox started in %s\n", opts.Suite, time.Since(t0).Round(100*time.Millisecond))
	} else {
		fmt.Printf("%s: reusing the running sandbox\n", opts.Suite)
	}
	e.Kubeconfig = manager.KubeconfigPath(root)
	for _, f := range opts.CRDFiles {
		path := f
		if !filepath.IsAbs(path) {
			path = filepath.Join(root, f)
		}
		if err := manager.InstallCRDFiles(ctx, e.Kubeconfig, path); err != nil {
			return nil, fmt.Errorf("installing %s: %w", f, err)
		}
	}
	rc, err := clientcmd.BuildConfigFromFlags("", e.Kubeconfig)
	if err != nil {
		return nil, err
	}
	rc.QPS, rc.Burst, rc.Timeout = opts.QPS, opts.Burst, opts.Timeout
	e.Config = rc
	// The project's kinds and CustomResourceDefinitions (suites check the installed CRDs).
	s := runtime.NewScheme()
	if err := scheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		return nil, err
	}
	if e.Client, err = client.New(rc, client.Options{Scheme: s}); err != nil {
		return nil, err
	}
	return e, nil
}

func modeOf(noOperator bool) string {
	if noOperator {
		return "without its operator (up --no-operator)"
	}
	return "with its own operator"
}

func isRunning(root string) bool {
	ok, _ := manager.Status(root, io.Discard)
	return ok
}

// Teardown prints the logs when the suite failed and stops the sandbox if Setup started it,
// unless the environment variable keepEnv is "1".
func (e *Env) Teardown(code int, keepEnv string) {
	if code != 0 {
		e.DumpLogs()
	}
	if e.started && os.Getenv(keepEnv) != "1" {
		_ = manager.Down(e.Root, os.Stdout)
	}
}

// DumpLogs prints the end of the operator's and the node agent's logs.
func (e *Env) DumpLogs() {
	for _, name := range append([]string{manager.Operator}, manager.NodeAgents()...) {
		PrintTail(filepath.Join(manager.StateDir(e.Root), "logs", name+".log"), 40)
	}
}

// WaitSearchRunning waits (up to a minute) until the Run's search container runs on the sandbox
// node, i.e. the search is really in progress.
func (e *Env) WaitSearchRunning(t *testing.T, ns, run string) {
	t.Helper()
	WaitFor(t, time.Minute, 250*time.Millisecond, "the search pod of "+run+" to run", func(ctx context.Context) (bool, string, error) {
		var pods corev1.PodList
		if err := e.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{v1beta2.LabelRunName: run}); err != nil {
			return false, "", err
		}
		for _, p := range pods.Items {
			for _, cs := range p.Status.ContainerStatuses {
				if cs.Name == jobcontract.SearchContainer && cs.State.Running != nil {
					return true, "", nil
				}
			}
		}
		return false, fmt.Sprintf("%d pods", len(pods.Items)), nil
	})
}

// Condition, Poll and WaitFor are the tests' one poll helper (internal/testing/poll), named
// here for the sandbox suites.
type Condition = poll.Condition

// Poll is poll.Until.
func Poll(timeout, period time.Duration, cond Condition) error {
	return poll.Until(timeout, period, cond)
}

// WaitFor is poll.WaitFor.
func WaitFor(t testing.TB, timeout, period time.Duration, what string, cond Condition) {
	t.Helper()
	poll.WaitFor(t, timeout, period, what, cond)
}

// PrintTail prints the last n lines of a log file under a header naming it.
func PrintTail(path string, n int) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	fmt.Printf("----- last lines of %s -----\n%s\n", path, strings.Join(lines, "\n"))
}

// Namespace is the tests' one namespace helper (internal/testing/env), named here for the
// sandbox suites.
func Namespace(t testing.TB, c client.Client, prefix string) string {
	t.Helper()
	return testenv.Namespace(t, c, prefix)
}

// UnrealizedNamespace is Namespace opted out of the sandbox's DGD realizer: the test plays the
// Dynamo operator itself (it writes the deployments' status), or needs no deployment to run.
func UnrealizedNamespace(t testing.TB, c client.Client, prefix string) string {
	t.Helper()
	ns := testenv.Namespace(t, c, prefix)
	n := &corev1.Namespace{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: ns}, n); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(n.DeepCopy())
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels[dgdrealizer.LabelRealize] = "false"
	if err := c.Patch(context.Background(), n, patch); err != nil {
		t.Fatal(err)
	}
	return ns
}
