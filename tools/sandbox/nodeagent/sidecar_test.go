package nodeagent

import (
	"context"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

// shContainer is a container resolved to `sh -c script` with $DIR set to dir.
func shContainer(r *podRunner, name, dir, script string, sidecar bool) *containerSpec {
	return &containerSpec{name: name, image: "sh", path: "/bin/sh", argv0: "sh", args: []string{"-c", script},
		env: []string{"DIR=" + dir, "PATH=/usr/bin:/bin"}, workDir: dir,
		logPath: filepath.Join(r.dir, "logs", name+".log"), terminationPath: filepath.Join(r.dir, "termination", name),
		sidecar: sidecar}
}

// newTestRunner is a runner of pod on an agent whose API server is a fake clientset holding the
// pod, with its state directories made (as tryPrepare makes them).
func newTestRunner(t *testing.T, pod *corev1.Pod) *podRunner {
	t.Helper()
	a := &Agent{cfg: &Config{StateDir: t.TempDir(), NodeIP: "127.0.0.1"}, cs: fake.NewClientset(pod), log: log.New(io.Discard, "", 0)}
	r := newPodRunner(a, pod)
	for _, d := range []string{"logs", "termination", "pids"} {
		if err := os.MkdirAll(filepath.Join(r.dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r.status = corev1.PodStatus{Phase: corev1.PodPending}
	return r
}

func sidecarPod(grace int64) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "uid-12345678"},
		Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To(grace)}}
}

// fastBackoff makes sidecar restarts quick for the test.
func fastBackoff(t *testing.T) {
	t.Helper()
	old, oldMax := sidecarBackoff, maxSidecarBackoff
	sidecarBackoff, maxSidecarBackoff = 20*time.Millisecond, 40*time.Millisecond
	t.Cleanup(func() { sidecarBackoff, maxSidecarBackoff = old, oldMax })
}

func lines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// execute runs the pod's containers within a bound and returns the status the agent published.
func execute(t *testing.T, r *podRunner, pod *corev1.Pod, specs *podSpecs) corev1.PodStatus {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); r.execute(context.Background(), pod, specs) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the pod did not finish within 20s")
	}
	got, err := r.a.cs.CoreV1().Pods(pod.Namespace).Get(context.Background(), pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got.Status
}

func statusOf(t *testing.T, list []corev1.ContainerStatus, name string) corev1.ContainerStatus {
	t.Helper()
	for _, cs := range list {
		if cs.Name == name {
			return cs
		}
	}
	t.Fatalf("no status of container %s in %+v", name, list)
	return corev1.ContainerStatus{}
}

// TestSidecarRunsBesideTheMainContainers: a regular init container runs to completion first;
// the sidecar (an init container with restartPolicy Always) is started and not waited for, the
// main container runs beside it, and once the main container has ended the sidecar gets SIGTERM
// and is not restarted. The pod's phase follows the main container alone: the sidecar's exit
// code after SIGTERM does not fail it.
func TestSidecarRunsBesideTheMainContainers(t *testing.T) {
	pod := sidecarPod(5)
	r := newTestRunner(t, pod)
	dir := t.TempDir()
	order := filepath.Join(dir, "order")
	specs := &podSpecs{
		init: []*containerSpec{
			shContainer(r, "input", dir, `echo input >> "$DIR/order"`, false),
			shContainer(r, "reporter", dir, `echo reporter >> "$DIR/order"; trap 'echo reporter-term >> "$DIR/order"; exit 7' TERM; while :; do sleep 0.02; done`, true),
		},
		main: []*containerSpec{
			// The main container starts only once the sidecar runs, and ends while it still does.
			shContainer(r, "search", dir, `echo search >> "$DIR/order"; sleep 0.3; echo search-done >> "$DIR/order"`, false),
		},
	}
	st := execute(t, r, pod, specs)
	if diff := cmp.Diff([]string{"input", "reporter", "search", "search-done", "reporter-term"}, lines(t, order)); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	if st.Phase != corev1.PodSucceeded {
		t.Errorf("phase = %s, want Succeeded (the main container exited 0)", st.Phase)
	}
	side := statusOf(t, st.InitContainerStatuses, "reporter")
	if side.RestartCount != 0 || side.State.Terminated == nil || side.State.Terminated.ExitCode != 7 {
		t.Errorf("sidecar status = %+v, want terminated by the stop (exit 7), never restarted", side)
	}
	if got := statusOf(t, st.ContainerStatuses, "search"); got.State.Terminated == nil || got.State.Terminated.ExitCode != 0 {
		t.Errorf("main container status = %+v", got)
	}
}

// TestSidecarIsRestartedWhileTheMainContainersRun: a sidecar that exits while the main container
// runs is started again, with its restart count and last state, and the pod still succeeds.
func TestSidecarIsRestartedWhileTheMainContainersRun(t *testing.T) {
	fastBackoff(t)
	pod := sidecarPod(5)
	r := newTestRunner(t, pod)
	dir := t.TempDir()
	specs := &podSpecs{
		init: []*containerSpec{
			// The first run fails at once (a reporter killed mid-publication); the second stays.
			shContainer(r, "reporter", dir, `echo run >> "$DIR/runs"; [ "$(wc -l < "$DIR/runs")" -ge 2 ] || exit 3; trap 'exit 0' TERM; while :; do sleep 0.02; done`, true),
		},
		main: []*containerSpec{
			shContainer(r, "search", dir, `i=0; while [ "$(cat "$DIR/runs" 2>/dev/null | wc -l)" -lt 2 ] && [ $i -lt 250 ]; do sleep 0.02; i=$((i+1)); done; [ $i -lt 250 ]`, false),
		},
	}
	st := execute(t, r, pod, specs)
	if got := lines(t, filepath.Join(dir, "runs")); len(got) != 2 {
		t.Errorf("the sidecar ran %d times, want 2 (restarted once, not after the main container ended)", len(got))
	}
	side := statusOf(t, st.InitContainerStatuses, "reporter")
	if side.RestartCount != 1 || side.LastTerminationState.Terminated == nil || side.LastTerminationState.Terminated.ExitCode != 3 {
		t.Errorf("sidecar status = %+v, want restart count 1 and last state exit 3", side)
	}
	if st.Phase != corev1.PodSucceeded {
		t.Errorf("phase = %s, want Succeeded (the main container saw the restarted sidecar)", st.Phase)
	}
}

// TestSidecarIgnoringSIGTERMIsKilledAfterTheGrace: the pod ends even when its sidecar ignores
// SIGTERM (SIGKILL after the termination grace period), and a failed main container fails it.
func TestSidecarIgnoringSIGTERMIsKilledAfterTheGrace(t *testing.T) {
	pod := sidecarPod(1)
	r := newTestRunner(t, pod)
	dir := t.TempDir()
	specs := &podSpecs{
		init: []*containerSpec{shContainer(r, "reporter", dir, `trap '' TERM; while :; do sleep 0.02; done`, true)},
		main: []*containerSpec{shContainer(r, "search", dir, `exit 2`, false)},
	}
	start := time.Now()
	st := execute(t, r, pod, specs)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the pod took %s to end, want about its 1s grace", took)
	}
	if st.Phase != corev1.PodFailed {
		t.Errorf("phase = %s, want Failed (the main container exited 2)", st.Phase)
	}
	if side := statusOf(t, st.InitContainerStatuses, "reporter"); side.State.Terminated == nil || side.State.Terminated.ExitCode != 137 {
		t.Errorf("sidecar status = %+v, want SIGKILLed (137)", side)
	}
}

// TestFailedInitContainerStopsTheSidecars: an init container failing after a sidecar started
// fails the pod, and the sidecar is stopped rather than left running.
func TestFailedInitContainerStopsTheSidecars(t *testing.T) {
	pod := sidecarPod(5)
	pod.Spec.Containers = []corev1.Container{{Name: "search"}}
	r := newTestRunner(t, pod)
	dir := t.TempDir()
	specs := &podSpecs{
		init: []*containerSpec{
			shContainer(r, "reporter", dir, `trap 'echo term >> "$DIR/side"; exit 0' TERM; while :; do sleep 0.02; done`, true),
			shContainer(r, "input", dir, `exit 4`, false),
		},
		main: []*containerSpec{shContainer(r, "search", dir, `echo ran >> "$DIR/search"`, false)},
	}
	st := execute(t, r, pod, specs)
	if st.Phase != corev1.PodFailed || st.Reason != "InitContainerFailed" {
		t.Errorf("phase %s reason %q, want Failed InitContainerFailed", st.Phase, st.Reason)
	}
	if diff := cmp.Diff([]string{"term"}, lines(t, filepath.Join(dir, "side"))); diff != "" {
		t.Errorf("the sidecar was not stopped once (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(filepath.Join(dir, "search")); !os.IsNotExist(err) {
		t.Errorf("the main container ran after a failed init container: %v", err)
	}
}

// TestKilledPodStopsSidecarsLast: a pod being deleted stops its main containers first (SIGTERM,
// SIGKILL after the grace for one that ignores it); its sidecar gets SIGTERM only then, with time
// left to finish (at least two seconds, as with the kubelet), so a reporter can still publish
// what it holds when its Run is cancelled.
func TestKilledPodStopsSidecarsLast(t *testing.T) {
	pod := sidecarPod(30)
	r := newTestRunner(t, pod)
	dir := t.TempDir()
	specs := &podSpecs{
		init: []*containerSpec{shContainer(r, "reporter", dir,
			`trap 'touch "$DIR/term"; echo term >> "$DIR/side"; sleep 0.5; echo published >> "$DIR/side"; exit 0' TERM; while :; do sleep 0.02; done`, true)},
		// The main container ignores SIGTERM, as a frozen search does.
		main: []*containerSpec{shContainer(r, "search", dir, `trap '' TERM; touch "$DIR/running"; while :; do sleep 0.02; done`, false)},
	}
	var killedAt time.Time
	go func() {
		for i := 0; i < 500; i++ {
			if _, err := os.Stat(filepath.Join(dir, "running")); err == nil {
				killedAt = time.Now()
				r.kill("Killing", "the pod is being deleted", time.Second)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	st := execute(t, r, pod, specs)
	if killedAt.IsZero() {
		t.Fatal("the main container never ran")
	}
	term, err := os.Stat(filepath.Join(dir, "term"))
	if err != nil {
		t.Fatalf("the sidecar got no SIGTERM: %v", err)
	}
	if d := term.ModTime().Sub(killedAt); d < 900*time.Millisecond {
		t.Errorf("the sidecar was stopped %s after the kill, before the main container's 1s grace ran out", d)
	}
	if diff := cmp.Diff([]string{"term", "published"}, lines(t, filepath.Join(dir, "side"))); diff != "" {
		t.Errorf("the sidecar had no time to finish (-want +got):\n%s", diff)
	}
	if got := statusOf(t, st.ContainerStatuses, "search"); got.State.Terminated == nil || got.State.Terminated.ExitCode != 137 {
		t.Errorf("main container status = %+v, want SIGKILLed", got)
	}
	if side := statusOf(t, st.InitContainerStatuses, "reporter"); side.State.Terminated == nil || side.State.Terminated.ExitCode != 0 || side.RestartCount != 0 {
		t.Errorf("sidecar status = %+v, want exited 0 on its SIGTERM, not restarted", side)
	}
}
