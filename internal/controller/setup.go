// Package controller wires the v1beta2 controllers into a manager and says what the manager's
// cache holds.
package controller

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/request"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/run"
	"github.com/dgdr-operator/dgdr-operator/internal/metrics"
)

// managedSelector selects what the operator creates.
func managedSelector() labels.Selector {
	return labels.SelectorFromSet(labels.Set{run.LabelManagedBy: run.ManagedByValue})
}

// CacheOptions caches only what the operator manages: Jobs, ConfigMaps and Pods are
// label-selected, managed fields are stripped, and the configured namespaces bound everything.
func CacheOptions(cfg *v1alpha1.OperatorConfiguration) cache.Options {
	opts := cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&batchv1.Job{}:      {Label: managedSelector()},
			&corev1.ConfigMap{}: {Label: managedSelector()},
			&corev1.Pod{}:       {Label: managedSelector()},
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
