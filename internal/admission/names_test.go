package admission_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/admission"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
)

var ignoreDetail = cmpopts.IgnoreFields(field.Error{}, "Detail", "BadValue", "Origin", "CoveredByDeclarative")

// TestModelNames: Hugging Face ids are admitted; schemes, URLs, paths, "..", control characters,
// escapes and shell metacharacters are refused at spec.model.name; absolute local paths only with
// models.allowLocalPaths.
func TestModelNames(t *testing.T) {
	p := field.NewPath("spec", "model", "name")
	bad := field.ErrorList{field.Invalid(p, nil, "")}
	cases := []struct {
		name  string
		local bool
		want  field.ErrorList
	}{
		{"meta-llama/Llama-3.1-8B-Instruct", false, nil},
		{"Qwen/Qwen3-0.6B", false, nil},
		{"gpt2", false, nil},
		{"org_1/model.v2_final", false, nil},
		{"https://evil.example/m", false, bad},
		{"hf://org/m", false, bad},
		{"org/../etc", false, bad},
		{"../etc/passwd", false, bad},
		{"org/m..x", false, bad},
		{"org--x/m", false, bad},
		{"org/m.git", false, bad},
		{"org/m/extra", false, bad},
		{"-org/m", false, bad},
		{"org/m-", false, bad},
		{"org/m\x00", false, bad},
		{"org/m\n", false, bad},
		{"org/\x1b[31mred", false, bad},
		{"org/m\x1b]8;;https://evil\x07", false, bad},
		{"org/m;rm -rf /", false, bad},
		{"org/m$(id)", false, bad},
		{"org/m with space", false, bad},
		{"org/" + strings.Repeat("m", 97), false, bad},
		{"org/" + strings.Repeat("m", 96), false, nil},
		{"/models/llama", false, bad},
		{"/models/llama", true, nil},
		{"/models/../etc", true, bad},
		{"/models/llama/", true, bad},
		{"/models//llama", true, bad},
		{"/models/l\x1bma", true, bad},
		{"models/llama", true, nil}, // org/name
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, admission.ValidateModelName(tc.name, tc.local, p), ignoreDetail); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestRevisions: branches, tags and commits are admitted; anything else is refused at
// spec.model.revision.
func TestRevisions(t *testing.T) {
	p := field.NewPath("spec", "model", "revision")
	bad := field.ErrorList{field.Invalid(p, nil, "")}
	cases := []struct {
		rev  string
		want field.ErrorList
	}{
		{"main", nil},
		{"v1.0.2", nil},
		{"refs/pr/3", nil},
		{"0123456789abcdef0123456789abcdef01234567", nil},
		{"release_2024-01+build", nil},
		{"main branch", bad},
		{"main\x00", bad},
		{"main\t", bad},
		{"\x1b[2Jmain", bad},
		{"main\x1b]8;;x\x07", bad},
		{"--trust-remote-code", bad},
		{"a..b", bad},
		{"a//b", bad},
		{"a/", bad},
		{"a.", bad},
		{"a.lock", bad},
		{"a@{1}", bad},
		{"$(id)", bad},
	}
	for _, tc := range cases {
		t.Run(tc.rev, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, admission.ValidateRevision(tc.rev, p), ignoreDetail); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestAddedRulesRatchet: autoApply disabled in the configuration refuses autoApply at its
// path; the ratcheting rules apply on update only to fields the update changes.
func TestAddedRulesRatchet(t *testing.T) {
	opts := admission.Options{Caps: aisimulate.Caps{MaxTrials: 1000, MaxParallelism: 32}, MaxPodTemplateOverrideBytes: 32 << 10}
	req := func(mut func(*v1beta2.DynamoGraphDeploymentRequest)) *v1beta2.DynamoGraphDeploymentRequest {
		d := newRequest().obj()
		mut(d)
		_ = admission.Default(d, admission.DefaultingOptions{DefaultGPUSKU: "h200_sxm"})
		return d
	}
	autoApply := func(d *v1beta2.DynamoGraphDeploymentRequest) {
		d.Spec.Deployment = &v1beta2.DeploymentSpec{AutoApply: ptr.To(true)}
	}
	oldName := func(d *v1beta2.DynamoGraphDeploymentRequest) { d.Spec.Model.Name = "org/m;x" }
	aa := field.NewPath("spec", "deployment", "autoApply")
	cases := []struct {
		name     string
		old, new *v1beta2.DynamoGraphDeploymentRequest
		want     field.ErrorList
	}{
		{"create with autoApply while disabled", nil, req(autoApply), field.ErrorList{field.Forbidden(aa, "")}},
		{"update turning autoApply on while disabled", req(func(*v1beta2.DynamoGraphDeploymentRequest) {}), req(autoApply),
			field.ErrorList{field.Forbidden(aa, "")}},
		{"update keeping a stored autoApply", req(autoApply), req(func(d *v1beta2.DynamoGraphDeploymentRequest) {
			autoApply(d)
			d.Spec.Model.Revision = "main"
		}), nil},
		{"update keeping a stored bad model name", req(oldName), req(func(d *v1beta2.DynamoGraphDeploymentRequest) {
			oldName(d)
			d.Spec.Model.Revision = "main"
		}), nil},
		{"update changing to a bad model name", req(func(*v1beta2.DynamoGraphDeploymentRequest) {}), req(oldName),
			field.ErrorList{field.Invalid(field.NewPath("spec", "model", "name"), nil, "")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var errs field.ErrorList
			if tc.old == nil {
				_, errs = admission.Validate(tc.new, opts)
			} else {
				_, _, errs = admission.ValidateUpdate(tc.old, tc.new, opts)
			}
			if diff := cmp.Diff(tc.want, errs, ignoreDetail); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestRequiredAccess: which rights the requesting user must hold, and when they are checked.
func TestRequiredAccess(t *testing.T) {
	dgd := func(verb, path string) string { return verb + " dynamographdeployments.nvidia.com @" + path }
	cases := []struct {
		name string
		mut  func(*v1beta2.DynamoGraphDeploymentRequest)
		want []string
	}{
		{"a search needs nothing", func(*v1beta2.DynamoGraphDeploymentRequest) {}, nil},
		{"autoApply", func(d *v1beta2.DynamoGraphDeploymentRequest) {
			d.Spec.Deployment = &v1beta2.DeploymentSpec{AutoApply: ptr.To(true)}
		},
			[]string{dgd("create", "spec.deployment.autoApply"), dgd("update", "spec.deployment.autoApply"), "create pods @spec.deployment.autoApply"}},
		{"remoteCode AlwaysTrust", func(d *v1beta2.DynamoGraphDeploymentRequest) { d.Spec.Model.RemoteCode = v1beta2.RemoteCodeAlwaysTrust },
			[]string{dgd("create", "spec.model.remoteCode"), dgd("update", "spec.model.remoteCode"), "create pods @spec.model.remoteCode"}},
		{"objects by name", func(d *v1beta2.DynamoGraphDeploymentRequest) {
			d.Spec.Model.TokenSecretRef = &v1beta2.TokenSecretReference{Name: "hf"}
			d.Spec.Model.Cache = &v1beta2.ModelCacheSpec{PVC: &v1beta2.ModelCachePVC{ClaimName: "models"}}
			d.Spec.Workload = &v1beta2.WorkloadSpec{Trace: &v1beta2.TraceWorkload{Source: cmSource("traffic", "t")}}
		}, []string{"get secrets/hf @spec.model.tokenSecretRef.name", "get persistentvolumeclaims/models @spec.model.cache.pvc.claimName",
			"get configmaps/traffic @spec.workload.trace.source.configMap.name"}},
		{"trace claim", func(d *v1beta2.DynamoGraphDeploymentRequest) {
			d.Spec.Workload = &v1beta2.WorkloadSpec{Trace: &v1beta2.TraceWorkload{Source: &v1beta2.TraceSource{PVC: &v1beta2.TracePVCSource{ClaimName: "archive", Path: "t"}}}}
		}, []string{"get persistentvolumeclaims/archive @spec.workload.trace.source.pvc.claimName"}},
		{"capture claim", func(d *v1beta2.DynamoGraphDeploymentRequest) {
			d.Spec.Deployment = &v1beta2.DeploymentSpec{Capture: &v1beta2.CaptureSpec{Enabled: ptr.To(true), ClaimName: "traces"}}
		}, []string{"get persistentvolumeclaims/traces @spec.deployment.capture.claimName"}},
		{"capture off mounts nothing", func(d *v1beta2.DynamoGraphDeploymentRequest) {
			d.Spec.Deployment = &v1beta2.DeploymentSpec{Capture: &v1beta2.CaptureSpec{Enabled: ptr.To(false), ClaimName: "traces"}}
		}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := newRequest().obj()
			tc.mut(d)
			var got []string
			for _, a := range admission.RequiredAccess(&d.Spec) {
				got = append(got, a.String()+" @"+a.Path.String())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestNeedsAccessReview: creates, and spec updates of autoApply requests or of the deployment,
// model or workload, are reviewed; metadata-only updates and other edits of searches are not.
func TestNeedsAccessReview(t *testing.T) {
	base := newRequest().obj()
	with := func(mut func(*v1beta2.DynamoGraphDeploymentRequest)) *v1beta2.DynamoGraphDeploymentRequest {
		d := base.DeepCopy()
		mut(d)
		return d
	}
	auto := with(func(d *v1beta2.DynamoGraphDeploymentRequest) {
		d.Spec.Deployment = &v1beta2.DeploymentSpec{AutoApply: ptr.To(true)}
	})
	cases := []struct {
		name     string
		old, new *v1beta2.DynamoGraphDeploymentRequest
		want     bool
	}{
		{"create", nil, base, true},
		{"metadata only", base, with(func(d *v1beta2.DynamoGraphDeploymentRequest) { d.Annotations = map[string]string{"a": "b"} }), false},
		{"metadata only of an autoApply request", auto, with(func(d *v1beta2.DynamoGraphDeploymentRequest) {
			d.Spec.Deployment = &v1beta2.DeploymentSpec{AutoApply: ptr.To(true)}
			d.Annotations = map[string]string{"a": "b"}
		}), false},
		{"SLA of a search", base, with(func(d *v1beta2.DynamoGraphDeploymentRequest) { d.Spec.SLA = &v1beta2.SLASpec{TTFTMs: f64(100)} }), false},
		{"SLA of an autoApply request", auto, with(func(d *v1beta2.DynamoGraphDeploymentRequest) {
			d.Spec.Deployment = &v1beta2.DeploymentSpec{AutoApply: ptr.To(true)}
			d.Spec.SLA = &v1beta2.SLASpec{TTFTMs: f64(100)}
		}), true},
		{"sets autoApply", base, auto, true},
		{"model", base, with(func(d *v1beta2.DynamoGraphDeploymentRequest) { d.Spec.Model.Revision = "main" }), true},
		{"deployment", base, with(func(d *v1beta2.DynamoGraphDeploymentRequest) { d.Spec.Deployment = &v1beta2.DeploymentSpec{Name: "x"} }), true},
		{"workload", base, with(func(d *v1beta2.DynamoGraphDeploymentRequest) {
			d.Spec.Workload = &v1beta2.WorkloadSpec{Trace: &v1beta2.TraceWorkload{Source: cmSource("t", "k")}}
		}), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := admission.NeedsAccessReview(tc.old, tc.new); got != tc.want {
				t.Errorf("NeedsAccessReview = %v, want %v", got, tc.want)
			}
		})
	}
}
