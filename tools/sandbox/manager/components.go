package manager

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/controlplane"
)

// This file holds what fault-injection tests (test/chaos) need beyond up/down/restart: the
// recorded pid of a component, extra components (a second operator replica) that status and
// down know about, and operator configurations with other ports and leader election on.

// PID is the recorded pid of a running sandbox component.
func PID(root, name string) (int, error) {
	st, err := LoadState(root)
	if err != nil {
		return 0, err
	}
	p := st.find(name)
	if p == nil {
		return 0, fmt.Errorf("no component %q in the sandbox", name)
	}
	return p.PID, nil
}

// Component returns the recorded command line of a component.
func Component(root, name string) (controlplane.Process, error) {
	st, err := LoadState(root)
	if err != nil {
		return controlplane.Process{}, err
	}
	p := st.find(name)
	if p == nil {
		return controlplane.Process{}, fmt.Errorf("no component %q in the sandbox", name)
	}
	return p.Process, nil
}

// StartComponent starts p and records it in state.json, so that status, restart and down
// handle it like the components up started. A component of the same name is stopped first
// and replaced (this is how a test restarts the operator with another configuration).
func StartComponent(root string, p controlplane.Process) (int, error) {
	st, err := LoadState(root)
	if err != nil {
		return 0, err
	}
	if old := st.find(p.Name); old != nil {
		stopPID(old.PID, 10*time.Second)
	}
	ps, err := startProcess(StateDir(root), p)
	if err != nil {
		return 0, err
	}
	if old := st.find(p.Name); old != nil {
		*old = *ps
	} else {
		st.Processes = append(st.Processes, *ps)
	}
	return ps.PID, st.save()
}

// RemoveComponent stops a component (SIGCONT first, in case a test stopped it with SIGSTOP,
// then SIGTERM and SIGKILL) and removes it from state.json.
func RemoveComponent(root, name string) error {
	st, err := LoadState(root)
	if err != nil {
		return err
	}
	for i, p := range st.Processes {
		if p.Name != name {
			continue
		}
		if Alive(p.PID) {
			_ = syscall.Kill(p.PID, syscall.SIGCONT)
		}
		stopPID(p.PID, 10*time.Second)
		st.Processes = append(st.Processes[:i], st.Processes[i+1:]...)
		_ = os.Remove(filepath.Join(StateDir(root), name+".pid"))
		return st.save()
	}
	return fmt.Errorf("no component %q in the sandbox", name)
}

// OperatorPorts are the loopback ports one operator replica listens on.
type OperatorPorts struct {
	Metrics, Health, Webhook int
}

// FreeOperatorPorts picks free loopback ports for another operator replica.
func FreeOperatorPorts() (OperatorPorts, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	var p OperatorPorts
	for _, f := range []*int{&p.Metrics, &p.Health, &p.Webhook} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return p, err
		}
		ls = append(ls, l)
		*f = l.Addr().(*net.TCPAddr).Port
	}
	return p, nil
}

// SandboxOperatorPorts are the ports of the operator up started (the webhook configurations
// point at its webhook port).
func SandboxOperatorPorts(root string) (OperatorPorts, error) {
	st, err := LoadState(root)
	if err != nil {
		return OperatorPorts{}, err
	}
	return OperatorPorts{Metrics: st.Ports.Metrics, Health: st.Ports.Health, Webhook: st.Ports.Webhook}, nil
}

// LeaderElection turns leader election on in a generated operator configuration.
type LeaderElection struct {
	// Namespace of the Lease (required outside a cluster).
	Namespace                                 string
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// WriteOperatorConfig writes the sandbox's operator configuration with the given ports, and
// leader election when le is not nil, to path.
func WriteOperatorConfig(root, path string, ports OperatorPorts, le *LeaderElection) error {
	return WriteOperatorConfigWith(root, path, ports, le, nil)
}

// WriteOperatorConfigWith is WriteOperatorConfig with edit applied to the configuration before
// it is written.
func WriteOperatorConfigWith(root, path string, ports OperatorPorts, le *LeaderElection, edit func(*v1alpha1.OperatorConfiguration)) error {
	cfg, err := OperatorConfigWith(root, ports, le, edit)
	if err != nil {
		return err
	}
	return writeConfig(path, cfg)
}

// ReconfigureOperator writes the sandbox's operator configuration with edit applied to path and
// applies the operator's chart with its values (ApplyChart), as an admin who changes the
// operator's values upgrades its release (the attack suite runs the operator with another Planner
// image, which the fence must name). Restart the operator with path afterwards; edit nil
// restores the sandbox's own values.
func ReconfigureOperator(ctx context.Context, root, path string, ports OperatorPorts, edit func(*v1alpha1.OperatorConfiguration)) error {
	cfg, err := OperatorConfigWith(root, ports, nil, edit)
	if err != nil {
		return err
	}
	if err := writeConfig(path, cfg); err != nil {
		return err
	}
	return ApplyChart(ctx, root, cfg)
}

// OperatorConfigWith is the sandbox's operator configuration with the given ports, leader
// election when le is not nil, and edit applied.
func OperatorConfigWith(root string, ports OperatorPorts, le *LeaderElection, edit func(*v1alpha1.OperatorConfiguration)) (*v1alpha1.OperatorConfiguration, error) {
	if le != nil && (le.Namespace == "" || le.LeaseDuration <= 0 || le.RenewDeadline <= 0 || le.RetryPeriod <= 0) {
		return nil, errors.New("leader election needs a namespace and positive durations")
	}
	certDir := controlplane.New(filepath.Join(root, "bin"), StateDir(root), controlplane.Ports{}).PKI.WebhookDir()
	var recommender Recommender
	if st, err := LoadState(root); err == nil {
		recommender = st.Recommender
	}
	cfg := operatorConfigFor(ports, certDir, le, recommender)
	if edit != nil {
		edit(cfg)
	}
	return cfg, nil
}

// OperatorReplica is an operator process named name with configuration cfg, using the
// sandbox's binary and the operator's kubeconfig (the chart ServiceAccount's, as up runs it:
// the fence and the ownership policy know the operator by it; pass it to StartComponent).
func OperatorReplica(root, name, cfg string) controlplane.Process {
	p := OperatorProcess(filepath.Join(root, "bin"), cfg, OperatorKubeconfigPath(root))
	p.Name = name
	return p
}

// OperatorConfigPath is the configuration up writes for the operator.
func OperatorConfigPath(root string) string {
	return filepath.Join(StateDir(root), "operator-config.yaml")
}
