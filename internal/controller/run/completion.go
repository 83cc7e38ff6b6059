package run

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/jobcache"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/podstart"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/internal/requesttrace"
)

// maxTerminationMessage bounds the part of a container's termination message quoted in status.
const maxTerminationMessage = 1024

// Completion is how a Run ends: the reason and message of its Completed condition (True), from
// which its terminal phase, message and event follow (setTerminal).
type Completion struct {
	// Reason is the Completed condition's reason.
	Reason string
	// Message tells the user what happened and what to do about it.
	Message string
}

// Phase is the display phase of a terminal reason.
func Phase(reason string) v1beta2.RunPhase {
	switch reason {
	case v1beta2.ReasonSucceeded:
		return v1beta2.RunPhaseSucceeded
	case v1beta2.ReasonCancelled, v1beta2.ReasonSuperseded:
		return v1beta2.RunPhaseCancelled
	default:
		return v1beta2.RunPhaseFailed
	}
}

// terminations returns the terminated states of the search container and of the publication
// container (which ends with the reporter's outcome: its exit code and message), taken from the
// newest pod that has one (a Job with backoffLimit 0 has one pod, but be robust), and the name of
// the pod the search container's state is from.
func terminations(pods []corev1.Pod) (search, publication *corev1.ContainerStateTerminated, searchPod string) {
	sorted := podstart.NewestFirst(pods)
	for i := range sorted {
		for _, cs := range sorted[i].Status.ContainerStatuses {
			t := cs.State.Terminated
			if t == nil {
				t = cs.LastTerminationState.Terminated
			}
			if t == nil {
				continue
			}
			switch cs.Name {
			case jobcontract.SearchContainer:
				if search == nil {
					search, searchPod = t, sorted[i].Name
				}
			case jobcontract.PublicationContainer:
				if publication == nil {
					publication = t
				}
			}
		}
		if search != nil {
			return search, publication, searchPod
		}
	}
	return search, publication, searchPod
}

// inputTermination is the newest pod's terminated input init container, if any.
func inputTermination(pods []corev1.Pod) *corev1.ContainerStateTerminated {
	sorted := podstart.NewestFirst(pods)
	for i := range sorted {
		for _, cs := range sorted[i].Status.InitContainerStatuses {
			if cs.Name == jobcontract.InputContainer && cs.State.Terminated != nil {
				return cs.State.Terminated
			}
		}
	}
	return nil
}

// WindowReport reads the summary a re-search's input container reports in its termination
// message after cutting the window (exit 0, or jobcontract.InputExitInsufficientTraffic); nil
// when it has not, or the message is not a summary.
func WindowReport(pods []corev1.Pod) (*requesttrace.WindowSummary, int32) {
	t := inputTermination(pods)
	if t == nil || (t.ExitCode != 0 && t.ExitCode != jobcontract.InputExitInsufficientTraffic) {
		return nil, 0
	}
	var sum requesttrace.WindowSummary
	dec := json.NewDecoder(strings.NewReader(t.Message))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sum); err != nil || sum.SHA256 == "" {
		return nil, 0
	}
	return &sum, t.ExitCode
}

// windowRejected is the Completion of a re-search whose input container refused to cut its
// window (jobcontract.InputExitWindowTooLarge or InputExitWindowMalformed: its termination
// message names the bound or the record), nil otherwise.
func windowRejected(pods []corev1.Pod) *Completion {
	t := inputTermination(pods)
	if t == nil {
		return nil
	}
	switch t.ExitCode {
	case jobcontract.InputExitWindowTooLarge:
		return &Completion{Reason: v1beta2.ReasonTraceWindowTooLarge, Message: "the window of captured traffic was not cut" + quote(t) +
			"; nothing was searched: a shorter spec.research.windowMinutes holds fewer requests"}
	case jobcontract.InputExitWindowMalformed:
		return &Completion{Reason: v1beta2.ReasonTraceWindowMalformed, Message: "the window of captured traffic was not cut" + quote(t) +
			"; nothing was searched: the capture claim holds a record its Frontend did not write"}
	}
	return nil
}

func insufficientTraffic(sum *requesttrace.WindowSummary) *Completion {
	return &Completion{Reason: v1beta2.ReasonInsufficientTraffic, Message: fmt.Sprintf(
		"the window of captured traffic holds %d requests (from %d segments of %d Frontend pods), fewer than spec.research.minRequests; nothing was searched",
		sum.Requests, sum.Segments, sum.Pods)}
}

// searchLog describes how the search container ended without quoting its log: its exit code,
// its reason, how many lines its termination message holds, and the command that reads the log.
// The search container writes no termination message of its own, so that message is the tail of
// its log (FallbackToLogsOnError), which may carry whatever the search read or was told (a model
// repository's error with a token in it, the traffic it replayed); Run status is read by everyone
// who may read Runs, the log only by those who may read pods/log. namespace and pod name the
// search pod.
func searchLog(namespace, pod string, t *corev1.ContainerStateTerminated) string {
	lines := 0
	if msg := strings.TrimSpace(t.Message); msg != "" {
		lines = strings.Count(msg, "\n") + 1
	}
	return fmt.Sprintf("the search container exited with code %d (%s); the last %d lines of its log are not quoted here, read them with `kubectl logs -n %s %s -c %s`",
		t.ExitCode, orDefault(t.Reason, "Error"), lines, namespace, orDefault(pod, "<search pod>"), jobcontract.SearchContainer)
}

// quote returns ": <message>" for a non-empty termination message of a container of the
// operator's own image (the reporter's outcome, the input container's), bounded. The search
// container's is never quoted (searchLog).
func quote(t *corev1.ContainerStateTerminated) string {
	if t == nil {
		return ""
	}
	msg := strings.TrimSpace(t.Message)
	if msg == "" {
		return ""
	}
	if len(msg) > maxTerminationMessage {
		msg = "…" + msg[len(msg)-maxTerminationMessage:]
	}
	return ": " + msg
}

// noFeasible tells whether the reporter's published progress shows a search that evaluated
// candidates and found none feasible.
func noFeasible(status *v1beta2.DynamoGraphDeploymentRunStatus) bool {
	if r := status.Recommendation; r != nil && r.Evaluated > 0 {
		return r.Feasible == 0
	}
	if p := status.Progress; p != nil && p.Settled > 0 {
		return p.Feasible == 0
	}
	return false
}

// Classify derives the Completion of a finished Job from its conditions, the exit codes of
// its pod's containers (the search's, and the publication container's, which is the reporter's
// outcome), and the progress the reporter published on the Run. It returns nil while the Job has
// not finished.
func Classify(job *batchv1.Job, pods []corev1.Pod, status *v1beta2.DynamoGraphDeploymentRunStatus, deadlineSeconds int64) *Completion {
	fin := jobcache.Finished(job)
	if fin == nil {
		return nil
	}
	search, reporter, searchPod := terminations(pods)
	if sum, code := WindowReport(pods); sum != nil && code == jobcontract.InputExitInsufficientTraffic {
		return insufficientTraffic(sum)
	}
	if c := windowRejected(pods); c != nil {
		return c
	}
	if f := StartFailureOf(pods); f != nil && f.Final {
		return StartFailed(f, 0)
	}
	if fin.Type == batchv1.JobFailed && fin.Reason == batchv1.JobReasonDeadlineExceeded {
		return &Completion{Reason: v1beta2.ReasonDeadlineExceeded, Message: fmt.Sprintf(
			"the search did not finish within job.activeDeadlineSeconds (%ds) of the operator configuration; lower optimizer.max_trials through spec.aisimulate.inputOverrides, narrow the search, or ask the operator admin to raise the deadline", deadlineSeconds)}
	}
	if fin.Type == batchv1.JobComplete {
		return &Completion{Reason: v1beta2.ReasonSucceeded, Message: "the search finished and its candidates are published"}
	}
	if reporter != nil && reporter.ExitCode == jobcontract.ReporterExitOutputRejected {
		return outputRejected(reporter)
	}
	if o := evicted(pods); o != nil {
		return o
	}
	if search == nil {
		return &Completion{Reason: v1beta2.ReasonSearchFailed, Message: fmt.Sprintf(
			"the search Job failed (%s: %s) before the search container reported an exit code; check the Job's events",
			fin.Reason, strings.TrimSpace(fin.Message))}
	}
	logs := searchLog(job.Namespace, searchPod, search)
	if search.Reason == "OOMKilled" {
		return oomKilled(logs)
	}
	switch search.ExitCode {
	case aisimulate.ExitOK:
		if reporter != nil && reporter.ExitCode != 0 {
			return &Completion{Reason: v1beta2.ReasonPublishFailed, Message: fmt.Sprintf(
				"the search succeeded but the reporter could not publish its result (exit code %d)%s; the output is lost with the pod, create a new generation to search again",
				reporter.ExitCode, quote(reporter))}
		}
		return &Completion{Reason: v1beta2.ReasonSearchFailed, Message: fmt.Sprintf(
			"the search Job failed (%s) although the search container exited 0%s", fin.Reason, quote(reporter))}
	case aisimulate.ExitFailure:
		if noFeasible(status) {
			return &Completion{Reason: v1beta2.ReasonNoFeasibleCandidate, Message: "the search finished but no candidate met the SLA and constraints; " +
				"relax spec.sla, raise spec.hardware.gpu.budget or lower the load; " + logs}
		}
		return &Completion{Reason: v1beta2.ReasonSearchFailed, Message: "AISimulate failed; " + logs}
	case aisimulate.ExitInvalidInput:
		return &Completion{Reason: v1beta2.ReasonInvalidInput, Message: "AISimulate rejected the effective input; the document is in status.aisimulate.input, " +
			"fix the request spec or spec.aisimulate.inputOverrides (the log names the field); " + logs}
	case aisimulate.ExitResourceLimited:
		return &Completion{Reason: v1beta2.ReasonResourceLimited, Message: "AISimulate refused to run for lack of resources; " +
			"lower optimizer.parallelism through spec.aisimulate.inputOverrides or ask the operator admin to raise planner.resources; " + logs}
	case aisimulate.ExitTimeout:
		// AISimulate's supervisor exits 124 when its worker process does not start or stop
		// within execution.resources' budgets (aisimulate/supervision.py _run_process), even
		// after a complete search; the Job's own deadline is DeadlineExceeded above.
		return &Completion{Reason: v1beta2.ReasonSearchFailed, Message: "AISimulate's supervisor timed out starting or stopping its worker process; " +
			"raise execution.resources.initialization_timeout_seconds or shutdown_timeout_seconds through spec.aisimulate.inputOverrides, or ask the operator admin for more planner.resources; " + logs}
	case aisimulate.ExitKilled:
		return oomKilled(logs)
	case aisimulate.ExitInterrupted:
		return &Completion{Reason: v1beta2.ReasonSearchFailed, Message: "the search was interrupted; create a new generation to search again; " + logs}
	default:
		return &Completion{Reason: v1beta2.ReasonSearchFailed, Message: "the search failed; " + logs}
	}
}

func oomKilled(logs string) *Completion {
	return &Completion{Reason: v1beta2.ReasonOOMKilled, Message: "the search container was killed, usually for exceeding its memory limit; " +
		"lower optimizer.parallelism through spec.aisimulate.inputOverrides or ask the operator admin to raise planner.resources.limits.memory; " + logs}
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

const (
	imageAdvice  = "Check that the image of the operator configuration (planner.image for the search container, reporter.image for the others) exists and that the node can pull it"
	configAdvice = "Check the Secrets and claims the pod references (spec.model), and that the image runs as the non-root job.runAsUser/runAsGroup of the operator configuration with a read-only root file system"
)

// startRule is what counts as a start failure of a search pod: the search container first; the
// reporter is a sidecar the kubelet restarts; a pod no node can hold waits for capacity, as
// Kueue and the Job's deadline intend.
var startRule = podstart.Rule{First: jobcontract.SearchContainer, Sidecars: []string{jobcontract.ReporterContainer}}

// StartFailureOf returns the start failure of the Job's newest pod (startRule), or nil.
func StartFailureOf(pods []corev1.Pod) *podstart.Failure {
	return startRule.Newest(pods)
}

// StartFailed is the Completion of a search pod that could not start; lasted is how long
// the failure had lasted (0 for a final one).
func StartFailed(f *podstart.Failure, lasted time.Duration) *Completion {
	var b strings.Builder
	fmt.Fprintf(&b, "the search pod %s could not start: %s; the search Job was deleted. ", f.Pod, f.Describe(lasted, maxTerminationMessage))
	switch f.Kind() {
	case podstart.KindImage:
		b.WriteString(imageAdvice)
	case podstart.KindCrash:
		b.WriteString("See the container's logs")
	default:
		if f.Init && f.Container == jobcontract.InputContainer {
			b.WriteString("The input init container could not write the Run's recorded input; see its logs")
		} else {
			b.WriteString(configAdvice)
		}
	}
	return &Completion{Reason: v1beta2.ReasonSearchPodFailedToStart, Message: b.String()}
}

// outputRejected is the Completion of a reporter that refused the search output.
func outputRejected(reporter *corev1.ContainerStateTerminated) *Completion {
	return &Completion{Reason: v1beta2.ReasonOutputRejected, Message: fmt.Sprintf(
		"the reporter refused the search output and published nothing (exit code %d)%s; the search image (planner.image of the operator configuration) wrote a result the reporter does not accept (docs/operate/security.md lists the caps)",
		reporter.ExitCode, quote(reporter))}
}

// evicted is the Completion of a Job whose newest pod the kubelet evicted: for writing more than
// the output volume's sizeLimit (OutputRejected), or for another reason (SearchFailed).
func evicted(pods []corev1.Pod) *Completion {
	var newest *corev1.Pod
	if sorted := podstart.NewestFirst(pods); len(sorted) > 0 {
		newest = &sorted[0]
	}
	if newest == nil || newest.Status.Reason != "Evicted" {
		return nil
	}
	msg := strings.TrimSpace(newest.Status.Message)
	if len(msg) > maxTerminationMessage {
		msg = msg[:maxTerminationMessage] + "…"
	}
	if strings.Contains(msg, fmt.Sprintf("volume %q", jobcontract.OutputVolume)) {
		return &Completion{Reason: v1beta2.ReasonOutputRejected, Message: fmt.Sprintf(
			"the search pod %s was evicted for writing more output than job.outputSizeLimit of the operator configuration allows (%s); nothing was published", newest.Name, msg)}
	}
	return &Completion{Reason: v1beta2.ReasonSearchFailed, Message: fmt.Sprintf(
		"the search pod %s was evicted (%s); create a new request generation to search again", newest.Name, msg)}
}
