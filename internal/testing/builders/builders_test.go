package builders_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
)

func raw(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }

func TestRequest(t *testing.T) {
	cases := []struct {
		name string
		got  *v1beta2.DynamoGraphDeploymentRequest
		want *v1beta2.DynamoGraphDeploymentRequest
	}{
		{"model only", builders.Request("ns", "r").Obj(), &v1beta2.DynamoGraphDeploymentRequest{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r"},
			Spec:       v1beta2.DynamoGraphDeploymentRequestSpec{Model: v1beta2.ModelSpec{Name: builders.Model}},
		}},
		{"every setter", builders.Request("ns", "r").Model("m").Revision("main").UID("u").Generation(3).
			Label("l", "1").Annotation("a", "2").GPUSKU("h200_sxm").GPUBudget(8).MaxCandidates(4).TTFT(500).ITL(30).
			Overrides(`{"optimizer":{}}`).AutoApply("prod").WorkersOverride(`{"spec":{}}`).Obj(),
			&v1beta2.DynamoGraphDeploymentRequest{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r", UID: "u", Generation: 3,
					Labels: map[string]string{"l": "1"}, Annotations: map[string]string{"a": "2"}},
				Spec: v1beta2.DynamoGraphDeploymentRequestSpec{
					Model:          v1beta2.ModelSpec{Name: "m", Revision: "main"},
					Hardware:       &v1beta2.HardwareSpec{GPU: &v1beta2.GPUSpec{SKU: "h200_sxm", Budget: ptr.To[int32](8)}},
					Recommendation: &v1beta2.RecommendationSpec{MaxCandidates: ptr.To[int32](4)},
					SLA:            &v1beta2.SLASpec{TTFTMs: ptr.To(500.0), ITLMs: ptr.To(30.0)},
					AISimulate:     &v1beta2.AISimulateSpec{InputOverrides: raw(`{"optimizer":{}}`)},
					Deployment: &v1beta2.DeploymentSpec{AutoApply: ptr.To(true), Name: "prod",
						PodTemplateOverrides: &v1beta2.PodTemplateOverrides{Workers: raw(`{"spec":{}}`)}},
				},
			}},
		{"deployment and re-search", builders.Request("", "").AutoApply("prod").Capture("traffic").
			Verification(&v1beta2.VerificationSpec{Enabled: ptr.To(true)}).Research(60, 5).Objective(v1beta2.TargetThroughputPerGPU).Obj(),
			&v1beta2.DynamoGraphDeploymentRequest{Spec: v1beta2.DynamoGraphDeploymentRequestSpec{
				Model: v1beta2.ModelSpec{Name: builders.Model},
				Deployment: &v1beta2.DeploymentSpec{AutoApply: ptr.To(true), Name: "prod",
					Capture:      &v1beta2.CaptureSpec{Enabled: ptr.To(true), ClaimName: "traffic"},
					Verification: &v1beta2.VerificationSpec{Enabled: ptr.To(true)}},
				Research:  &v1beta2.ResearchSpec{IntervalMinutes: 60, MinRequests: ptr.To[int32](5)},
				Objective: &v1beta2.ObjectiveSpec{Target: v1beta2.TargetThroughputPerGPU},
			}}},
		{"load", builders.Request("", "").Load(v1beta2.LoadSpec{Concurrency: ptr.To[int32](4)}).Obj(), &v1beta2.DynamoGraphDeploymentRequest{
			Spec: v1beta2.DynamoGraphDeploymentRequestSpec{Model: v1beta2.ModelSpec{Name: builders.Model},
				Workload: &v1beta2.WorkloadSpec{Static: &v1beta2.StaticWorkload{Load: &v1beta2.LoadSpec{Concurrency: ptr.To[int32](4)}}}},
		}},
	}
	for _, c := range cases {
		if diff := cmp.Diff(c.want, c.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
}

// TestObjIsACopy: objects a builder made do not change with it, nor it with them.
func TestObjIsACopy(t *testing.T) {
	b := builders.Request("ns", "r").GPUSKU("a")
	first := b.Obj()
	b.GPUSKU("b")
	first.Spec.Model.Name = "changed"
	if got := first.Spec.Hardware.GPU.SKU; got != "a" {
		t.Errorf("an earlier object's SKU became %q", got)
	}
	if got := b.Obj().Spec.Model.Name; got != builders.Model {
		t.Errorf("the builder's model became %q", got)
	}
}

func TestRun(t *testing.T) {
	req := builders.Request("ns", "llm").UID("req-uid").MaxCandidates(2).Obj()
	created := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	got := builders.Run("ns", "llm-run-2").From(req, 2).UID("run-uid").Created(created).Annotation("a", "b").
		Phase(v1beta2.RunPhaseRunning).Completed(metav1.ConditionFalse, v1beta2.ReasonEvaluatingCandidates, "test").
		Input(`{"engine":{}}`).InputHash("sha256:in").Obj()
	want := &v1beta2.DynamoGraphDeploymentRun{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "llm-run-2", UID: "run-uid", CreationTimestamp: metav1.NewTime(created),
			Labels:      map[string]string{v1beta2.LabelRequestName: "llm", v1beta2.LabelRequestUID: "req-uid", v1beta2.LabelRequestGeneration: "2"},
			Annotations: map[string]string{"a": "b"}},
		Spec: req.Spec,
		Status: v1beta2.DynamoGraphDeploymentRunStatus{Phase: v1beta2.RunPhaseRunning,
			Conditions: []metav1.Condition{{Type: v1beta2.ConditionCompleted, Status: metav1.ConditionFalse,
				Reason: v1beta2.ReasonEvaluatingCandidates, Message: "test"}},
			AISimulate: &v1beta2.AISimulateStatus{Input: raw(`{"engine":{}}`), InputHash: "sha256:in"}},
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(metav1.Condition{}, "LastTransitionTime")); diff != "" {
		t.Errorf("Run (-want +got):\n%s", diff)
	}
	if spec := builders.Run("ns", "r").WithSpec(req.Spec).Obj().Spec; !cmp.Equal(spec, req.Spec) {
		t.Errorf("WithSpec gave %+v", spec)
	}
}

func TestCandidate(t *testing.T) {
	run := builders.Run("ns", "llm-run-1").UID("run-uid").Obj()
	got := builders.Candidate("ns", "c1").OwnedBy(run).Label("team", "a").GPUs(2).
		GraphDeployment([]byte(`{"spec":{}}`)).Parameters(`{"engine":{}}`).Obj()
	want := &v1beta2.DynamoGraphDeploymentCandidate{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c1",
			Labels: map[string]string{v1beta2.LabelRunName: "llm-run-1", v1beta2.LabelRunUID: "run-uid", "team": "a"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "nvidia.com/v1beta2", Kind: "DynamoGraphDeploymentRun",
				Name: "llm-run-1", UID: "run-uid", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		Spec: v1beta2.DynamoGraphDeploymentCandidateSpec{Backend: v1beta2.BackendVLLM, Mode: v1beta2.ModeAggregated, GPUs: 2,
			GraphDeployment: *raw(`{"spec":{}}`), Parameters: *raw(`{"engine":{}}`)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Candidate (-want +got):\n%s", diff)
	}
}

func TestV1Beta1Request(t *testing.T) {
	got := builders.V1Beta1Request("ns", "qwen", "Qwen/Qwen3-0.6B", v1beta1.BackendSGLang)
	want := &v1beta1.DynamoGraphDeploymentRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "qwen"},
		Spec: v1beta1.DynamoGraphDeploymentRequestSpec{Model: "Qwen/Qwen3-0.6B", Backend: v1beta1.BackendSGLang}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
