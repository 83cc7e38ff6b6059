// Package controllertest holds what the controllers' integration tests share beyond
// internal/testing: a manager configured like the operator's, helpers that play the part of the
// Job controller, the kubelet, the reporter and the Dynamo operator (envtest runs none of them),
// and the check that the request's reconcilers wrote only their share of its status.
package controllertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/internal/config"
	"github.com/dgdr-operator/dgdr-operator/internal/controller"
	"github.com/dgdr-operator/dgdr-operator/internal/gpunodes"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/internal/scheme"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
)

// Images of the test configuration.
const (
	PlannerImage  = "registry.example/dynamo-planner:test"
	ReporterImage = "registry.example/dgdr-operator:test"
)

// Config is the operator configuration of the tests: the gate on, small limits.
func Config() *v1alpha1.OperatorConfiguration {
	cfg := config.Default()
	cfg.Planner.Image = PlannerImage
	cfg.Reporter.Image = ReporterImage
	cfg.FeatureGates = map[string]bool{"DGDRV1Beta2": true}
	cfg.AutoApply.Enabled = true // the autoApply tests deploy
	cfg.RuntimeImages = map[string]v1alpha1.RuntimeImage{
		output.BackendVLLM:   {Image: "registry.example/vllm-runtime:1", EngineVersion: "0.31.0"},
		output.BackendSGLang: {Image: "registry.example/sglang-runtime:1", EngineVersion: "0.5.21"},
	}
	return cfg
}

// NewManager returns a manager on env with the operator's cache options (and the webhook
// server where env installed webhooks), with the API server's admin identity.
func NewManager(env *testenv.Env, cfg *v1alpha1.OperatorConfiguration) (ctrl.Manager, error) {
	return NewManagerAs(env, env.Config, cfg)
}

// NewManagerAs is NewManager with the identity of restCfg (OperatorIdentity).
func NewManagerAs(env *testenv.Env, restCfg *rest.Config, cfg *v1alpha1.OperatorConfiguration) (ctrl.Manager, error) {
	opts := ctrl.Options{
		Scheme:                 scheme.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  controller.CacheOptions(cfg),
		Controller:             controller.ControllerConfig(cfg),
		// What the tests keep of the operator's logs: the status writes refused for ownership
		// (CheckStatusOwners).
		Logger: refusals.logger(),
	}
	// Controllers in several managers of one process (restart tests) need distinct names.
	skip := true
	opts.Controller.SkipNameValidation = &skip
	if w := env.Env.WebhookInstallOptions; env.Webhooks() {
		opts.WebhookServer = webhook.NewServer(webhook.Options{Host: w.LocalServingHost, Port: w.LocalServingPort, CertDir: w.LocalServingCertDir})
	}
	mgr, err := ctrl.NewManager(restCfg, opts)
	if err != nil {
		return nil, err
	}
	return mgr, controller.AddInformers(mgr, cfg)
}

// OperatorIdentity creates, as admin, the identity the chart gives the operator when it watches
// every namespace: a ServiceAccount in namespace bound cluster-wide to the rules controller-gen
// generated (config/rbac/role.yaml, which the chart binds cluster-wide in two ClusterRoles).
// It returns env's config impersonating that ServiceAccount, once the API server's authorizer
// knows the binding. A manager on it may read and write only what the operator's RBAC allows,
// so an informer or call the chart does not permit fails in the tests as in a cluster.
func OperatorIdentity(ctx context.Context, env *testenv.Env, namespace, name string) (*rest.Config, error) {
	data, err := os.ReadFile(filepath.Join(testenv.Root(), "config", "rbac", "role.yaml"))
	if err != nil {
		return nil, err
	}
	generated := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(data, generated); err != nil {
		return nil, fmt.Errorf("config/rbac/role.yaml: %w", err)
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: namespace + "-" + name}, Rules: generated.Rules}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: namespace}}}
	for _, obj := range []client.Object{&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}, role, binding} {
		if err := env.Client.Create(ctx, obj); err != nil {
			return nil, err
		}
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + namespace + ":" + name,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}}
	c, err := client.New(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		return nil, err
	}
	// RBAC learns bindings from an informer: wait until the identity may list what it watches.
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := c.List(ctx, &batchv1.JobList{}, client.Limit(1))
		if err == nil {
			return cfg, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the operator identity %s/%s cannot list Jobs: %w", namespace, name, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Start runs mgr until the returned stop function is called; stop waits for it to return.
// With webhooks installed in env, it waits until the webhook server serves.
func Start(env *testenv.Env, mgr ctrl.Manager) (stop func(), err error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stop = func() { cancel(); <-done }
	if !env.Webhooks() {
		return stop, nil
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			return func() {}, fmt.Errorf("manager stopped: %w", err)
		default:
		}
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if err := mgr.GetWebhookServer().StartedChecker()(nil); err == nil {
			return stop, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	return func() {}, fmt.Errorf("manager did not start")
}

// GPUNode creates a Node labelled with a GPU product (nvidia.com/gpu.product, as GPU feature
// discovery labels it) and gpus allocatable nvidia.com/gpu: what GPU discovery and
// fitsCluster read.
func GPUNode(ctx context.Context, c client.Client, name, product string, gpus int64) (*corev1.Node, error) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{gpunodes.ProductLabel: product}}}
	if err := c.Create(ctx, n); err != nil {
		return nil, err
	}
	n.Status.Capacity = corev1.ResourceList{gpunodes.GPUResource: *resource.NewQuantity(gpus, resource.DecimalSI)}
	n.Status.Allocatable = n.Status.Capacity.DeepCopy()
	return n, c.Status().Update(ctx, n)
}

// Terminated describes how a container ended.
type Terminated struct {
	ExitCode int32
	Reason   string
	Message  string
}

// CreatePod creates the Job's pod as the Job controller would and gives its containers the
// terminated states a kubelet would report (nil: still running): search is the search
// container's, reporter how the reporter's publication ended (the publication container's).
func CreatePod(ctx context.Context, c client.Client, job *batchv1.Job, search, reporter *Terminated) (*corev1.Pod, error) {
	labels := map[string]string{}
	for k, v := range job.Spec.Template.Labels {
		labels[k] = v
	}
	labels[batchv1.JobNameLabel] = job.Name
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: job.Name + "-" + strings.ToLower(rand.String(5)), Labels: labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))}},
		Spec: *job.Spec.Template.Spec.DeepCopy(),
	}
	if err := c.Create(ctx, pod); err != nil {
		return nil, err
	}
	state := func(name string, t *Terminated) corev1.ContainerStatus {
		cs := corev1.ContainerStatus{Name: name, Image: "img", ImageID: "img"}
		if t == nil {
			cs.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.Now()}
			cs.Ready = true
			return cs
		}
		cs.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: t.ExitCode, Reason: t.Reason, Message: t.Message,
			StartedAt: metav1.Now(), FinishedAt: metav1.Now()}
		return cs
	}
	pod.Status.Phase = corev1.PodRunning
	if search != nil && reporter != nil {
		pod.Status.Phase = corev1.PodFailed
		if search.ExitCode == 0 && reporter.ExitCode == 0 {
			pod.Status.Phase = corev1.PodSucceeded
		}
	}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{state(jobcontract.SearchContainer, search), state(jobcontract.PublicationContainer, reporter)}
	return pod, c.Status().Update(ctx, pod)
}

// SetJobRunning marks the Job active, as the Job controller does once its pod exists.
func SetJobRunning(ctx context.Context, c client.Client, job *batchv1.Job) error {
	now := metav1.Now()
	job.Status.StartTime = &now
	job.Status.Active = 1
	return c.Status().Update(ctx, job)
}

// FinishJob gives the Job the terminal conditions the Job controller would set: Complete when
// failedReason is "", else Failed with that reason (e.g. BackoffLimitExceeded, DeadlineExceeded).
func FinishJob(ctx context.Context, c client.Client, job *batchv1.Job, failedReason string) error {
	now := metav1.Now()
	if job.Status.StartTime == nil {
		job.Status.StartTime = &now
	}
	job.Status.Active = 0
	job.Status.Ready = ptr.To[int32](0)
	job.Status.Terminating = ptr.To[int32](0)
	if failedReason == "" {
		job.Status.Succeeded = 1
		job.Status.CompletionTime = &now
		job.Status.Conditions = append(job.Status.Conditions,
			batchv1.JobCondition{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonCompletionsReached, LastTransitionTime: now, LastProbeTime: now},
			batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonCompletionsReached, LastTransitionTime: now, LastProbeTime: now})
	} else {
		job.Status.Failed = 1
		job.Status.Conditions = append(job.Status.Conditions,
			batchv1.JobCondition{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: failedReason, Message: "test", LastTransitionTime: now, LastProbeTime: now},
			batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: failedReason, Message: "test", LastTransitionTime: now, LastProbeTime: now})
	}
	return c.Status().Update(ctx, job)
}

// CollectForeground plays the garbage collector (envtest runs none) for obj once it is deleted in
// the foreground: it deletes the Jobs of obj's namespace that obj controls, then removes obj's
// foregroundDeletion finalizer, so that obj is gone. It waits for obj's deletion to start.
func CollectForeground(ctx context.Context, c client.Client, obj client.Object) error {
	deadline := time.Now().Add(Wait)
	for {
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return client.IgnoreNotFound(err)
		}
		if obj.GetDeletionTimestamp() != nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s was not deleted within %s", client.ObjectKeyFromObject(obj), Wait)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Like the garbage collector, delete dependents until none are left: a controller that read
	// obj from its cache before the deletion may still create one.
	for quiet := 0; quiet < 3; {
		time.Sleep(200 * time.Millisecond)
		var jobs batchv1.JobList
		if err := c.List(ctx, &jobs, client.InNamespace(obj.GetNamespace())); err != nil {
			return err
		}
		quiet++
		for i := range jobs.Items {
			if metav1.IsControlledBy(&jobs.Items[i], obj) {
				quiet = 0
				// In the background: a batch/v1 Job is otherwise orphaning by default, held by a
				// finalizer only the garbage collector removes.
				if err := client.IgnoreNotFound(c.Delete(ctx, &jobs.Items[i], client.PropagationPolicy(metav1.DeletePropagationBackground))); err != nil {
					return err
				}
			}
		}
	}
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	obj.SetFinalizers(nil)
	return client.IgnoreNotFound(c.Patch(ctx, obj, patch))
}
