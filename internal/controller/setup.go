// Package controller wires the v1beta2 controllers into a manager and says what the manager's
// cache holds.
package controller

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crconfig "sigs.k8s.io/controller-runtime/pkg/config"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/config"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/deployment"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/fit"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/jobcache"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/request"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/research"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/run"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/internal/metrics"
	"github.com/dgdr-operator/dgdr-operator/internal/rights"
)

// managedSelector selects what the operator creates.
func managedSelector() labels.Selector {
	return labels.SelectorFromSet(labels.Set{run.LabelManagedBy: run.ManagedByValue})
}

// CacheOptions declares every kind the operator reads through the manager's cache (ByObject),
// and caches only what the operator manages, and only the parts it reads: Jobs and Pods are
// label-selected, and those that succeeded are not cached (jobcache); managed fields are
// stripped everywhere; Jobs keep only whether they are suspended, their active count and
// conditions; Pods no spec; accepted requests drop their
// spec and terminal Runs their spec, recorded input, progress and candidate list (the
// controllers never read them again; the API server still has them); Candidates keep of their
// parameters only engine.hardware, and Nodes only their labels, cordon and allocatable GPUs
// (what fitsCluster and GPU discovery read). The configured namespaces bound everything
// namespaced. docs/develop/performance.md (P5) measures the effect.
//
// Nothing writes a cached object back whole (status and metadata are JSON merge patches
// computed against the cached object itself), so a stripped field is never cleared on the
// server.
//
// A read through the cache of a kind not declared in ByObject fails at once
// (cache.ErrResourceNotCached, ReaderFailOnMissingInformer): otherwise it would start a
// cluster-wide informer for that kind and wait for it to sync, which without list and watch in
// the operator's RBAC never happens and blocks the reconcile worker for good. Everything else
// is read through the manager's API reader. AddInformers starts the informer of every declared
// kind; TestCachedKindsAreListedAndWatched and TestChartRBACCoversTheOperatorsReads (test/chart)
// hold the RBAC to them.
func CacheOptions(cfg *v1alpha1.OperatorConfiguration) cache.Options {
	opts := cache.Options{
		DefaultTransform:            cache.TransformStripManagedFields(),
		ReaderFailOnMissingInformer: true,
		ByObject: map[client.Object]cache.ByObject{
			&batchv1.Job{}:                            {Label: managedSelector(), Field: jobcache.Selector(), Transform: stripJob},
			&corev1.Pod{}:                             {Label: managedSelector(), Field: jobcache.PodSelector(), Transform: stripPod},
			&rbacv1.Role{}:                            {Label: managedSelector()},
			&v1beta2.DynamoGraphDeploymentRun{}:       {Transform: stripTerminalRun},
			&v1beta2.DynamoGraphDeploymentRequest{}:   {Transform: stripAcceptedRequest},
			&v1beta2.DynamoGraphDeploymentCandidate{}: {Transform: fit.StripCandidate},
		},
	}
	// Nodes and the DynamoGraphDeployment CRD are cluster-scoped: no namespace bounds them.
	// Without GPU discovery no Node is read. Of CRDs only that one is cached, and only whether it
	// is established (autoApply waits for it).
	defer func() {
		if config.GPUDiscoveryEnabled(cfg) {
			opts.ByObject[&corev1.Node{}] = cache.ByObject{Transform: fit.StripNode}
		}
		opts.ByObject[deployment.DGDCRDObject()] = cache.ByObject{
			Field:     fields.OneTermEqualSelector("metadata.name", deployment.DGDCRDName),
			Transform: deployment.StripCRD,
		}
	}()
	if len(cfg.Namespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range cfg.Namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
		return opts
	}
	// Watching every namespace, the operator still never works in the cluster's own
	// (jobcontract.SystemNamespaces): what it manages there is not even cached, so nothing there
	// is reconciled (admission refuses requests there, and the chart's fence refuses the
	// operator's writes there).
	for obj, by := range opts.ByObject {
		if by.Field == nil {
			by.Field = notInSystemNamespaces()
		} else {
			by.Field = fields.AndSelectors(by.Field, notInSystemNamespaces())
		}
		opts.ByObject[obj] = by
	}
	return opts
}

// notInSystemNamespaces selects objects outside jobcontract.SystemNamespaces.
func notInSystemNamespaces() fields.Selector {
	sel := make([]fields.Selector, 0, len(jobcontract.SystemNamespaces))
	for _, ns := range jobcontract.SystemNamespaces {
		sel = append(sel, fields.OneTermNotEqualSelector("metadata.namespace", ns))
	}
	return fields.AndSelectors(sel...)
}

func stripManaged(obj any) {
	if o, ok := obj.(metav1.Object); ok {
		o.SetManagedFields(nil)
	}
}

// stripJob keeps what the Run controller reads of a Job: identity, owners, creation time,
// whether it is suspended (Kueue), its active pods and its conditions. Jobs are fetched by name
// and mapped to their Run by owner, never listed by label from the cache.
func stripJob(obj any) (any, error) {
	if j, ok := obj.(*batchv1.Job); ok {
		stripManaged(j)
		j.Labels, j.Annotations = nil, nil
		j.Spec = batchv1.JobSpec{Suspend: j.Spec.Suspend}
		j.Status = batchv1.JobStatus{Active: j.Status.Active, Conditions: j.Status.Conditions}
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

// stripTerminalRun: the Run controller ignores terminal Runs, and the request's reconcilers and
// the runs gauge read only their identity, labels, owner, phase, Completed reason and best
// candidate. A terminal Run never changes again, so nothing else of it is worth keeping.
func stripTerminalRun(obj any) (any, error) {
	r, ok := obj.(*v1beta2.DynamoGraphDeploymentRun)
	if !ok {
		return obj, nil
	}
	stripManaged(r)
	if !run.IsTerminal(r) {
		return obj, nil
	}
	st := r.Status
	// A re-search Run's window end orders the Runs of its generation; its baseline annotation
	// names what it compared.
	end, isResearch := r.Annotations[v1beta2.AnnotationResearchWindowEnd]
	baseline := r.Annotations[v1beta2.AnnotationResearchBaseline]
	r.Annotations = nil
	if isResearch {
		r.Annotations = map[string]string{v1beta2.AnnotationResearchWindowEnd: end, v1beta2.AnnotationResearchBaseline: baseline}
	}
	r.Spec = v1beta2.DynamoGraphDeploymentRequestSpec{}
	// The completion time of the deployed Run is when its re-searches may start.
	r.Status = v1beta2.DynamoGraphDeploymentRunStatus{Phase: st.Phase, CompletionTime: st.CompletionTime}
	if c := meta.FindStatusCondition(st.Conditions, v1beta2.ConditionCompleted); c != nil {
		completed := *c
		completed.Message = ""
		r.Status.Conditions = []metav1.Condition{completed}
	}
	if rec := st.Recommendation; rec != nil {
		r.Status.Recommendation = &v1beta2.RecommendationSummary{BestCandidate: rec.BestCandidate}
	}
	return obj, nil
}

// stripAcceptedRequest: the request reconciler reads a request's spec only to accept a new
// generation (generation > status.observedGeneration); an accepted one keeps its metadata,
// status, spec.deployment's autoApply, name and verification, and spec.research. kubectl's last-applied annotation (a second
// copy of the spec) is never read.
func stripAcceptedRequest(obj any) (any, error) {
	if r, ok := obj.(*v1beta2.DynamoGraphDeploymentRequest); ok {
		stripManaged(r)
		delete(r.Annotations, corev1.LastAppliedConfigAnnotation)
		if r.Generation == r.Status.ObservedGeneration && r.DeletionTimestamp.IsZero() {
			// The deployment reconciler reads spec.deployment.autoApply, name and verification on
			// every reconcile, and the research reconciler the schedule (a tick reads the whole
			// request).
			var kept *v1beta2.DeploymentSpec
			if d := r.Spec.Deployment; d != nil && (d.AutoApply != nil || d.Name != "" || d.Verification != nil) {
				kept = &v1beta2.DeploymentSpec{AutoApply: d.AutoApply, Name: d.Name, Verification: d.Verification}
			}
			r.Spec = v1beta2.DynamoGraphDeploymentRequestSpec{Deployment: kept, Research: r.Spec.Research}
		}
	}
	return obj, nil
}

// Events on the objects the controllers manage, in their namespaces (leader election's Lease
// and events live in the operator's own namespace: a Role in the chart, not cluster-wide).
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// ControllerConfig is the manager's configuration of its controllers: every reconcile of every
// controller runs under reconciliationTimeout (controller-runtime ends its context then). An API
// call that never returns (a cached read of a kind that cannot sync, an API server that does
// not answer) thus fails its reconcile, which is retried with backoff, instead of holding a
// worker for good; with all workers held no object of the kind would be reconciled again. No
// controller sets a timeout of its own.
func ControllerConfig(cfg *v1alpha1.OperatorConfiguration) crconfig.Controller {
	timeout := config.DefaultReconciliationTimeout // a configuration not defaulted
	if cfg.ReconciliationTimeout != nil {
		timeout = cfg.ReconciliationTimeout.Duration
	}
	return crconfig.Controller{ReconciliationTimeout: timeout}
}

// AddInformers adds to mgr's cache (made with CacheOptions) the informer of every kind
// CacheOptions declares: they start and sync with the cache, before any controller or webhook
// reads them, whether or not a controller watches the kind. All but the requests': listing them
// converts every stored v1beta1 request through the operator's own conversion webhook, which
// serves only once the webhook certificate exists, and the certificate rotator (self-signed
// mode) runs only after the cache synced; the request informer starts with the request
// controller, its only reader, after both.
func AddInformers(mgr ctrl.Manager, cfg *v1alpha1.OperatorConfiguration) error {
	for obj := range CacheOptions(cfg).ByObject {
		if _, converted := obj.(*v1beta2.DynamoGraphDeploymentRequest); converted {
			continue
		}
		if _, err := mgr.GetCache().GetInformer(context.Background(), obj); err != nil {
			return fmt.Errorf("adding the informer of %T: %w", obj, err)
		}
	}
	return nil
}

// Setup registers the informers (AddInformers), the controllers and the metrics: the request's
// three reconcilers (its generations and Runs, its deployment, its re-searches; each writes its
// own share of the request's status, request.StatusOwners), the Run controller and, with GPU
// discovery, the fit controller.
func Setup(mgr ctrl.Manager, cfg *v1alpha1.OperatorConfiguration) error {
	if err := AddInformers(mgr, cfg); err != nil {
		return err
	}
	metrics.Register(mgr.GetCache())
	// The deployment and research reconcilers ask whether the request's reviewed user still
	// holds the rights before each write on their behalf; one Checker keeps the verdicts of both.
	checker := &rights.Checker{SAR: mgr.GetClient(), Reader: mgr.GetAPIReader()}
	reconcilers := []interface{ SetupWithManager(ctrl.Manager) error }{
		&request.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Config: cfg,
			Recorder: mgr.GetEventRecorder(request.RequestOwner.Manager)},
		&deployment.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Config: cfg,
			Recorder: mgr.GetEventRecorder(request.DeploymentOwner.Manager), Rights: checker},
		&research.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Config: cfg,
			Recorder: mgr.GetEventRecorder(request.ResearchOwner.Manager), Rights: checker},
		&run.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Config: cfg,
			Recorder: mgr.GetEventRecorder(run.ControllerName)},
	}
	if config.GPUDiscoveryEnabled(cfg) {
		// Without it the operator reads no Nodes: Candidates get no fitsCluster.
		reconcilers = append(reconcilers, &fit.Reconciler{Client: mgr.GetClient()})
	}
	for _, r := range reconcilers {
		if err := r.SetupWithManager(mgr); err != nil {
			return err
		}
	}
	return nil
}
