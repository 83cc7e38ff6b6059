package status

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/internal/scheme"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
)

// podOwner owns a Pod's status.message and its condition of type Mine.
var podOwner = Owner{Manager: "mine", Fields: []string{"message", "nominatedNodeName"}, Conditions: []string{"Mine"}}

// podVersion is the resourceVersion of the Pods statusPod builds.
const podVersion = "7"

// statusPod is a Pod at podVersion whose status has a message, a reason (another writer's) and
// conditions.
func statusPod(conditions ...corev1.PodCondition) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", ResourceVersion: podVersion},
		Status:     corev1.PodStatus{Message: "waiting", Reason: "Theirs", Conditions: conditions},
	}
}

var (
	t0 = metav1.NewTime(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	t1 = metav1.NewTime(t0.Add(time.Minute))
)

func cond(typ string, s corev1.ConditionStatus, reason string, at metav1.Time) corev1.PodCondition {
	return corev1.PodCondition{Type: corev1.PodConditionType(typ), Status: s, Reason: reason, LastTransitionTime: at}
}

func TestOwnerPatch(t *testing.T) {
	theirs := cond("Theirs", corev1.ConditionTrue, "T", t0)
	mine := cond("Mine", corev1.ConditionFalse, "M", t0)
	cases := []struct {
		name            string
		current, wanted *corev1.Pod
		want            string // "" for no patch
	}{
		{"unchanged", statusPod(theirs), statusPod(theirs), ""},
		{"an owned field changed: no resourceVersion, nothing else",
			statusPod(theirs), func() *corev1.Pod { p := statusPod(theirs); p.Status.Message = "running"; return p }(),
			`{"status":{"message":"running"}}`},
		{"an owned field cleared", statusPod(), func() *corev1.Pod { p := statusPod(); p.Status.Message = ""; return p }(),
			`{"status":{"message":null}}`},
		{"an owned condition added: the list as read plus it, and the version it was read at",
			statusPod(theirs), statusPod(theirs, cond("Mine", corev1.ConditionTrue, "Up", t1)),
			`{"metadata":{"resourceVersion":"7"},"status":{"conditions":[` +
				`{"lastProbeTime":null,"lastTransitionTime":"2026-12-01T12:00:00Z","reason":"T","status":"True","type":"Theirs"},` +
				`{"lastProbeTime":null,"lastTransitionTime":"2026-12-01T12:01:00Z","reason":"Up","status":"True","type":"Mine"}]}}`},
		{"an owned condition whose status stays keeps its transition time",
			statusPod(mine, theirs), statusPod(cond("Mine", corev1.ConditionFalse, "Other", t1), theirs),
			`{"metadata":{"resourceVersion":"7"},"status":{"conditions":[` +
				`{"lastProbeTime":null,"lastTransitionTime":"2026-12-01T12:00:00Z","reason":"Other","status":"False","type":"Mine"},` +
				`{"lastProbeTime":null,"lastTransitionTime":"2026-12-01T12:00:00Z","reason":"T","status":"True","type":"Theirs"}]}}`},
		{"the last condition removed", statusPod(mine), statusPod(), `{"metadata":{"resourceVersion":"7"},"status":{"conditions":null}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			current, err := statusMap(tc.current)
			if err != nil {
				t.Fatal(err)
			}
			wanted, err := statusMap(tc.wanted)
			if err != nil {
				t.Fatal(err)
			}
			if paths := podOwner.unowned(current, wanted); len(paths) > 0 {
				t.Fatalf("unowned changes %v", paths)
			}
			got, err := podOwner.patch(current, wanted, tc.current.ResourceVersion)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestOwnerRefusesOthersFields: a reconcile that changed a field or condition type of another
// writer writes nothing and names what it changed.
func TestOwnerRefusesOthersFields(t *testing.T) {
	theirs := cond("Theirs", corev1.ConditionTrue, "T", t0)
	cases := []struct {
		name   string
		mutate func(*corev1.Pod)
		want   []string
	}{
		{"another's field", func(p *corev1.Pod) { p.Status.Reason = "Mine now" }, []string{"status.reason"}},
		{"a field no one listed", func(p *corev1.Pod) { p.Status.HostIP = "10.0.0.1" }, []string{"status.hostIP"}},
		{"another's condition", func(p *corev1.Pod) { p.Status.Conditions[0].Reason = "Mine now" }, []string{"status.conditions[type=Theirs]"}},
		{"another's condition removed, own field changed", func(p *corev1.Pod) { p.Status.Conditions, p.Status.Message = nil, "x" },
			[]string{"status.conditions[type=Theirs]"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := statusPod(theirs)
			obj := base.DeepCopy()
			tc.mutate(obj)
			w := podOwner.NewWriter(nil, nil, base, nil)
			wrote, err := w.Patch(context.Background(), obj)
			var notOwned *NotOwnedError
			if wrote || !errors.As(err, &notOwned) {
				t.Fatalf("Patch = %t, %v; want a NotOwnedError and no write", wrote, err)
			}
			if diff := cmp.Diff(tc.want, notOwned.Paths); diff != "" {
				t.Errorf("paths (-want +got):\n%s", diff)
			}
			if !strings.Contains(err.Error(), "mine changed") {
				t.Errorf("error %q does not name the writer", err)
			}
		})
	}
}

// TestOwnersDoNotClobberEachOther: against a real API server, two writers read the same version
// of a Pod and each change their own field and condition. The second write conflicts (the first
// changed the conditions list since), puts its share on the object as the server has it and
// succeeds: both conditions and both fields are there, and managedFields name each writer for
// its own condition.
func TestOwnersDoNotClobberEachOther(t *testing.T) {
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
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "owners"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/c:1"}}},
	}
	if err := env.Client.Create(ctx, pod); err != nil {
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
	first := Owner{Manager: "first", Fields: []string{"message"}, Conditions: []string{"First"}}
	second := Owner{Manager: "second", Fields: []string{"reason"}, Conditions: []string{"Second"}}
	base := read()
	objA, objB := base.DeepCopy(), base.DeepCopy()
	wA, wB := first.NewWriter(c, env.Client, objA, nil), second.NewWriter(c, env.Client, objB, nil)
	objA.Status.Message = "from first"
	objA.Status.Conditions = append(objA.Status.Conditions, cond("First", corev1.ConditionTrue, "A", t0))
	objB.Status.Reason = "FromSecond"
	objB.Status.Conditions = append(objB.Status.Conditions, cond("Second", corev1.ConditionTrue, "B", t0))
	for _, w := range []struct {
		w   *Writer
		obj *corev1.Pod
	}{{wA, objA}, {wB, objB}} {
		if wrote, err := w.w.Patch(ctx, w.obj); err != nil || !wrote {
			t.Fatalf("Patch = %t, %v; want a write", wrote, err)
		}
	}
	got := read()
	types := []string{}
	for _, c := range got.Status.Conditions {
		types = append(types, string(c.Type))
	}
	if diff := cmp.Diff([]string{"First", "Second"}, types); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
	if got.Status.Message != "from first" || got.Status.Reason != "FromSecond" {
		t.Errorf("message %q, reason %q: a writer's field was lost", got.Status.Message, got.Status.Reason)
	}
	if n := len(recorder.take()); n != 3 {
		t.Errorf("%d patches sent, want 3 (the second writer's first one conflicts)", n)
	}
	owners := map[string]string{}
	for _, mf := range got.ManagedFields {
		if mf.Subresource != "status" || mf.FieldsV1 == nil {
			continue
		}
		for _, typ := range []string{"First", "Second"} {
			if strings.Contains(mf.FieldsV1.GetRawString(), `k:{\"type\":\"`+typ+`\"}`) {
				owners[typ] += mf.Manager
			}
		}
	}
	if diff := cmp.Diff(map[string]string{"First": "first", "Second": "second"}, owners); diff != "" {
		t.Errorf("managers of the conditions (-want +got):\n%s", diff)
	}
}

// TestPatchNowRefusesAFieldItDoesNotOwn: an immediate write of a field outside the owner's
// share is refused before anything is sent, naming the field.
func TestPatchNowRefusesAFieldItDoesNotOwn(t *testing.T) {
	err := podOwner.PatchNow(context.Background(), nil, &corev1.Pod{}, map[string]any{"phase": "Failed"})
	var notOwned *NotOwnedError
	if !errors.As(err, &notOwned) {
		t.Fatalf("error %v, want a NotOwnedError", err)
	}
	if diff := cmp.Diff([]string{"status.phase"}, notOwned.Paths); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
}
