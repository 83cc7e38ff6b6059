package deployment_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	ct "github.com/dgdr-operator/dgdr-operator/internal/controller/controllertest"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/deployment"
	"github.com/dgdr-operator/dgdr-operator/internal/naming"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/poll"
)

// waitForFirstRun waits for the Run of the request's first generation, once the Run controller
// recorded its input.
func waitForFirstRun(t *testing.T, d *v1beta2.DynamoGraphDeploymentRequest) *v1beta2.DynamoGraphDeploymentRun {
	t.Helper()
	r := &v1beta2.DynamoGraphDeploymentRun{ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: naming.RunName(d.Name, 1)}}
	poll.Eventually(t, wait, "Run "+r.Name, func() (bool, error) {
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(r), r)
		return err == nil && r.Status.AISimulate != nil, client.IgnoreNotFound(err)
	})
	return r
}

func waitForStatus(t *testing.T, d *v1beta2.DynamoGraphDeploymentRequest, what string, cond func(*v1beta2.DynamoGraphDeploymentRequest) bool) *v1beta2.DynamoGraphDeploymentRequest {
	t.Helper()
	return ct.WaitForStatus(t, k8s, d, 2*wait, what, cond)
}

// succeedWithCandidate finishes the Run's search as the reporter and the Job would: a
// published best Candidate (<run>-c1) controlled by the Run, then a successful Job.
func succeedWithCandidate(t *testing.T, r *v1beta2.DynamoGraphDeploymentRun) {
	t.Helper()
	succeedWith(t, r, func(c *v1beta2.DynamoGraphDeploymentCandidate) {})
}

// succeedWith is succeedWithCandidate with the Candidate changed by alter before it is created.
func succeedWith(t *testing.T, r *v1beta2.DynamoGraphDeploymentRun, alter func(*v1beta2.DynamoGraphDeploymentCandidate)) {
	t.Helper()
	cand := ct.RenderedCandidate(t, cfg, r, r.Name+"-c1", nil)
	alter(cand)
	ct.FinishSearch(t, k8s, r, ct.Search{Candidates: []*v1beta2.DynamoGraphDeploymentCandidate{cand}})
}

// TestAutoApplyWithoutTheDeploymentCRD: the API server does not serve DynamoGraphDeployments
// (the Dynamo platform is not installed: its CRD is removed for the test). autoApply says so in the Deployed condition, with a
// warning event, instead of failing or retrying hot; a request without autoApply has no
// Deployed condition at all. (test/e2e covers create, update and conflict with the CRD.)
func TestAutoApplyWithoutTheDeploymentCRD(t *testing.T) {
	withoutDGDCRD(t)
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
	succeedWithCandidate(t, waitForFirstRun(t, d))
	succeedWithCandidate(t, waitForFirstRun(t, plain))

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
	ct.WaitForEvent(t, k8s, ns, d.Name, deployment.EventDeployCRDMissing, corev1.EventTypeWarning)
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
// same namespace and with the CRD removed, shows that the check is what stopped it). Reverted, the altered Candidate
// goes on to the deployment step.
func TestAutoApplyRefusesAnAlteredCandidate(t *testing.T) {
	withoutDGDCRD(t)
	ctx := context.Background()
	ns := testenv.Namespace(t, k8s, "t")
	forged := builders.Request(ns, "forged").AutoApply("llama-forged").Obj()
	honest := builders.Request(ns, "honest").AutoApply("llama-honest").Obj()
	for _, obj := range []*v1beta2.DynamoGraphDeploymentRequest{forged, honest} {
		if err := k8s.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	succeedWith(t, waitForFirstRun(t, forged), func(c *v1beta2.DynamoGraphDeploymentCandidate) {
		c.Spec.GraphDeployment.Raw = bytes.Replace(c.Spec.GraphDeployment.Raw, []byte(`"containers":[`),
			[]byte(`"containers":[{"name":"evil","image":"attacker/miner","securityContext":{"privileged":true}},`), 1)
	})
	succeedWithCandidate(t, waitForFirstRun(t, honest))

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
	run := waitForFirstRun(t, d)
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

// notRenderable turns c into the Candidate the reporter publishes for a prediction the renderer
// cannot lower: its parameters predict a TRT-LLM-only setting (wide-EP slots) that no rendering
// deploys, its graphDeployment is empty and, unless stripped (as the search identity could),
// Deployable is False with reason NotRenderable.
func notRenderable(t *testing.T, c *v1beta2.DynamoGraphDeploymentCandidate, stripped bool) {
	t.Helper()
	c.Spec.Parameters.Raw = bytes.Replace(c.Spec.Parameters.Raw, []byte(`"engine":{`), []byte(`"engine":{"wideep_num_slots":288,`), 1)
	if !bytes.Contains(c.Spec.Parameters.Raw, []byte("wideep_num_slots")) {
		t.Fatalf("parameters without an engine section: %s", c.Spec.Parameters.Raw)
	}
	c.Spec.GraphDeployment.Raw = []byte("{}")
	c.Status.Metrics = &v1beta2.CandidateMetrics{}
	if !stripped {
		c.Status.Conditions = []metav1.Condition{{Type: v1beta2.ConditionDeployable, Status: metav1.ConditionFalse,
			Reason: v1beta2.ReasonNotRenderable, Message: "not deployable: the renderer cannot lower engine.wideep_num_slots", LastTransitionTime: metav1.Now()}}
	}
}

// TestAutoApplySkipsCandidatesThatAreNotDeployable: the best Candidate of a Run is not deployable
// (NotRenderable): autoApply deploys the next one. A Run whose every Candidate is not deployable
// deploys nothing: Deployed=False, reason NotRenderable, naming the candidate and the field. A
// not-deployable Candidate whose condition the search identity removed is still not deployed:
// the operator's renderer refuses its parameters (CandidateNotReproduced). Without the skip, the
// first request would stop at its best Candidate instead of deploying the second.
func TestAutoApplySkipsCandidatesThatAreNotDeployable(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k8s, "t")
	skip := builders.Request(ns, "skip").AutoApply("llama-skip").Obj()
	none := builders.Request(ns, "none").AutoApply("llama-none").Obj()
	forged := builders.Request(ns, "forged").AutoApply("llama-forged").Obj()
	for _, obj := range []*v1beta2.DynamoGraphDeploymentRequest{skip, none, forged} {
		if err := k8s.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	r := waitForFirstRun(t, skip)
	first, second := ct.RenderedCandidate(t, cfg, r, r.Name+"-c1", nil), ct.RenderedCandidate(t, cfg, r, r.Name+"-c2", nil)
	notRenderable(t, first, false)
	ct.FinishSearch(t, k8s, r, ct.Search{Candidates: []*v1beta2.DynamoGraphDeploymentCandidate{first, second}})
	for _, tc := range []struct {
		d        *v1beta2.DynamoGraphDeploymentRequest
		stripped bool
	}{{none, false}, {forged, true}} {
		r := waitForFirstRun(t, tc.d)
		only := ct.RenderedCandidate(t, cfg, r, r.Name+"-c1", nil)
		notRenderable(t, only, tc.stripped)
		ct.FinishSearch(t, k8s, r, ct.Search{Candidates: []*v1beta2.DynamoGraphDeploymentCandidate{only}})
	}

	got := waitForStatus(t, skip, "the second Candidate deployed", func(d *v1beta2.DynamoGraphDeploymentRequest) bool {
		return d.Status.Deployment != nil
	})
	if got.Status.Deployment.Candidate != second.Name {
		t.Errorf("deployed %s, want %s (the best deployable)", got.Status.Deployment.Candidate, second.Name)
	}
	got = waitForStatus(t, none, "Deployed=False NotRenderable", func(d *v1beta2.DynamoGraphDeploymentRequest) bool {
		c := meta.FindStatusCondition(d.Status.Conditions, v1beta2.ConditionDeployed)
		return c != nil && c.Reason == v1beta2.ReasonNotRenderable
	})
	c := meta.FindStatusCondition(got.Status.Conditions, v1beta2.ConditionDeployed)
	if c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, naming.RunName("none", 1)+"-c1") ||
		!strings.Contains(c.Message, "engine.wideep_num_slots") || got.Status.Deployment != nil {
		t.Errorf("Deployed = %+v, deployment %+v", c, got.Status.Deployment)
	}
	got = waitForStatus(t, forged, "Deployed=False CandidateNotReproduced", func(d *v1beta2.DynamoGraphDeploymentRequest) bool {
		c := meta.FindStatusCondition(d.Status.Conditions, v1beta2.ConditionDeployed)
		return c != nil && c.Reason == v1beta2.ReasonCandidateNotReproduced
	})
	if c := meta.FindStatusCondition(got.Status.Conditions, v1beta2.ConditionDeployed); !strings.Contains(c.Message, "engine.wideep_num_slots") || got.Status.Deployment != nil {
		t.Errorf("Deployed = %+v, deployment %+v", c, got.Status.Deployment)
	}
}
