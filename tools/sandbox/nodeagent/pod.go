package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// Kubelet limits for termination messages.
const (
	maxTerminationMessage = 4096
	fallbackLogLines      = 80
	fallbackLogBytes      = 2048
	// volumeResyncPeriod is how often ConfigMap and Secret volumes are refreshed (the kubelet
	// takes up to about a minute; the sandbox is quicker so tests do not wait).
	volumeResyncPeriod = 2 * time.Second
	// maxGrace caps every grace period the agent waits before SIGKILL, so tests do not wait.
	maxGrace = 10 * time.Second
)

// minSidecarGrace is the least time a sidecar gets between its SIGTERM and SIGKILL, also when
// the other containers used up the pod's grace (the kubelet's minimumGracePeriodInSeconds).
const minSidecarGrace = 2 * time.Second

// Restart backoff of sidecars (restartable init containers): the kubelet starts at 10 s and
// doubles up to 5 min; the sandbox is quicker so tests do not wait.
var (
	sidecarBackoff    = time.Second
	maxSidecarBackoff = 10 * time.Second
)

// containerKind is how the agent runs a container.
type containerKind int

const (
	// kindInit runs to completion before the next container starts.
	kindInit containerKind = iota
	// kindSidecar is an init container with restartPolicy Always: started in the init
	// sequence without waiting for it, restarted whenever it exits while the main containers
	// run, and stopped once they have all ended.
	kindSidecar
	// kindMain is a container of spec.containers.
	kindMain
)

// podRunner runs one pod: it prepares its volumes, starts its containers as processes and
// publishes its status until every container has exited.
type podRunner struct {
	a         *Agent
	uid       types.UID
	namespace string
	name      string
	dir       string

	mu         sync.Mutex
	pubMu      sync.Mutex // serializes publish; the snapshot is taken inside it
	pod        *corev1.Pod
	status     corev1.PodStatus
	procs      map[string]*exec.Cmd // the running processes, by container
	killed     bool
	killReason string
	killMsg    string
	isDeleted  bool
	killCh     chan struct{}
	grace      time.Duration
	// killDeadline is when kill SIGKILLs the containers it stopped (zero until killed).
	killDeadline time.Time
	// initialized is set once every init container has completed (sidecars started).
	initialized bool
	// Sidecars: their names, the channel closed when they must stop (the main containers
	// ended, or the pod is finishing) and their restart loops.
	sidecars        map[string]bool
	sidecarStop     chan struct{}
	stopSidecarOnce sync.Once
	sidecarLoops    sync.WaitGroup
	// mounts maps container mount paths to host directories over all containers (set by
	// tryPrepare; used to rewrite paths inside ConfigMap volume files).
	mounts []mapping
}

func newPodRunner(a *Agent, pod *corev1.Pod) *podRunner {
	uid := string(pod.UID)
	if len(uid) > 8 {
		uid = uid[:8]
	}
	return &podRunner{
		a: a, uid: pod.UID, namespace: pod.Namespace, name: pod.Name, pod: pod.DeepCopy(),
		dir:         filepath.Join(a.cfg.StateDir, pod.Namespace+"_"+pod.Name+"_"+uid),
		procs:       map[string]*exec.Cmd{},
		killCh:      make(chan struct{}),
		sidecars:    map[string]bool{},
		sidecarStop: make(chan struct{}),
	}
}

// observe records the latest pod object and starts the kill on deletion.
func (r *podRunner) observe(pod *corev1.Pod) {
	r.mu.Lock()
	r.pod = pod.DeepCopy()
	r.mu.Unlock()
	if pod.DeletionTimestamp != nil {
		grace := 30 * time.Second
		if pod.DeletionGracePeriodSeconds != nil {
			grace = time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
		}
		r.mu.Lock()
		r.isDeleted = true
		r.mu.Unlock()
		r.kill("Killing", "the pod is being deleted", grace)
	}
}

func (r *podRunner) deleted() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.isDeleted
}

// kill asks every process but the sidecars to stop: SIGTERM, then SIGKILL after grace. Sidecars
// get their SIGTERM once the other containers have stopped (stopSidecars), with what is left of
// the grace, as the kubelet orders it.
func (r *podRunner) kill(reason, msg string, grace time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.killed {
		return
	}
	r.killed, r.killReason, r.killMsg, r.grace = true, reason, msg, grace
	grace = min(grace, maxGrace)
	r.killDeadline = time.Now().Add(grace)
	close(r.killCh)
	for name, c := range r.procs {
		if !r.sidecars[name] {
			signalGroup(c, syscall.SIGTERM)
		}
	}
	go func() {
		time.Sleep(grace)
		r.mu.Lock()
		defer r.mu.Unlock()
		for name, c := range r.procs {
			if !r.sidecars[name] {
				signalGroup(c, syscall.SIGKILL)
			}
		}
	}()
}

// signalGroup signals the process group of a running container (r.procs, with r.mu held).
func signalGroup(c *exec.Cmd, sig syscall.Signal) {
	if c.Process == nil {
		return
	}
	_ = syscall.Kill(-c.Process.Pid, sig)
}

func (r *podRunner) isKilled() (bool, string, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.killed, r.killReason, r.killMsg
}

func (r *podRunner) logf(format string, args ...any) {
	r.a.log.Printf("pod %s/%s: "+format, append([]any{r.namespace, r.name}, args...)...)
}

// run is the whole life of the pod on this node.
func (r *podRunner) run(ctx context.Context) {
	pod := r.snapshot()
	now := metav1.Now()
	// Every pod shares the node's network (processes on the host), so its IP is the node's.
	ip := r.a.cfg.NodeIP
	r.status = corev1.PodStatus{
		Phase: corev1.PodPending, HostIP: ip, PodIP: ip,
		HostIPs: []corev1.HostIP{{IP: ip}}, PodIPs: []corev1.PodIP{{IP: ip}},
		StartTime: &now, QOSClass: pod.Status.QOSClass,
	}
	if pod.Status.StartTime != nil && anyStarted(pod) {
		// Started by a previous agent whose processes are gone.
		r.finishUnstarted(ctx, pod, "NodeAgentRestarted", "the sandbox node agent restarted while this pod was running")
		return
	}
	for _, c := range pod.Spec.Containers {
		r.status.ContainerStatuses = append(r.status.ContainerStatuses, waitingStatus(c, "ContainerCreating", ""))
	}
	r.setConditions(false, false)
	r.publish(ctx)

	if pod.Spec.ActiveDeadlineSeconds != nil {
		d := time.Duration(*pod.Spec.ActiveDeadlineSeconds) * time.Second
		t := time.AfterFunc(d, func() {
			r.kill("DeadlineExceeded", fmt.Sprintf("Pod was active on the node longer than the specified deadline (%ds)", *pod.Spec.ActiveDeadlineSeconds), 0)
		})
		defer t.Stop()
	}

	specs, ok := r.prepare(ctx, pod)
	if !ok {
		_, reason, msg := r.isKilled()
		r.finishUnstarted(ctx, pod, reason, msg)
		return
	}
	resyncCtx, stopResync := context.WithCancel(ctx)
	defer stopResync()
	go r.resync(resyncCtx, pod, volumeResyncPeriod)
	r.execute(ctx, pod, specs)
}

// execute runs the pod's resolved containers as the kubelet does: the init containers one after
// the other, a sidecar (restartPolicy Always) started without waiting for it; then the main
// containers at once. The pod ends when every main container has ended: its sidecars are then
// stopped (SIGTERM, SIGKILL after the pod's termination grace period) and not restarted, and
// the phase follows the main containers alone.
func (r *podRunner) execute(ctx context.Context, pod *corev1.Pod, specs *podSpecs) {
	for _, s := range specs.init {
		if s.sidecar {
			r.startSidecar(ctx, s)
			continue
		}
		code, _ := r.runOne(ctx, s, kindInit)
		if code != 0 {
			r.stopSidecars(pod)
			r.finishUnstarted(ctx, pod, "InitContainerFailed", fmt.Sprintf("init container %s exited %d", s.name, code))
			return
		}
	}
	if len(specs.init) > 0 {
		if err := r.rewriteHandoffs(pod); err != nil {
			r.stopSidecars(pod)
			r.finishUnstarted(ctx, pod, "InitContainerFailed", "rewriting the paths in the files of the init containers: "+err.Error())
			return
		}
	}
	r.mu.Lock()
	r.initialized = true
	r.mu.Unlock()
	r.setConditions(true, false)
	var wg sync.WaitGroup
	for _, s := range specs.main {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = r.runOne(ctx, s, kindMain) // runOne records the termination in the pod status
		}()
	}
	wg.Wait()
	r.stopSidecars(pod)

	r.mu.Lock()
	phase := corev1.PodSucceeded
	for _, cs := range r.status.ContainerStatuses {
		if cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 {
			phase = corev1.PodFailed
		}
	}
	if r.killed && (r.killReason == "DeadlineExceeded" || r.isDeleted || r.killReason == "NodeShutdown") {
		phase = corev1.PodFailed
		r.status.Reason, r.status.Message = r.killReason, r.killMsg
	}
	r.status.Phase = phase
	r.mu.Unlock()
	r.setConditions(true, false)
	r.publish(ctx)
	r.logf("finished: %s", phase)
}

// startSidecar runs a sidecar in its own goroutine, restarting it whenever it exits until
// stopSidecars.
func (r *podRunner) startSidecar(ctx context.Context, s *containerSpec) {
	r.mu.Lock()
	r.sidecars[s.name] = true
	r.mu.Unlock()
	started := make(chan struct{})
	r.sidecarLoops.Add(1)
	go func() {
		defer r.sidecarLoops.Done()
		r.sidecarLoop(ctx, s, started)
	}()
	// The next container starts once this one has started, as with the kubelet.
	select {
	case <-started:
	case <-r.sidecarStop:
	}
}

// sidecarLoop runs s, and again after a backoff each time it exits, until the sidecars stop or
// the pod is killed. started is closed once the first process has started (or could not).
func (r *podRunner) sidecarLoop(ctx context.Context, s *containerSpec, started chan struct{}) {
	backoff := sidecarBackoff
	var once sync.Once
	for {
		_, _ = r.runOneNotifying(ctx, s, kindSidecar, func() { once.Do(func() { close(started) }) })
		once.Do(func() { close(started) })
		if r.sidecarsStopping() {
			return
		}
		last := r.containerStatus(s.name, true)
		r.logf("sidecar %s ended; restarting it in %s", s.name, backoff)
		r.setContainer(corev1.ContainerStatus{Name: s.name, Image: s.image, ImageID: s.image, Started: ptr.To(false),
			RestartCount: last.RestartCount + 1, LastTerminationState: last.State,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
				Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", backoff, s.name, r.name)}}}, true)
		r.publish(ctx)
		select {
		case <-time.After(backoff):
		case <-r.sidecarStop:
			// Stopped while waiting: the container stays as it ended.
			r.setContainer(last, true)
			return
		case <-ctx.Done():
			return
		}
		backoff = min(2*backoff, maxSidecarBackoff)
	}
}

// sidecarsStopping tells whether the sidecars must stop (and not be restarted).
func (r *podRunner) sidecarsStopping() bool {
	select {
	case <-r.sidecarStop:
		return true
	case <-r.killCh:
		return true
	default:
		return false
	}
}

// stopSidecars stops every sidecar: SIGTERM, SIGKILL after the pod's termination grace period
// (when the pod is killed, what is left of the kill's grace, at least minSidecarGrace), and
// waits for their loops to end.
func (r *podRunner) stopSidecars(pod *corev1.Pod) {
	r.stopSidecarOnce.Do(func() {
		grace := 30 * time.Second
		if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
			grace = time.Duration(*g) * time.Second
		}
		r.mu.Lock()
		if r.killed {
			grace = max(time.Until(r.killDeadline), minSidecarGrace)
		}
		close(r.sidecarStop)
		for name := range r.sidecars {
			if c := r.procs[name]; c != nil {
				signalGroup(c, syscall.SIGTERM)
			}
		}
		r.mu.Unlock()
		kill := time.AfterFunc(min(grace, maxGrace), func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			for name := range r.sidecars {
				if c := r.procs[name]; c != nil {
					signalGroup(c, syscall.SIGKILL)
				}
			}
		})
		defer kill.Stop()
		r.sidecarLoops.Wait()
	})
}

// containerStatus returns a copy of the named container's status.
func (r *podRunner) containerStatus(name string, init bool) corev1.ContainerStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	list := r.status.ContainerStatuses
	if init {
		list = r.status.InitContainerStatuses
	}
	for _, cs := range list {
		if cs.Name == name {
			return *cs.DeepCopy()
		}
	}
	return corev1.ContainerStatus{Name: name}
}

func anyStarted(pod *corev1.Pod) bool {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Running != nil || cs.State.Terminated != nil {
			return true
		}
	}
	return false
}

func (r *podRunner) snapshot() *corev1.Pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pod.DeepCopy()
}

// finishUnstarted fails a pod whose containers never ran (or can no longer be tracked).
func (r *podRunner) finishUnstarted(ctx context.Context, pod *corev1.Pod, reason, msg string) {
	now := metav1.Now()
	r.mu.Lock()
	r.status.Phase = corev1.PodFailed
	r.status.Reason, r.status.Message = reason, msg
	var out []corev1.ContainerStatus
	for _, c := range pod.Spec.Containers {
		cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: c.Image}
		for _, old := range r.status.ContainerStatuses {
			if old.Name == c.Name && old.State.Terminated != nil {
				cs = old
			}
		}
		if cs.State.Terminated == nil {
			cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 137, Reason: "ContainerStatusUnknown", Message: msg, StartedAt: now, FinishedAt: now,
			}}
		}
		out = append(out, cs)
	}
	r.status.ContainerStatuses = out
	r.mu.Unlock()
	r.setConditions(false, false)
	r.publish(ctx)
	r.logf("failed before its containers ran: %s: %s", reason, msg)
}

func waitingStatus(c corev1.Container, reason, msg string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: c.Image,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}
}

// setContainer replaces a container's status.
func (r *podRunner) setContainer(cs corev1.ContainerStatus, init bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	list := &r.status.ContainerStatuses
	if init {
		list = &r.status.InitContainerStatuses
	}
	for i := range *list {
		if (*list)[i].Name == cs.Name {
			(*list)[i] = cs
			return
		}
	}
	*list = append(*list, cs)
}

// setConditions recomputes the pod conditions from the container statuses.
func (r *podRunner) setConditions(initialized, _ bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// Ready: every container runs and passes its readiness probe (if it has one).
	ready := len(r.status.ContainerStatuses) > 0
	for _, cs := range r.status.ContainerStatuses {
		if cs.State.Running == nil || !cs.Ready {
			ready = false
		}
	}
	now := metav1.Now()
	b := func(v bool) corev1.ConditionStatus {
		if v {
			return corev1.ConditionTrue
		}
		return corev1.ConditionFalse
	}
	sandboxReady := r.status.Phase != corev1.PodSucceeded && r.status.Phase != corev1.PodFailed
	conds := []corev1.PodCondition{
		{Type: corev1.PodReadyToStartContainers, Status: b(sandboxReady)},
		{Type: corev1.PodInitialized, Status: b(initialized || r.status.Phase == corev1.PodSucceeded)},
		{Type: corev1.PodReady, Status: b(ready)},
		{Type: corev1.ContainersReady, Status: b(ready)},
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
	}
	for i := range conds {
		conds[i].LastTransitionTime = now
		for _, old := range r.status.Conditions {
			if old.Type == conds[i].Type && old.Status == conds[i].Status {
				conds[i].LastTransitionTime = old.LastTransitionTime
			}
		}
	}
	r.status.Conditions = conds
}

// publish writes the runner's status to the pod (retrying conflicts).
func (r *podRunner) publish(ctx context.Context) {
	// Concurrent publishes must not overwrite a newer status with an older snapshot.
	r.pubMu.Lock()
	defer r.pubMu.Unlock()
	r.mu.Lock()
	st := *r.status.DeepCopy()
	r.mu.Unlock()
	pods := r.a.cs.CoreV1().Pods(r.namespace)
	err := retry.OnError(retry.DefaultBackoff, func(err error) bool {
		return apierrors.IsConflict(err) || apierrors.IsServerTimeout(err) || apierrors.IsTooManyRequests(err)
	}, func() error {
		pod, err := pods.Get(ctx, r.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if pod.UID != r.uid {
			return nil
		}
		st.QOSClass = pod.Status.QOSClass
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodScheduled || c.Type == corev1.DisruptionTarget {
				replaceCondition(&st.Conditions, c)
			}
		}
		pod.Status = st
		_, err = pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
		r.logf("publishing status: %v", err)
	}
}

func replaceCondition(conds *[]corev1.PodCondition, c corev1.PodCondition) {
	for i := range *conds {
		if (*conds)[i].Type == c.Type {
			(*conds)[i] = c
			return
		}
	}
	*conds = append(*conds, c)
}

// runOne starts one container process, waits for it and records its termination.
func (r *podRunner) runOne(ctx context.Context, s *containerSpec, kind containerKind) (int, error) {
	return r.runOneNotifying(ctx, s, kind, func() {})
}

// runOneNotifying is runOne calling started once the process started (not when it could not).
func (r *podRunner) runOneNotifying(ctx context.Context, s *containerSpec, kind containerKind, started func()) (int, error) {
	init := kind != kindMain
	if killed, _, _ := r.isKilled(); killed {
		return 137, errors.New("killed before start")
	}
	logFile, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return r.startFailed(ctx, s, init, err)
	}
	defer logFile.Close()
	cmd := exec.Command(s.path, s.args...)
	cmd.Args[0] = s.argv0
	cmd.Env = s.env
	cmd.Dir = s.workDir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	r.mu.Lock()
	if r.killed || (kind == kindSidecar && r.sidecarsStoppingLocked()) {
		r.mu.Unlock()
		return 137, errors.New("killed before start")
	}
	err = cmd.Start()
	if err == nil {
		r.procs[s.name] = cmd
	}
	r.mu.Unlock()
	if err != nil {
		return r.startFailed(ctx, s, init, err)
	}
	_ = os.WriteFile(filepath.Join(r.dir, "pids", s.name), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
	startedAt := metav1.Now()
	r.logf("container %s started (pid %d): %s %s", s.name, cmd.Process.Pid, s.argv0, strings.Join(s.args, " "))
	// A restarted sidecar keeps its restart count and last state, as with the kubelet.
	prev := r.containerStatus(s.name, init)
	// A sidecar without a readiness probe is ready once started; an init container never is.
	ready := (kind == kindMain && s.readiness == nil) || kind == kindSidecar
	r.setContainer(corev1.ContainerStatus{Name: s.name, Image: s.image, ImageID: s.image, Ready: ready, Started: ptr.To(true),
		RestartCount: prev.RestartCount, LastTerminationState: prev.LastTerminationState,
		ContainerID: "process://" + strconv.Itoa(cmd.Process.Pid),
		State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: startedAt}}}, init)
	if kind == kindMain {
		r.mu.Lock()
		r.status.Phase = corev1.PodRunning
		r.mu.Unlock()
	}
	r.setConditions(r.isInitialized(), false)
	r.publish(ctx)
	started()

	var oom atomic.Bool
	memDone := make(chan struct{})
	go watchMemory(cmd.Process.Pid, s.memoryLimit, memDone, &oom)

	probeCtx, stopProbe := context.WithCancel(ctx)
	probed := make(chan struct{})
	if s.readiness != nil && !init {
		go func() {
			defer close(probed)
			s.readiness.run(probeCtx, func(ready bool, failure string) {
				if failure != "" {
					r.logf("container %s readiness probe failed: %s", s.name, failure)
				}
				if r.setReady(s.name, ready) {
					r.setConditions(true, false)
					r.publish(ctx)
				}
			})
		}()
	} else {
		close(probed)
	}
	werr := cmd.Wait()
	r.mu.Lock()
	delete(r.procs, s.name) // r.procs holds running processes only
	r.mu.Unlock()
	close(memDone)
	stopProbe()
	<-probed
	code := exitCode(cmd, werr)
	_ = os.Remove(filepath.Join(r.dir, "pids", s.name))
	reason := "Completed"
	if code != 0 {
		reason = "Error"
	}
	if oom.Load() {
		code, reason = 137, "OOMKilled"
	}
	if err := writeUsage(r.dir, s.name, Usage{MaxRSSBytes: maxRSS(cmd.ProcessState), MemoryLimitBytes: s.memoryLimit,
		OOMKilled: oom.Load(), ExitCode: code}); err != nil {
		r.logf("recording the usage of container %s: %v", s.name, err)
	}
	msg := readTerminationMessage(s, code)
	r.logf("container %s exited %d", s.name, code)
	r.setContainer(corev1.ContainerStatus{Name: s.name, Image: s.image, ImageID: s.image, Started: ptr.To(false),
		RestartCount: prev.RestartCount, LastTerminationState: prev.LastTerminationState,
		ContainerID: "process://" + strconv.Itoa(cmd.Process.Pid),
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: int32(code), Reason: reason, Message: msg, StartedAt: startedAt, FinishedAt: metav1.Now(),
			ContainerID: "process://" + strconv.Itoa(cmd.Process.Pid),
		}}}, init)
	r.setConditions(r.isInitialized(), false)
	r.publish(ctx)
	return code, nil
}

// isInitialized tells whether every init container has completed.
func (r *podRunner) isInitialized() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.initialized
}

// sidecarsStoppingLocked is sidecarsStopping with r.mu held.
func (r *podRunner) sidecarsStoppingLocked() bool {
	select {
	case <-r.sidecarStop:
		return true
	default:
		return r.killed
	}
}

// setReady records a running container's readiness and reports whether it changed.
func (r *podRunner) setReady(name string, ready bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.status.ContainerStatuses {
		cs := &r.status.ContainerStatuses[i]
		if cs.Name == name && cs.State.Running != nil && cs.Ready != ready {
			cs.Ready = ready
			return true
		}
	}
	return false
}

func (r *podRunner) startFailed(ctx context.Context, s *containerSpec, init bool, err error) (int, error) {
	now := metav1.Now()
	r.logf("container %s could not start: %v", s.name, err)
	r.setContainer(corev1.ContainerStatus{Name: s.name, Image: s.image, ImageID: s.image,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 128, Reason: "StartError", Message: err.Error(), StartedAt: now, FinishedAt: now,
		}}}, init)
	r.publish(ctx)
	return 128, err
}

func exitCode(cmd *exec.Cmd, err error) int {
	if cmd.ProcessState == nil {
		return 128
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	if err != nil && cmd.ProcessState.ExitCode() < 0 {
		return 128
	}
	return cmd.ProcessState.ExitCode()
}

// readTerminationMessage reads the container's termination-message file, falling back to the
// tail of its log when the policy says so and the container failed.
func readTerminationMessage(s *containerSpec, code int) string {
	b, _ := os.ReadFile(s.terminationPath)
	if len(b) > maxTerminationMessage {
		b = b[:maxTerminationMessage]
	}
	if len(strings.TrimSpace(string(b))) > 0 || code == 0 || s.terminationPolicy != corev1.TerminationMessageFallbackToLogsOnError {
		return string(b)
	}
	logb, _ := os.ReadFile(s.logPath)
	lines := strings.Split(strings.TrimRight(string(logb), "\n"), "\n")
	if len(lines) > fallbackLogLines {
		lines = lines[len(lines)-fallbackLogLines:]
	}
	tail := strings.Join(lines, "\n")
	if len(tail) > fallbackLogBytes {
		tail = tail[len(tail)-fallbackLogBytes:]
	}
	return tail
}
