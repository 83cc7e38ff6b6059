package run_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	ct "github.com/dgdr-operator/dgdr-operator/internal/controller/controllertest"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/run"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/internal/naming"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/poll"
)

const wait = 20 * time.Second

func admittedSpec() v1beta2.DynamoGraphDeploymentRequestSpec {
	c, in, out := int32(10), int32(1024), int32(128)
	return v1beta2.DynamoGraphDeploymentRequestSpec{
		Model:    v1beta2.ModelSpec{Name: "meta-llama/Llama-3.1-8B-Instruct"},
		Hardware: &v1beta2.HardwareSpec{GPU: &v1beta2.GPUSpec{SKU: "h200_sxm"}},
		Workload: &v1beta2.WorkloadSpec{Static: &v1beta2.StaticWorkload{InputTokens: &in, OutputTokens: &out,
			Load: &v1beta2.LoadSpec{Concurrency: &c}}},
	}
}

func createRun(t *testing.T, ns, name string, mutate func(*v1beta2.DynamoGraphDeploymentRun)) *v1beta2.DynamoGraphDeploymentRun {
	t.Helper()
	r := builders.Run(ns, name).WithSpec(admittedSpec()).Label(v1beta2.LabelRequestName, "req").Obj()
	if mutate != nil {
		mutate(r)
	}
	if err := k8s.Create(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return r
}

func getRun(t *testing.T, r *v1beta2.DynamoGraphDeploymentRun) *v1beta2.DynamoGraphDeploymentRun {
	t.Helper()
	got := &v1beta2.DynamoGraphDeploymentRun{}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(r), got); err != nil {
		t.Fatal(err)
	}
	return got
}

func waitForJob(t *testing.T, r *v1beta2.DynamoGraphDeploymentRun) *batchv1.Job {
	t.Helper()
	job := &batchv1.Job{}
	poll.Eventually(t, wait, "the search Job", func() (bool, error) {
		err := k8s.Get(context.Background(), client.ObjectKey{Namespace: r.Namespace, Name: naming.JobName(r.Name)}, job)
		return err == nil, client.IgnoreNotFound(err)
	})
	return job
}

func waitForReason(t *testing.T, r *v1beta2.DynamoGraphDeploymentRun, reason string) *v1beta2.DynamoGraphDeploymentRun {
	t.Helper()
	var got *v1beta2.DynamoGraphDeploymentRun
	poll.Eventually(t, wait, "Completed=True reason "+reason, func() (bool, error) {
		got = getRun(t, r)
		c := meta.FindStatusCondition(got.Status.Conditions, v1beta2.ConditionCompleted)
		return c != nil && c.Status == metav1.ConditionTrue, nil
	})
	if c := meta.FindStatusCondition(got.Status.Conditions, v1beta2.ConditionCompleted); c.Reason != reason {
		t.Fatalf("Completed reason = %s (%s), want %s", c.Reason, c.Message, reason)
	}
	return got
}

func TestInputRecordedOnceAndSearchJobBuilt(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k8s, "t")
	r := createRun(t, ns, "req-run-1", nil)
	job := waitForJob(t, r)

	got := getRun(t, r)
	want, errs := aisimulate.Lower(&got.Spec, aisimulate.OptionsFrom(cfg))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	// The price the reporter computes costs with is recorded with the input.
	if diff := cmp.Diff(&v1beta2.RunPricing{System: "h200_sxm", Currency: "USD", PricePerGPUHour: "3.50"}, got.Status.Pricing); diff != "" {
		t.Errorf("status.pricing (-want +got):\n%s", diff)
	}
	if got.Status.AISimulate == nil || got.Status.AISimulate.Input == nil {
		t.Fatal("status.aisimulate.input not recorded")
	}
	recorded, err := aisimulate.Canonicalize(got.Status.AISimulate.Input.Raw)
	if err != nil {
		t.Fatal(err)
	}
	if string(recorded.JSON) != string(want.JSON) || got.Status.AISimulate.InputHash != want.Hash {
		t.Errorf("recorded input %s (%s), want %s (%s)", recorded.JSON, got.Status.AISimulate.InputHash, want.JSON, want.Hash)
	}
	if got.Status.Phase != v1beta2.RunPhasePending || got.Status.JobRef == nil || got.Status.JobRef.UID != job.UID || got.Status.StartTime == nil {
		t.Errorf("status after start: %+v", got.Status)
	}

	// The input reaches the search only through the Run: no ConfigMap or other object carries it.
	var cms corev1.ConfigMapList
	if err := k8s.List(ctx, &cms, client.InNamespace(ns), client.MatchingLabels{v1beta2.LabelRunName: r.Name}); err != nil {
		t.Fatal(err)
	}
	if len(cms.Items) != 0 {
		t.Errorf("%d ConfigMaps labelled with the Run, want none", len(cms.Items))
	}
	if !metav1.IsControlledBy(job, got) {
		t.Error("the Job must be controlled by the Run")
	}
	if ic := job.Spec.Template.Spec.InitContainers; len(ic) != 2 || ic[0].Name != jobcontract.InputContainer || ic[0].Image != ct.ReporterImage ||
		ic[1].Name != jobcontract.ReporterContainer || ic[1].RestartPolicy == nil || *ic[1].RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Errorf("the input init container, then the reporter sidecar: %+v", ic)
	}
	if c := job.Spec.Template.Spec.Containers[0]; c.Name != jobcontract.SearchContainer || c.Image != ct.PlannerImage {
		t.Errorf("search container %s image %s", c.Name, c.Image)
	}

	role := &rbacv1.Role{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: jobcontract.ReporterRole}, role); err != nil {
		t.Fatal("reporter Role:", err)
	}
	if diff := cmp.Diff(jobcontract.ReporterRules(), role.Rules); diff != "" {
		t.Errorf("reporter rules (-want +got):\n%s", diff)
	}
	// The search runs as an identity of its own, controlled by the Run and bound to the Role.
	identity := jobcontract.SearchIdentity(got.UID)
	if sa := job.Spec.Template.Spec.ServiceAccountName; sa != identity {
		t.Errorf("search pod service account %q, want %q", sa, identity)
	}
	binding := &rbacv1.RoleBinding{}
	for _, obj := range []client.Object{&corev1.ServiceAccount{}, binding} {
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: identity}, obj); err != nil {
			t.Fatalf("search identity %T: %v", obj, err)
		}
		if !metav1.IsControlledBy(obj, got) {
			t.Errorf("search identity %T must be controlled by the Run", obj)
		}
	}
	wantSubjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: identity, Namespace: ns}}
	if diff := cmp.Diff(wantSubjects, binding.Subjects); diff != "" || binding.RoleRef.Name != jobcontract.ReporterRole {
		t.Errorf("search identity binding to %q (-want +got subjects):\n%s", binding.RoleRef.Name, diff)
	}

	// The recorded input is never recomputed: a running search keeps it, and reporter-owned
	// fields written meanwhile survive the controller's status writes.
	publishProgress(t, got, &v1beta2.RunProgress{Budget: 320, Settled: 7, Feasible: 3})
	if err := ct.SetJobRunning(ctx, k8s, job); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, wait, "phase Running", func() (bool, error) {
		return getRun(t, r).Status.Phase == v1beta2.RunPhaseRunning, nil
	})
	got = getRun(t, r)
	if c := meta.FindStatusCondition(got.Status.Conditions, v1beta2.ConditionCompleted); c.Status != metav1.ConditionFalse || c.Reason != v1beta2.ReasonEvaluatingCandidates {
		t.Errorf("Completed while running = %+v", c)
	}
	if got.Status.Progress == nil || got.Status.Progress.Settled != 7 {
		t.Errorf("reporter progress clobbered: %+v", got.Status.Progress)
	}
	if got.Status.AISimulate.InputHash != want.Hash {
		t.Error("input hash changed")
	}
}

// publishProgress plays the reporter: a merge patch of the fields it owns.
func publishProgress(t *testing.T, r *v1beta2.DynamoGraphDeploymentRun, p *v1beta2.RunProgress) {
	t.Helper()
	cur := getRun(t, r)
	patch := client.MergeFrom(cur.DeepCopy())
	cur.Status.Progress = p
	now := metav1.Now()
	cur.Status.LastProgressTime = &now
	if err := k8s.Status().Patch(context.Background(), cur, patch); err != nil {
		t.Fatal(err)
	}
}

// TestExitCodeReasons: each way a search ends gets its reason and a message that says what to do;
// the search container's log tail (its termination message) is summarized, never quoted: a
// token the search printed stays in the pod's log, which fewer users may read than the Run.
func TestExitCodeReasons(t *testing.T) {
	type term = ct.Terminated
	cases := []struct {
		name             string
		search, reporter *term
		jobFailedReason  string // "" = Complete
		noPod            bool
		progress         *v1beta2.RunProgress
		wantReason       string
		wantPhase        v1beta2.RunPhase
		wantInMessage    string
	}{
		{name: "0 succeeded", search: &term{ExitCode: 0}, reporter: &term{ExitCode: 0}, wantReason: v1beta2.ReasonSucceeded, wantPhase: v1beta2.RunPhaseSucceeded},
		{name: "0 but reporter failed", search: &term{ExitCode: 0}, reporter: &term{ExitCode: 1, Message: "cannot patch run"}, jobFailedReason: "BackoffLimitExceeded",
			wantReason: v1beta2.ReasonPublishFailed, wantPhase: v1beta2.RunPhaseFailed, wantInMessage: "cannot patch run"},
		{name: "1 no feasible", search: &term{ExitCode: 1}, reporter: &term{ExitCode: 0}, jobFailedReason: "BackoffLimitExceeded",
			progress: &v1beta2.RunProgress{Settled: 40, Feasible: 0, Infeasible: 40}, wantReason: v1beta2.ReasonNoFeasibleCandidate, wantPhase: v1beta2.RunPhaseFailed},
		{name: "1 failure", search: &term{ExitCode: 1, Reason: "Error", Message: "Traceback (most recent call last):\n  ...\n" +
			"huggingface_hub.errors.HfHubHTTPError: 401 for https://huggingface.co/api/models/org/m?token=hf_LeakedTokenOfTheSearch"},
			reporter: &term{ExitCode: 0}, jobFailedReason: "BackoffLimitExceeded", wantReason: v1beta2.ReasonSearchFailed,
			wantInMessage: "the search container exited with code 1 (Error); the last 3 lines of its log are not quoted here, read them with `kubectl logs -n ",
			wantPhase:     v1beta2.RunPhaseFailed},
		{name: "2 invalid input", search: &term{ExitCode: 2, Message: "unknown field traffic.foo"}, reporter: &term{ExitCode: 0}, jobFailedReason: "BackoffLimitExceeded",
			wantReason: v1beta2.ReasonInvalidInput, wantInMessage: "status.aisimulate.input", wantPhase: v1beta2.RunPhaseFailed},
		{name: "3 resource limited", search: &term{ExitCode: 3}, reporter: &term{ExitCode: 0}, jobFailedReason: "BackoffLimitExceeded",
			wantReason: v1beta2.ReasonResourceLimited, wantPhase: v1beta2.RunPhaseFailed},
		{name: "124 supervisor timeout", search: &term{ExitCode: 124, Message: "aisimulate: execution shutdown timed out"}, reporter: &term{ExitCode: 0}, jobFailedReason: "BackoffLimitExceeded",
			wantReason: v1beta2.ReasonSearchFailed, wantInMessage: "shutdown_timeout_seconds", wantPhase: v1beta2.RunPhaseFailed},
		{name: "job deadline", noPod: true, jobFailedReason: batchv1.JobReasonDeadlineExceeded,
			wantReason: v1beta2.ReasonDeadlineExceeded, wantInMessage: "activeDeadlineSeconds", wantPhase: v1beta2.RunPhaseFailed},
		{name: "137 oom", search: &term{ExitCode: 137, Reason: "OOMKilled"}, reporter: &term{ExitCode: 0}, jobFailedReason: "BackoffLimitExceeded",
			wantReason: v1beta2.ReasonOOMKilled, wantInMessage: "memory", wantPhase: v1beta2.RunPhaseFailed},
		{name: "130 interrupted", search: &term{ExitCode: 130}, reporter: &term{ExitCode: 0}, jobFailedReason: "BackoffLimitExceeded",
			wantReason: v1beta2.ReasonSearchFailed, wantInMessage: "interrupted", wantPhase: v1beta2.RunPhaseFailed},
	}
	ns := testenv.Namespace(t, k8s, "t")
	// Every case is its own Run; raise nothing: cases run one after another within the limit.
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			r := createRun(t, ns, "exit-"+string(rune('a'+i)), nil)
			job := waitForJob(t, r)
			if tc.progress != nil {
				publishProgress(t, r, tc.progress)
			}
			if !tc.noPod {
				if _, err := ct.CreatePod(ctx, k8s, job, tc.search, tc.reporter); err != nil {
					t.Fatal(err)
				}
			}
			if err := ct.FinishJob(ctx, k8s, job, tc.jobFailedReason); err != nil {
				t.Fatal(err)
			}
			got := waitForReason(t, r, tc.wantReason)
			if got.Status.Phase != tc.wantPhase {
				t.Errorf("phase = %s, want %s", got.Status.Phase, tc.wantPhase)
			}
			if !strings.Contains(got.Status.Message, tc.wantInMessage) {
				t.Errorf("message %q does not contain %q", got.Status.Message, tc.wantInMessage)
			}
			// Whoever may read Runs but not pods/log reads nothing of the search's log.
			if tc.search != nil && tc.search.Message != "" && strings.Contains(got.Status.Message, lastLine(tc.search.Message)) {
				t.Errorf("message %q quotes the search container's log", got.Status.Message)
			}
			if got.Status.CompletionTime == nil {
				t.Error("completionTime not set")
			}
		})
	}
}

// lastLine is the last line of a log.
func lastLine(log string) string { return log[strings.LastIndex(log, "\n")+1:] }

func TestCancellationKeepsPublishedResults(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k8s, "t")
	r := createRun(t, ns, "cancel-run-1", nil)
	job := waitForJob(t, r)
	if err := ct.SetJobRunning(ctx, k8s, job); err != nil {
		t.Fatal(err)
	}
	publishProgress(t, r, &v1beta2.RunProgress{Settled: 5, Feasible: 2, Published: 1})

	cur := getRun(t, r)
	patch := client.MergeFrom(cur.DeepCopy())
	cur.Annotations = map[string]string{v1beta2.AnnotationCancel: "true"}
	if err := k8s.Patch(ctx, cur, patch); err != nil {
		t.Fatal(err)
	}
	got := waitForReason(t, r, v1beta2.ReasonCancelled)
	if got.Status.Phase != v1beta2.RunPhaseCancelled {
		t.Errorf("phase = %s", got.Status.Phase)
	}
	if got.Status.Progress == nil || got.Status.Progress.Published != 1 {
		t.Errorf("published progress lost: %+v", got.Status.Progress)
	}
	err := k8s.Get(ctx, client.ObjectKeyFromObject(job), &batchv1.Job{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("the Job must be deleted, got %v", err)
	}
}

func TestSupersededAnnotationStopsTheSearch(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k8s, "t")
	r := createRun(t, ns, "sup-run-1", nil)
	job := waitForJob(t, r)
	cur := getRun(t, r)
	patch := client.MergeFrom(cur.DeepCopy())
	cur.Annotations = map[string]string{v1beta2.AnnotationSupersededBy: "sup-run-2"}
	if err := k8s.Patch(ctx, cur, patch); err != nil {
		t.Fatal(err)
	}
	got := waitForReason(t, r, v1beta2.ReasonSuperseded)
	if !strings.Contains(got.Status.Message, "sup-run-2") {
		t.Errorf("message %q does not name the newer Run", got.Status.Message)
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(job), &batchv1.Job{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Job must be deleted, got %v", err)
	}
}

func TestConcurrencyLimitQueuesAndStartsWhenASlotFrees(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k8s, "t")
	var runs []*v1beta2.DynamoGraphDeploymentRun
	for _, name := range []string{"c-run-1", "c-run-2", "c-run-3"} {
		runs = append(runs, createRun(t, ns, name, nil))
		time.Sleep(1100 * time.Millisecond) // distinct creation timestamps: FIFO order
	}
	first := waitForJob(t, runs[0])
	waitForJob(t, runs[1])
	poll.Eventually(t, wait, "the third Run queued", func() (bool, error) {
		c := meta.FindStatusCondition(getRun(t, runs[2]).Status.Conditions, v1beta2.ConditionQueued)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == v1beta2.ReasonWaitingForSlot, nil
	})
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: naming.JobName(runs[2].Name)}, &batchv1.Job{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the third Run must not have a Job yet: %v", err)
	}
	if got := getRun(t, runs[2]); got.Status.Phase != v1beta2.RunPhasePending || !strings.Contains(got.Status.Message, "2 of 2") {
		t.Errorf("waiting status: phase %s, message %q", got.Status.Phase, got.Status.Message)
	}

	if _, err := ct.CreatePod(ctx, k8s, first, &ct.Terminated{}, &ct.Terminated{}); err != nil {
		t.Fatal(err)
	}
	if err := ct.FinishJob(ctx, k8s, first, ""); err != nil {
		t.Fatal(err)
	}
	waitForReason(t, runs[0], v1beta2.ReasonSucceeded)
	waitForJob(t, runs[2])
	poll.Eventually(t, wait, "the third Run no longer queued", func() (bool, error) {
		c := meta.FindStatusCondition(getRun(t, runs[2]).Status.Conditions, v1beta2.ConditionQueued)
		return c != nil && c.Status == metav1.ConditionFalse, nil
	})
}

func TestKueueQueueLabelCreatesASuspendedJob(t *testing.T) {
	ns := testenv.Namespace(t, k8s, "t")
	r := createRun(t, ns, "kueue-run-1", func(r *v1beta2.DynamoGraphDeploymentRun) {
		r.Labels[v1beta2.LabelKueueQueueName] = "search-queue"
	})
	job := waitForJob(t, r)
	if job.Spec.Suspend == nil || !*job.Spec.Suspend || job.Labels[v1beta2.LabelKueueQueueName] != "search-queue" {
		t.Fatalf("Job suspend=%v labels=%v", job.Spec.Suspend, job.Labels)
	}
	poll.Eventually(t, wait, "Queued=True WaitingForAdmission", func() (bool, error) {
		c := meta.FindStatusCondition(getRun(t, r).Status.Conditions, v1beta2.ConditionQueued)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == v1beta2.ReasonWaitingForAdmission, nil
	})
}

func TestInvalidInputCreatesNoJob(t *testing.T) {
	cases := []struct {
		name, overrides, wantInMessage string
		wantRecorded                   bool
	}{
		{name: "trial cap", overrides: `{"optimizer":{"max_trials":100000}}`, wantInMessage: "limits.maxTrials", wantRecorded: true},
		{name: "parallelism cap", overrides: `{"optimizer":{"parallelism":1000}}`, wantInMessage: "limits.maxParallelism", wantRecorded: true},
		{name: "not lowerable", overrides: `{}`, wantInMessage: "hardware.gpu.sku"},
		{name: "schema: two stop counts", overrides: `{"traffic":{"stop":{"requests_per_load_unit":2}}}`, wantInMessage: "traffic.stop: exactly one stop count", wantRecorded: true},
		{name: "schema: unknown field", overrides: `{"optimizer":{"seeed":1}}`, wantInMessage: "optimizer.seeed: unknown field", wantRecorded: true},
	}
	ns := testenv.Namespace(t, k8s, "t")
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := createRun(t, ns, "invalid-"+string(rune('a'+i)), func(r *v1beta2.DynamoGraphDeploymentRun) {
				r.Spec.AISimulate = &v1beta2.AISimulateSpec{InputOverrides: &runtime.RawExtension{Raw: []byte(tc.overrides)}}
				if !tc.wantRecorded {
					r.Spec.Hardware = nil // no SKU: not lowerable (admission would have set one)
				}
			})
			got := waitForReason(t, r, v1beta2.ReasonInvalidInput)
			if !strings.Contains(got.Status.Message, tc.wantInMessage) {
				t.Errorf("message %q does not contain %q", got.Status.Message, tc.wantInMessage)
			}
			if recorded := got.Status.AISimulate != nil; recorded != tc.wantRecorded {
				t.Errorf("input recorded = %v, want %v", recorded, tc.wantRecorded)
			}
			err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: naming.JobName(r.Name)}, &batchv1.Job{})
			if !apierrors.IsNotFound(err) {
				t.Errorf("no Job may exist: %v", err)
			}
		})
	}
}

func TestRunSpecIsImmutable(t *testing.T) {
	ns := testenv.Namespace(t, k8s, "t")
	r := createRun(t, ns, "immutable-run-1", nil)
	// The controller's status writes race with the update (a conflict says nothing about the
	// spec): retry with the current version until the API server judges the spec change.
	var err error
	for range 10 {
		cur := getRun(t, r)
		cur.Spec.Model.Name = "other/model"
		if err = k8s.Update(context.Background(), cur); !apierrors.IsConflict(err) {
			break
		}
	}
	if err == nil || !strings.Contains(err.Error(), "spec is immutable") {
		t.Fatalf("update of the Run spec: %v, want 'spec is immutable'", err)
	}
}

// TestLowerCapsNeverFailARunningSearch: the caps and the effective-input rules are checked only
// before the Job exists. An operator restarted with lower caps reconciles a Run whose Job runs,
// and the Run keeps searching (it used to end InvalidInput while its Job kept running).
func TestLowerCapsNeverFailARunningSearch(t *testing.T) {
	ns := testenv.Namespace(t, k8s, "t")
	r := createRun(t, ns, "req-run-1", nil)
	job := waitForJob(t, r)
	if err := ct.SetJobRunning(context.Background(), k8s, job); err != nil {
		t.Fatal(err)
	}
	lower := cfg.DeepCopy()
	lower.Limits.MaxTrials = ptr.To[int32](1)
	lower.Limits.MaxParallelism = ptr.To[int32](1)
	restarted := &run.Reconciler{Client: k8s, APIReader: k8s, Config: lower, Recorder: recorders.GetEventRecorder("caps-test")}
	for range 3 {
		if _, err := restarted.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(r)}); err != nil {
			t.Fatal(err)
		}
	}
	got := getRun(t, r)
	if c := meta.FindStatusCondition(got.Status.Conditions, v1beta2.ConditionCompleted); c != nil && c.Status == metav1.ConditionTrue {
		t.Fatalf("a running search was ended by lower caps: %s: %s", c.Reason, c.Message)
	}
}

// TestPlantedInputConfigMapIsNeverUsed, from the attacker's side: a user who can create
// ConfigMaps plants one under the name the input ConfigMap used to have, with an input that
// bypasses the caps, before the Run exists. The search Job mounts no ConfigMap at all: its input
// comes only from the Run's recorded status, which the init container checks against its hash.
func TestPlantedInputConfigMapIsNeverUsed(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k8s, "t")
	planted := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "req-run-1-input", Namespace: ns},
		Data:       map[string]string{"input.yaml": "optimizer: {max_trials: 100000, parallelism: 1000}\n"},
	}
	if err := k8s.Create(ctx, planted); err != nil {
		t.Fatal(err)
	}
	r := createRun(t, ns, "req-run-1", nil)
	job := waitForJob(t, r)
	for _, v := range job.Spec.Template.Spec.Volumes {
		if v.ConfigMap != nil || v.Projected != nil && hasForeignConfigMap(v.Projected) {
			t.Errorf("the search pod mounts a ConfigMap through volume %s", v.Name)
		}
	}
	for _, c := range append(job.Spec.Template.Spec.InitContainers, job.Spec.Template.Spec.Containers...) {
		for _, e := range c.EnvFrom {
			if e.ConfigMapRef != nil {
				t.Errorf("container %s reads env from ConfigMap %s", c.Name, e.ConfigMapRef.Name)
			}
		}
	}
	if got := getRun(t, r); got.Status.AISimulate == nil || strings.Contains(string(got.Status.AISimulate.Input.Raw), "100000") {
		t.Errorf("the recorded input must be the lowered spec, not the planted one")
	}
}

// hasForeignConfigMap: a projected source of a ConfigMap other than the cluster CA bundle that
// the token projection carries (kube-root-ca.crt, published by the control plane).
func hasForeignConfigMap(p *corev1.ProjectedVolumeSource) bool {
	for _, s := range p.Sources {
		if s.ConfigMap != nil && s.ConfigMap.Name != "kube-root-ca.crt" {
			return true
		}
	}
	return false
}
