//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/config"
	"github.com/dgdr-operator/dgdr-operator/test/sandboxtest"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/manager"
)

const replicaB = "dgdr-operator-b"

// TestLeaderElectionTakeover runs two operator replicas with leader election on and short
// lease durations: replica B (extra ports) starts first and leads; replica A (the sandbox's
// operator, whose webhook port the API server calls) is restarted with leader election and
// stands by. B is frozen with SIGSTOP so that its lease expires without being released. A must
// take over (the Lease's holder changes), and a request created afterwards must be reconciled
// to exactly one Run, which succeeds. When B is resumed it must notice that it lost the lease
// and exit, without creating anything. Afterwards the sandbox's operator is restored to its
// original configuration.
func TestLeaderElectionTakeover(t *testing.T) {
	// Short enough for a quick takeover, long enough that a leader on a loaded 2-core machine
	// renews in time (3 s was missed at load average 15).
	le := &manager.LeaderElection{Namespace: manager.OperatorNamespace, LeaseDuration: 12 * time.Second, RenewDeadline: 8 * time.Second, RetryPeriod: 2 * time.Second}
	original, err := manager.Component(root, manager.Operator)
	if err != nil {
		t.Fatal(err)
	}
	dir := manager.StateDir(root)
	portsA, err := manager.SandboxOperatorPorts(root)
	if err != nil {
		t.Fatal(err)
	}
	portsB, err := manager.FreeOperatorPorts()
	if err != nil {
		t.Fatal(err)
	}
	cfgA, cfgB := filepath.Join(dir, "operator-a-le.yaml"), filepath.Join(dir, "operator-b-le.yaml")
	if err := manager.WriteOperatorConfig(root, cfgA, portsA, le); err != nil {
		t.Fatal(err)
	}
	if err := manager.WriteOperatorConfig(root, cfgB, portsB, le); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := manager.RemoveComponent(root, replicaB); err != nil {
			t.Logf("removing %s: %v", replicaB, err)
		}
		if _, err := manager.StartComponent(root, original); err != nil {
			t.Errorf("restoring the operator: %v", err)
		}
		if err := waitForErr(time.Minute, poll, env.OperatorAdmits); err != nil {
			t.Errorf("the restored operator: %v", err)
		}
	})
	ns := newNamespace(t, "chaos-leader")

	// B starts first and becomes the leader (the sandbox's operator, still without leader
	// election, is replaced by A right after; both only reconcile idempotently meanwhile). A
	// Lease left by an earlier run names a dead holder: B must replace it.
	stale, _ := leaseHolder(context.Background(), le.Namespace)
	pidB, err := manager.StartComponent(root, manager.OperatorReplica(root, replicaB, cfgB))
	if err != nil {
		t.Fatal(err)
	}
	holderB := ""
	waitFor(t, time.Minute, "replica B to acquire the Lease", func(ctx context.Context) (bool, string, error) {
		h, err := leaseHolder(ctx, le.Namespace)
		holderB = h
		return err == nil && h != "" && h != stale, "holder " + h, err
	})
	t.Logf("replica B (pid %d) holds the Lease as %s", pidB, holderB)
	pidA, err := manager.StartComponent(root, manager.OperatorReplica(root, manager.Operator, cfgA))
	if err != nil {
		t.Fatal(err)
	}
	waitOperatorReady(t, time.Minute)
	t.Logf("replica A (pid %d) serves the webhooks and stands by", pidA)

	// While B leads, a request is reconciled by B.
	env.CreateRequest(t, ns, fmt.Sprintf(sandboxtest.TinyRequest, "before"))
	env.WaitRunDone(t, ns, waitRunOf(t, ns, "before"), 2*time.Minute)
	if h, err := leaseHolder(context.Background(), le.Namespace); err != nil || h != holderB {
		t.Fatalf("Lease holder %q (%v), want B %q while B runs", h, err, holderB)
	}

	// Freeze B: its lease expires; A takes over.
	if err := syscall.Kill(pidB, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	frozen := true
	defer func() {
		if frozen {
			_ = syscall.Kill(pidB, syscall.SIGCONT)
		}
	}()
	t.Logf("replica B (pid %d) frozen with SIGSTOP", pidB)
	holderA := ""
	waitFor(t, time.Minute, "replica A to take over the Lease", func(ctx context.Context) (bool, string, error) {
		h, err := leaseHolder(ctx, le.Namespace)
		holderA = h
		return err == nil && h != "" && h != holderB, "holder " + h, err
	})
	t.Logf("replica A took over the Lease as %s", holderA)
	env.CreateRequest(t, ns, fmt.Sprintf(sandboxtest.TinyRequest, "after"))
	run := env.WaitRunDone(t, ns, waitRunOf(t, ns, "after"), 2*time.Minute)
	if reason, msg, _ := sandboxtest.Completed(run); reason != v1beta2.ReasonSucceeded {
		t.Fatalf("Run %s ended %s: %s", run.Name, reason, msg)
	}

	// Resume B: it must see that it lost the lease and exit.
	if err := syscall.Kill(pidB, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	frozen = false
	waitFor(t, time.Minute, "replica B to exit after losing the Lease", func(context.Context) (bool, string, error) {
		return !manager.Alive(pidB), "", nil
	})
	t.Logf("replica B exited after it was resumed")
	if h, err := leaseHolder(context.Background(), le.Namespace); err != nil || h != holderA {
		t.Fatalf("Lease holder %q (%v), want A %q", h, err, holderA)
	}
	waitQuiet(t, time.Minute, ns)
	for r, n := range requireInvariants(t, ns) {
		if r != v1beta2.ReasonSucceeded {
			t.Errorf("%d Runs ended %s", n, r)
		}
	}
}

func leaseHolder(ctx context.Context, ns string) (string, error) {
	var l coordinationv1.Lease
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: config.DefaultLeaseName}, &l); err != nil {
		return "", err
	}
	if l.Spec.HolderIdentity == nil {
		return "", nil
	}
	return *l.Spec.HolderIdentity, nil
}
