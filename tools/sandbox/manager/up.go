package manager

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/controlplane"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/nodeagent"
)

// Options of Up.
type Options struct {
	Root string
	// SkipBuild reuses bin/ as is (no hack/setup-k8s.sh, no go build).
	SkipBuild bool
	// Out receives progress lines.
	Out io.Writer
	// Timeout bounds the whole start-up (default 5m, builds excluded).
	Timeout time.Duration
	// NoOperator starts the cluster (control plane and node agent) without the operator, its
	// CRDs and its webhook configurations, for installing the operator with its Helm chart.
	NoOperator bool
	// Recommender is what the Planner image runs (default aisim).
	Recommender Recommender
	// ImageLayouts are images the node agent runs from OCI image layouts (make images) rather
	// than from bin/: the chart-install test maps the packaged chart's pinned image this way.
	ImageLayouts []ImageLayout
}

func (o *Options) printf(format string, args ...any) {
	if o.Out != nil {
		fmt.Fprintf(o.Out, format+"\n", args...)
	}
}

// Up builds or reuses the binaries and starts a sandbox in the background. It returns once
// the control plane, the node agent and the operator (with its webhooks) are ready. When a
// sandbox is already running it returns without doing anything (or fails when it runs in the
// other mode: with or without the operator).
func Up(ctx context.Context, o Options) (*State, error) {
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Minute
	}
	if st, err := runningSandbox(o); st != nil || err != nil {
		return st, err
	}
	bin := filepath.Join(o.Root, "bin")
	if err := buildBinaries(ctx, o, bin); err != nil {
		return nil, err
	}
	recommender, err := o.Recommender.Binary(bin)
	if err != nil {
		return nil, err
	}

	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	u, err := newBringUp(o, bin)
	if err != nil {
		return nil, err
	}
	k, err := u.controlPlane(ctx)
	if err != nil {
		return nil, u.fail(err)
	}
	self, err := sandboxBinary(bin)
	if err != nil {
		return nil, u.fail(err)
	}
	python, err := u.nodeAgents(ctx, k, self, recommender)
	if err != nil {
		return nil, u.fail(err)
	}
	if err := u.realizer(ctx, k, self, python); err != nil {
		return nil, u.fail(err)
	}
	if o.NoOperator {
		o.printf("sandbox up without the operator in %s; kubeconfig: %s", time.Since(u.t0).Round(100*time.Millisecond), u.cl.Kubeconfig())
		o.printf("install it with its chart; the node agent runs image %s as bin/dgdr-operator and %s as %s", OperatorImage, PlannerImage, recommender)
		for _, il := range o.ImageLayouts {
			o.printf("the node agent runs image %s from the layout %s", il.Ref, il.Dir)
		}
		return u.st, nil
	}
	if err := u.operator(ctx, k, self); err != nil {
		return nil, u.fail(err)
	}
	o.printf("dgdr-operator ready as %s (feature gate DGDRV1Beta2 on, webhooks on https://127.0.0.1:%d; the Planner image runs %s)", OperatorUsername(), u.st.Ports.Webhook, recommender)
	o.printf("sandbox up in %s; kubeconfig: %s", time.Since(u.t0).Round(100*time.Millisecond), u.cl.Kubeconfig())
	return u.st, nil
}

// runningSandbox returns the sandbox of o.Root when one is running in the mode o asks for, an
// error when it runs in another, and neither when none runs (a stopped one is cleaned up).
func runningSandbox(o Options) (*State, error) {
	st, err := LoadState(o.Root)
	if err != nil {
		return nil, nil
	}
	if !running(st) {
		o.printf("cleaning up a stopped sandbox")
		return nil, Down(o.Root, io.Discard)
	}
	if st.NoOperator != o.NoOperator {
		return nil, fmt.Errorf("a sandbox %s is running; stop it first (dgdr-sandbox down)", st.mode())
	}
	if st.Recommender.orDefault() != o.Recommender.orDefault() {
		return nil, fmt.Errorf("a sandbox whose Planner image runs %s is running; stop it first (dgdr-sandbox down)", st.Recommender.orDefault())
	}
	if !slices.Equal(st.ImageLayouts, o.ImageLayouts) {
		return nil, fmt.Errorf("a sandbox with other image layouts (%v) is running; stop it first (dgdr-sandbox down)", st.ImageLayouts)
	}
	o.printf("sandbox already running (kubeconfig: %s)", KubeconfigPath(o.Root))
	return st, nil
}

// buildBinaries builds (or lets make reuse) the control plane and the product's binaries in
// bin, unless o.SkipBuild, and checks that those the sandbox runs are there.
func buildBinaries(ctx context.Context, o Options, bin string) error {
	if !o.SkipBuild {
		t0 := time.Now()
		o.printf("building or reusing the control plane and helm in bin/ (hack/setup-k8s.sh, WITH_CLUSTER=1 WITH_HELM=1)")
		if err := runVisible(ctx, o, o.Root, []string{"WITH_CLUSTER=1", "WITH_HELM=1"}, filepath.Join(o.Root, "hack", "setup-k8s.sh")); err != nil {
			return fmt.Errorf("hack/setup-k8s.sh: %w", err)
		}
		o.printf("building aisim, dgdr-operator, dgdrctl and dgdr-sandbox into bin/")
		if err := runVisible(ctx, o, o.Root, nil, "go", "build", "-o", bin+"/",
			"./tools/aisim/cmd/aisim", "./cmd/dgdr-operator", "./cmd/dgdrctl", "./tools/sandbox/cmd/dgdr-sandbox"); err != nil {
			return fmt.Errorf("go build: %w", err)
		}
		o.printf("binaries ready in %s", time.Since(t0).Round(100*time.Millisecond))
	}
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "helm", "aisim", "dgdr-operator"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			return fmt.Errorf("bin/%s is missing; run without --skip-build", b)
		}
	}
	return nil
}

// bringUp is one start of a sandbox: its state (saved after every process started), directory
// and control plane.
type bringUp struct {
	o   Options
	bin string
	dir string
	cl  *controlplane.Cluster
	st  *State
	t0  time.Time
	// operatorConfig is the configuration the operator runs with; the chart is rendered from it.
	operatorConfig *v1alpha1.OperatorConfiguration
}

// newBringUp prepares the state directory, ports, PKI and kubeconfig of a new sandbox.
func newBringUp(o Options, bin string) (*bringUp, error) {
	u := &bringUp{o: o, bin: bin, dir: StateDir(o.Root), t0: time.Now()}
	for _, d := range []string{u.dir, filepath.Join(u.dir, "logs"), filepath.Join(u.dir, "pods")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	ports, err := controlplane.FreePorts()
	if err != nil {
		return nil, err
	}
	u.cl = controlplane.New(bin, u.dir, ports)
	if err := u.cl.PKI.Generate(); err != nil {
		return nil, err
	}
	if err := u.cl.WriteKubeconfig(); err != nil {
		return nil, err
	}
	u.st = &State{Root: o.Root, Ports: ports, StartedAt: time.Now(), NoOperator: o.NoOperator, Recommender: o.Recommender.orDefault(), ImageLayouts: o.ImageLayouts}
	u.operatorConfig = operatorConfig(ports, u.cl.PKI.WebhookDir(), u.st.Recommender)
	return u, u.st.save()
}

func (u *bringUp) fail(err error) error {
	u.o.printf("start-up failed: %v (logs in %s)", err, filepath.Join(u.dir, "logs"))
	return err
}

// start starts p in the background and records it in the state.
func (u *bringUp) start(p controlplane.Process) error {
	ps, err := startProcess(u.dir, p)
	if err != nil {
		return err
	}
	u.st.Processes = append(u.st.Processes, *ps)
	return u.st.save()
}

// controlPlane starts etcd, the API server, the controller manager and the scheduler, and
// installs the operator's CRDs and webhook configurations unless o.NoOperator.
func (u *bringUp) controlPlane(ctx context.Context) (*kube, error) {
	cl := u.cl
	if err := u.start(cl.Etcd()); err != nil {
		return nil, err
	}
	if err := cl.WaitEtcd(ctx); err != nil {
		return nil, err
	}
	if err := u.start(cl.APIServer()); err != nil {
		return nil, err
	}
	if err := cl.WaitAPIServer(ctx); err != nil {
		return nil, err
	}
	u.o.printf("kube-apiserver ready at %s (%s)", cl.APIServerURL(), time.Since(u.t0).Round(100*time.Millisecond))
	if err := u.start(cl.ControllerManager()); err != nil {
		return nil, err
	}
	if err := u.start(cl.Scheduler()); err != nil {
		return nil, err
	}
	k, err := newKube(cl.Kubeconfig())
	if err != nil {
		return nil, err
	}
	if err := k.installDynamoPlatform(ctx, u.o.Root); err != nil {
		return nil, err
	}
	if !u.o.NoOperator {
		if err := k.installCRDs(ctx, u.st.Ports.Webhook, cl.PKI.WebhookCACert()); err != nil {
			return nil, err
		}
		if err := u.installChart(ctx, k); err != nil {
			return nil, err
		}
	}
	if err := cl.WaitControllers(ctx); err != nil {
		return nil, err
	}
	u.o.printf("kube-controller-manager and kube-scheduler ready; the Dynamo platform's DynamoGraphDeployment CRD installed")
	return k, nil
}

// installChart renders charts/dgdr-operator with the operator's configuration and applies its
// ServiceAccount, RBAC, fence and webhook configurations (chartKinds), after the CRDs.
func (u *bringUp) installChart(ctx context.Context, k *kube) error {
	if err := k.ensureNamespace(ctx, OperatorNamespace); err != nil {
		return err
	}
	objs, err := renderChart(ctx, u.bin, u.dir, filepath.Join(u.o.Root, "charts", "dgdr-operator"), chartValues(u.operatorConfig))
	if err != nil {
		return err
	}
	n, err := k.installChart(ctx, objs, u.st.Ports.Webhook, u.cl.PKI.WebhookCACert())
	if err != nil {
		return err
	}
	u.o.printf("CRDs installed; the operator's chart applied (%d objects: ServiceAccount %s/%s, its RBAC, fence and webhook configurations)",
		n, OperatorNamespace, OperatorServiceAccount)
	return nil
}

// nodeAgents starts one node agent per Node with every image it maps (the Planner image to
// recommender, the Dynamo runtime images and AIPerf when the upstream venvs exist) and waits for
// the Nodes. It returns the upstream venv's Python, or "" without one.
func (u *bringUp) nodeAgents(ctx context.Context, k *kube, self, recommender string) (string, error) {
	fromLayouts, err := extractImageLayouts(u.dir, u.o.ImageLayouts)
	if err != nil {
		return "", err
	}
	python, err := dynamoPython(u.o.Root, u.dir)
	if err != nil {
		return "", err
	}
	aiperf, err := aiperfLauncher(u.o.Root, u.dir)
	if err != nil {
		return "", err
	}
	for _, n := range Nodes {
		agent := nodeAgentConfig(n, u.bin, u.dir, u.cl, recommender, fromLayouts)
		if python != "" {
			maps.Copy(agent.Images, dynamoRuntimeImages(python))
		}
		if aiperf != "" {
			agent.Images[VerificationImage] = nodeagent.Image{Binary: aiperf, Entrypoint: []string{"python3"}}
		}
		agentCfg := filepath.Join(u.dir, n.AgentName()+".yaml")
		if err := writeConfig(agentCfg, agent); err != nil {
			return "", err
		}
		if err := u.start(controlplane.Process{Name: n.AgentName(), Path: self, Args: []string{"node-agent", "--config", agentCfg}}); err != nil {
			return "", err
		}
	}
	for _, n := range Nodes {
		if err := k.waitNodeReady(ctx, n.Name); err != nil {
			return "", fmt.Errorf("Node %s: %w", n.Name, err)
		}
		if n.GPUs > 0 {
			u.o.printf("node agent ready: Node %s (nvidia.com/gpu: %d, %s, tainted %s)", n.Name, n.GPUs, n.GPUProduct, GPUTaint.ToString())
		} else {
			u.o.printf("node agent ready: Node %s (CPU only: searches, verifications, frontends)", n.Name)
		}
	}
	return python, nil
}

// realizer starts the DGD realizer when the upstream venv's Python exists.
func (u *bringUp) realizer(ctx context.Context, k *kube, self, python string) error {
	if python == "" {
		u.o.printf("no bin/upstream (make upstream): DynamoGraphDeployments are not realized")
		return nil
	}
	if err := k.installRealizerIdentity(ctx); err != nil {
		return err
	}
	kubeconfig := filepath.Join(u.dir, "dgd-realizer.kubeconfig")
	if err := writeServiceAccountKubeconfig(kubeconfig, u.cl.Kubeconfig(), self, RealizerNamespace, RealizerServiceAccount); err != nil {
		return err
	}
	realizerCfg := filepath.Join(u.dir, "dgd-realizer.yaml")
	if err := writeConfig(realizerCfg, realizerConfig(u.o.Root, u.dir, kubeconfig)); err != nil {
		return err
	}
	if err := u.start(realizerProcess(self, realizerCfg)); err != nil {
		return err
	}
	u.o.printf("DGD realizer started: the runtime images run the real Dynamo frontend and mocker of bin/upstream")
	return nil
}

// operator starts the operator and waits until it is ready and its webhooks answer.
func (u *bringUp) operator(ctx context.Context, k *kube, self string) error {
	ports := u.st.Ports
	opCfg := filepath.Join(u.dir, "operator-config.yaml")
	if err := writeConfig(opCfg, u.operatorConfig); err != nil {
		return err
	}
	kubeconfig := OperatorKubeconfigPath(u.o.Root)
	if err := writeServiceAccountKubeconfig(kubeconfig, u.cl.Kubeconfig(), self, OperatorNamespace, OperatorServiceAccount); err != nil {
		return err
	}
	if err := u.start(OperatorProcess(u.bin, opCfg, kubeconfig)); err != nil {
		return err
	}
	if err := controlplane.WaitHTTP(ctx, httpClient(), fmt.Sprintf("http://127.0.0.1:%d/readyz", ports.Health)); err != nil {
		return fmt.Errorf("dgdr-operator: %w", err)
	}
	if err := k.waitWebhooks(ctx); err != nil {
		return fmt.Errorf("dgdr-operator webhooks: %w", err)
	}
	return nil
}

// OperatorProcess is the operator's process (also used to restart it): with kubeconfig, the
// chart ServiceAccount's, and in OperatorNamespace, as the chart's Deployment runs it.
func OperatorProcess(bin, cfg, kubeconfig string) controlplane.Process {
	return controlplane.Process{Name: Operator, Path: filepath.Join(bin, "dgdr-operator"),
		Args: []string{"--config", cfg, "--zap-log-level=info"},
		Env:  []string{"KUBECONFIG=" + kubeconfig, "POD_NAMESPACE=" + OperatorNamespace}}
}

// sandboxBinary is the binary that runs the node agent: bin/dgdr-sandbox when built, else
// this executable.
func sandboxBinary(bin string) (string, error) {
	p := filepath.Join(bin, "dgdr-sandbox")
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	return os.Executable()
}

// runVisible runs a build step with its output on o.Out.
func runVisible(ctx context.Context, o Options, dir string, env []string, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if o.Out != nil {
		cmd.Stdout, cmd.Stderr = o.Out, o.Out
	}
	return cmd.Run()
}

// startProcess starts p detached (own session), output to logs/<name>.log, pid in state.
func startProcess(dir string, p controlplane.Process) (*ProcessState, error) {
	logPath := filepath.Join(dir, "logs", p.Name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return nil, err
	}
	defer devnull.Close()
	cmd := exec.Command(p.Path, p.Args...)
	cmd.Env = append(os.Environ(), p.Env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, f, f
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", p.Name, err)
	}
	pid := cmd.Process.Pid
	// Reap it if it exits while we are still running (foreground mode, tests).
	go func() { _ = cmd.Wait() }()
	if err := os.WriteFile(filepath.Join(dir, p.Name+".pid"), []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		return nil, err
	}
	return &ProcessState{Process: p, PID: pid}, nil
}

func running(st *State) bool {
	if len(st.Processes) == 0 {
		return false
	}
	for _, p := range st.Processes {
		if !Alive(p.PID) {
			return false
		}
	}
	return st.NoOperator || st.find(Operator) != nil
}

// Restart stops one component (SIGTERM, then SIGKILL) and starts it again with the same
// command line; tests use it to restart the operator mid-search.
func Restart(root, name string) error {
	st, err := LoadState(root)
	if err != nil {
		return err
	}
	p := st.find(name)
	if p == nil {
		return fmt.Errorf("no component %q in the sandbox", name)
	}
	stopPID(p.PID, 10*time.Second)
	ps, err := startProcess(StateDir(root), p.Process)
	if err != nil {
		return err
	}
	p.PID = ps.PID
	return st.save()
}

// Down stops every component (reverse start order) and every pod process, then removes the
// state directory.
func Down(root string, out io.Writer) error {
	dir := StateDir(root)
	st, err := LoadState(root)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if st != nil {
		for i := len(st.Processes) - 1; i >= 0; i-- {
			p := st.Processes[i]
			if Alive(p.PID) {
				fmt.Fprintf(out, "stopping %s (pid %d)\n", p.Name, p.PID)
				stopPID(p.PID, 15*time.Second)
			}
		}
	}
	// Pod processes the node agent could not stop (it was killed): their pid files.
	pids, _ := filepath.Glob(filepath.Join(dir, "pods", "*", "pids", "*"))
	for _, f := range pids {
		b, _ := os.ReadFile(f)
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && Alive(pid) {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
	}
	if _, err := os.Stat(dir); err == nil {
		fmt.Fprintf(out, "removing %s\n", dir)
		return os.RemoveAll(dir)
	}
	return nil
}

func stopPID(pid int, grace time.Duration) {
	if !Alive(pid) {
		return
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !Alive(pid) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	for i := 0; i < 50 && Alive(pid); i++ {
		time.Sleep(100 * time.Millisecond)
	}
}

// Status writes one line per component and returns whether all are running.
func Status(root string, out io.Writer) (bool, error) {
	st, err := LoadState(root)
	if errors.Is(err, os.ErrNotExist) {
		fmt.Fprintln(out, "no sandbox (run: dgdr-sandbox up)")
		return false, nil
	}
	if err != nil {
		return false, err
	}
	ok := true
	for _, p := range st.Processes {
		state := "running"
		if !Alive(p.PID) {
			state, ok = "STOPPED", false
		}
		fmt.Fprintf(out, "%-24s pid %-8d %s  log: %s\n", p.Name, p.PID, state, filepath.Join(StateDir(root), "logs", p.Name+".log"))
	}
	fmt.Fprintf(out, "kube-apiserver           https://127.0.0.1:%d\n", st.Ports.APIServer)
	fmt.Fprintf(out, "kubeconfig               %s\n", KubeconfigPath(root))
	fmt.Fprintf(out, "pods (volumes, logs)     %s\n", filepath.Join(StateDir(root), "pods"))
	if st.NoOperator {
		fmt.Fprintf(out, "operator                 not started (up --no-operator: install it with its chart)\n")
	}
	return ok && running(st), nil
}
