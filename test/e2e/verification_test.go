//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/calibration"
	"github.com/dgdr-operator/dgdr-operator/internal/naming"
	"github.com/dgdr-operator/dgdr-operator/internal/verification"
	"github.com/dgdr-operator/dgdr-operator/test/sandboxtest"
)

// verifiedRequest is an autoApply request with verification at the modeled load (the static
// workload's defaults: concurrency 10, 1024 input and 128 output tokens), 30 requests.
const verifiedRequest = `
apiVersion: nvidia.com/v1beta2
kind: DynamoGraphDeploymentRequest
metadata:
  name: %s
spec:
  model:
    name: meta-llama/Llama-3.1-8B-Instruct
  hardware:
    gpu:
      budget: 8
  deployment:
    autoApply: true
    name: %s
    verification:
      enabled: true
      requests: 30
      maxDurationSeconds: 120
  aisimulate:
    inputOverrides:
      optimizer:
        max_trials: 32
`

// verifyTimeout bounds the verification once the deployment is ready: the pod's start, AIPerf's
// own start (a few seconds) and 30 requests against the mocker.
const verifyTimeout = 4 * time.Minute

// TestVerificationOnRealizedDeployment: the verification Job of an autoApply request runs the
// real AIPerf (bin/aiperf) against the real Dynamo frontend and mocker workers the sandbox
// realizes, with streaming requests; status.verification then holds non-zero observed TTFT,
// ITL and throughput, the three compared metrics, and PredictionHeld is True or False (the
// mocker is timed by AISimulate's estimator, so either may be the truth), with its event.
func TestVerificationOnRealizedDeployment(t *testing.T) {
	ctx := context.Background()
	ns := realizedNamespace(t)
	env.CreateRequest(t, ns, fmt.Sprintf(verifiedRequest, "verified", "llama-verified"))
	requireSucceededWithCandidates(t, waitRequestDone(t, ns, "verified"))
	waitDeployed(t, ns, "verified", v1beta2.ReasonDeploymentReady)

	got := waitVerificationEnded(t, ns, "verified", realizeTimeout+verifyTimeout)
	v := got.Status.Verification
	if v.Phase != v1beta2.VerificationSucceeded {
		t.Fatalf("verification %s %s: %s", v.Phase, v.Reason, v.Message)
	}
	o := v.Observed
	if o == nil || o.TTFTMs == nil || *o.TTFTMs.Mean <= 0 || o.ITLMs == nil || *o.ITLMs.Mean <= 0 || o.Throughput == nil || *o.Throughput <= 0 || o.Requests == 0 {
		t.Errorf("observed %+v", o)
	}
	if len(verification.CalibrationMetrics(v.Metrics)) != 3 || v.MeasuredAt == nil || v.Candidate == "" || v.DeploymentGeneration < 1 {
		t.Errorf("verification %+v", v)
	}
	if v.LoadAsPredicted == nil || !*v.LoadAsPredicted || v.Load == nil || v.Load.Concurrency == nil || *v.Load.Concurrency != 10 {
		t.Errorf("verification load %+v (as predicted %v: %s), want the prediction's concurrency 10", v.Load, v.LoadAsPredicted, v.LoadDifference)
	}
	cond := meta.FindStatusCondition(got.Status.Conditions, v1beta2.ConditionPredictionHeld)
	if cond == nil || cond.Status == metav1.ConditionUnknown {
		t.Errorf("PredictionHeld %+v", cond)
	}
	t.Logf("observed TTFT %.2f ms, ITL %.2f ms, %.1f tokens/s; %s", *o.TTFTMs.Mean, *o.ITLMs.Mean, *o.Throughput, cond.Message)

	job := &batchv1.Job{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: naming.VerificationJobName("verified", v.DeploymentGeneration)}, job); err != nil {
		t.Fatal(err)
	}
	if job.Status.Succeeded != 1 {
		t.Errorf("verification Job status %+v", job.Status)
	}

	requireCalibratedNextSearch(t, ns, got)
}

// requireCalibratedNextSearch: the verification of verified is an observation of its namespace's
// calibration profile, and the next search of the same model in that namespace carries it (the
// sandbox uses a correction from one observation): its Run records the correction, and its
// Candidate of the verified candidate's key carries the calibrated prediction next to the
// uncalibrated one, predicted × ratio, with the observations behind it.
func requireCalibratedNextSearch(t *testing.T, ns string, verified *v1beta2.DynamoGraphDeploymentRequest) {
	t.Helper()
	ctx := context.Background()
	v := verified.Status.Verification
	source := fmt.Sprintf("%s/%s@gen%d", ns, verified.Name, v.DeploymentGeneration)
	profile, err := calibration.Load(ctx, k8s, ns)
	if err != nil {
		t.Fatal(err)
	}
	var obs *calibration.Observation
	for i := range profile.Observations {
		if profile.Observations[i].Source == source {
			obs = &profile.Observations[i]
		}
	}
	// The means and throughput per GPU, not the percentiles.
	kept := verification.CalibrationMetrics(v.Metrics)
	if obs == nil || len(obs.Metrics) != len(kept) {
		t.Fatalf("the calibration profile has no observation from %s with %d metrics: %+v", source, len(kept), profile.Observations)
	}
	for _, m := range kept {
		pair, ok := obs.Metrics[string(m.Name)]
		if !ok || m.Observed == nil || pair.Observed != *m.Observed {
			t.Errorf("observation %s: %+v, want %s observed %v as in status.verification", source, obs.Metrics, m.Name, m.Observed)
		}
	}
	t.Logf("calibration observation %s: key %s", source, obs.Key)

	// The same search without a deployment: the same candidates, so its best one has the key
	// of the verified deployment.
	next, err := sandboxtest.ParseRequest(fmt.Sprintf(verifiedRequest, "calibrated", "unused"))
	if err != nil {
		t.Fatal(err)
	}
	next.Namespace, next.Spec.Deployment = ns, nil
	if err := k8s.Create(ctx, next); err != nil {
		t.Fatal(err)
	}
	run := waitRequestDone(t, ns, "calibrated")
	requireSucceededWithCandidates(t, run)
	if run.Status.Calibration == nil || len(run.Status.Calibration.Corrections) == 0 {
		t.Fatalf("Run %s records no calibration: %+v", run.Name, run.Status.Calibration)
	}
	var deployed v1beta2.DynamoGraphDeploymentCandidate
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: v.Candidate}, &deployed); err != nil {
		t.Fatal(err)
	}
	key, err := calibration.CandidateKey(&verified.Spec, &deployed)
	if err != nil {
		t.Fatal(err)
	}
	var cands v1beta2.DynamoGraphDeploymentCandidateList
	if err := k8s.List(ctx, &cands, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	calibrated := 0
	for i := range cands.Items {
		c := &cands.Items[i]
		if !metav1.IsControlledBy(c, run) {
			continue
		}
		k, err := calibration.CandidateKey(&verified.Spec, c)
		if err != nil || k != key {
			continue
		}
		if c.Status.Calibration == nil || len(c.Status.Calibration.Metrics) == 0 {
			t.Errorf("candidate %s has the verified key %s and no calibrated prediction", c.Name, key)
			continue
		}
		for _, m := range c.Status.Calibration.Metrics {
			if m.Predicted == nil || m.Calibrated == nil || m.Ratio == nil || m.Observations < 1 ||
				math.Abs(*m.Calibrated-*m.Predicted**m.Ratio) > 1e-6*math.Max(1, *m.Calibrated) {
				t.Errorf("candidate %s: calibrated %s %+v, want predicted × ratio from at least one observation", c.Name, m.Metric, m)
				continue
			}
			t.Logf("candidate %s (key %s): %s predicted %.4g, calibrated %.4g (ratio %.3f, %d observations)",
				c.Name, key, m.Metric, *m.Predicted, *m.Calibrated, *m.Ratio, m.Observations)
		}
		calibrated++
	}
	if calibrated == 0 {
		t.Errorf("no candidate of Run %s has the verified key %s", run.Name, key)
	}
}

// kvRequest is an autoApply request of a kvCapacityFraction range with verification (30
// requests): each candidate is searched at the concurrency its KV capacity gives the fraction.
const kvRequest = `
apiVersion: nvidia.com/v1beta2
kind: DynamoGraphDeploymentRequest
metadata:
  name: %s
spec:
  model:
    name: meta-llama/Llama-3.1-8B-Instruct
  hardware:
    gpu:
      budget: 8
  workload:
    static:
      inputTokens: 512
      outputTokens: 64
      load:
        kvCapacityFraction:
          range: {min: 0.002, max: 0.01}
  deployment:
    autoApply: true
    name: %s
    verification:
      enabled: true
      requests: 30
      maxDurationSeconds: 120
  aisimulate:
    inputOverrides:
      optimizer:
        max_trials: 32
`

// TestVerificationAtTheMaterializedLoad: a kvCapacityFraction request is measured at its
// materialized load: the verification Job of the deployed candidate offers the concurrency the
// search resolved for it (its spec.parameters), with 512/64 tokens, not concurrency 1; the
// status says the load is the prediction's, the real AIPerf measures it through the real
// frontend, and the candidate's predicted p90 and p99 are compared beside the means.
func TestVerificationAtTheMaterializedLoad(t *testing.T) {
	ctx := context.Background()
	ns := realizedNamespace(t)
	env.CreateRequest(t, ns, fmt.Sprintf(kvRequest, "kv", "llama-kv"))
	requireSucceededWithCandidates(t, waitRequestDone(t, ns, "kv"))
	waitDeployed(t, ns, "kv", v1beta2.ReasonDeploymentReady)

	got := waitVerificationEnded(t, ns, "kv", realizeTimeout+verifyTimeout)
	v := got.Status.Verification
	if v.Phase != v1beta2.VerificationSucceeded {
		t.Fatalf("verification %s %s: %s", v.Phase, v.Reason, v.Message)
	}
	cand := &v1beta2.DynamoGraphDeploymentCandidate{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: v.Candidate}, cand); err != nil {
		t.Fatal(err)
	}
	var params struct {
		Traffic struct {
			Load struct {
				Type        string `json:"type"`
				Concurrency int32  `json:"concurrency"`
			} `json:"load"`
		} `json:"traffic"`
	}
	if err := json.Unmarshal(cand.Spec.Parameters.Raw, &params); err != nil {
		t.Fatal(err)
	}
	materialized := params.Traffic.Load
	if materialized.Type != "concurrency" || materialized.Concurrency < 1 {
		t.Fatalf("the candidate's prediction document has load %+v, want the resolved concurrency", materialized)
	}
	l := v.Load
	if l == nil || l.Concurrency == nil || *l.Concurrency != min(materialized.Concurrency, verification.MaxLoad) || *l.InputTokens != 512 || *l.OutputTokens != 64 {
		t.Errorf("verification load %+v, want concurrency %d with 512/64 tokens", l, materialized.Concurrency)
	}
	if v.LoadAsPredicted == nil || !*v.LoadAsPredicted || v.LoadDifference != "" {
		t.Errorf("loadAsPredicted %v (%s), want true", v.LoadAsPredicted, v.LoadDifference)
	}
	job := &batchv1.Job{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: v.JobName}, job); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("--isl 512 --osl 64 --concurrency %d", *l.Concurrency)
	if args := strings.Join(job.Spec.Template.Spec.Containers[0].Args[2:], " "); !strings.HasSuffix(args, want) {
		t.Errorf("verification arguments %s, want them to end %q", args, want)
	}
	if o := v.Observed; o == nil || o.TTFTMs == nil || o.TTFTMs.P99 == nil || o.Requests == 0 {
		t.Errorf("observed %+v", o)
	}
	names := map[v1beta2.VerificationMetricName]bool{}
	for _, m := range v.Metrics {
		names[m.Name] = true
	}
	if p := cand.Status.Metrics.Percentiles; p != nil && p.TTFTMs != nil && p.TTFTMs.P99 != nil && !names[v1beta2.MetricTTFTP99Ms] {
		t.Errorf("the candidate predicts a TTFT p99 and the verification did not compare it: %v", v.Metrics)
	}
	t.Logf("measured at concurrency %d (the candidate's); %d metrics compared; %s", *l.Concurrency, len(v.Metrics),
		meta.FindStatusCondition(got.Status.Conditions, v1beta2.ConditionPredictionHeld).Message)
}

// waitVerificationEnded waits until the request's verification is no longer Running and returns
// the request as it was then.
func waitVerificationEnded(t *testing.T, ns, name string, timeout time.Duration) *v1beta2.DynamoGraphDeploymentRequest {
	t.Helper()
	var got *v1beta2.DynamoGraphDeploymentRequest
	waitFor(t, timeout, name+"'s verification to end", func(ctx context.Context) (bool, string, error) {
		d := &v1beta2.DynamoGraphDeploymentRequest{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
			return false, "", err
		}
		got = d
		v := d.Status.Verification
		if v == nil {
			return false, "no status.verification", nil
		}
		return v.Phase != v1beta2.VerificationRunning, fmt.Sprintf("phase %s %s %s", v.Phase, v.Reason, v.Message), nil
	})
	return got
}

// faultRequest is an autoApply request with a short verification: 10 requests at concurrency 2
// of 64 input and 16 output tokens, for at most 20 seconds.
const faultRequest = `
apiVersion: nvidia.com/v1beta2
kind: DynamoGraphDeploymentRequest
metadata:
  name: %s
spec:
  model:
    name: meta-llama/Llama-3.1-8B-Instruct
  hardware:
    gpu:
      budget: 8
  deployment:
    autoApply: true
    name: %s
    verification:
      enabled: true
      requests: 10
      maxDurationSeconds: 20
      load: {concurrency: 2, inputTokens: 64, outputTokens: 16}
  aisimulate:
    inputOverrides:
      optimizer:
        max_trials: 32
`

// stalledFrontend lists the model and then never answers a chat completion: a frontend that
// accepts requests and hangs.
func stalledFrontend(t *testing.T) int {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"meta-llama/Llama-3.1-8B-Instruct","object":"model"}]}`))
	})
	mux.HandleFunc("/v1/chat/completions", func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	return sandboxtest.Serve(t, mux)
}

// closedPort is a port of the node where nothing listens.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	return port
}

// TestVerificationFaults: the real verification Job against a frontend that is down ends
// Failed, reason FrontendUnreachable; against one that accepts requests and never answers it
// ends Failed within maxDurationSeconds (20 s) plus the Job's start grace, with no metrics
// compared and PredictionHeld Unknown.
func TestVerificationFaults(t *testing.T) {
	ns := newNamespace(t)
	env.CreateRequest(t, ns, fmt.Sprintf(faultRequest, "down", "llama-down"))
	env.CreateRequest(t, ns, fmt.Sprintf(faultRequest, "stalled", "llama-stalled"))
	requireSucceededWithCandidates(t, waitRequestDone(t, ns, "down"))
	requireSucceededWithCandidates(t, waitRequestDone(t, ns, "stalled"))
	env.ReadyBehind(t, ns, "llama-down", closedPort(t), searchTimeout)
	env.ReadyBehind(t, ns, "llama-stalled", stalledFrontend(t), searchTimeout)

	for name, reasons := range map[string][]string{
		"down":    {verification.ReasonFrontendUnreachable},
		"stalled": {verification.ReasonTimedOut, verification.ReasonNoRequestsCompleted, verification.ReasonErrorRateExceeded},
	} {
		got := waitVerificationEnded(t, ns, name, verifyTimeout)
		v := got.Status.Verification
		if v.Phase != v1beta2.VerificationFailed || !slices.Contains(reasons, v.Reason) || len(v.Metrics) != 0 {
			t.Errorf("%s: verification %s %s (%s), want Failed with one of %v", name, v.Phase, v.Reason, v.Message, reasons)
		}
		c := meta.FindStatusCondition(got.Status.Conditions, v1beta2.ConditionPredictionHeld)
		if c == nil || c.Status != metav1.ConditionUnknown || c.Reason != v1beta2.ReasonVerificationFailed {
			t.Errorf("%s: PredictionHeld %+v", name, c)
		}
		job := &batchv1.Job{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: v.JobName}, job); err != nil {
			t.Fatal(err)
		}
		if took := v.MeasuredAt.Sub(job.CreationTimestamp.Time); took > time.Duration(20+verification.StartGraceSeconds)*time.Second {
			t.Errorf("%s: the verification took %s, beyond maxDurationSeconds and the start grace", name, took)
		}
		t.Logf("%s: %s %s after %s", name, v.Reason, v.Message, v.MeasuredAt.Sub(job.CreationTimestamp.Time))
	}
}
