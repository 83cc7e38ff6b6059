// Package controller wires the v1beta2 controllers into a manager and says what the manager's
// cache holds.
package controller

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/request"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/run"
	"github.com/dgdr-operator/dgdr-operator/internal/metrics"
)

// managedSelector selects what the operator creates.
func managedSelector() labels.Selector {
	return labels.SelectorFromSet(labels.Set{run.LabelManagedBy: run.ManagedByValue})
}

// CacheOptions caches only what the operator manages, and only the parts it reads: Jobs and
// Pods are label-selected; managed fields are stripped everywhere; Jobs keep no pod template,
// Pods no spec; terminal Runs drop their recorded input (the
// controllers never read it again; the API server still has it). The configured namespaces bound
// everything. docs/performance.md (P5) measures the effect.
func CacheOptions(cfg *v1alpha1.OperatorConfiguration) cache.Options {
	opts := cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&batchv1.Job{}:                      {Label: managedSelector(), Transform: stripJob},
			&corev1.Pod{}:                       {Label: managedSelector(), Transform: stripPod},
			&v1beta2.DynamoGraphDeploymentRun{}: {Transform: stripTerminalRun},
		},
	}
	if len(cfg.Namespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range cfg.Namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return opts
}

func stripManaged(obj any) {
	if o, ok := obj.(metav1.Object); ok {
		o.SetManagedFields(nil)
	}
}

func stripJob(obj any) (any, error) {
	if j, ok := obj.(*batchv1.Job); ok {
		stripManaged(j)
		j.Spec.Template = corev1.PodTemplateSpec{}
	}
	return obj, nil
}

func stripPod(obj any) (any, error) {
	if p, ok := obj.(*corev1.Pod); ok {
		stripManaged(p)
		p.Spec = corev1.PodSpec{}
	}
	return obj, nil
}

func stripTerminalRun(obj any) (any, error) {
	if r, ok := obj.(*v1beta2.DynamoGraphDeploymentRun); ok {
		stripManaged(r)
		if run.IsTerminal(r) && r.Status.AISimulate != nil {
			r.Status.AISimulate.Input = nil
		}
	}
	return obj, nil
}

// Leader election (a Lease, and the events the lock records):
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Setup registers the request and Run controllers and the metrics.
func Setup(mgr ctrl.Manager, cfg *v1alpha1.OperatorConfiguration) error {
	metrics.Register(mgr.GetCache())
	if err := (&request.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Config:    cfg,
		Recorder:  mgr.GetEventRecorder(request.ControllerName),
	}).SetupWithManager(mgr); err != nil {
		return err
	}
	return (&run.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Config:    cfg,
		Recorder:  mgr.GetEventRecorder(run.ControllerName),
	}).SetupWithManager(mgr)
}
