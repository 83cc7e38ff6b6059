package deployment

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/podstart"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/run"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/status"
	"github.com/dgdr-operator/dgdr-operator/internal/verification"
)

// verificationStartRule is what counts as a start failure of a verification pod: the rule of
// search pods, and a pod no node can hold (the deployment it measures already runs).
var verificationStartRule = podstart.Rule{First: verification.ContainerName, Unschedulable: true}

// checkVerificationStart ends the running verification of job when its pod cannot start
// (verificationStartRule): at once for a final failure, once it has lasted
// job.startFailureGraceSeconds for one the kubelet retries (an image it cannot pull, a
// configuration error, a crash loop) or a pod no node can hold; and when the Job has created no
// pod that long after its creation (its pods are refused). It deletes the Job, so that its pod
// does not wait for the Job's deadline. Otherwise again is when a failure's grace runs out.
func (r *Reconciler) checkVerificationStart(ctx context.Context, dgdr *v1beta2.DynamoGraphDeploymentRequest, job *batchv1.Job, events *status.Events) (ended bool, again time.Duration, err error) {
	pods, err := podstart.Pods(ctx, r.Client, job)
	if err != nil {
		return false, 0, err
	}
	grace := time.Duration(*r.Config.Job.StartFailureGraceSeconds) * time.Second
	now := r.now()
	var msg string
	if f := verificationStartRule.Newest(pods); f != nil {
		due, lasted, wait := podstart.Due(&r.verificationStarts, dgdr.UID, f, now, grace)
		if !due {
			return false, wait, nil
		}
		msg = fmt.Sprintf("the verification pod %s could not start: %s; Job %s was deleted. %s",
			f.Pod, f.Describe(lasted, 1024), job.Name, verificationStartAdvice(f.Kind()))
	} else {
		r.verificationStarts.Forget(dgdr.UID)
		if no, wait := podstart.NoPod(job, pods, now, grace); !no {
			return false, wait, nil
		}
		// The cache keeps of a Job only its active count; the API server's copy says whether a
		// pod of it ever ran.
		live := &batchv1.Job{}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(job), live); err != nil {
			return false, 0, client.IgnoreNotFound(err)
		}
		if no, _ := podstart.NoPod(live, pods, now, grace); !no || live.UID != job.UID {
			return false, 0, nil
		}
		msg = fmt.Sprintf("Job %s created no pod within %s (job.startFailureGraceSeconds): the API server refuses its pods "+
			"(admission, a ResourceQuota or a LimitRange; the Job's FailedCreate events say which), or the Job controller is not running; the Job was deleted",
			job.Name, grace)
	}
	r.verificationStarts.Forget(dgdr.UID)
	err = r.Client.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: &job.UID})
	if client.IgnoreNotFound(err) != nil {
		return false, 0, fmt.Errorf("deleting verification Job %s: %w", job.Name, err)
	}
	r.failVerification(dgdr, *dgdr.Status.Verification, verification.ReasonPodFailedToStart, msg, events)
	return true, 0, nil
}

// verificationStartAdvice says what to check when the verification pod cannot start.
func verificationStartAdvice(k podstart.Kind) string {
	switch k {
	case podstart.KindImage:
		return "Check that verification.image of the operator configuration exists and that the node can pull it"
	case podstart.KindCrash:
		return "See the container's logs"
	case podstart.KindUnschedulable:
		return "Check that a node can hold the verification pod: job.nodeSelector, job.tolerations, job.priorityClassName and verification.resources of the operator configuration"
	default:
		return "Check that verification.image runs as the non-root job.runAsUser/runAsGroup of the operator configuration with a read-only root file system"
	}
}

// verificationPodWatch is the pod source of the deployment reconciler: a verification pod that
// cannot start reaches its request (checkVerificationStart); its Job's status says nothing while
// the pod waits. Other pod changes reach the request through its Job.
func verificationPodWatch() (client.Object, handler.EventHandler, builder.WatchesOption) {
	cannotStart := func(obj client.Object) bool {
		pod, ok := obj.(*corev1.Pod)
		return ok && pod.Labels[run.LabelComponent] == verification.ComponentValue && verificationStartRule.Of(pod) != nil
	}
	toRequest := func(_ context.Context, obj client.Object) []reconcile.Request {
		name := obj.GetLabels()[v1beta2.LabelRequestName]
		if name == "" || obj.GetLabels()[run.LabelComponent] != verification.ComponentValue {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}}}
	}
	return &corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(toRequest), builder.WithPredicates(predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return cannotStart(e.Object) },
		UpdateFunc:  func(e event.UpdateEvent) bool { return cannotStart(e.ObjectNew) },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	})
}
