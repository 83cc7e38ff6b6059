package request

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/naming"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
	"github.com/dgdr-operator/dgdr-operator/internal/version"
)

func request(name string, generation int64) *v1beta2.DynamoGraphDeploymentRequest {
	return builders.Request("ns", name).Model("m").UID("uid-1").Generation(generation).
		Label(v1beta2.LabelKueueQueueName, "q").Label("team", "a").GPUSKU("h200_sxm").GPUBudget(8).Obj()
}

func TestBuildRun(t *testing.T) {
	d := request("llama", 4)
	got, err := BuildRun(d, "sha256:input")
	if err != nil {
		t.Fatal(err)
	}
	specHash, _ := SpecHash(&d.Spec)
	want := &v1beta2.DynamoGraphDeploymentRun{
		ObjectMeta: metav1.ObjectMeta{
			Name: "llama-run-4", Namespace: "ns",
			Labels: map[string]string{v1beta2.LabelRequestName: "llama", v1beta2.LabelRequestUID: "uid-1",
				v1beta2.LabelRequestGeneration: "4", v1beta2.LabelKueueQueueName: "q"},
			Annotations: map[string]string{v1beta2.AnnotationSpecHash: specHash, v1beta2.AnnotationInputHash: "sha256:input",
				v1beta2.AnnotationOperatorVersion: version.Get().Version},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "nvidia.com/v1beta2", Kind: "DynamoGraphDeploymentRequest",
				Name: "llama", UID: "uid-1", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		Spec: d.Spec,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("BuildRun (-want +got):\n%s", diff)
	}
	// The copy is deep: editing the request afterwards does not reach the Run.
	*d.Spec.Hardware.GPU.Budget = 99
	if *got.Spec.Hardware.GPU.Budget != 8 {
		t.Error("Run spec shares memory with the request")
	}
}

func TestRunNamesAreDeterministicAndBounded(t *testing.T) {
	long := strings.Repeat("a", 60)
	cases := []struct {
		name       string
		request    string
		generation int64
		want       string
	}{
		{name: "short", request: "llama", generation: 1, want: "llama-run-1"},
		{name: "large generation", request: "llama", generation: 123456, want: "llama-run-123456"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := naming.RunName(tc.request, tc.generation); got != tc.want {
				t.Errorf("RunName = %s, want %s", got, tc.want)
			}
		})
	}
	a, b := naming.RunName(long, 7), naming.RunName(long+"b", 7)
	if len(a) > 63 || len(b) > 63 || a == b || !strings.HasSuffix(a, "-run-7") {
		t.Errorf("long names: %s, %s", a, b)
	}
	if naming.RunName(long, 7) != a {
		t.Error("not deterministic")
	}
	if n := naming.JobName(a); len(n) > 63 {
		t.Errorf("job name too long: %s", n)
	}
}

func TestSpecHashChangesWithTheSpec(t *testing.T) {
	a, b := request("x", 1), request("x", 2)
	ha, _ := SpecHash(&a.Spec)
	hb, _ := SpecHash(&b.Spec)
	if ha != hb {
		t.Error("same spec, different hash")
	}
	b.Spec.Model.Name = "other"
	hb, _ = SpecHash(&b.Spec)
	if ha == hb || !strings.HasPrefix(ha, "sha256:") {
		t.Errorf("hashes %s %s", ha, hb)
	}
}
