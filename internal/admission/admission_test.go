package admission_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/admission"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
)

func i32(v int32) *int32                 { return &v }
func raw(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }
func f64(v float64) *float64             { return &v }

// request is a builder for test requests.
type request struct {
	v1beta2.DynamoGraphDeploymentRequest
}

func newRequest() *request {
	r := &request{}
	r.Name = "r"
	r.Spec.Model.Name = "meta-llama/Llama-3.1-8B-Instruct"
	return r
}
func (r *request) perNode(n int32) *request {
	r.Spec.Hardware.GPU.PerNode = i32(n)
	return r
}

// deployDefaults adds what admission materializes under spec.deployment besides the router.
func (r *request) deployDefaults() *request {
	if r.Spec.Deployment == nil {
		r.Spec.Deployment = &v1beta2.DeploymentSpec{}
	}
	r.Spec.Deployment.AutoApply = ptr.To(false)
	r.Spec.Deployment.Name = r.Name
	r.Spec.Deployment.Planner = &v1beta2.PlannerSpec{Enabled: ptr.To(false)}
	if r.Spec.Deployment.Selection == nil {
		r.Spec.Deployment.Selection = &v1beta2.SelectionSpec{Tolerance: "2%"}
	}
	return r
}

func (r *request) deployNamed(name string, autoApply bool) *request {
	if r.Spec.Deployment == nil {
		r.Spec.Deployment = &v1beta2.DeploymentSpec{}
	}
	r.Spec.Deployment.AutoApply = ptr.To(autoApply)
	r.Spec.Deployment.Name = name
	r.Spec.Deployment.Planner = &v1beta2.PlannerSpec{Enabled: ptr.To(false)}
	r.Spec.Deployment.Selection = &v1beta2.SelectionSpec{Tolerance: "2%"}
	return r
}

func (r *request) router(m v1beta2.RouterMode) *request {
	if r.Spec.Deployment == nil {
		r.Spec.Deployment = &v1beta2.DeploymentSpec{}
	}
	r.Spec.Deployment.Router = &v1beta2.RouterSpec{Mode: m}
	return r
}
func (r *request) remoteCode(p v1beta2.RemoteCodePolicy) *request {
	r.Spec.Model.RemoteCode = p
	return r
}
func (r *request) static(s *v1beta2.StaticWorkload) *request {
	r.Spec.Workload = &v1beta2.WorkloadSpec{Static: s}
	return r
}
func (r *request) sku(s string) *request {
	r.Spec.Hardware = &v1beta2.HardwareSpec{GPU: &v1beta2.GPUSpec{SKU: s}}
	return r
}
func (r *request) maxCandidates(n int32) *request {
	r.Spec.Recommendation = &v1beta2.RecommendationSpec{MaxCandidates: i32(n)}
	return r
}
func (r *request) pareto() *request {
	r.Spec.Objective = &v1beta2.ObjectiveSpec{Target: v1beta2.TargetPareto}
	return r
}
func (r *request) obj() *v1beta2.DynamoGraphDeploymentRequest { return r.DeepCopy() }

func defaultStatic() *v1beta2.StaticWorkload {
	return &v1beta2.StaticWorkload{InputTokens: i32(1024), OutputTokens: i32(128), Load: &v1beta2.LoadSpec{Concurrency: i32(10)}}
}

func TestDefault(t *testing.T) {
	opts := admission.DefaultingOptions{DefaultGPUSKU: "h200_sxm"}
	cases := []struct {
		name string
		in   *v1beta2.DynamoGraphDeploymentRequest
		opts admission.DefaultingOptions
		want *v1beta2.DynamoGraphDeploymentRequest
	}{
		{"model only", newRequest().obj(), opts, newRequest().static(defaultStatic()).sku("h200_sxm").perNode(8).maxCandidates(5).remoteCode(v1beta2.RemoteCodeNever).router(v1beta2.RouterRoundRobin).deployDefaults().obj()},
		{"workload without static", func() *v1beta2.DynamoGraphDeploymentRequest {
			r := newRequest().obj()
			r.Spec.Workload = &v1beta2.WorkloadSpec{}
			return r
		}(), opts, newRequest().static(defaultStatic()).sku("h200_sxm").perNode(8).maxCandidates(5).remoteCode(v1beta2.RemoteCodeNever).router(v1beta2.RouterRoundRobin).deployDefaults().obj()},
		{"empty static is the opt-out", newRequest().static(&v1beta2.StaticWorkload{}).obj(), opts,
			newRequest().static(&v1beta2.StaticWorkload{}).sku("h200_sxm").perNode(8).maxCandidates(5).remoteCode(v1beta2.RemoteCodeNever).router(v1beta2.RouterRoundRobin).deployDefaults().obj()},
		{"partial static is completed", newRequest().static(&v1beta2.StaticWorkload{InputTokens: i32(2048)}).obj(), opts,
			newRequest().static(&v1beta2.StaticWorkload{InputTokens: i32(2048), OutputTokens: i32(128), Load: &v1beta2.LoadSpec{Concurrency: i32(10)}}).sku("h200_sxm").perNode(8).maxCandidates(5).remoteCode(v1beta2.RemoteCodeNever).router(v1beta2.RouterRoundRobin).deployDefaults().obj()},
		{"user values are kept", newRequest().static(&v1beta2.StaticWorkload{OutputTokens: i32(7), Load: &v1beta2.LoadSpec{RequestsPerSecond: f64(2.5)}}).sku("b200_sxm").maxCandidates(3).obj(), opts,
			newRequest().static(&v1beta2.StaticWorkload{InputTokens: i32(1024), OutputTokens: i32(7), Load: &v1beta2.LoadSpec{RequestsPerSecond: f64(2.5)}}).sku("b200_sxm").perNode(8).maxCandidates(3).remoteCode(v1beta2.RemoteCodeNever).router(v1beta2.RouterRoundRobin).deployDefaults().obj()},
		{"discovered sku wins over the default", newRequest().obj(), admission.DefaultingOptions{DefaultGPUSKU: "h200_sxm", GPUDiscovery: true, GPUProducts: []string{"NVIDIA-L40S"}},
			newRequest().static(defaultStatic()).sku("l40s").perNode(8).maxCandidates(5).remoteCode(v1beta2.RemoteCodeNever).router(v1beta2.RouterRoundRobin).deployDefaults().obj()},
		{"token key and remote code are kept", func() *v1beta2.DynamoGraphDeploymentRequest {
			r := newRequest().remoteCode(v1beta2.RemoteCodeAlwaysTrust).obj()
			r.Spec.Model.TokenSecretRef = &v1beta2.TokenSecretReference{Name: "hf", Key: "token"}
			return r
		}(), opts, func() *v1beta2.DynamoGraphDeploymentRequest {
			r := newRequest().static(defaultStatic()).sku("h200_sxm").perNode(8).maxCandidates(5).remoteCode(v1beta2.RemoteCodeAlwaysTrust).router(v1beta2.RouterRoundRobin).deployDefaults().obj()
			r.Spec.Model.TokenSecretRef = &v1beta2.TokenSecretReference{Name: "hf", Key: "token"}
			return r
		}()},
		{"a trace gets no static, and its format and replay", func() *v1beta2.DynamoGraphDeploymentRequest {
			r := newRequest().obj()
			trace(cmSource("traffic", "t"), nil)(r)
			return r
		}(), opts, func() *v1beta2.DynamoGraphDeploymentRequest {
			r := newRequest().sku("h200_sxm").perNode(8).maxCandidates(5).remoteCode(v1beta2.RemoteCodeNever).router(v1beta2.RouterRoundRobin).deployDefaults().obj()
			r.Spec.Workload = &v1beta2.WorkloadSpec{Trace: &v1beta2.TraceWorkload{Format: v1beta2.TraceFormatMooncake, Source: cmSource("traffic", "t"),
				Replay: &v1beta2.TraceReplay{ArrivalSpeedupRatio: ptr.To(1.0)}}}
			return r
		}()},
		{"a Pareto target publishes up to 10: the whole front or a spread of it", newRequest().pareto().obj(), opts,
			newRequest().pareto().static(defaultStatic()).sku("h200_sxm").perNode(8).maxCandidates(10).remoteCode(v1beta2.RemoteCodeNever).router(v1beta2.RouterRoundRobin).deployDefaults().obj()},
		{"a Pareto target keeps the user's maxCandidates", newRequest().pareto().maxCandidates(3).obj(), opts,
			newRequest().pareto().static(defaultStatic()).sku("h200_sxm").perNode(8).maxCandidates(3).remoteCode(v1beta2.RemoteCodeNever).router(v1beta2.RouterRoundRobin).deployDefaults().obj()},
		{"user's deployment name and autoApply are kept", newRequest().deployNamed("llama-prod", true).obj(), opts,
			newRequest().static(defaultStatic()).sku("h200_sxm").perNode(8).maxCandidates(5).remoteCode(v1beta2.RemoteCodeNever).router(v1beta2.RouterRoundRobin).deployNamed("llama-prod", true).obj()},
		{"the selection tolerance is kept, 0% included", func() *v1beta2.DynamoGraphDeploymentRequest {
			r := newRequest().obj()
			r.Spec.Deployment = &v1beta2.DeploymentSpec{Selection: &v1beta2.SelectionSpec{Tolerance: "0%"}}
			return r
		}(), opts, func() *v1beta2.DynamoGraphDeploymentRequest {
			r := newRequest().static(defaultStatic()).sku("h200_sxm").perNode(8).maxCandidates(5).remoteCode(v1beta2.RemoteCodeNever).router(v1beta2.RouterRoundRobin).deployDefaults().obj()
			r.Spec.Deployment.Selection.Tolerance = "0%"
			return r
		}()},
		{"router mode is kept, overrides untouched", func() *v1beta2.DynamoGraphDeploymentRequest {
			r := newRequest().router(v1beta2.RouterKV).obj()
			r.Spec.Deployment.PodTemplateOverrides = &v1beta2.PodTemplateOverrides{Workers: &runtime.RawExtension{Raw: []byte(`{"spec":{}}`)}}
			return r
		}(), opts, func() *v1beta2.DynamoGraphDeploymentRequest {
			r := newRequest().static(defaultStatic()).sku("h200_sxm").perNode(8).maxCandidates(5).remoteCode(v1beta2.RemoteCodeNever).router(v1beta2.RouterKV).deployDefaults().obj()
			r.Spec.Deployment.PodTemplateOverrides = &v1beta2.PodTemplateOverrides{Workers: &runtime.RawExtension{Raw: []byte(`{"spec":{}}`)}}
			return r
		}()},
		{"perNode from the catalogue", newRequest().sku("gb200").obj(), opts,
			newRequest().static(defaultStatic()).sku("gb200").perNode(4).maxCandidates(5).remoteCode(v1beta2.RemoteCodeNever).router(v1beta2.RouterRoundRobin).deployDefaults().obj()},
		{"perNode is kept", newRequest().sku("h200_sxm").perNode(2).obj(), opts,
			newRequest().static(defaultStatic()).sku("h200_sxm").perNode(2).maxCandidates(5).remoteCode(v1beta2.RemoteCodeNever).router(v1beta2.RouterRoundRobin).deployDefaults().obj()},
		{"capture gets enabled false and its rotation bounds", func() *v1beta2.DynamoGraphDeploymentRequest {
			r := newRequest().obj()
			r.Spec.Deployment = &v1beta2.DeploymentSpec{Capture: &v1beta2.CaptureSpec{ClaimName: "traces"}}
			return r
		}(), opts, func() *v1beta2.DynamoGraphDeploymentRequest {
			r := newRequest().static(defaultStatic()).sku("h200_sxm").perNode(8).maxCandidates(5).remoteCode(v1beta2.RemoteCodeNever).router(v1beta2.RouterRoundRobin).deployDefaults().obj()
			r.Spec.Deployment.Capture = &v1beta2.CaptureSpec{Enabled: ptr.To(false), ClaimName: "traces",
				Rotation: &v1beta2.CaptureRotation{MaxSegmentMiB: i32(64)}}
			return r
		}()},
		{"research gets its window, minRequests and the replace margin", func() *v1beta2.DynamoGraphDeploymentRequest {
			r := newRequest().obj()
			r.Spec.Research = &v1beta2.ResearchSpec{IntervalMinutes: 360}
			return r
		}(), opts, func() *v1beta2.DynamoGraphDeploymentRequest {
			r := newRequest().static(defaultStatic()).sku("h200_sxm").perNode(8).maxCandidates(5).remoteCode(v1beta2.RemoteCodeNever).router(v1beta2.RouterRoundRobin).deployDefaults().obj()
			r.Spec.Research = &v1beta2.ResearchSpec{IntervalMinutes: 360, WindowMinutes: ptr.To[int32](360), MinRequests: i32(100)}
			r.Spec.Deployment.ReplaceMargin = "10%"
			return r
		}()},
		{"research values are kept", func() *v1beta2.DynamoGraphDeploymentRequest {
			r := newRequest().obj()
			r.Spec.Research = &v1beta2.ResearchSpec{IntervalMinutes: 360, WindowMinutes: ptr.To[int32](60), MinRequests: i32(5)}
			r.Spec.Deployment = &v1beta2.DeploymentSpec{ReplaceMargin: "0%"}
			return r
		}(), opts, func() *v1beta2.DynamoGraphDeploymentRequest {
			r := newRequest().static(defaultStatic()).sku("h200_sxm").perNode(8).maxCandidates(5).remoteCode(v1beta2.RemoteCodeNever).router(v1beta2.RouterRoundRobin).deployDefaults().obj()
			r.Spec.Research = &v1beta2.ResearchSpec{IntervalMinutes: 360, WindowMinutes: ptr.To[int32](60), MinRequests: i32(5)}
			r.Spec.Deployment.ReplaceMargin = "0%"
			return r
		}()},
		{"capture's rotation values are kept", func() *v1beta2.DynamoGraphDeploymentRequest {
			r := newRequest().obj()
			r.Spec.Deployment = &v1beta2.DeploymentSpec{Capture: &v1beta2.CaptureSpec{Enabled: ptr.To(true), ClaimName: "traces",
				Rotation: &v1beta2.CaptureRotation{MaxSegmentMiB: i32(8)}}}
			return r
		}(), opts, func() *v1beta2.DynamoGraphDeploymentRequest {
			r := newRequest().static(defaultStatic()).sku("h200_sxm").perNode(8).maxCandidates(5).remoteCode(v1beta2.RemoteCodeNever).router(v1beta2.RouterRoundRobin).deployDefaults().obj()
			r.Spec.Deployment.Capture = &v1beta2.CaptureSpec{Enabled: ptr.To(true), ClaimName: "traces",
				Rotation: &v1beta2.CaptureRotation{MaxSegmentMiB: i32(8)}}
			return r
		}()},
		{"token key defaults to HF_TOKEN", func() *v1beta2.DynamoGraphDeploymentRequest {
			r := newRequest().obj()
			r.Spec.Model.TokenSecretRef = &v1beta2.TokenSecretReference{Name: "hf"}
			return r
		}(), opts, func() *v1beta2.DynamoGraphDeploymentRequest {
			r := newRequest().static(defaultStatic()).sku("h200_sxm").perNode(8).maxCandidates(5).remoteCode(v1beta2.RemoteCodeNever).router(v1beta2.RouterRoundRobin).deployDefaults().obj()
			r.Spec.Model.TokenSecretRef = &v1beta2.TokenSecretReference{Name: "hf", Key: "HF_TOKEN"}
			return r
		}()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.in.DeepCopy()
			if errs := admission.Default(got, tc.opts); len(errs) > 0 {
				t.Fatalf("unexpected errors: %v", errs)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("defaulted (-want +got):\n%s", diff)
			}
			again := got.DeepCopy()
			_ = admission.Default(again, tc.opts)
			if diff := cmp.Diff(got, again); diff != "" {
				t.Errorf("defaulting is not idempotent:\n%s", diff)
			}
		})
	}
}

// TestDefaultGPUSKU: a request without a SKU gets the one system the cluster's GPU products map
// to, else the configured default when no GPU Node was found or it is one of several products;
// anything else is refused at
// spec.hardware.gpu.sku with a message naming what was found and how to fix it.
func TestDefaultGPUSKU(t *testing.T) {
	cases := []struct {
		name    string
		opts    admission.DefaultingOptions
		wantSKU string
		// wantIn are parts of the refusal's message.
		wantIn []string
	}{
		{"discovery off, no default", admission.DefaultingOptions{}, "", []string{"GPU discovery is off", "defaults.gpuSKU", "set spec.hardware.gpu.sku"}},
		{"discovery off, explicit default", admission.DefaultingOptions{DefaultGPUSKU: "b200_sxm"}, "b200_sxm", nil},
		{"no GPU nodes, no default", admission.DefaultingOptions{GPUDiscovery: true}, "", []string{"no GPU nodes found", "set spec.hardware.gpu.sku"}},
		{"no GPU nodes, explicit default", admission.DefaultingOptions{GPUDiscovery: true, DefaultGPUSKU: "h100_sxm"}, "h100_sxm", nil},
		{"one product", admission.DefaultingOptions{GPUDiscovery: true, GPUProducts: []string{"NVIDIA-A100-SXM4-80GB"}}, "a100_sxm", nil},
		{"one product wins over the default", admission.DefaultingOptions{GPUDiscovery: true, DefaultGPUSKU: "h200_sxm", GPUProducts: []string{"NVIDIA-A100-SXM4-80GB"}}, "a100_sxm", nil},
		{"two labels of one system", admission.DefaultingOptions{GPUDiscovery: true, GPUProducts: []string{"NVIDIA-H200", "NVIDIA-H200-SXM-141GB"}}, "h200_sxm", nil},
		{"two products, the default among them", admission.DefaultingOptions{GPUDiscovery: true, DefaultGPUSKU: "h200_sxm", GPUProducts: []string{"NVIDIA-A100-SXM4-80GB", "NVIDIA-H200"}}, "h200_sxm", nil},
		{"two products, the default not among them", admission.DefaultingOptions{GPUDiscovery: true, DefaultGPUSKU: "b200_sxm", GPUProducts: []string{"NVIDIA-A100-SXM4-80GB", "NVIDIA-H200"}}, "",
			[]string{"several GPU products: NVIDIA-A100-SXM4-80GB (a100_sxm), NVIDIA-H200 (h200_sxm)"}},
		{"two products, no default", admission.DefaultingOptions{GPUDiscovery: true, GPUProducts: []string{"NVIDIA-A100-SXM4-80GB", "NVIDIA-H200"}}, "",
			[]string{"several GPU products: NVIDIA-A100-SXM4-80GB (a100_sxm), NVIDIA-H200 (h200_sxm)"}},
		{"unsupported product", admission.DefaultingOptions{GPUDiscovery: true, DefaultGPUSKU: "h200_sxm", GPUProducts: []string{"NVIDIA-H100-NVL"}}, "",
			[]string{"NVIDIA-H100-NVL (no AISimulate system)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := newRequest().obj()
			errs := admission.Default(got, tc.opts)
			if tc.wantIn == nil {
				if len(errs) > 0 {
					t.Fatalf("unexpected errors: %v", errs)
				}
				if diff := cmp.Diff(tc.wantSKU, got.Spec.Hardware.GPU.SKU); diff != "" {
					t.Errorf("sku (-want +got):\n%s", diff)
				}
				return
			}
			want := field.ErrorList{field.Required(field.NewPath("spec", "hardware", "gpu", "sku"), "")}
			if diff := cmp.Diff(want, errs, cmpopts.IgnoreFields(field.Error{}, "Detail")); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
			for _, part := range tc.wantIn {
				if !strings.Contains(errs[0].Detail, part) {
					t.Errorf("the message %q lacks %q", errs[0].Detail, part)
				}
			}
		})
	}
}

// trace sets a trace workload.
func trace(src *v1beta2.TraceSource, replay *v1beta2.TraceReplay) func(*v1beta2.DynamoGraphDeploymentRequest) {
	return func(d *v1beta2.DynamoGraphDeploymentRequest) {
		d.Spec.Workload = &v1beta2.WorkloadSpec{Trace: &v1beta2.TraceWorkload{Source: src, Replay: replay}}
	}
}

func cmSource(name, key string) *v1beta2.TraceSource {
	return &v1beta2.TraceSource{ConfigMap: &v1beta2.TraceConfigMapSource{Name: name, Key: key}}
}

func TestValidate(t *testing.T) {
	ignore := cmpopts.IgnoreFields(field.Error{}, "Detail", "BadValue", "Origin", "CoveredByDeclarative")
	admitted := func(mut func(*v1beta2.DynamoGraphDeploymentRequest)) *v1beta2.DynamoGraphDeploymentRequest {
		d := newRequest().obj()
		mut(d)
		_ = admission.Default(d, admission.DefaultingOptions{DefaultGPUSKU: "h200_sxm"})
		return d
	}
	limits := admission.Options{Caps: aisimulate.Caps{MaxTrials: 1000, MaxParallelism: 32}, AutoApplyEnabled: true, MaxPodTemplateOverrideBytes: 32 << 10}
	overrides := func(s string) func(*v1beta2.DynamoGraphDeploymentRequest) {
		return func(d *v1beta2.DynamoGraphDeploymentRequest) {
			d.Spec.AISimulate = &v1beta2.AISimulateSpec{InputOverrides: &runtime.RawExtension{Raw: []byte(s)}}
		}
	}
	op := field.NewPath("spec", "aisimulate", "inputOverrides")
	tp := field.NewPath("spec", "workload", "trace")
	cases := []struct {
		name string
		obj  *v1beta2.DynamoGraphDeploymentRequest
		want field.ErrorList
	}{
		{"valid model only", admitted(func(*v1beta2.DynamoGraphDeploymentRequest) {}), nil},
		{"name too long for derived labels", admitted(func(d *v1beta2.DynamoGraphDeploymentRequest) { d.Name = strings.Repeat("a", 64) }),
			field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), nil, "")}},
		{"name not a DNS label", admitted(func(d *v1beta2.DynamoGraphDeploymentRequest) { d.Name = "a.b" }),
			field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), nil, "")}},
		{"unknown sku", admitted(func(d *v1beta2.DynamoGraphDeploymentRequest) {
			d.Spec.Hardware = &v1beta2.HardwareSpec{GPU: &v1beta2.GPUSpec{SKU: "tpu_v5"}}
		}), field.ErrorList{field.NotSupported[string](field.NewPath("spec", "hardware", "gpu", "sku"), nil, nil)}},
		{"goodput without sla", admitted(func(d *v1beta2.DynamoGraphDeploymentRequest) {
			d.Spec.Objective = &v1beta2.ObjectiveSpec{Target: v1beta2.TargetGoodput}
		}), field.ErrorList{field.Invalid(field.NewPath("spec", "objective", "target"), nil, "")}},
		{"goodput with sla from overrides", admitted(func(d *v1beta2.DynamoGraphDeploymentRequest) {
			d.Spec.Objective = &v1beta2.ObjectiveSpec{Target: v1beta2.TargetGoodputPerGPU}
			overrides(`{"evaluation":{"sla":{"ttft_ms":100}}}`)(d)
		}), nil},
		{"overrides array", admitted(overrides(`[1]`)), field.ErrorList{field.Invalid(op, nil, "")}},
		{"max_trials over the cap", admitted(overrides(`{"optimizer":{"max_trials":5000}}`)),
			field.ErrorList{field.Invalid(op.Child("optimizer", "max_trials"), nil, "")}},
		{"parallelism over the cap", admitted(overrides(`{"optimizer":{"parallelism":64}}`)),
			field.ErrorList{field.Invalid(op.Child("optimizer", "parallelism"), nil, "")}},
		{"cache claim not a name", admitted(func(d *v1beta2.DynamoGraphDeploymentRequest) {
			d.Spec.Model.Cache = &v1beta2.ModelCacheSpec{PVC: &v1beta2.ModelCachePVC{ClaimName: "Models_1"}}
		}), field.ErrorList{field.Invalid(field.NewPath("spec", "model", "cache", "pvc", "claimName"), nil, "")}},
		{"cache path absolute", admitted(func(d *v1beta2.DynamoGraphDeploymentRequest) {
			d.Spec.Model.Cache = &v1beta2.ModelCacheSpec{PVC: &v1beta2.ModelCachePVC{ClaimName: "models", Path: "/hf"}}
		}), field.ErrorList{field.Invalid(field.NewPath("spec", "model", "cache", "pvc", "path"), nil, "")}},
		{"cache path escapes the claim", admitted(func(d *v1beta2.DynamoGraphDeploymentRequest) {
			d.Spec.Model.Cache = &v1beta2.ModelCacheSpec{PVC: &v1beta2.ModelCachePVC{ClaimName: "models", Path: "hf/../.."}}
		}), field.ErrorList{field.Invalid(field.NewPath("spec", "model", "cache", "pvc", "path"), nil, "")}},
		{"cache path nested is fine", admitted(func(d *v1beta2.DynamoGraphDeploymentRequest) {
			d.Spec.Model.Cache = &v1beta2.ModelCacheSpec{PVC: &v1beta2.ModelCachePVC{ClaimName: "models", Path: "caches/hf..old"}}
		}), nil},
		{"capture claim not a name", admitted(func(d *v1beta2.DynamoGraphDeploymentRequest) {
			d.Spec.Deployment = &v1beta2.DeploymentSpec{Capture: &v1beta2.CaptureSpec{Enabled: ptr.To(true), ClaimName: "Traces_1"}}
		}), field.ErrorList{field.Invalid(field.NewPath("spec", "deployment", "capture", "claimName"), nil, "")}},
		{"capture enabled without a claim", admitted(func(d *v1beta2.DynamoGraphDeploymentRequest) {
			d.Spec.Deployment = &v1beta2.DeploymentSpec{Capture: &v1beta2.CaptureSpec{Enabled: ptr.To(true)}}
		}), field.ErrorList{field.Required(field.NewPath("spec", "deployment", "capture", "claimName"), "")}},
		{"capture off needs no claim", admitted(func(d *v1beta2.DynamoGraphDeploymentRequest) {
			d.Spec.Deployment = &v1beta2.DeploymentSpec{Capture: &v1beta2.CaptureSpec{Enabled: ptr.To(false)}}
		}), nil},
		{"capture on a claim", admitted(func(d *v1beta2.DynamoGraphDeploymentRequest) {
			d.Spec.Deployment = &v1beta2.DeploymentSpec{Capture: &v1beta2.CaptureSpec{Enabled: ptr.To(true), ClaimName: "request-traces.a"}}
		}), nil},
		{"token secret not a name", admitted(func(d *v1beta2.DynamoGraphDeploymentRequest) {
			d.Spec.Model.TokenSecretRef = &v1beta2.TokenSecretReference{Name: "HF_Token"}
		}), field.ErrorList{field.Invalid(field.NewPath("spec", "model", "tokenSecretRef", "name"), nil, "")}},
		{"pod template overrides that decode", admitted(func(d *v1beta2.DynamoGraphDeploymentRequest) {
			d.Spec.Deployment = &v1beta2.DeploymentSpec{PodTemplateOverrides: &v1beta2.PodTemplateOverrides{
				All:     raw(`{"spec":{"tolerations":[{"key":"gpu","operator":"Exists"}]}}`),
				Workers: raw(`{"spec":{"containers":[{"name":"main","env":[{"name":"X","value":"1"}]}]}}`),
			}}
		}), nil},
		{"pod template override with an unknown field", admitted(func(d *v1beta2.DynamoGraphDeploymentRequest) {
			d.Spec.Deployment = &v1beta2.DeploymentSpec{PodTemplateOverrides: &v1beta2.PodTemplateOverrides{Decode: raw(`{"spec":{"nodeSelektor":{}}}`)}}
		}), field.ErrorList{field.Invalid(field.NewPath("spec", "deployment", "podTemplateOverrides", "decode"), nil, "")}},
		{"pod template override container without name", admitted(func(d *v1beta2.DynamoGraphDeploymentRequest) {
			d.Spec.Deployment = &v1beta2.DeploymentSpec{PodTemplateOverrides: &v1beta2.PodTemplateOverrides{All: raw(`{"spec":{"containers":[{"image":"x"}]}}`)}}
		}), field.ErrorList{field.Invalid(field.NewPath("spec", "deployment", "podTemplateOverrides", "all"), nil, "")}},
		{"trace from a ConfigMap", admitted(trace(cmSource("traffic", "trace.jsonl"), nil)), nil},
		{"trace from a claim, closed loop", admitted(trace(&v1beta2.TraceSource{PVC: &v1beta2.TracePVCSource{ClaimName: "archive", Path: "a/b.jsonl"}},
			&v1beta2.TraceReplay{Concurrency: ptr.To[int32](8)})), nil},
		{"trace and static together", admitted(func(d *v1beta2.DynamoGraphDeploymentRequest) {
			trace(cmSource("traffic", "t"), nil)(d)
			d.Spec.Workload.Static = &v1beta2.StaticWorkload{InputTokens: ptr.To[int32](10)}
		}), field.ErrorList{field.Forbidden(tp, "")}},
		{"trace without a source", admitted(trace(&v1beta2.TraceSource{}, nil)),
			field.ErrorList{field.Invalid(tp.Child("source"), nil, "")}},
		{"trace with two sources", admitted(trace(&v1beta2.TraceSource{ConfigMap: &v1beta2.TraceConfigMapSource{Name: "a", Key: "k"},
			PVC: &v1beta2.TracePVCSource{ClaimName: "c", Path: "p"}}, nil)),
			field.ErrorList{field.Invalid(tp.Child("source"), nil, "")}},
		{"trace ConfigMap not a name", admitted(trace(cmSource("Traffic_1", "k"), nil)),
			field.ErrorList{field.Invalid(tp.Child("source", "configMap", "name"), nil, "")}},
		{"trace ConfigMap key not a key", admitted(trace(cmSource("traffic", "a/b"), nil)),
			field.ErrorList{field.Invalid(tp.Child("source", "configMap", "key"), nil, "")}},
		{"trace path escapes the claim", admitted(trace(&v1beta2.TraceSource{PVC: &v1beta2.TracePVCSource{ClaimName: "c", Path: "../etc/passwd"}}, nil)),
			field.ErrorList{field.Invalid(tp.Child("source", "pvc", "path"), nil, "")}},
		{"trace path absolute", admitted(trace(&v1beta2.TraceSource{PVC: &v1beta2.TracePVCSource{ClaimName: "c", Path: "/t.jsonl"}}, nil)),
			field.ErrorList{field.Invalid(tp.Child("source", "pvc", "path"), nil, "")}},
		{"trace path is a directory", admitted(trace(&v1beta2.TraceSource{PVC: &v1beta2.TracePVCSource{ClaimName: "c", Path: "traces/"}}, nil)),
			field.ErrorList{field.Invalid(tp.Child("source", "pvc", "path"), nil, "")}},
		{"trace replay with both modes", admitted(trace(cmSource("traffic", "t"),
			&v1beta2.TraceReplay{Concurrency: ptr.To[int32](8), ArrivalSpeedupRatio: ptr.To(2.0)})),
			field.ErrorList{field.Invalid(tp.Child("replay"), nil, "")}},
		{"pod template override over the cap", admitted(func(d *v1beta2.DynamoGraphDeploymentRequest) {
			d.Spec.Deployment = &v1beta2.DeploymentSpec{PodTemplateOverrides: &v1beta2.PodTemplateOverrides{
				Workers: raw(`{"metadata":{"annotations":{"a":"` + strings.Repeat("x", 32<<10) + `"}}}`)}}
		}), field.ErrorList{field.TooLong(field.NewPath("spec", "deployment", "podTemplateOverrides", "workers"), nil, 0)}},
		{"inputOverrides set engine.model", admitted(overrides(`{"engine":{"model":"evil/model"}}`)),
			field.ErrorList{field.Forbidden(op.Child("engine", "model"), "")}},
		{"inputOverrides set engine.hardware", admitted(overrides(`{"engine":{"hardware":"b200_sxm","backend":"vllm"}}`)),
			field.ErrorList{field.Forbidden(op.Child("engine", "hardware"), "")}},
		{"inputOverrides delete engine", admitted(overrides(`{"engine":null}`)), field.ErrorList{field.Forbidden(op.Child("engine"), "")}},
		{"inputOverrides set other engine fields", admitted(overrides(`{"engine":{"backend":"vllm"}}`)), nil},
		{"model name with a scheme", admitted(func(d *v1beta2.DynamoGraphDeploymentRequest) { d.Spec.Model.Name = "https://evil.example/m" }),
			field.ErrorList{field.Invalid(field.NewPath("spec", "model", "name"), nil, "")}},
		{"model name local path not allowed", admitted(func(d *v1beta2.DynamoGraphDeploymentRequest) { d.Spec.Model.Name = "/models/llama" }),
			field.ErrorList{field.Invalid(field.NewPath("spec", "model", "name"), nil, "")}},
		{"revision with an escape", admitted(func(d *v1beta2.DynamoGraphDeploymentRequest) { d.Spec.Model.Revision = "main\x1b]8;;x" }),
			field.ErrorList{field.Invalid(field.NewPath("spec", "model", "revision"), nil, "")}},
		{"deployment name of 64 characters", admitted(func(d *v1beta2.DynamoGraphDeploymentRequest) {
			d.Spec.Deployment = &v1beta2.DeploymentSpec{Name: strings.Repeat("d", 64)}
		}), field.ErrorList{field.TooLong(field.NewPath("spec", "deployment", "name"), nil, 0)}},
		{"autoApply enabled", admitted(func(d *v1beta2.DynamoGraphDeploymentRequest) {
			d.Spec.Deployment = &v1beta2.DeploymentSpec{AutoApply: ptr.To(true)}
		}), nil},
		{"pareto with min_goodput_rps", admitted(func(d *v1beta2.DynamoGraphDeploymentRequest) {
			d.Spec.Objective = &v1beta2.ObjectiveSpec{Target: v1beta2.TargetPareto}
			overrides(`{"optimization":{"constraints":{"min_goodput_rps":1}}}`)(d)
		}), field.ErrorList{field.Invalid(op.Child("optimization", "constraints", "min_goodput_rps"), nil, "")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in, errs := admission.Validate(tc.obj, limits)
			if diff := cmp.Diff(tc.want, errs, ignore); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if len(tc.want) == 0 && (in == nil || len(in.JSON) == 0) {
				t.Errorf("a valid request must come back with its effective input")
			}
		})
	}
}

// TestValidateCaptureAge: the age bound must cover the re-search window, the interval where the
// window is not written, and needs a schedule at all.
func TestValidateCaptureAge(t *testing.T) {
	spec := func(ageHours int32, research *v1beta2.ResearchSpec) *v1beta2.DynamoGraphDeploymentRequestSpec {
		return &v1beta2.DynamoGraphDeploymentRequestSpec{Research: research, Deployment: &v1beta2.DeploymentSpec{
			Capture: &v1beta2.CaptureSpec{Enabled: ptr.To(true), ClaimName: "traces", Rotation: &v1beta2.CaptureRotation{MaxAgeHours: ptr.To(ageHours)}}}}
	}
	cases := []struct {
		name    string
		spec    *v1beta2.DynamoGraphDeploymentRequestSpec
		wantMsg string
	}{
		{"covers the window", spec(2, &v1beta2.ResearchSpec{IntervalMinutes: 60, WindowMinutes: i32(120)}), ""},
		{"shorter than the window", spec(1, &v1beta2.ResearchSpec{IntervalMinutes: 60, WindowMinutes: i32(120)}), "must cover the re-search window of 120 minutes"},
		{"shorter than the interval, no window written", spec(1, &v1beta2.ResearchSpec{IntervalMinutes: 90}), "must cover the re-search window of 90 minutes"},
		{"no schedule", spec(1, nil), "requires spec.research"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			errs := admission.ValidateCaptureAge(c.spec, field.NewPath("spec", "deployment"))
			if c.wantMsg == "" {
				if len(errs) > 0 {
					t.Fatalf("unexpected errors: %v", errs)
				}
				return
			}
			if len(errs) != 1 || errs[0].Field != "spec.deployment.capture.rotation.maxAgeHours" || !strings.Contains(errs[0].Detail, c.wantMsg) {
				t.Fatalf("errors %v, want one at spec.deployment.capture.rotation.maxAgeHours with %q", errs, c.wantMsg)
			}
		})
	}
}
