package run

import (
	"context"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/podstart"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/status"
)

// checkStart ends the Run when its search pod cannot start: at once for a final failure (an
// init container that failed, a container whose process could not be started), after
// job.startFailureGraceSeconds for one the kubelet retries (image pull errors, configuration
// errors, a crash loop). It deletes the Job then, so the pod does not wait for the Job's
// deadline. pods are the Job's (runningPods). done says the Run was ended; res requeues it when a
// grace runs out.
func (r *Reconciler) checkStart(ctx context.Context, run *v1beta2.DynamoGraphDeploymentRun, pods []corev1.Pod, events *status.Events) (done bool, res ctrl.Result, err error) {
	f := StartFailureOf(pods)
	if f == nil {
		r.startFailures.Forget(run.UID)
		return false, ctrl.Result{}, nil
	}
	grace := time.Duration(*r.Config.Job.StartFailureGraceSeconds) * time.Second
	due, lasted, wait := podstart.Due(&r.startFailures, run.UID, f, r.Now(), grace)
	if !due {
		return false, ctrl.Result{RequeueAfter: wait}, nil
	}
	if err := r.deleteJob(ctx, run); err != nil {
		return false, ctrl.Result{}, err
	}
	r.startFailures.Forget(run.UID)
	log.FromContext(ctx).Info("search pod failed to start", "pod", f.Pod, "container", f.Container, "reason", f.Reason)
	r.setTerminal(run, StartFailed(f, lasted), events)
	return true, ctrl.Result{}, nil
}

// runningPods lists the pods of a running Job from the informer cache (label-selected by the
// Run's UID); only those the Run's Job controls count: anyone who may create pods can put the
// Run's labels on one.
func (r *Reconciler) runningPods(ctx context.Context, run *v1beta2.DynamoGraphDeploymentRun, job *batchv1.Job) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(run.Namespace), client.MatchingLabels{v1beta2.LabelRunUID: string(run.UID)}); err != nil {
		return nil, err
	}
	return podstart.ControlledBy(pods.Items, job), nil
}

// podRun maps a search pod to its Run through the Run labels the Job's pod template carries
// (componentLabels).
func podRun(_ context.Context, obj client.Object) []reconcile.Request {
	name := obj.GetLabels()[v1beta2.LabelRunName]
	if name == "" || obj.GetLabels()[LabelManagedBy] != ManagedByValue {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}}}
}

// podEvents passes the pod events the Job's own status does not reflect: a container unable to
// start, which ends the Run before the Job's deadline would, and the end of the input
// container, whose report of a re-search's window starts the baseline Job. Other pod changes
// reach the Run through its Job.
func podEvents() builder.Predicates {
	ends := func(obj client.Object) bool {
		pod, ok := obj.(*corev1.Pod)
		return ok && startRule.Of(pod) != nil
	}
	inputEnded := func(old, cur client.Object) bool {
		o, ok1 := old.(*corev1.Pod)
		c, ok2 := cur.(*corev1.Pod)
		return ok1 && ok2 && inputTermination([]corev1.Pod{*o}) == nil && inputTermination([]corev1.Pod{*c}) != nil
	}
	return builder.WithPredicates(predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return ends(e.Object) },
		UpdateFunc:  func(e event.UpdateEvent) bool { return ends(e.ObjectNew) || inputEnded(e.ObjectOld, e.ObjectNew) },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	})
}

// podWatch is the pod source of the Run controller.
func podWatch() (client.Object, handler.EventHandler, builder.WatchesOption) {
	return &corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(podRun), podEvents()
}
