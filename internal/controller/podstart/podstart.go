// Package podstart tells when the pod of a Job the operator created cannot start: a container
// the kubelet cannot start or keeps failing to start, an init container that failed, a pod no
// node can hold. It is the one rule for the search Job (Run controller) and the verification Job
// (the request's deployment reconciler): which pods count (ControlledBy), which states are
// failures (Rule), when a failure ends its Job (Due, job.startFailureGraceSeconds), and when a
// Job whose pods are never created has waited long enough (NoPod).
package podstart

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/internal/controller/jobcache"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/status"
)

// Kind is what a start failure calls for, for the advice a controller gives.
type Kind int

// Kinds of start failures.
const (
	// KindOther: an init container that failed, a container whose process could not be started.
	KindOther Kind = iota
	// KindImage: the node cannot pull the image.
	KindImage
	// KindConfig: the kubelet cannot create the container from the pod's configuration (a
	// missing Secret or ConfigMap, a user the image refuses, ...).
	KindConfig
	// KindCrash: the container starts and keeps crashing.
	KindCrash
	// KindUnschedulable: no node can hold the pod.
	KindUnschedulable
)

// waiting are the waiting reasons of a container that cannot start. The kubelet retries them,
// so they end a Job only once they have lasted the grace.
var waiting = map[string]Kind{
	"ErrImagePull":               KindImage,
	"ImagePullBackOff":           KindImage,
	"InvalidImageName":           KindImage,
	"ErrImageNeverPull":          KindImage,
	"CreateContainerConfigError": KindConfig,
	"CreateContainerError":       KindConfig,
	"RunContainerError":          KindConfig,
	"PreStartHookError":          KindConfig,
	"CrashLoopBackOff":           KindCrash,
}

// terminated are the terminated reasons of a container that never ran (the runtime could not
// start its process); with restartPolicy Never nothing retries them.
var terminated = map[string]bool{"StartError": true, "ContainerCannotRun": true}

// Unschedulable is the reason of a pod the scheduler cannot place (its PodScheduled condition).
const Unschedulable = corev1.PodReasonUnschedulable

// Failure is a pod that cannot start: one of its containers, or the pod itself when no node can
// hold it.
type Failure struct {
	// Pod names the pod; Container the container ("" when the pod cannot be scheduled), Init is
	// true for an init container.
	Pod, Container string
	Init           bool
	// Reason is the container's waiting or terminated reason, or Unschedulable; Message the
	// kubelet's or the scheduler's message.
	Reason, Message string
	// Final: nothing will retry it (a failed init container, a container whose process could
	// not be started), so no grace applies.
	Final bool
	// ExitCode of a failed init container.
	ExitCode int32
}

// Key identifies the failing container of a pod: the grace runs while the same one fails.
func (f *Failure) Key() string { return f.Pod + "/" + f.Container }

// Kind is what the failure calls for.
func (f *Failure) Kind() Kind {
	if f.Reason == Unschedulable && f.Container == "" {
		return KindUnschedulable
	}
	return waiting[f.Reason]
}

// Rule is what counts as a start failure for the pods of one kind of Job.
type Rule struct {
	// First is the container the Job is about: its failure is reported before the others'.
	First string
	// Unschedulable makes a pod no node can hold a failure. A search pod waits for capacity, as
	// Kueue and the Job's deadline intend; a verification pod measures a deployment that already
	// runs, and waiting for the Job's deadline only delays the answer.
	Unschedulable bool
	// Sidecars name the init containers with restartPolicy Always (the cache keeps no pod
	// spec to tell): the kubelet restarts one that exits or could not start, so only a waiting
	// reason of theirs counts, once it has lasted the grace (a crash loop).
	Sidecars []string
}

// Of returns what keeps pod from starting, or nil: an unschedulable pod (with
// Rule.Unschedulable), then its init containers, then its containers with Rule.First before the
// others. A pod being deleted is not looked at.
func (r Rule) Of(pod *corev1.Pod) *Failure {
	if !pod.DeletionTimestamp.IsZero() {
		return nil
	}
	for _, c := range pod.Status.Conditions {
		if r.Unschedulable && c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == Unschedulable {
			return &Failure{Pod: pod.Name, Reason: Unschedulable, Message: c.Message}
		}
	}
	for _, cs := range pod.Status.InitContainerStatuses {
		if slices.Contains(r.Sidecars, cs.Name) {
			if w := cs.State.Waiting; w != nil {
				if _, ok := waiting[w.Reason]; ok {
					return &Failure{Pod: pod.Name, Container: cs.Name, Init: true, Reason: w.Reason, Message: w.Message}
				}
			}
			continue
		}
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
			reason := t.Reason
			if reason == "" {
				reason = "Error"
			}
			return &Failure{Pod: pod.Name, Container: cs.Name, Init: true, Reason: reason, Message: t.Message, ExitCode: t.ExitCode, Final: true}
		}
		if w := cs.State.Waiting; w != nil {
			if _, ok := waiting[w.Reason]; ok {
				return &Failure{Pod: pod.Name, Container: cs.Name, Init: true, Reason: w.Reason, Message: w.Message}
			}
		}
	}
	statuses := slices.Clone(pod.Status.ContainerStatuses)
	slices.SortStableFunc(statuses, func(a, b corev1.ContainerStatus) int {
		return rank(a.Name != r.First) - rank(b.Name != r.First)
	})
	for _, cs := range statuses {
		if t := cs.State.Terminated; t != nil && terminated[t.Reason] {
			return &Failure{Pod: pod.Name, Container: cs.Name, Reason: t.Reason, Message: t.Message, ExitCode: t.ExitCode, Final: true}
		}
		if w := cs.State.Waiting; w != nil {
			if _, ok := waiting[w.Reason]; ok {
				return &Failure{Pod: pod.Name, Container: cs.Name, Reason: w.Reason, Message: w.Message}
			}
		}
	}
	return nil
}

func rank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Newest returns the failure of the newest of pods (Of), or nil.
func (r Rule) Newest(pods []corev1.Pod) *Failure {
	sorted := NewestFirst(pods)
	if len(sorted) == 0 {
		return nil
	}
	return r.Of(&sorted[0])
}

// NewestFirst is a copy of pods, the newest first (pods created in the same second keep their
// order). A Job with backoffLimit 0 has one pod; the newest is the one that counts.
func NewestFirst(pods []corev1.Pod) []corev1.Pod {
	sorted := slices.Clone(pods)
	slices.SortStableFunc(sorted, func(a, b corev1.Pod) int { return b.CreationTimestamp.Compare(a.CreationTimestamp.Time) })
	return sorted
}

// Pods lists from c the pods job controls (ControlledBy), found by the label the Job controller
// puts on them.
func Pods(ctx context.Context, c client.Reader, job *batchv1.Job) ([]corev1.Pod, error) {
	var list corev1.PodList
	if err := c.List(ctx, &list, client.InNamespace(job.Namespace), client.MatchingLabels{batchv1.JobNameLabel: job.Name}); err != nil {
		return nil, err
	}
	return ControlledBy(list.Items, job), nil
}

// ControlledBy returns the pods whose controller owner reference (controller: true) is job: a
// batch/v1 Job of its name and UID. A label or a non-controller reference is not enough: both
// can be set by whoever creates the pod, while the Job controller sets itself as the controller
// of the pods it creates.
func ControlledBy(pods []corev1.Pod, job *batchv1.Job) []corev1.Pod {
	out := make([]corev1.Pod, 0, len(pods))
	for i := range pods {
		for _, ref := range pods[i].OwnerReferences {
			if ref.Controller != nil && *ref.Controller && ref.APIVersion == batchv1.SchemeGroupVersion.String() && ref.Kind == "Job" &&
				ref.Name == job.Name && ref.UID == job.UID {
				out = append(out, pods[i])
				break
			}
		}
	}
	return out
}

// Due tells whether f ends its Job now: a final failure at once, a retried one once the same
// container (or the unschedulable pod) has kept failing for grace. seen remembers, per Job owner
// uid, since when; the caller forgets uid once its Job ends or its pod recovers. lasted is how
// long the failure has lasted; when it is not due, wait is how long until it is.
func Due(seen *status.Sightings, uid types.UID, f *Failure, now time.Time, grace time.Duration) (due bool, lasted, wait time.Duration) {
	if f.Final {
		return true, 0, 0
	}
	lasted = now.Sub(seen.Since(uid, f.Key(), now))
	if lasted < grace {
		return false, lasted, grace - lasted
	}
	return true, lasted, 0
}

// NoPod tells whether job, neither suspended nor finished, still has no pod grace after it was
// created: the Job controller creates a Job's pod within seconds, so the API server refuses its
// pods (admission, a ResourceQuota, a LimitRange: the Job's FailedCreate events say which), or
// the Job controller is not running. The Job's status says no more. pods are the Job's
// (ControlledBy). When not yet, wait is how long until it would be.
func NoPod(job *batchv1.Job, pods []corev1.Pod, now time.Time, grace time.Duration) (bool, time.Duration) {
	if len(pods) > 0 || job.Status.Active > 0 || job.Status.Failed > 0 || job.Status.Succeeded > 0 ||
		(job.Spec.Suspend != nil && *job.Spec.Suspend) || jobcache.Finished(job) != nil {
		return false, 0
	}
	if age := now.Sub(job.CreationTimestamp.Time); age < grace {
		return false, grace - age
	}
	return true, 0
}

// Describe says what failed and for how long, without the pod ("container \"aiperf\" stayed in
// ErrImagePull (...) for 2m0s (job.startFailureGraceSeconds)"), quoting at most the last
// maxMessage bytes of the kubelet's or scheduler's message.
func (f *Failure) Describe(lasted time.Duration, maxMessage int) string {
	msg := strings.TrimSpace(f.Message)
	if len(msg) > maxMessage {
		msg = "…" + msg[len(msg)-maxMessage:]
	}
	if msg != "" {
		msg = " (" + msg + ")"
	}
	what := fmt.Sprintf("container %q", f.Container)
	if f.Init {
		what = "init " + what
	}
	switch {
	case f.Kind() == KindUnschedulable:
		return fmt.Sprintf("no node could hold it, %s%s for %s (job.startFailureGraceSeconds)", f.Reason, msg, lasted.Round(time.Second))
	case f.Init && f.Final:
		return fmt.Sprintf("%s failed with exit code %d, %s%s", what, f.ExitCode, f.Reason, msg)
	case f.Final:
		return fmt.Sprintf("%s could not be started, %s%s", what, f.Reason, msg)
	default:
		return fmt.Sprintf("%s stayed in %s%s for %s (job.startFailureGraceSeconds)", what, f.Reason, msg, lasted.Round(time.Second))
	}
}
