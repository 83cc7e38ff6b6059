package run

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/podstart"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
)

func finishedJob(typ batchv1.JobConditionType, reason string) *batchv1.Job {
	return &batchv1.Job{Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{
		{Type: typ, Status: corev1.ConditionTrue, Reason: reason, Message: "job message"}}}}
}

// podWith is a pod whose search and publication containers (the reporter's outcome) ended as
// given (nil: not yet).
func podWith(created time.Time, search, publication *corev1.ContainerStateTerminated) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)}}
	if search != nil {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: "search", State: corev1.ContainerState{Terminated: search}})
	}
	if publication != nil {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: "publication", State: corev1.ContainerState{Terminated: publication}})
	}
	return p
}

func evictedPod(now time.Time, msg string) corev1.Pod {
	p := podWith(now, exit(137, "Error", ""), exit(137, "Error", ""))
	p.Name = "r-search-x"
	p.Status.Reason, p.Status.Message = "Evicted", msg
	return p
}

func initFailed(_ time.Time, p corev1.Pod) corev1.Pod {
	p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "input",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: "input hash mismatch"}}}}
	return p
}

func exit(code int32, reason, msg string) *corev1.ContainerStateTerminated {
	return &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, Message: msg}
}

// withInput gives pod a terminated input init container.
func withInput(pod corev1.Pod, code int32, msg string) corev1.Pod {
	pod.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: jobcontract.InputContainer,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Message: msg}}}}
	return pod
}

func TestClassify(t *testing.T) {
	now := time.Now()
	failed := finishedJob(batchv1.JobFailed, batchv1.JobReasonBackoffLimitExceeded)
	noFeasible := &v1beta2.DynamoGraphDeploymentRunStatus{Progress: &v1beta2.RunProgress{Settled: 10, Infeasible: 10}}
	cases := []struct {
		name       string
		job        *batchv1.Job
		pods       []corev1.Pod
		status     *v1beta2.DynamoGraphDeploymentRunStatus
		wantReason string
		wantInMsg  string
	}{
		{name: "not finished", job: &batchv1.Job{}},
		{name: "complete", job: finishedJob(batchv1.JobComplete, ""), wantReason: v1beta2.ReasonSucceeded},
		{name: "reporter failed", job: failed, pods: []corev1.Pod{podWith(now, exit(0, "Completed", ""), exit(1, "Error", "forbidden"))},
			wantReason: v1beta2.ReasonPublishFailed, wantInMsg: "forbidden"},
		{name: "exit 1 no feasible", job: failed, pods: []corev1.Pod{podWith(now, exit(1, "Error", ""), nil)}, status: noFeasible,
			wantReason: v1beta2.ReasonNoFeasibleCandidate},
		{name: "exit 1 recommendation says none feasible", job: failed, pods: []corev1.Pod{podWith(now, exit(1, "Error", ""), nil)},
			status: &v1beta2.DynamoGraphDeploymentRunStatus{Recommendation: &v1beta2.RecommendationSummary{Evaluated: 5}}, wantReason: v1beta2.ReasonNoFeasibleCandidate},
		{name: "exit 1 failure", job: failed, pods: []corev1.Pod{podWith(now, exit(1, "Error", "boom"), nil)}, wantReason: v1beta2.ReasonSearchFailed,
			wantInMsg: "exited with code 1 (Error)"},
		{name: "exit 2", job: failed, pods: []corev1.Pod{podWith(now, exit(2, "Error", "bad field"), nil)}, wantReason: v1beta2.ReasonInvalidInput,
			wantInMsg: "status.aisimulate.input"},
		{name: "exit 3", job: failed, pods: []corev1.Pod{podWith(now, exit(3, "Error", ""), nil)}, wantReason: v1beta2.ReasonResourceLimited},
		{name: "exit 124", job: failed, pods: []corev1.Pod{podWith(now, exit(124, "Error", ""), nil)}, wantReason: v1beta2.ReasonSearchFailed, wantInMsg: "shutdown_timeout_seconds"},
		{name: "exit 137", job: failed, pods: []corev1.Pod{podWith(now, exit(137, "Error", ""), nil)}, wantReason: v1beta2.ReasonOOMKilled},
		{name: "OOMKilled reason", job: failed, pods: []corev1.Pod{podWith(now, exit(1, "OOMKilled", ""), nil)}, wantReason: v1beta2.ReasonOOMKilled},
		{name: "exit 130", job: failed, pods: []corev1.Pod{podWith(now, exit(130, "Error", ""), nil)}, wantReason: v1beta2.ReasonSearchFailed, wantInMsg: "interrupted"},
		{name: "other exit", job: failed, pods: []corev1.Pod{podWith(now, exit(42, "Error", ""), nil)}, wantReason: v1beta2.ReasonSearchFailed, wantInMsg: "42"},
		{name: "job deadline wins over the kill", job: finishedJob(batchv1.JobFailed, batchv1.JobReasonDeadlineExceeded),
			pods: []corev1.Pod{podWith(now, exit(137, "Error", ""), nil)}, wantReason: v1beta2.ReasonDeadlineExceeded, wantInMsg: "activeDeadlineSeconds (60s)"},
		{name: "job deadline before the reporter published", job: finishedJob(batchv1.JobFailed, batchv1.JobReasonDeadlineExceeded),
			pods: []corev1.Pod{podWith(now, exit(0, "Completed", ""), nil)}, wantReason: v1beta2.ReasonDeadlineExceeded},
		{name: "job deadline after the publication", job: finishedJob(batchv1.JobFailed, batchv1.JobReasonDeadlineExceeded),
			pods: []corev1.Pod{podWith(now, exit(0, "Completed", ""), exit(0, "Completed", ""))}, wantReason: v1beta2.ReasonDeadlineExceeded},
		{name: "no pod", job: failed, wantReason: v1beta2.ReasonSearchFailed, wantInMsg: "job message"},
		{name: "window too small", job: failed, pods: []corev1.Pod{withInput(podWith(now, nil, nil), jobcontract.InputExitInsufficientTraffic,
			`{"requests":3,"sha256":"`+strings.Repeat("0", 64)+`","segments":2,"truncatedSegments":1,"pods":1}`)},
			wantReason: v1beta2.ReasonInsufficientTraffic, wantInMsg: "holds 3 requests (from 2 segments of 1 Frontend pods)"},
		{name: "window too large", job: failed, pods: []corev1.Pod{withInput(podWith(now, nil, nil), jobcontract.InputExitWindowTooLarge,
			"report --write-input: the trace window is rejected: the window holds more than 1000000 requests, the most a window may hold")},
			wantReason: v1beta2.ReasonTraceWindowTooLarge, wantInMsg: "more than 1000000 requests"},
		{name: "window malformed", job: failed, pods: []corev1.Pod{withInput(podWith(now, nil, nil), jobcontract.InputExitWindowMalformed,
			"report --write-input: the trace window is rejected: fe-a/request-trace.000001.jsonl.gz: a request of the window has a malformed record: line 4: request.output_tokens: required")},
			wantReason: v1beta2.ReasonTraceWindowMalformed, wantInMsg: "fe-a/request-trace.000001.jsonl.gz: a request of the window has a malformed record: line 4"},
		{name: "input failed otherwise", job: failed, pods: []corev1.Pod{withInput(podWith(now, nil, nil), 1, "report --write-input: forbidden")},
			wantReason: v1beta2.ReasonSearchPodFailedToStart, wantInMsg: "forbidden"},
		{name: "reporter rejected the output", job: failed, pods: []corev1.Pod{podWith(now, exit(0, "Completed", ""),
			exit(3, "Error", "report: search output rejected: recommendation.json is 1073741824 bytes, over the reporter's cap of 32 MiB"))},
			wantReason: v1beta2.ReasonOutputRejected, wantInMsg: "recommendation.json is 1073741824 bytes, over the reporter's cap of 32 MiB"},
		{name: "output rejection wins over a failed search", job: failed, pods: []corev1.Pod{podWith(now, exit(1, "Error", ""),
			exit(3, "Error", "report: search output rejected: recommendation.json is a symbolic link (refused)"))},
			wantReason: v1beta2.ReasonOutputRejected, wantInMsg: "symbolic link"},
		{name: "job deadline wins over an output rejection", job: finishedJob(batchv1.JobFailed, batchv1.JobReasonDeadlineExceeded),
			pods: []corev1.Pod{podWith(now, exit(137, "Error", ""), exit(3, "Error", ""))}, wantReason: v1beta2.ReasonDeadlineExceeded},
		{name: "init container failed", job: failed, pods: []corev1.Pod{initFailed(now, podWith(now, nil, nil))},
			wantReason: v1beta2.ReasonSearchPodFailedToStart, wantInMsg: `init container "input" failed with exit code 1, Error (input hash mismatch)`},
		{name: "init container failed, containers marked unknown (sandbox)", job: failed, pods: []corev1.Pod{
			initFailed(now, podWith(now, exit(137, "ContainerStatusUnknown", ""), exit(137, "ContainerStatusUnknown", "")))},
			wantReason: v1beta2.ReasonSearchPodFailedToStart, wantInMsg: `"input"`},
		{name: "search process could not be started", job: failed, pods: []corev1.Pod{podWith(now, exit(128, "StartError", "exec: no such file"), exit(0, "Completed", ""))},
			wantReason: v1beta2.ReasonSearchPodFailedToStart, wantInMsg: `container "search" could not be started, StartError (exec: no such file)`},
		{name: "evicted for its output", job: failed, pods: []corev1.Pod{evictedPod(now, `Usage of EmptyDir volume "output" exceeds the limit "256Mi". `)},
			wantReason: v1beta2.ReasonOutputRejected, wantInMsg: "job.outputSizeLimit"},
		{name: "evicted otherwise", job: failed, pods: []corev1.Pod{evictedPod(now, "The node was low on resource: memory.")},
			wantReason: v1beta2.ReasonSearchFailed, wantInMsg: "low on resource"},
		{name: "newest pod counts", job: failed, pods: []corev1.Pod{
			podWith(now.Add(-time.Minute), exit(3, "Error", ""), nil), podWith(now, exit(2, "Error", ""), nil)}, wantReason: v1beta2.ReasonInvalidInput},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status := tc.status
			if status == nil {
				status = &v1beta2.DynamoGraphDeploymentRunStatus{}
			}
			got := Classify(tc.job, tc.pods, status, 60)
			if tc.wantReason == "" {
				if got != nil {
					t.Fatalf("want nil, got %+v", got)
				}
				return
			}
			if got == nil || got.Reason != tc.wantReason {
				t.Fatalf("got %+v, want reason %s", got, tc.wantReason)
			}
			if !strings.Contains(got.Message, tc.wantInMsg) {
				t.Errorf("message %q does not contain %q", got.Message, tc.wantInMsg)
			}
		})
	}
}

// TestSearchLogIsSummarized: whatever the search container's end, its termination message (the
// tail of its log, which may carry a token or replayed traffic) is never in the Run's message;
// the message says how it exited, how many lines the tail has, and how to read them.
func TestSearchLogIsSummarized(t *testing.T) {
	const secret = "hf_LeakedTokenOfTheSearch"
	log := "loading org/m\nGET https://huggingface.co/org/m?token=" + secret + "\n401 Unauthorized"
	failed := finishedJob(batchv1.JobFailed, batchv1.JobReasonBackoffLimitExceeded)
	failed.Namespace = "team"
	noFeasible := &v1beta2.DynamoGraphDeploymentRunStatus{Progress: &v1beta2.RunProgress{Settled: 10, Infeasible: 10}}
	for _, code := range []int32{1, 2, 3, 42, 124, 130, 137} {
		for _, status := range []*v1beta2.DynamoGraphDeploymentRunStatus{{}, noFeasible} {
			pod := podWith(time.Now(), exit(code, "Error", log), nil)
			pod.Name = "llama-run-1-search-x7k2p"
			got := Classify(failed, []corev1.Pod{pod}, status, 60)
			if got == nil || strings.Contains(got.Message, secret) || strings.Contains(got.Message, "401 Unauthorized") {
				t.Errorf("exit %d: %+v quotes the search container's log", code, got)
				continue
			}
			want := fmt.Sprintf("the search container exited with code %d (Error); the last 3 lines of its log are not quoted here, "+
				"read them with `kubectl logs -n team llama-run-1-search-x7k2p -c search`", code)
			if !strings.HasSuffix(got.Message, want) {
				t.Errorf("exit %d: message %q does not end with %q", code, got.Message, want)
			}
		}
	}
}

func TestPhase(t *testing.T) {
	got := map[string]v1beta2.RunPhase{}
	for _, r := range []string{v1beta2.ReasonSucceeded, v1beta2.ReasonCancelled, v1beta2.ReasonSuperseded, v1beta2.ReasonSearchFailed,
		v1beta2.ReasonInvalidInput, v1beta2.ReasonOOMKilled, v1beta2.ReasonPublishFailed} {
		got[r] = Phase(r)
	}
	want := map[string]v1beta2.RunPhase{
		"Succeeded": "Succeeded", "Cancelled": "Cancelled", "Superseded": "Cancelled", "SearchFailed": "Failed",
		"InvalidInput": "Failed", "OOMKilled": "Failed", "PublishFailed": "Failed",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("phases (-want +got):\n%s", diff)
	}
}

func TestStartFailedMessage(t *testing.T) {
	f := &podstart.Failure{Pod: "run-search-x", Container: "search", Reason: "ErrImagePull", Message: `image "bad:1" not found`}
	o := StartFailed(f, 121*time.Second)
	if o.Reason != v1beta2.ReasonSearchPodFailedToStart {
		t.Fatalf("reason %s", o.Reason)
	}
	for _, want := range []string{`pod run-search-x`, `container "search"`, `ErrImagePull (image "bad:1" not found)`, "2m1s", "job.startFailureGraceSeconds", "Job was deleted", "planner.image"} {
		if !strings.Contains(o.Message, want) {
			t.Errorf("message %q does not contain %q", o.Message, want)
		}
	}
}

// TestBaselineFailure: why a baseline Job that ended without its reporter publishing
// status.baseline has no baseline, in status.baseline.error (bounded), for the Candidate.
func TestBaselineFailure(t *testing.T) {
	now := time.Now()
	failed := finishedJob(batchv1.JobFailed, batchv1.JobReasonBackoffLimitExceeded)
	failed.Name = "r-baseline"
	deadline := finishedJob(batchv1.JobFailed, batchv1.JobReasonDeadlineExceeded)
	baseline := func(predict, publication *corev1.ContainerStateTerminated) corev1.Pod {
		p := podWith(now, nil, publication)
		if predict != nil {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: jobcontract.BaselineContainer,
				State: corev1.ContainerState{Terminated: predict}})
		}
		return p
	}
	cases := []struct {
		name      string
		job       *batchv1.Job
		pods      []corev1.Pod
		wantInErr string
	}{
		{"the window is not the search's", failed, []corev1.Pod{withInput(baseline(nil, nil), jobcontract.InputExitWindowMismatch,
			"report --write-input: the trace window cut again hashes to sha256:aa, not to sha256:bb")},
			"the window cut again for the baseline is not the one the search replayed, so the deployed candidate was not predicted under it: report --write-input: the trace window cut again hashes to sha256:aa, not to sha256:bb"},
		{"input failed otherwise", failed, []corev1.Pod{withInput(baseline(nil, nil), 1, "forbidden")},
			"the baseline's input container failed (exit code 1): forbidden"},
		{"the reporter could not publish", failed, []corev1.Pod{withInput(baseline(exit(0, "Completed", ""), exit(1, "Error", "report: patching status.baseline: forbidden")), 0, "{}")},
			"the baseline's reporter could not publish it (exit code 1): report: patching status.baseline: forbidden"},
		{"hung past its deadline", deadline, []corev1.Pod{withInput(baseline(nil, nil), 0, "{}")},
			"the baseline prediction did not finish within job.baselineDeadlineSeconds (60s) of the operator configuration"},
		{"deadline, pod gone", deadline, nil, "job.baselineDeadlineSeconds (60s)"},
		{"failed otherwise", failed, nil, "the baseline Job r-baseline ended (BackoffLimitExceeded: job message) without publishing the baseline"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := BaselineFailure("llama-run-1-c1", c.job, c.pods, 60)
			if got.Candidate != "llama-run-1-c1" || got.Metrics != nil || got.Error != c.wantInErr && !strings.Contains(got.Error, c.wantInErr) {
				t.Errorf("BaselineFailure = %+v, want an error containing %q", got, c.wantInErr)
			}
		})
	}
	long := BaselineFailure("c", failed, []corev1.Pod{withInput(baseline(nil, nil), 1, strings.Repeat("x", 5000))}, 60)
	if len(long.Error) > 2048 {
		t.Errorf("status.baseline.error is %d bytes, over the API's 2048", len(long.Error))
	}
}
