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
	procs      map[string]*exec.Cmd
	killed     bool
	killReason string
	killMsg    string
	isDeleted  bool
	killCh     chan struct{}
	grace      time.Duration
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
		dir:    filepath.Join(a.cfg.StateDir, pod.Namespace+"_"+pod.Name+"_"+uid),
		procs:  map[string]*exec.Cmd{},
		killCh: make(chan struct{}),
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

// kill asks every process to stop: SIGTERM, then SIGKILL after grace.
func (r *podRunner) kill(reason, msg string, grace time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.killed {
		return
	}
	r.killed, r.killReason, r.killMsg, r.grace = true, reason, msg, grace
	close(r.killCh)
	for _, c := range r.procs {
		signalGroup(c, syscall.SIGTERM)
	}
	if grace > 10*time.Second {
		grace = 10 * time.Second
	}
	procs := make([]*exec.Cmd, 0, len(r.procs))
	for _, c := range r.procs {
		procs = append(procs, c)
	}
	go func() {
		time.Sleep(grace)
		for _, c := range procs {
			signalGroup(c, syscall.SIGKILL)
		}
	}()
}

func signalGroup(c *exec.Cmd, sig syscall.Signal) {
	if c.Process == nil {
		return
	}
	if c.ProcessState != nil {
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
	// Init containers run one after the other.
	for _, s := range specs.init {
		code, _ := r.runOne(ctx, s, true)
		if code != 0 {
			r.finishUnstarted(ctx, pod, "InitContainerFailed", fmt.Sprintf("init container %s exited %d", s.name, code))
			return
		}
	}
	if len(specs.init) > 0 {
		if err := r.rewriteHandoffs(pod); err != nil {
			r.finishUnstarted(ctx, pod, "InitContainerFailed", "rewriting the paths in the files of the init containers: "+err.Error())
			return
		}
	}
	r.setConditions(true, false)
	var wg sync.WaitGroup
	for _, s := range specs.main {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = r.runOne(ctx, s, false) // runOne records the termination in the pod status
		}()
	}
	wg.Wait()

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
func (r *podRunner) runOne(ctx context.Context, s *containerSpec, init bool) (int, error) {
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
	if r.killed {
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
	started := metav1.Now()
	r.logf("container %s started (pid %d): %s %s", s.name, cmd.Process.Pid, s.argv0, strings.Join(s.args, " "))
	r.setContainer(corev1.ContainerStatus{Name: s.name, Image: s.image, ImageID: s.image, Ready: !init && s.readiness == nil, Started: ptr.To(true),
		ContainerID: "process://" + strconv.Itoa(cmd.Process.Pid),
		State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}}, init)
	if !init {
		r.mu.Lock()
		r.status.Phase = corev1.PodRunning
		r.mu.Unlock()
	}
	r.setConditions(!init, false)
	r.publish(ctx)

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
		ContainerID: "process://" + strconv.Itoa(cmd.Process.Pid),
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: int32(code), Reason: reason, Message: msg, StartedAt: started, FinishedAt: metav1.Now(),
			ContainerID: "process://" + strconv.Itoa(cmd.Process.Pid),
		}}}, init)
	r.setConditions(true, false)
	r.publish(ctx)
	return code, nil
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
