package status

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/scheme"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
)

func TestStatusPatch(t *testing.T) {
	pod := func(mutate func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Labels: map[string]string{"a": "1"}},
			Status: corev1.PodStatus{Phase: corev1.PodPending, Message: "waiting",
				Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}},
		}
		mutate(p)
		return p
	}
	cases := []struct {
		name   string
		mutate func(*corev1.Pod)
		want   string // "" for no patch
	}{
		{"unchanged", func(*corev1.Pod) {}, ""},
		{"only metadata changed: not the status writer's", func(p *corev1.Pod) { p.Labels["a"] = "2" }, ""},
		{"nil and empty lists encode alike", func(p *corev1.Pod) { p.Status.ContainerStatuses = []corev1.ContainerStatus{} }, ""},
		{"a field changed", func(p *corev1.Pod) { p.Status.Message = "running" }, `{"status":{"message":"running"}}`},
		{"a field cleared", func(p *corev1.Pod) { p.Status.Message = "" }, `{"status":{"message":null}}`},
		{"a list is replaced whole", func(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse },
			`{"status":{"conditions":[{"lastProbeTime":null,"lastTransitionTime":null,"status":"False","type":"PodScheduled"}]}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := statusPatch(pod(func(*corev1.Pod) {}), pod(tc.mutate))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("status patch (-want +got):\n%s", diff)
			}
		})
	}
}

// patchRecorder records the bodies of the PATCH requests a client sends.
type patchRecorder struct {
	mu      sync.Mutex
	patches []string
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func (p *patchRecorder) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if req.Method == http.MethodPatch && req.Body != nil {
			body, err := io.ReadAll(req.Body)
			if err != nil {
				return nil, err
			}
			req.Body = io.NopCloser(bytes.NewReader(body))
			p.mu.Lock()
			p.patches = append(p.patches, req.URL.Path+" "+string(body))
			p.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

func (p *patchRecorder) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.patches
	p.patches = nil
	return out
}

// TestWriterAgainstAPIServer: against a real API server, a reconcile that changed nothing sends
// nothing, one that changed its status sends one status patch of just that change (leaving
// another writer's fields and the object's metadata alone), and the write is expected until
// the cache shows a newer version.
func TestWriterAgainstAPIServer(t *testing.T) {
	env, err := testenv.Start(testenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Stop)
	ctx := context.Background()
	recorder := &patchRecorder{}
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(recorder.wrap)
	c, err := client.New(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "writer", Labels: map[string]string{"app": "writer"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/c:1"}}},
	}
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	// Another writer owns status.reason.
	pod.Status.Reason = "OtherWriter"
	if err := env.Client.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	read := func() *corev1.Pod {
		t.Helper()
		p := &corev1.Pod{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pod), p); err != nil {
			t.Fatal(err)
		}
		return p
	}

	var expectations Expectations
	unchanged := read()
	w := NewWriter(c, unchanged, &expectations)
	unchanged.Labels["app"] = "renamed" // not the status writer's to send
	if wrote, err := w.Patch(ctx, unchanged); err != nil || wrote {
		t.Fatalf("Patch of an unchanged status = %t, %v; want no write", wrote, err)
	}
	if got := recorder.take(); len(got) != 0 {
		t.Errorf("an unchanged status sent %q", got)
	}
	if !expectations.Satisfied(unchanged) {
		t.Error("a reconcile that wrote nothing expects a write")
	}

	before := read()
	changed := before.DeepCopy()
	w = NewWriter(c, changed, &expectations)
	changed.Status.Message = "reconciled"
	changed.Labels["app"] = "renamed"
	if wrote, err := w.Patch(ctx, changed); err != nil || !wrote {
		t.Fatalf("Patch of a changed status = %t, %v; want one write", wrote, err)
	}
	want := []string{"/api/v1/namespaces/default/pods/writer/status " + `{"status":{"message":"reconciled"}}`}
	if diff := cmp.Diff(want, recorder.take()); diff != "" {
		t.Errorf("requests sent (-want +got):\n%s", diff)
	}
	after := read()
	if after.Status.Message != "reconciled" || after.Status.Reason != "OtherWriter" || after.Labels["app"] != "writer" {
		t.Errorf("after the write: message %q, reason %q, label %q; want reconciled, OtherWriter (another writer's), writer (metadata untouched)",
			after.Status.Message, after.Status.Reason, after.Labels["app"])
	}
	if changed.ResourceVersion != after.ResourceVersion {
		t.Errorf("the written object has resourceVersion %s, the server %s", changed.ResourceVersion, after.ResourceVersion)
	}
	if expectations.Satisfied(before) {
		t.Errorf("a cache still at the version the write was computed from (%s) may be reconciled", before.ResourceVersion)
	}
	if !expectations.Satisfied(after) {
		t.Errorf("the written version %s is not reconciled", after.ResourceVersion)
	}
}

// TestStatusDocumentIsTheObjectsOwn: the status document encodes the Status field alone; it must
// be byte for byte what encoding the whole object puts under "status", for every kind the
// controllers write (and for an object without a Status field, which encodes the whole object).
func TestStatusDocumentIsTheObjectsOwn(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC))
	run := builders.Run("ns", "r-1").Obj()
	run.Status = v1beta2.DynamoGraphDeploymentRunStatus{
		Phase:      v1beta2.RunPhaseRunning,
		Message:    `a <message> & "quotes"`,
		AISimulate: &v1beta2.AISimulateStatus{Input: &runtime.RawExtension{Raw: []byte(`{"engine": {"model": "m<1>"}}`)}, InputHash: "h"},
		StartTime:  &now,
		Conditions: []metav1.Condition{{Type: v1beta2.ConditionCompleted, Status: metav1.ConditionFalse, Reason: "Running", LastTransitionTime: now}},
	}
	request := builders.Request("ns", "q").TTFT(500).Obj()
	request.Status = v1beta2.DynamoGraphDeploymentRequestStatus{
		ObservedGeneration: 3,
		LatestRun:          &v1beta2.RunSummary{Name: "q-3", Phase: v1beta2.RunPhaseSucceeded},
		Conditions:         []metav1.Condition{{Type: v1beta2.ConditionAccepted, Status: metav1.ConditionTrue, Reason: "RunCreated", LastTransitionTime: now}},
	}
	cases := []struct {
		name string
		obj  client.Object
	}{
		{"Run", run},
		{"Run without status", builders.Run("ns", "r-2").Obj()},
		{"request", request},
		{"Pod", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &now}}},
		{"Job", &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j"}, Status: batchv1.JobStatus{Active: 1}}},
		{"ConfigMap (no status)", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"k": "v"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			whole, err := json.Marshal(tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			var parts struct {
				Status json.RawMessage `json:"status,omitempty"`
			}
			if err := json.Unmarshal(whole, &parts); err != nil {
				t.Fatal(err)
			}
			if len(parts.Status) == 0 {
				parts.Status = json.RawMessage("{}")
			}
			want, err := json.Marshal(parts)
			if err != nil {
				t.Fatal(err)
			}
			got, err := statusDocument(tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("status document (-from the whole object +got):\n%s", diff)
			}
		})
	}
}

// BenchmarkStatusPatch: the status patch of a Run as the Run controller computes it at each
// reconcile (spec and recorded input in the object, one status field changed).
func BenchmarkStatusPatch(b *testing.B) {
	req := builders.Request("ns", "q").TTFT(500).ITL(30).Obj()
	req.Spec.Hardware = &v1beta2.HardwareSpec{GPU: &v1beta2.GPUSpec{SKU: "h200_sxm"}}
	in, errs := aisimulate.Lower(&req.Spec, aisimulate.Options{})
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	base := builders.Run("ns", "q-1").From(req, 1).Phase(v1beta2.RunPhasePending).Obj()
	base.Status.AISimulate = &v1beta2.AISimulateStatus{Input: &runtime.RawExtension{Raw: in.JSON}, InputHash: in.Hash}
	obj := base.DeepCopy()
	obj.Status.Phase = v1beta2.RunPhaseRunning
	b.ReportAllocs()
	for b.Loop() {
		if _, err := statusPatch(base, obj); err != nil {
			b.Fatal(err)
		}
	}
}
