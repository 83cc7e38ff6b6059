package run_test

import (
	"context"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	ct "github.com/dgdr-operator/dgdr-operator/internal/controller/controllertest"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/internal/naming"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/poll"
)

// windowSHA256 is the hash the search's input container reports for the window it cut.
var windowSHA256 = strings.Repeat("ab", 32)

// researchRun creates, in a namespace of its own, a re-search Run of a request whose deployed
// Candidate belongs to an earlier Run of the same request, as the request controller creates
// it: the Run controller records its baseline input and runs its search.
func researchRun(t *testing.T) *v1beta2.DynamoGraphDeploymentRun {
	t.Helper()
	ctx := context.Background()
	ns := testenv.Namespace(t, k8s, "t")
	owner := metav1.OwnerReference{APIVersion: "nvidia.com/v1beta2", Kind: "DynamoGraphDeploymentRequest", Name: "llama",
		UID: types.UID("00000000-0000-4000-8000-00000000" + strings.Repeat("f", 4)), Controller: ptr.To(true)}
	// The deployed search, cancelled at once: it only owns the deployed Candidate.
	deployed := builders.Run(ns, "llama-run-1").WithSpec(admittedSpec()).Label(v1beta2.LabelRequestName, "llama").
		Annotation(v1beta2.AnnotationCancel, "true").Obj()
	deployed.OwnerReferences = []metav1.OwnerReference{owner}
	if err := k8s.Create(ctx, deployed); err != nil {
		t.Fatal(err)
	}
	cand := builders.Candidate(ns, "llama-run-1-c1").OwnedBy(deployed).GPUs(1).GraphDeployment([]byte(`{}`)).
		Parameters(`{"engine":{"model":"meta-llama/Llama-3.1-8B-Instruct","hardware":"h200_sxm","backend":"vllm","workers":{"aggregated":{"tp":1,"replicas":1}}}}`).Obj()
	if err := k8s.Create(ctx, cand); err != nil {
		t.Fatal(err)
	}
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "traffic"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	if err := k8s.Create(ctx, claim); err != nil {
		t.Fatal(err)
	}
	spec := admittedSpec()
	spec.Deployment = &v1beta2.DeploymentSpec{AutoApply: ptr.To(true), Capture: &v1beta2.CaptureSpec{Enabled: ptr.To(true), ClaimName: "traffic"}}
	spec.Research = &v1beta2.ResearchSpec{IntervalMinutes: 60, WindowMinutes: ptr.To[int32](60), MinRequests: ptr.To[int32](1)}
	r := builders.Run(ns, naming.ResearchRunName("llama", 1, 1764763200)).WithSpec(spec).Label(v1beta2.LabelRequestName, "llama").
		Label(v1beta2.LabelRequestUID, string(owner.UID)).Annotation(v1beta2.AnnotationResearchWindowEnd, "2025-12-03T12:00:00Z").Annotation(v1beta2.AnnotationResearchBaseline, cand.Name).Obj()
	r.OwnerReferences = []metav1.OwnerReference{owner}
	if err := k8s.Create(ctx, r); err != nil {
		t.Fatal(err)
	}
	return r
}

// cutWindow plays the search pod's input container: it cut the window and reported it.
func cutWindow(t *testing.T, job *batchv1.Job) *corev1.Pod {
	t.Helper()
	pod, err := ct.CreatePod(context.Background(), k8s, job, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: jobcontract.InputContainer, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		Message: `{"requests":42,"sha256":"` + windowSHA256 + `","segments":3,"truncatedSegments":0,"pods":2}`}}}}
	if err := k8s.Status().Update(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

// endSearch plays the search pod ending: the search as given, the reporter's publication
// succeeded, and the Job controller's terminal condition.
func endSearch(t *testing.T, job *batchv1.Job, pod *corev1.Pod, search int32, failedReason string) {
	const publication = 0
	t.Helper()
	ctx := context.Background()
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{
		{Name: jobcontract.SearchContainer, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: search}}},
		{Name: jobcontract.PublicationContainer, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: publication}}},
	}
	pod.Status.Phase = corev1.PodSucceeded
	if search != 0 || publication != 0 {
		pod.Status.Phase = corev1.PodFailed
	}
	if err := k8s.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := ct.FinishJob(ctx, k8s, job, failedReason); err != nil {
		t.Fatal(err)
	}
}

// waitForBaselineJob waits for the Run's baseline Job and checks that it is the Run's: named
// after it, controlled by it, recorded in status.baselineJobRef, cutting the window the
// search's input container reported.
func waitForBaselineJob(t *testing.T, r *v1beta2.DynamoGraphDeploymentRun) *batchv1.Job {
	t.Helper()
	job := &batchv1.Job{}
	poll.Eventually(t, wait, "the baseline Job", func() (bool, error) {
		err := k8s.Get(context.Background(), client.ObjectKey{Namespace: r.Namespace, Name: naming.BaselineJobName(r.Name)}, job)
		return err == nil, client.IgnoreNotFound(err)
	})
	got := getRun(t, r)
	if ref := metav1.GetControllerOf(job); ref == nil || ref.UID != got.UID || ref.Kind != "DynamoGraphDeploymentRun" {
		t.Errorf("the baseline Job's controller is %+v, want the Run", ref)
	}
	poll.Eventually(t, wait, "status.baselineJobRef", func() (bool, error) {
		got = getRun(t, r)
		return got.Status.BaselineJobRef != nil, nil
	})
	if ref := got.Status.BaselineJobRef; ref.Name != job.Name || ref.UID != job.UID {
		t.Errorf("status.baselineJobRef = %+v, want %s (uid %s)", ref, job.Name, job.UID)
	}
	if b := got.Status.AISimulate.Baseline; b == nil || job.Annotations[v1beta2.AnnotationBaselineInputHash] != b.InputHash {
		t.Errorf("the baseline Job's hash %q, the recorded baseline %+v", job.Annotations[v1beta2.AnnotationBaselineInputHash], b)
	}
	if args := strings.Join(job.Spec.Template.Spec.InitContainers[0].Args, " "); !strings.Contains(args, "--trace-window-sha256 sha256:"+windowSHA256) {
		t.Errorf("the baseline's input container does not check the search's window: %s", args)
	}
	return job
}

// waitForBaselineWait waits until the Run, whose search succeeded, waits for its baseline.
func waitForBaselineWait(t *testing.T, r *v1beta2.DynamoGraphDeploymentRun) {
	t.Helper()
	poll.Eventually(t, wait, "Searched=True while the baseline runs", func() (bool, error) {
		got := getRun(t, r)
		s := meta.FindStatusCondition(got.Status.Conditions, v1beta2.ConditionSearched)
		return s != nil && s.Status == metav1.ConditionTrue && s.Reason == v1beta2.ReasonSucceeded, nil
	})
	// It stays so: the Run does not end without its baseline.
	time.Sleep(time.Second)
	got := getRun(t, r)
	c := meta.FindStatusCondition(got.Status.Conditions, v1beta2.ConditionCompleted)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1beta2.ReasonEvaluatingBaseline || got.Status.Phase != v1beta2.RunPhaseRunning {
		t.Fatalf("Completed = %+v, phase %s; want False EvaluatingBaseline while the baseline runs", c, got.Status.Phase)
	}
}

// TestBaselineJobLifecycle: a re-search Run gets a baseline Job of its own once its search's
// input container has reported the window (not before), controlled by the Run and recorded in
// its status; a Run whose search succeeded ends only once its baseline ended, whichever way, and
// the Completed condition then says how the search ended.
func TestBaselineJobLifecycle(t *testing.T) {
	t.Run("published", func(t *testing.T) {
		ctx := context.Background()
		r := researchRun(t)
		job := waitForJob(t, r)
		// The baseline input is recorded with the Run's input, in the status write of a
		// reconcile that may also create the Job: the Job can be seen first.
		poll.Eventually(t, wait, "status.aisimulate.baseline", func() (bool, error) {
			got := getRun(t, r)
			return got.Status.AISimulate != nil && got.Status.AISimulate.Baseline != nil, nil
		})
		if got := getRun(t, r); got.Status.AISimulate.Baseline.Candidate != "llama-run-1-c1" {
			t.Fatalf("status.aisimulate.baseline = %+v", got.Status.AISimulate.Baseline)
		}
		// No baseline before the window is cut: there is nothing to check its cut against.
		time.Sleep(500 * time.Millisecond)
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: naming.BaselineJobName(r.Name)}, &batchv1.Job{}); !apierrors.IsNotFound(err) {
			t.Fatalf("a baseline Job before the window was cut: %v", err)
		}
		pod := cutWindow(t, job)
		baseline := waitForBaselineJob(t, r)
		endSearch(t, job, pod, 0, "")
		waitForBaselineWait(t, r)

		// The baseline's reporter publishes status.baseline: the Run ends as the search did.
		cur := getRun(t, r)
		patch := client.MergeFrom(cur.DeepCopy())
		cur.Status.Baseline = &v1beta2.BaselineStatus{Candidate: "llama-run-1-c1", CompletedRequests: 42,
			Metrics: &v1beta2.CandidateMetrics{Score: ptr.To(1000.0), GPUs: 1}}
		if err := k8s.Status().Patch(ctx, cur, patch); err != nil {
			t.Fatal(err)
		}
		got := waitForReason(t, r, v1beta2.ReasonSucceeded)
		if got.Status.Message != "the search finished and its candidates are published" || got.Status.Baseline.Error != "" || got.Status.Baseline.CompletedRequests != 42 {
			t.Errorf("message %q, status.baseline %+v", got.Status.Message, got.Status.Baseline)
		}
		// Published, its Job has nothing left to do: it does not outlive the Run.
		poll.Eventually(t, wait, "the baseline Job deleted", func() (bool, error) {
			err := k8s.Get(ctx, client.ObjectKeyFromObject(baseline), &batchv1.Job{})
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		})
	})

	t.Run("the window is not the search's", func(t *testing.T) {
		ctx := context.Background()
		r := researchRun(t)
		job := waitForJob(t, r)
		pod := cutWindow(t, job)
		baseline := waitForBaselineJob(t, r)
		endSearch(t, job, pod, 0, "")
		waitForBaselineWait(t, r)
		// The search Job may go (its TTL) while the Run waits: how it ended is recorded.
		if err := k8s.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
			t.Fatal(err)
		}
		bpod, err := ct.CreatePod(ctx, k8s, baseline, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		bpod.Status.Phase = corev1.PodFailed
		bpod.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: jobcontract.InputContainer, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: jobcontract.InputExitWindowMismatch, Reason: "Error",
			Message: "report --write-input: the trace window cut again hashes to sha256:cd, not to sha256:" + windowSHA256}}}}
		if err := k8s.Status().Update(ctx, bpod); err != nil {
			t.Fatal(err)
		}
		if err := ct.FinishJob(ctx, k8s, baseline, batchv1.JobReasonBackoffLimitExceeded); err != nil {
			t.Fatal(err)
		}
		got := waitForReason(t, r, v1beta2.ReasonSucceeded)
		b := got.Status.Baseline
		if b == nil || b.Candidate != "llama-run-1-c1" || b.Metrics != nil || !strings.Contains(b.Error, "not the one the search replayed") || !strings.Contains(b.Error, "sha256:cd") {
			t.Errorf("status.baseline = %+v, want the window mismatch", b)
		}
	})

	t.Run("hung past its deadline", func(t *testing.T) {
		ctx := context.Background()
		r := researchRun(t)
		job := waitForJob(t, r)
		pod := cutWindow(t, job)
		baseline := waitForBaselineJob(t, r)
		if *baseline.Spec.ActiveDeadlineSeconds != *cfg.Job.BaselineDeadlineSeconds {
			t.Errorf("the baseline Job's deadline is %d, want job.baselineDeadlineSeconds %d", *baseline.Spec.ActiveDeadlineSeconds, *cfg.Job.BaselineDeadlineSeconds)
		}
		endSearch(t, job, pod, 0, "")
		waitForBaselineWait(t, r)
		if err := ct.FinishJob(ctx, k8s, baseline, batchv1.JobReasonDeadlineExceeded); err != nil {
			t.Fatal(err)
		}
		got := waitForReason(t, r, v1beta2.ReasonSucceeded)
		if b := got.Status.Baseline; b == nil || !strings.Contains(b.Error, "did not finish within job.baselineDeadlineSeconds") {
			t.Errorf("status.baseline = %+v, want the deadline", b)
		}
	})

	t.Run("the search failed", func(t *testing.T) {
		ctx := context.Background()
		r := researchRun(t)
		job := waitForJob(t, r)
		pod := cutWindow(t, job)
		baseline := waitForBaselineJob(t, r)
		endSearch(t, job, pod, 1, batchv1.JobReasonBackoffLimitExceeded)
		// Nothing to compare: the Run ends at once, and stops its baseline.
		got := waitForReason(t, r, v1beta2.ReasonSearchFailed)
		if meta.FindStatusCondition(got.Status.Conditions, v1beta2.ConditionSearched) != nil {
			t.Errorf("a failed search waited for its baseline: %+v", got.Status.Conditions)
		}
		poll.Eventually(t, wait, "the baseline Job deleted", func() (bool, error) {
			err := k8s.Get(ctx, client.ObjectKeyFromObject(baseline), &batchv1.Job{})
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		})
	})
}

// TestNoBaselineJobWithoutAResearch: a Run that is no re-search gets no baseline Job once its
// input container ended, and ends with its search.
// TestRefusedWindowEndsTheRun: the search's input container cuts only its request's directory of
// the claim; when it refuses the window (over its bounds, or a malformed request in it: exit 6 or
// 7, the termination message naming why), the Run ends at once with the reason named, the message
// quoted, no baseline Job, and no start failure. The window's skipped entries, reported by a
// container that cut one, are recorded.
func TestRefusedWindowEndsTheRun(t *testing.T) {
	for _, tc := range []struct {
		code   int32
		msg    string
		reason string
	}{
		{jobcontract.InputExitWindowTooLarge, "report --write-input: the trace window is rejected: the window's records take more than 134217728 bytes uncompressed, the most a window file may hold",
			v1beta2.ReasonTraceWindowTooLarge},
		{jobcontract.InputExitWindowMalformed, "report --write-input: the trace window is rejected: fe/request-trace.000002.jsonl.gz: a request of the window has a malformed record: line 9: request.replay: required",
			v1beta2.ReasonTraceWindowMalformed},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			ctx := context.Background()
			r := researchRun(t)
			job := waitForJob(t, r)
			args := strings.Join(job.Spec.Template.Spec.InitContainers[0].Args, " ")
			if want := "--trace-window-directory " + string(metav1.GetControllerOf(r).UID); !strings.Contains(args, want) {
				t.Errorf("input args %q, want %q", args, want)
			}
			pod, err := ct.CreatePod(ctx, k8s, job, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			pod.Status.Phase = corev1.PodFailed
			pod.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: jobcontract.InputContainer, State: corev1.ContainerState{
				Terminated: &corev1.ContainerStateTerminated{ExitCode: tc.code, Reason: "Error", Message: tc.msg}}}}
			if err := k8s.Status().Update(ctx, pod); err != nil {
				t.Fatal(err)
			}
			got := waitForReason(t, r, tc.reason)
			if !strings.Contains(got.Status.Message, strings.TrimPrefix(tc.msg, "report --write-input: ")) || !strings.Contains(got.Status.Message, "nothing was searched") {
				t.Errorf("message %q, want it to quote %q", got.Status.Message, tc.msg)
			}
			if err := k8s.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: naming.BaselineJobName(r.Name)}, &batchv1.Job{}); !apierrors.IsNotFound(err) {
				t.Errorf("a baseline Job for a refused window: %v", err)
			}
		})
	}
	t.Run("skipped entries recorded", func(t *testing.T) {
		ctx := context.Background()
		r := researchRun(t)
		job := waitForJob(t, r)
		pod, err := ct.CreatePod(ctx, k8s, job, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		pod.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: jobcontract.InputContainer, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			Message: `{"requests":42,"sha256":"` + windowSHA256 + `","segments":3,"truncatedSegments":0,"skippedSegments":2,"skippedDirectories":1,"skippedLines":7,"pods":2}`}}}}
		if err := k8s.Status().Update(ctx, pod); err != nil {
			t.Fatal(err)
		}
		poll.Eventually(t, wait, "the window recorded", func() (bool, error) {
			w := getRun(t, r).Status.AISimulate.Trace.Window
			return w.Requests != nil, nil
		})
		w := getRun(t, r).Status.AISimulate.Trace.Window
		if w.SkippedSegments != 2 || w.SkippedDirectories != 1 || w.SkippedLines != 7 || *w.Requests != 42 {
			t.Errorf("window %+v, want 42 requests and the skipped entries counted", w)
		}
	})
}

func TestNoBaselineJobWithoutAResearch(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k8s, "t")
	r := createRun(t, ns, "plain-run-1", nil)
	job := waitForJob(t, r)
	pod := cutWindow(t, job)
	endSearch(t, job, pod, 0, "")
	got := waitForReason(t, r, v1beta2.ReasonSucceeded)
	if got.Status.BaselineJobRef != nil || meta.FindStatusCondition(got.Status.Conditions, v1beta2.ConditionSearched) != nil {
		t.Errorf("a plain Run: baselineJobRef %+v, conditions %+v", got.Status.BaselineJobRef, got.Status.Conditions)
	}
	var jobs batchv1.JobList
	if err := k8s.List(ctx, &jobs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(jobs.Items) != 1 || jobs.Items[0].Name != job.Name {
		t.Errorf("Jobs of a plain Run: %d, want its search Job only", len(jobs.Items))
	}
}
