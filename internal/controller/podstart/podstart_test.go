package podstart_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/internal/controller/podstart"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/status"
)

func pod(created time.Time, init, containers []corev1.ContainerStatus) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "job-pod", CreationTimestamp: metav1.NewTime(created)},
		Status: corev1.PodStatus{InitContainerStatuses: init, ContainerStatuses: containers}}
}

func waiting(name, reason string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "m"}}}
}

func terminated(name string, code int32, reason string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason}}}
}

var running = corev1.ContainerStatus{Name: "sidecar", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}

func unschedulable(created time.Time) corev1.Pod {
	p := pod(created, nil, nil)
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
		Message: "0/3 nodes are available: 3 Insufficient cpu."}}
	return p
}

// TestNewest: which pod states are start failures (waiting reasons the kubelet retries, a failed
// init container and a process that could not start, which nothing retries; a pod no node can
// hold, with Rule.Unschedulable), which are not (creating, initializing, running, exited,
// scheduling gates, being deleted, a sidecar that exited or could not start: the kubelet
// restarts it), the Job's container before the others, and only the newest pod counting.
func TestNewest(t *testing.T) {
	now := time.Now()
	deleting := pod(now, nil, []corev1.ContainerStatus{waiting("main", "ErrImagePull")})
	deleting.DeletionTimestamp = &metav1.Time{Time: now}
	gated := pod(now, nil, nil)
	gated.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "SchedulingGated"}}
	cases := []struct {
		name      string
		pods      []corev1.Pod
		want      string // container/reason, "" for none
		wantFinal bool
		wantKind  podstart.Kind
	}{
		{name: "no pod"},
		{name: "creating", pods: []corev1.Pod{pod(now, nil, []corev1.ContainerStatus{waiting("main", "ContainerCreating")})}},
		{name: "pod initializing", pods: []corev1.Pod{pod(now, nil, []corev1.ContainerStatus{waiting("main", "PodInitializing")})}},
		{name: "running", pods: []corev1.Pod{pod(now, nil, []corev1.ContainerStatus{running})}},
		{name: "exited", pods: []corev1.Pod{pod(now, nil, []corev1.ContainerStatus{terminated("main", 2, "Error")})}},
		{name: "scheduling gated", pods: []corev1.Pod{gated}},
		{name: "pod being deleted", pods: []corev1.Pod{deleting}},
		{name: "image pull error", pods: []corev1.Pod{pod(now, nil, []corev1.ContainerStatus{running, waiting("main", "ErrImagePull")})}, want: "main/ErrImagePull", wantKind: podstart.KindImage},
		{name: "image pull back-off", pods: []corev1.Pod{pod(now, nil, []corev1.ContainerStatus{waiting("main", "ImagePullBackOff")})}, want: "main/ImagePullBackOff", wantKind: podstart.KindImage},
		{name: "invalid image name", pods: []corev1.Pod{pod(now, nil, []corev1.ContainerStatus{waiting("main", "InvalidImageName")})}, want: "main/InvalidImageName", wantKind: podstart.KindImage},
		{name: "config error", pods: []corev1.Pod{pod(now, nil, []corev1.ContainerStatus{waiting("main", "CreateContainerConfigError")})}, want: "main/CreateContainerConfigError", wantKind: podstart.KindConfig},
		{name: "create error", pods: []corev1.Pod{pod(now, nil, []corev1.ContainerStatus{waiting("main", "CreateContainerError")})}, want: "main/CreateContainerError", wantKind: podstart.KindConfig},
		{name: "run error", pods: []corev1.Pod{pod(now, nil, []corev1.ContainerStatus{waiting("main", "RunContainerError")})}, want: "main/RunContainerError", wantKind: podstart.KindConfig},
		{name: "crash loop", pods: []corev1.Pod{pod(now, nil, []corev1.ContainerStatus{running, waiting("sidecar2", "CrashLoopBackOff")})}, want: "sidecar2/CrashLoopBackOff", wantKind: podstart.KindCrash},
		{name: "the Job's container first", pods: []corev1.Pod{pod(now, nil, []corev1.ContainerStatus{waiting("sidecar", "CrashLoopBackOff"), waiting("main", "ErrImagePull")})}, want: "main/ErrImagePull", wantKind: podstart.KindImage},
		{name: "init image pull error", pods: []corev1.Pod{pod(now, []corev1.ContainerStatus{waiting("input", "ErrImagePull")}, nil)}, want: "input/ErrImagePull", wantKind: podstart.KindImage},
		{name: "init failed", pods: []corev1.Pod{pod(now, []corev1.ContainerStatus{terminated("input", 1, "")}, []corev1.ContainerStatus{waiting("main", "PodInitializing")})}, want: "input/Error", wantFinal: true},
		{name: "start error", pods: []corev1.Pod{pod(now, nil, []corev1.ContainerStatus{terminated("main", 128, "StartError")})}, want: "main/StartError", wantFinal: true},
		{name: "unschedulable", pods: []corev1.Pod{unschedulable(now)}, want: "/Unschedulable", wantKind: podstart.KindUnschedulable},
		{name: "newest pod counts", pods: []corev1.Pod{pod(now.Add(-time.Minute), nil, []corev1.ContainerStatus{waiting("main", "ErrImagePull")}), pod(now, nil, []corev1.ContainerStatus{running})}},
		// The reporter sidecar is restarted by the kubelet: its exit is no failure, its crash
		// loop is one (after the grace).
		{name: "sidecar exited", pods: []corev1.Pod{pod(now, []corev1.ContainerStatus{terminated("input", 0, "Completed"), terminated("reporter", 137, "Error")},
			[]corev1.ContainerStatus{running})}},
		{name: "sidecar could not start", pods: []corev1.Pod{pod(now, []corev1.ContainerStatus{terminated("reporter", 128, "StartError")}, nil)}},
		{name: "sidecar crash loop", pods: []corev1.Pod{pod(now, []corev1.ContainerStatus{terminated("input", 0, "Completed"), waiting("reporter", "CrashLoopBackOff")},
			[]corev1.ContainerStatus{running})}, want: "reporter/CrashLoopBackOff", wantKind: podstart.KindCrash},
		{name: "sidecar image pull error", pods: []corev1.Pod{pod(now, []corev1.ContainerStatus{waiting("reporter", "ImagePullBackOff")}, nil)},
			want: "reporter/ImagePullBackOff", wantKind: podstart.KindImage},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := podstart.Rule{First: "main", Unschedulable: true, Sidecars: []string{"reporter"}}.Newest(tc.pods)
			got := ""
			if f != nil {
				got = f.Container + "/" + f.Reason
			}
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			if f != nil && (f.Final != tc.wantFinal || f.Kind() != tc.wantKind) {
				t.Errorf("final %v kind %v, want %v %v", f.Final, f.Kind(), tc.wantFinal, tc.wantKind)
			}
		})
	}
}

// TestUnschedulableIsOptIn: without Rule.Unschedulable a pod no node can hold is no failure (a
// search pod waits for capacity).
func TestUnschedulableIsOptIn(t *testing.T) {
	p := unschedulable(time.Now())
	if f := (podstart.Rule{First: "main"}).Of(&p); f != nil {
		t.Errorf("an unschedulable pod is a failure without Rule.Unschedulable: %+v", f)
	}
}

// TestNewestFirst: the newest pod comes first; pods created in the same second keep their order,
// so every reader of "the newest pod" picks the same one.
func TestNewestFirst(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	at := func(name string, created time.Time) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)}}
	}
	pods := []corev1.Pod{at("old", t0), at("new-a", t0.Add(time.Minute)), at("mid", t0.Add(time.Second)), at("new-b", t0.Add(time.Minute))}
	var got []string
	for _, p := range podstart.NewestFirst(pods) {
		got = append(got, p.Name)
	}
	if diff := cmp.Diff([]string{"new-a", "new-b", "mid", "old"}, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	if pods[0].Name != "old" {
		t.Errorf("NewestFirst sorted its argument: %s first", pods[0].Name)
	}
}

// TestControlledBy: only a pod whose controller reference is the Job (batch/v1, Job, its name
// and UID) counts; the Job's labels, a reference without controller, or a controller reference
// to another kind, name or UID (anyone who creates a pod writes its references) do not.
func TestControlledBy(t *testing.T) {
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "verify-1", UID: "job-uid"}}
	ref := func(mut func(*metav1.OwnerReference)) []metav1.OwnerReference {
		r := metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: "verify-1", UID: "job-uid", Controller: ptr.To(true)}
		if mut != nil {
			mut(&r)
		}
		return []metav1.OwnerReference{r}
	}
	pods := []corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "the-jobs", OwnerReferences: ref(nil)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "labels-only", Labels: map[string]string{batchv1.JobNameLabel: "verify-1"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "not-controller", OwnerReferences: ref(func(r *metav1.OwnerReference) { r.Controller = nil })}},
		{ObjectMeta: metav1.ObjectMeta{Name: "other-uid", OwnerReferences: ref(func(r *metav1.OwnerReference) { r.UID = "other" })}},
		{ObjectMeta: metav1.ObjectMeta{Name: "other-name", OwnerReferences: ref(func(r *metav1.OwnerReference) { r.Name = "verify-2" })}},
		{ObjectMeta: metav1.ObjectMeta{Name: "other-kind", OwnerReferences: ref(func(r *metav1.OwnerReference) { r.Kind = "CronJob" })}},
		{ObjectMeta: metav1.ObjectMeta{Name: "other-group", OwnerReferences: ref(func(r *metav1.OwnerReference) { r.APIVersion = "example.com/v1" })}},
	}
	var got []string
	for _, p := range podstart.ControlledBy(pods, job) {
		got = append(got, p.Name)
	}
	if diff := cmp.Diff([]string{"the-jobs"}, got); diff != "" {
		t.Errorf("controlled pods (-want +got):\n%s", diff)
	}
}

// TestDue: a final failure is due at once; a retried one once the same container has failed for
// the grace, with the time left until then; another container restarts the clock.
func TestDue(t *testing.T) {
	var seen status.Sightings
	uid := types.UID("owner")
	t0 := time.Now()
	grace := 10 * time.Second
	pull := &podstart.Failure{Pod: "p", Container: "main", Reason: "ErrImagePull"}
	type result struct {
		Due          bool
		Lasted, Wait time.Duration
	}
	steps := []struct {
		f    *podstart.Failure
		at   time.Duration
		want result
	}{
		{pull, 0, result{false, 0, grace}},
		{pull, 4 * time.Second, result{false, 4 * time.Second, 6 * time.Second}},
		{&podstart.Failure{Pod: "p", Container: "sidecar", Reason: "ErrImagePull"}, 5 * time.Second, result{false, 0, grace}},
		{&podstart.Failure{Pod: "p", Container: "sidecar", Reason: "ErrImagePull"}, 15 * time.Second, result{true, grace, 0}},
		{&podstart.Failure{Pod: "p", Container: "main", Reason: "StartError", Final: true}, 16 * time.Second, result{true, 0, 0}},
	}
	for i, s := range steps {
		due, lasted, wait := podstart.Due(&seen, uid, s.f, t0.Add(s.at), grace)
		if diff := cmp.Diff(s.want, result{due, lasted, wait}); diff != "" {
			t.Errorf("step %d (%s at %s) (-want +got):\n%s", i, s.f.Key(), s.at, diff)
		}
	}
}

// TestDescribe: the description names the container (or that no node could hold the pod), the
// cause, the message's end and how long it lasted.
func TestDescribe(t *testing.T) {
	cases := []struct {
		f    podstart.Failure
		max  int
		want string
	}{
		{podstart.Failure{Container: "aiperf", Reason: "ErrImagePull", Message: `pull "x": not found`}, 64,
			`container "aiperf" stayed in ErrImagePull (pull "x": not found) for 2m0s (job.startFailureGraceSeconds)`},
		{podstart.Failure{Reason: "Unschedulable", Message: "0/1 nodes are available"}, 64,
			"no node could hold it, Unschedulable (0/1 nodes are available) for 2m0s (job.startFailureGraceSeconds)"},
		{podstart.Failure{Container: "input", Init: true, Final: true, ExitCode: 3, Reason: "Error", Message: strings.Repeat("x", 20) + "tail"}, 8,
			`init container "input" failed with exit code 3, Error (…xxxxtail)`},
		{podstart.Failure{Container: "main", Final: true, Reason: "StartError"}, 64, `container "main" could not be started, StartError`},
	}
	for _, tc := range cases {
		if got := tc.f.Describe(2*time.Minute, tc.max); got != tc.want {
			t.Errorf("Describe:\n got %s\nwant %s", got, tc.want)
		}
	}
}

// TestNoPod: a Job that is neither suspended nor finished and has had no pod (none listed, none
// counted in its status) for the grace since its creation: its pods are being refused. Before the
// grace it says how long is left; a Job with a pod, a suspended or a finished one never is.
func TestNoPod(t *testing.T) {
	now := time.Now()
	grace := time.Minute
	job := func(age time.Duration, mut func(*batchv1.Job)) *batchv1.Job {
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j", CreationTimestamp: metav1.NewTime(now.Add(-age))}}
		if mut != nil {
			mut(j)
		}
		return j
	}
	type result struct {
		NoPod bool
		Wait  time.Duration
	}
	cases := []struct {
		name string
		job  *batchv1.Job
		pods []corev1.Pod
		want result
	}{
		{"young", job(20*time.Second, nil), nil, result{false, 40 * time.Second}},
		{"past the grace", job(2*time.Minute, nil), nil, result{true, 0}},
		{"a pod listed", job(2*time.Minute, nil), []corev1.Pod{{}}, result{false, 0}},
		{"an active pod counted", job(2*time.Minute, func(j *batchv1.Job) { j.Status.Active = 1 }), nil, result{false, 0}},
		{"a failed pod counted", job(2*time.Minute, func(j *batchv1.Job) { j.Status.Failed = 1 }), nil, result{false, 0}},
		{"suspended", job(2*time.Minute, func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(true) }), nil, result{false, 0}},
		{"finished", job(2*time.Minute, func(j *batchv1.Job) {
			j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue}}
		}), nil, result{false, 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			no, wait := podstart.NoPod(tc.job, tc.pods, now, grace)
			if diff := cmp.Diff(tc.want, result{no, wait}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
