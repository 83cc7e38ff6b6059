package request_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	ct "github.com/dgdr-operator/dgdr-operator/internal/controller/controllertest"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/request"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/internal/naming"
	"github.com/dgdr-operator/dgdr-operator/internal/render"
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
	want := []v1beta2.RunReference{{Name: naming.RunName(d.Name, 3)}, {Name: naming.RunName(d.Name, 2)}}
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

// succeedWithCandidate finishes the Run's search as the reporter and the Job would: a
// published best Candidate (<run>-c1) controlled by the Run, then a successful Job.
func succeedWithCandidate(t *testing.T, r *v1beta2.DynamoGraphDeploymentRun) {
	t.Helper()
	succeedWith(t, r, func(c *v1beta2.DynamoGraphDeploymentCandidate) {})
}

// candidateParameters is a recommendations/NNNN.yaml as the search writes it.
const candidateParameters = `{"engine":{"backend":"vllm","hardware":"h200_sxm","mode":"aggregated","model":"Qwen/Qwen3-0.6B","context_length":8192,
	"workers":{"aggregated":{"kv_cache":{"block_size":32,"capacity":{"memory_fraction":0.9,"type":"default"},"prefix_caching":true},
	"parallelism":{"attention_data":1,"moe_expert":1,"moe_tensor":1,"pipeline":1,"replicas":2,"tensor":2},
	"scheduler":{"max_batched_tokens":8192,"max_sequences":256}}}},
	"traffic":{"load":{"concurrency":10,"type":"concurrency"},"source":{"input_tokens":1024,"output_tokens":128,"type":"synthetic"}}}`

// succeedWith is succeedWithCandidate with the Candidate (rendered from candidateParameters as
// the reporter renders it) changed by alter before it is created.
func succeedWith(t *testing.T, r *v1beta2.DynamoGraphDeploymentRun, alter func(*v1beta2.DynamoGraphDeploymentCandidate)) {
	t.Helper()
	ctx := context.Background()
	best := r.Name + "-c1"
	var params map[string]any
	if err := json.Unmarshal([]byte(candidateParameters), &params); err != nil {
		t.Fatal(err)
	}
	dgd, _, err := render.Render(params, render.RunOptions(r, best, cfg.RuntimeImages, render.DefaultGPUsPerNode, cfg.Planner.Image))
	if err != nil {
		t.Fatal(err)
	}
	rendered, err := json.Marshal(dgd)
	if err != nil {
		t.Fatal(err)
	}
	cand := builders.Candidate(r.Namespace, best).OwnedBy(r).GraphDeployment(rendered).Parameters(candidateParameters).Obj()
	alter(cand)
	if err := k8s.Create(ctx, cand); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(r.DeepCopy())
	r.Status.Recommendation = &v1beta2.RecommendationSummary{BestCandidate: best, Evaluated: 10, Feasible: 4}
	r.Status.CandidateRefs = []v1beta2.CandidateReference{{Name: best}}
	if err := k8s.Status().Patch(ctx, r, patch); err != nil {
		t.Fatal(err)
	}
	job := &batchv1.Job{}
	poll.Eventually(t, wait, "the search Job", func() (bool, error) {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: naming.JobName(r.Name)}, job)
		return err == nil, client.IgnoreNotFound(err)
	})
	if _, err := ct.CreatePod(ctx, k8s, job, &ct.Terminated{}, &ct.Terminated{}); err != nil {
		t.Fatal(err)
	}
	if err := ct.FinishJob(ctx, k8s, job, ""); err != nil {
		t.Fatal(err)
	}
}

// TestAutoApplyWithoutTheDeploymentCRD: this API server does not serve DynamoGraphDeployments
// (the Dynamo platform is not installed). autoApply says so in the Deployed condition, with a
// warning event, instead of failing or retrying hot; a request without autoApply has no
// Deployed condition at all. (test/e2e covers create, update and conflict with the CRD.)
func TestAutoApplyWithoutTheDeploymentCRD(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k8s, "t")
	d := builders.Request(ns, "auto").AutoApply("llama-prod").Obj()
	plain := builders.Request(ns, "plain").Obj()
	for _, obj := range []*v1beta2.DynamoGraphDeploymentRequest{d, plain} {
		if err := k8s.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	awaiting := waitForStatus(t, d, "Deployed=False AwaitingResult while the search runs", func(d *v1beta2.DynamoGraphDeploymentRequest) bool {
		c := meta.FindStatusCondition(d.Status.Conditions, v1beta2.ConditionDeployed)
		return c != nil && c.Reason == v1beta2.ReasonAwaitingResult
	})
	if awaiting.Status.Deployment != nil {
		t.Errorf("status.deployment before any result: %+v", awaiting.Status.Deployment)
	}
	succeedWithCandidate(t, waitForRun(t, d, 1))
	succeedWithCandidate(t, waitForRun(t, plain, 1))

	got := waitForStatus(t, d, "Deployed=False CRDNotInstalled", func(d *v1beta2.DynamoGraphDeploymentRequest) bool {
		c := meta.FindStatusCondition(d.Status.Conditions, v1beta2.ConditionDeployed)
		return c != nil && c.Reason == v1beta2.ReasonDeploymentCRDMissing
	})
	c := meta.FindStatusCondition(got.Status.Conditions, v1beta2.ConditionDeployed)
	if c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "DynamoGraphDeployment") {
		t.Errorf("Deployed = %+v", c)
	}
	if got.Status.Deployment != nil {
		t.Errorf("status.deployment without a deployment: %+v", got.Status.Deployment)
	}
	poll.Eventually(t, wait, "a DeployCRDMissing warning event", func() (bool, error) {
		var evs eventsv1.EventList
		if err := k8s.List(ctx, &evs, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Regarding.Name == d.Name && e.Reason == request.EventDeployCRDMissing && e.Type == corev1.EventTypeWarning {
				return true, nil
			}
		}
		return false, nil
	})
	st := waitForStatus(t, plain, "the plain request's Run summarized", func(d *v1beta2.DynamoGraphDeploymentRequest) bool {
		return d.Status.LatestRun != nil && d.Status.LatestRun.Phase == v1beta2.RunPhaseSucceeded
	})
	if c := meta.FindStatusCondition(st.Status.Conditions, v1beta2.ConditionDeployed); c != nil {
		t.Errorf("a request without autoApply has a Deployed condition: %+v", c)
	}
}

// TestAutoApplyRefusesAnAlteredCandidate: the best Candidate's stored graphDeployment is not
// what its parameters render to (a privileged sidecar added, as a forged Candidate would carry).
// autoApply refuses it with Deployed=False CandidateNotReproduced naming the candidate, and
// never reaches the deployment (here: the CRDNotInstalled of an untampered Candidate, in the
// same namespace, shows that the check is what stopped it). Reverted, the altered Candidate
// goes on to the deployment step.
func TestAutoApplyRefusesAnAlteredCandidate(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k8s, "t")
	forged := builders.Request(ns, "forged").AutoApply("llama-forged").Obj()
	honest := builders.Request(ns, "honest").AutoApply("llama-honest").Obj()
	for _, obj := range []*v1beta2.DynamoGraphDeploymentRequest{forged, honest} {
		if err := k8s.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	succeedWith(t, waitForRun(t, forged, 1), func(c *v1beta2.DynamoGraphDeploymentCandidate) {
		c.Spec.GraphDeployment.Raw = bytes.Replace(c.Spec.GraphDeployment.Raw, []byte(`"containers":[`),
			[]byte(`"containers":[{"name":"evil","image":"attacker/miner","securityContext":{"privileged":true}},`), 1)
	})
	succeedWithCandidate(t, waitForRun(t, honest, 1))

	got := waitForStatus(t, forged, "Deployed=False CandidateNotReproduced", func(d *v1beta2.DynamoGraphDeploymentRequest) bool {
		c := meta.FindStatusCondition(d.Status.Conditions, v1beta2.ConditionDeployed)
		return c != nil && c.Reason == v1beta2.ReasonCandidateNotReproduced
	})
	c := meta.FindStatusCondition(got.Status.Conditions, v1beta2.ConditionDeployed)
	if c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, naming.RunName("forged", 1)+"-c1") || got.Status.Deployment != nil {
		t.Errorf("Deployed = %+v, deployment %+v", c, got.Status.Deployment)
	}
	waitForStatus(t, honest, "the honest request reaching the deployment step (CRDNotInstalled)", func(d *v1beta2.DynamoGraphDeploymentRequest) bool {
		c := meta.FindStatusCondition(d.Status.Conditions, v1beta2.ConditionDeployed)
		return c != nil && c.Reason == v1beta2.ReasonDeploymentCRDMissing
	})
}

// TestAutoApplyDisabledDeploysNothing: a request stored with autoApply while the operator
// allowed it is not deployed once the operator's configuration turns autoApply off: Deployed
// says AutoApplyDisabled (admission refuses new autoApply requests; internal/webhook).
func TestAutoApplyDisabledDeploysNothing(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k8s, "t")
	d := builders.Request(ns, "auto-off").AutoApply("llama-off").Obj()
	if err := k8s.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	run := waitForRun(t, d, 1)
	restart := func(enabled bool) {
		stopManager()
		cfg.AutoApply.Enabled = enabled
		if err := startOperator(); err != nil {
			t.Fatal(err)
		}
	}
	restart(false)
	defer restart(true)
	succeedWithCandidate(t, run)
	got := waitForStatus(t, d, "Deployed=False AutoApplyDisabled", func(d *v1beta2.DynamoGraphDeploymentRequest) bool {
		c := meta.FindStatusCondition(d.Status.Conditions, v1beta2.ConditionDeployed)
		return c != nil && c.Reason == v1beta2.ReasonAutoApplyDisabled
	})
	if c := meta.FindStatusCondition(got.Status.Conditions, v1beta2.ConditionDeployed); c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "autoApply.enabled") {
		t.Errorf("Deployed = %+v", c)
	}
	if got.Status.Deployment != nil {
		t.Errorf("status.deployment with autoApply disabled: %+v", got.Status.Deployment)
	}
}
