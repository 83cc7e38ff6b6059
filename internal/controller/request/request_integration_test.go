package request_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	ct "github.com/dgdr-operator/dgdr-operator/internal/controller/controllertest"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/request"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/internal/naming"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/poll"
	"github.com/dgdr-operator/dgdr-operator/internal/version"
)

const wait = 20 * time.Second

func get[T client.Object](t *testing.T, obj T) T {
	t.Helper()
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

func runsOf(t *testing.T, d *v1beta2.DynamoGraphDeploymentRequest) []v1beta2.DynamoGraphDeploymentRun {
	t.Helper()
	var list v1beta2.DynamoGraphDeploymentRunList
	if err := k8s.List(context.Background(), &list, client.InNamespace(d.Namespace),
		client.MatchingLabels{v1beta2.LabelRequestName: d.Name}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func waitForRun(t *testing.T, d *v1beta2.DynamoGraphDeploymentRequest, generation int64) *v1beta2.DynamoGraphDeploymentRun {
	t.Helper()
	r := &v1beta2.DynamoGraphDeploymentRun{ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: naming.RunName(d.Name, generation)}}
	poll.Eventually(t, wait, "Run "+r.Name, func() (bool, error) {
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(r), r)
		return err == nil && r.Status.AISimulate != nil, client.IgnoreNotFound(err)
	})
	return r
}

func waitForStatus(t *testing.T, d *v1beta2.DynamoGraphDeploymentRequest, what string, cond func(*v1beta2.DynamoGraphDeploymentRequest) bool) *v1beta2.DynamoGraphDeploymentRequest {
	t.Helper()
	cur := &v1beta2.DynamoGraphDeploymentRequest{}
	poll.Eventually(t, wait, what, func() (bool, error) {
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(d), cur)
		return err == nil && cond(cur), err
	})
	return cur
}

func completedReason(r *v1beta2.DynamoGraphDeploymentRun) string {
	if c := meta.FindStatusCondition(r.Status.Conditions, v1beta2.ConditionCompleted); c != nil && c.Status == metav1.ConditionTrue {
		return c.Reason
	}
	return ""
}

func waitForRunReason(t *testing.T, r *v1beta2.DynamoGraphDeploymentRun, reason string) {
	t.Helper()
	poll.Eventually(t, wait, r.Name+" "+reason, func() (bool, error) {
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(r), r)
		return err == nil && completedReason(r) == reason, err
	})
}

// editSpec changes the request's spec (a new generation).
func editSpec(t *testing.T, d *v1beta2.DynamoGraphDeploymentRequest, ttft float64) {
	t.Helper()
	cur := get(t, d.DeepCopy())
	patch := client.MergeFrom(cur.DeepCopy())
	cur.Spec.SLA = &v1beta2.SLASpec{TTFTMs: &ttft}
	if err := k8s.Patch(context.Background(), cur, patch); err != nil {
		t.Fatal(err)
	}
}

func TestOneRunPerAcceptedGenerationAndSupersession(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k8s, "t")
	d := builders.Request(ns, "llama").Obj()
	if err := k8s.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	run1 := waitForRun(t, d, 1)
	admitted := get(t, d.DeepCopy())

	// The Run records the admitted spec exactly, and who it belongs to.
	if diff := cmp.Diff(admitted.Spec, run1.Spec); diff != "" {
		t.Errorf("Run spec differs from the admitted request spec (-dgdr +run):\n%s", diff)
	}
	if !metav1.IsControlledBy(run1, admitted) {
		t.Error("the Run must be controlled by the request")
	}
	wantLabels := map[string]string{v1beta2.LabelRequestName: d.Name, v1beta2.LabelRequestUID: string(admitted.UID), v1beta2.LabelRequestGeneration: "1"}
	if diff := cmp.Diff(wantLabels, run1.Labels); diff != "" {
		t.Errorf("Run labels (-want +got):\n%s", diff)
	}
	lowered, errs := aisimulate.Lower(&admitted.Spec, aisimulate.Options{})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	specHash, _ := request.SpecHash(&admitted.Spec)
	if run1.Annotations[v1beta2.AnnotationInputHash] != lowered.Hash || run1.Annotations[v1beta2.AnnotationSpecHash] != specHash ||
		run1.Annotations[v1beta2.AnnotationOperatorVersion] != version.Get().Version {
		t.Errorf("Run annotations %v", run1.Annotations)
	}
	// status.aisimulate.input is what dgdrctl lower prints for the same request: aisimulate.Lower
	// of the admitted spec, byte-equal in canonical JSON.
	recorded, err := aisimulate.Canonicalize(run1.Status.AISimulate.Input.Raw)
	if err != nil {
		t.Fatal(err)
	}
	if string(recorded.JSON) != string(lowered.JSON) || run1.Status.AISimulate.InputHash != lowered.Hash {
		t.Errorf("status.aisimulate.input = %s, want %s", recorded.JSON, lowered.JSON)
	}
	st := waitForStatus(t, d, "accepted generation 1", func(d *v1beta2.DynamoGraphDeploymentRequest) bool {
		return d.Status.ObservedGeneration == 1 && d.Status.LatestRun != nil && d.Status.LatestRun.Phase != ""
	})
	if st.Status.ActiveRunRef == nil || st.Status.ActiveRunRef.Name != run1.Name {
		t.Errorf("activeRunRef = %+v", st.Status.ActiveRunRef)
	}
	if c := meta.FindStatusCondition(st.Status.Conditions, v1beta2.ConditionAccepted); c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1beta2.ReasonRunCreated {
		t.Errorf("Accepted = %+v", c)
	}

	// Metadata-only edits create nothing.
	patch := client.MergeFrom(st.DeepCopy())
	st.Labels = map[string]string{"team": "inference"}
	st.Annotations = map[string]string{"note": "metadata only"}
	if err := k8s.Patch(ctx, st, patch); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if got := runsOf(t, d); len(got) != 1 {
		t.Fatalf("metadata-only edit created Runs: %d", len(got))
	}

	// A spec edit is a new generation: a new Run, and the old one is superseded.
	editSpec(t, d, 400)
	run2 := waitForRun(t, d, 2)
	waitForRunReason(t, run1, v1beta2.ReasonSuperseded)
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: naming.JobName(run1.Name)}, &batchv1.Job{}); !apierrors.IsNotFound(err) {
		t.Errorf("the superseded Run's Job must be gone: %v", err)
	}
	st = waitForStatus(t, d, "generation 2 active, generation 1 recent", func(d *v1beta2.DynamoGraphDeploymentRequest) bool {
		return d.Status.ObservedGeneration == 2 && d.Status.ActiveRunRef != nil && d.Status.ActiveRunRef.Name == run2.Name &&
			len(d.Status.RecentRunRefs) == 1 && d.Status.RecentRunRefs[0].Name == run1.Name
	})
	if st.Status.LatestRun == nil || st.Status.LatestRun.Name != run2.Name {
		t.Errorf("latestRun = %+v", st.Status.LatestRun)
	}
	if got := runsOf(t, d); len(got) != 2 {
		t.Errorf("want 2 Runs, got %d", len(got))
	}
}

func TestRunSpecCannotBeEdited(t *testing.T) {
	ns := testenv.Namespace(t, k8s, "t")
	d := builders.Request(ns, "immutable").Obj()
	if err := k8s.Create(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	r := waitForRun(t, d, 1)
	r.Spec.Model.Name = "someone/else"
	err := k8s.Update(context.Background(), r)
	if err == nil || !strings.Contains(err.Error(), "immutable") {
		t.Fatalf("editing a Run spec: %v, want an immutability error", err)
	}
}

func TestNoRequestFieldChangesThePlannerImage(t *testing.T) {
	ns := testenv.Namespace(t, k8s, "t")
	const evil = "evil.example/aisimulate:latest"
	// There is no image field anywhere in the effective input: admission rejects the attempt.
	rejected := builders.Request(ns, "image-field").Overrides(`{"image":"` + evil + `"}`).Obj()
	if err := k8s.Create(context.Background(), rejected); err == nil {
		t.Error("an image key in inputOverrides must be rejected")
	}
	// Neither an image reference as the model name nor engine.model in inputOverrides is admitted.
	asName := builders.Request(ns, "image-name").Obj()
	asName.Spec.Model.Name = evil
	if err := k8s.Create(context.Background(), asName); err == nil || !strings.Contains(err.Error(), "spec.model.name") {
		t.Errorf("an image reference as model.name: %v, want it refused at spec.model.name", err)
	}
	engineModel := builders.Request(ns, "image-engine").Overrides(`{"engine":{"model":"evil.example/aisimulate"}}`).Obj()
	if err := k8s.Create(context.Background(), engineModel); err == nil || !strings.Contains(err.Error(), "spec.aisimulate.inputOverrides.engine.model") {
		t.Errorf("engine.model in inputOverrides: %v, want it refused at its path", err)
	}
	// Image-like strings in fields that do exist end up in the input, never in the Job's image.
	const imageLike = "evil.example/aisimulate"
	d := builders.Request(ns, "image").Obj()
	d.Spec.Model.Name = imageLike
	if err := k8s.Create(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	r := waitForRun(t, d, 1)
	job := &batchv1.Job{}
	poll.Eventually(t, wait, "the search Job", func() (bool, error) {
		err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: naming.JobName(r.Name)}, job)
		return err == nil, client.IgnoreNotFound(err)
	})
	for _, c := range job.Spec.Template.Spec.Containers {
		want := map[string]string{jobcontract.SearchContainer: ct.PlannerImage, jobcontract.PublicationContainer: ct.ReporterImage}[c.Name]
		if c.Image != want {
			t.Errorf("container %s image %s, want %s", c.Name, c.Image, want)
		}
	}
	if !strings.Contains(string(r.Status.AISimulate.Input.Raw), imageLike) {
		t.Error("the model name should have reached the input (and only the input)")
	}
}

func TestCancelAnnotationOnTheRequest(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k8s, "t")
	d := builders.Request(ns, "cancel").Obj()
	if err := k8s.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	r := waitForRun(t, d, 1)
	cur := get(t, d.DeepCopy())
	patch := client.MergeFrom(cur.DeepCopy())
	cur.Annotations = map[string]string{v1beta2.AnnotationCancel: "true"}
	if err := k8s.Patch(ctx, cur, patch); err != nil {
		t.Fatal(err)
	}
	waitForRunReason(t, r, v1beta2.ReasonCancelled)
	waitForStatus(t, d, "the cancelled Run in recentRunRefs", func(d *v1beta2.DynamoGraphDeploymentRequest) bool {
		return d.Status.ActiveRunRef == nil && len(d.Status.RecentRunRefs) == 1 &&
			d.Status.LatestRun != nil && d.Status.LatestRun.Reason == v1beta2.ReasonCancelled
	})
}

func TestRetentionDeletesTheOldestRuns(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k8s, "t")
	d := builders.Request(ns, "retain").Obj()
	if err := k8s.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	waitForRun(t, d, 1)
	for gen := int64(2); gen <= 4; gen++ {
		editSpec(t, d, float64(100*gen))
		waitForRun(t, d, gen)
	}
	st := waitForStatus(t, d, "retention applied", func(d *v1beta2.DynamoGraphDeploymentRequest) bool {
		return len(d.Status.RecentRunRefs) == retention && len(runsOf(t, d)) == retention+1
	})
	// Each by name and UID: the Run the operator created.
	var want []v1beta2.RunReference
	for _, gen := range []int64{3, 2} {
		r := &v1beta2.DynamoGraphDeploymentRun{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: naming.RunName(d.Name, gen)}, r); err != nil {
			t.Fatal(err)
		}
		want = append(want, v1beta2.RunReference{Name: r.Name, UID: r.UID})
	}
	if diff := cmp.Diff(want, st.Status.RecentRunRefs); diff != "" {
		t.Errorf("recentRunRefs, newest first (-want +got):\n%s", diff)
	}
	err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: naming.RunName(d.Name, 1)}, &v1beta2.DynamoGraphDeploymentRun{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("the oldest Run must be deleted: %v", err)
	}
}

func TestLatestRunSummaryFollowsTheRun(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k8s, "t")
	d := builders.Request(ns, "summary").Obj()
	if err := k8s.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	r := waitForRun(t, d, 1)
	// The reporter publishes a recommendation.
	patch := client.MergeFrom(r.DeepCopy())
	r.Status.Recommendation = &v1beta2.RecommendationSummary{BestCandidate: r.Name + "-c1", Evaluated: 10, Feasible: 4}
	if err := k8s.Status().Patch(ctx, r, patch); err != nil {
		t.Fatal(err)
	}
	job := &batchv1.Job{}
	poll.Eventually(t, wait, "the search Job", func() (bool, error) {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: naming.JobName(r.Name)}, job)
		return err == nil, client.IgnoreNotFound(err)
	})
	if _, err := ct.CreatePod(ctx, k8s, job, &ct.Terminated{}, &ct.Terminated{}); err != nil {
		t.Fatal(err)
	}
	if err := ct.FinishJob(ctx, k8s, job, ""); err != nil {
		t.Fatal(err)
	}
	want := &v1beta2.RunSummary{Name: r.Name, Phase: v1beta2.RunPhaseSucceeded, Reason: v1beta2.ReasonSucceeded, BestCandidate: r.Name + "-c1"}
	st := waitForStatus(t, d, "latestRun succeeded", func(d *v1beta2.DynamoGraphDeploymentRequest) bool {
		return d.Status.LatestRun != nil && d.Status.LatestRun.Phase == v1beta2.RunPhaseSucceeded
	})
	if diff := cmp.Diff(want, st.Status.LatestRun); diff != "" {
		t.Errorf("latestRun (-want +got):\n%s", diff)
	}
}

// TestRestartCreatesNoDuplicates stops the operator and starts a new one: the new manager
// re-reconciles everything and must create no second Run, Job or ConfigMap.
func TestRestartCreatesNoDuplicates(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k8s, "t")
	d := builders.Request(ns, "restart").Obj()
	if err := k8s.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	r := waitForRun(t, d, 1)
	poll.Eventually(t, wait, "the search Job", func() (bool, error) {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: naming.JobName(r.Name)}, &batchv1.Job{})
		return err == nil, client.IgnoreNotFound(err)
	})
	before := get(t, d.DeepCopy())

	stopManager()
	if err := startOperator(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // the new manager resyncs and reconciles everything
	if got := runsOf(t, d); len(got) != 1 {
		t.Errorf("Runs after restart: %d, want 1", len(got))
	}
	var jobs batchv1.JobList
	if err := k8s.List(ctx, &jobs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(jobs.Items) != 1 {
		t.Errorf("Jobs after restart: %d, want 1", len(jobs.Items))
	}
	after := get(t, d.DeepCopy())
	if after.Status.ObservedGeneration != before.Status.ObservedGeneration || after.Status.ActiveRunRef.Name != before.Status.ActiveRunRef.Name {
		t.Errorf("status changed across the restart: %+v -> %+v", before.Status, after.Status)
	}
	if g := strconv.FormatInt(after.Generation, 10); r.Labels[v1beta2.LabelRequestGeneration] != g {
		t.Errorf("Run generation label %s, request generation %s", r.Labels[v1beta2.LabelRequestGeneration], g)
	}
}

// TestPlantedRunIsNotAdopted: someone who may create Runs (without the chart's ownership policy,
// which refuses them: this is the operator's own defence) plants the Run of a request's next
// generation under its name, with the request's labels and a controller reference to it, and a
// spec of their own (a hostPath override). When the owner edits the spec, the request does not
// adopt it: it is deleted, the generation's own Run is created with the owner's spec, and
// status.activeRunRef records that Run's UID. Before, acceptGeneration adopted any Run of that
// name carrying the labels, and its spec was searched and deployed.
func TestPlantedRunIsNotAdopted(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k8s, "t")
	d := builders.Request(ns, "prod").Obj()
	if err := k8s.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	waitForRun(t, d, 1)
	owner := get(t, d.DeepCopy())
	planted := builders.Run(ns, naming.RunName(d.Name, 2)).WithSpec(*owner.Spec.DeepCopy()).
		Label(v1beta2.LabelRequestName, d.Name).Label(v1beta2.LabelRequestUID, string(owner.UID)).Label(v1beta2.LabelRequestGeneration, "2").Obj()
	planted.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(owner, v1beta2.GroupVersion.WithKind("DynamoGraphDeploymentRequest"))}
	planted.Spec.Deployment = &v1beta2.DeploymentSpec{PodTemplateOverrides: &v1beta2.PodTemplateOverrides{
		Workers: &runtime.RawExtension{Raw: []byte(`{"spec":{"volumes":[{"name":"host","hostPath":{"path":"/"}}]}}`)}}}
	if err := k8s.Create(ctx, planted); err != nil {
		t.Fatal(err)
	}
	// The Run controller starts the planted Run's search before the owner edits anything.
	poll.Eventually(t, wait, "the planted Run's search Job", func() (bool, error) {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: naming.JobName(planted.Name)}, &batchv1.Job{})
		return err == nil, client.IgnoreNotFound(err)
	})

	editSpec(t, d, 400)
	// The planted Run is deleted in the foreground: the garbage collector removes the search Job
	// the Run controller made for it (its name is the new Run's Job's), then the Run.
	if err := ct.CollectForeground(ctx, k8s, planted.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	st := waitForStatus(t, d, "generation 2 accepted into a Run of the operator's", func(d *v1beta2.DynamoGraphDeploymentRequest) bool {
		c := meta.FindStatusCondition(d.Status.Conditions, v1beta2.ConditionAccepted)
		var rs []string
		for _, r := range runsOf(t, d) {
			rs = append(rs, r.Name+"/"+string(r.UID)+"/"+string(r.Status.Phase)+"/"+completedReason(&r)+"/"+meta.FindStatusCondition(r.Status.Conditions, v1beta2.ConditionCompleted).String())
		}
		t.Logf("status: gen %d observed %d active %+v recent %+v accepted %v runs %v", d.Generation, d.Status.ObservedGeneration, d.Status.ActiveRunRef, d.Status.RecentRunRefs, c, rs)
		return d.Status.ObservedGeneration == 2 && c != nil && c.Status == metav1.ConditionTrue &&
			d.Status.ActiveRunRef != nil && d.Status.ActiveRunRef.Name == planted.Name && d.Status.ActiveRunRef.UID != planted.UID
	})
	run2 := waitForRun(t, d, 2)
	if run2.UID == planted.UID {
		t.Fatalf("the planted Run %s (uid %s) was adopted", planted.Name, planted.UID)
	}
	if run2.UID != st.Status.ActiveRunRef.UID {
		t.Errorf("Run %s has uid %s, activeRunRef records %s", run2.Name, run2.UID, st.Status.ActiveRunRef.UID)
	}
	if diff := cmp.Diff(st.Spec, run2.Spec); diff != "" {
		t.Errorf("the Run of generation 2 does not search the owner's spec (-request +run):\n%s", diff)
	}
	for _, r := range runsOf(t, d) {
		if r.UID == planted.UID {
			t.Errorf("the planted Run is still there: %s", r.Name)
		}
	}
}
