//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/test/sandboxtest"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/manager"
)

// TestAPIServerKilledBriefly SIGKILLs kube-apiserver while a search runs and restarts it
// with the same command line a few seconds later. Every other component (etcd, controller
// manager, scheduler, node agent, operator, and the search pod's reporter) must ride through
// the outage: the test restarts none of them but records whether any exited. The search's
// Run must end Succeeded with consistent objects, and a request created after the outage must
// be reconciled too.
func TestAPIServerKilledBriefly(t *testing.T) {
	ns := newNamespace(t, "chaos-apiserver")
	env.CreateRequest(t, ns, fmt.Sprintf(sandboxtest.SlowRequest, "outage"))
	runName := waitRunOf(t, ns, "outage")
	waitSearchRunning(t, ns, runName)

	pids := map[string]int{}
	for _, c := range append([]string{manager.Etcd, manager.ControllerManager, manager.Scheduler, manager.Operator}, manager.NodeAgents()...) {
		pid, err := manager.PID(root, c)
		if err != nil {
			t.Fatal(err)
		}
		pids[c] = pid
	}
	apiPID, err := manager.PID(root, manager.APIServer)
	if err != nil {
		t.Fatal(err)
	}
	// A restarted API server answers before its authorizer's informers have synced (its /readyz
	// says so): until then it refuses requests RBAC would allow, as any cluster's does.
	endOutage := sandboxtest.ExpectDenialsFor()
	if err := syscall.Kill(apiPID, syscall.SIGKILL); err != nil {
		t.Fatalf("SIGKILL kube-apiserver pid %d: %v", apiPID, err)
	}
	for i := 0; i < 100 && manager.Alive(apiPID); i++ {
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("kube-apiserver pid %d SIGKILLed", apiPID)
	time.Sleep(3 * time.Second) // the outage
	if err := manager.Restart(root, manager.APIServer); err != nil {
		t.Fatalf("restarting kube-apiserver: %v", err)
	}
	newPID, _ := manager.PID(root, manager.APIServer)
	t.Logf("kube-apiserver restarted as pid %d", newPID)
	waitFor(t, 2*time.Minute, "kube-apiserver to answer", func(ctx context.Context) (bool, string, error) {
		var l corev1.NamespaceList
		err := k8s.List(ctx, &l, client.Limit(1))
		return err == nil, "", err
	})
	discovery, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, "kube-apiserver to be ready", func(ctx context.Context) (bool, string, error) {
		body, err := discovery.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil, string(body), nil
	})
	endOutage()
	for c, pid := range pids {
		if !manager.Alive(pid) {
			// Documented in docs/develop/chaos.md; a component that exits is a finding.
			t.Errorf("%s (pid %d) exited during the API server outage", c, pid)
		}
	}
	waitOperatorReady(t, 2*time.Minute)
	run := env.WaitRunDone(t, ns, runName, 3*time.Minute)
	if reason, msg, _ := sandboxtest.Completed(run); reason != v1beta2.ReasonSucceeded {
		t.Fatalf("Run %s ended %s after the outage: %s", runName, reason, msg)
	}
	env.CreateRequest(t, ns, fmt.Sprintf(sandboxtest.TinyRequest, "after"))
	after := waitRunOf(t, ns, "after")
	env.WaitRunDone(t, ns, after, 2*time.Minute)
	waitQuiet(t, time.Minute, ns)
	for r, n := range requireInvariants(t, ns) {
		if r != v1beta2.ReasonSucceeded {
			t.Errorf("%d Runs ended %s", n, r)
		}
	}
}

// waitSearchRunning waits until the search container of the Run's pod runs.
func waitSearchRunning(t *testing.T, ns, run string) { t.Helper(); env.WaitSearchRunning(t, ns, run) }
