package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/admission"
	"github.com/dgdr-operator/dgdr-operator/internal/promote"
	"github.com/dgdr-operator/dgdr-operator/internal/verification"
	"github.com/dgdr-operator/dgdr-operator/test/sandboxtest"
)

// Bounds of one P11 request on the shared machine: the search, then the realization (pods,
// each mocker worker's profile, the frontend) and the verification within its Job's deadline.
const (
	p11SearchTimeout  = 5 * time.Minute
	p11RealizeTimeout = 5 * time.Minute
	p11DeleteTimeout  = 3 * time.Minute
	p11Poll           = time.Second
)

// p11Result is one demo request's verification against the sandbox's Dynamo frontend and mocker.
type p11Result struct {
	name, candidate string
	// search: request created → search done; toJob: request created → verification Job
	// created; wall: Job created → status.verification.measuredAt.
	search, toJob, wall time.Duration
	metrics             map[v1beta2.VerificationMetricName]v1beta2.VerifiedMetric
	held                string
	// load is the load the Job offered; modeled says it is the traffic the prediction was made
	// at (status.verification.loadAsPredicted); otherwise its error mixes the model's with the
	// change of load.
	load    string
	modeled bool
}

func (r p11Result) errPct(m v1beta2.VerificationMetricName) (float64, bool) {
	v, ok := r.metrics[m]
	if !ok || v.RelativeErrorPct == nil {
		return 0, false
	}
	return *v.RelativeErrorPct, true
}

func (r p11Result) detail() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s, %s", r.name, r.candidate, r.load)
	if !r.modeled {
		b.WriteString(" (not the modeled load)")
	}
	fmt.Fprintf(&b, ", search %.0fs, job after %.0fs, verification %.0fs", r.search.Seconds(), r.toJob.Seconds(), r.wall.Seconds())
	for _, m := range p11Metrics {
		if v, ok := r.metrics[m]; ok && v.Predicted != nil && v.Observed != nil && v.RelativeErrorPct != nil {
			fmt.Fprintf(&b, ", %s %.4g→%.4g (%.1f%%)", m, *v.Predicted, *v.Observed, *v.RelativeErrorPct)
		}
	}
	fmt.Fprintf(&b, ", PredictionHeld=%s", r.held)
	return b.String()
}

// p11Metrics are the compared metrics, in the order of the figure's line.
var p11Metrics = []v1beta2.VerificationMetricName{v1beta2.MetricTTFTMs, v1beta2.MetricITLMs, v1beta2.MetricThroughputPerGPU}

// benchVerification (P11): each of the demo's requests (examples/demo, examples/demo/trace)
// with autoApply and verification on, one after the other, in its own namespace of the sandbox
// that the DGD realizer serves: the operator searches, deploys the best candidate (the real
// Dynamo frontend and mocker workers timed by AISimulate's estimator) and runs its verification
// Job (the real AIPerf of bin/aiperf). The value is the median wall time of a verification, from
// its Job's creation to status.verification.measuredAt; the extra gives the worst, and per metric
// the median relative error of the prediction against the mocker over the requests verified at
// their modeled load (the others are in the note). Requests that cannot be verified are skipped
// with the reason printed. It reuses a running sandbox of this checkout or starts one and stops
// it (DGDR_BENCH_KEEP=1 keeps it). A measurement with no goal.
func benchVerification(root string, requests, maxDuration int32) (figure, error) {
	for _, need := range []string{filepath.Join("bin", "aiperf", "bin", "python3"), filepath.Join("bin", "upstream", "bin", "python3")} {
		if _, err := os.Stat(filepath.Join(root, need)); err != nil {
			return figure{}, fmt.Errorf("P11 needs %s (make aiperf, make upstream): %w", need, err)
		}
	}
	// The sandbox serves the Dynamo platform's own DynamoGraphDeployment CRD and realizes it.
	env, err := sandboxtest.Setup(sandboxtest.Options{Suite: "bench P11", QPS: 50, Burst: 100, Timeout: 30 * time.Second})
	if err != nil {
		return figure{}, err
	}
	var results []p11Result
	var skipped []string
	defer func() {
		code := 0
		if len(results) == 0 {
			code = 1 // nothing verified: print the operator's and node agent's logs
		}
		env.Teardown(code, "DGDR_BENCH_KEEP")
	}()
	for _, f := range demoRequests(root) {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		r, err := verifyDemoRequest(env, root, f, requests, maxDuration)
		if err != nil {
			fmt.Fprintf(os.Stderr, "P11 %s: skipped: %v\n", name, err)
			skipped = append(skipped, fmt.Sprintf("%s skipped (%v)", name, err))
			continue
		}
		r.name = name
		fmt.Fprintf(os.Stderr, "P11 %s\n", r.detail())
		results = append(results, r)
	}
	if len(results) == 0 {
		return figure{}, fmt.Errorf("no demo request was verified: %s", strings.Join(skipped, "; "))
	}
	walls := make([]float64, len(results))
	held := 0
	per := make([]string, 0, len(results)+len(skipped))
	for i, r := range results {
		walls[i] = r.wall.Seconds()
		if r.held == string(metav1.ConditionTrue) {
			held++
		}
		per = append(per, r.detail())
	}
	extra := fmt.Sprintf("worst_s=%.0f", slices.Max(walls))
	modeled := 0
	for _, r := range results {
		if r.modeled {
			modeled++
		}
	}
	for _, m := range p11Metrics {
		var errs []float64
		for _, r := range results {
			if e, ok := r.errPct(m); ok && r.modeled {
				errs = append(errs, e)
			}
		}
		if len(errs) > 0 {
			extra += fmt.Sprintf(" %s_err_pct=%.1f", m, median(errs))
		}
	}
	extra += fmt.Sprintf(" modeled_load=%d held=%d/%d verified=%d/%d", modeled, held, len(results), len(results), len(results)+len(skipped))
	return figure{
		id: "P11", name: "verification_on_mocker", value: median(walls), extra: extra, measurement: true,
		note: fmt.Sprintf("the demo's requests with autoApply and verification (at least %d requests, four per slot of a static concurrency, maxDurationSeconds %d) on the sandbox's Dynamo frontend and mocker, one at a time; wall = verification Job created → measuredAt; errors |observed − predicted| / predicted, their medians over the requests verified at the modeled load: %s",
			requests, maxDuration, strings.Join(append(per, skipped...), "; ")),
	}, nil
}

// verifyDemoRequest runs one demo request to the end of its verification in a namespace of its
// own, which it deletes afterwards (the candidates of the next request need the Node's GPUs). An
// error says why the request has no verification.
func verifyDemoRequest(env *sandboxtest.Env, root, file string, requests, maxDuration int32) (p11Result, error) {
	ctx := context.Background()
	data, err := os.ReadFile(file)
	if err != nil {
		return p11Result{}, err
	}
	d, err := sandboxtest.ParseRequest(string(data))
	if err != nil {
		return p11Result{}, err
	}
	if d.Spec.Deployment == nil {
		d.Spec.Deployment = &v1beta2.DeploymentSpec{}
	}
	d.Spec.Deployment.AutoApply = ptr.To(true)
	// At a static concurrency (admission's default included), at least four requests per slot:
	// fewer than the concurrency would be sent in one burst, and the first wave's queueing would
	// be all that is measured.
	defaulted := d.DeepCopy()
	if errs := admission.Default(defaulted, admission.DefaultingOptions{DefaultGPUSKU: "h200_sxm"}); len(errs) > 0 {
		return p11Result{}, errs.ToAggregate()
	}
	if w := defaulted.Spec.Workload; w != nil && w.Static != nil && w.Static.Load != nil && w.Static.Load.Concurrency != nil {
		requests = min(max(requests, 4**w.Static.Load.Concurrency), 10000)
	}
	d.Spec.Deployment.Verification = &v1beta2.VerificationSpec{Enabled: ptr.To(true), Requests: ptr.To(requests), MaxDurationSeconds: ptr.To(maxDuration)}

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-p11-"}}
	if err := env.Client.Create(ctx, ns); err != nil {
		return p11Result{}, fmt.Errorf("creating a namespace: %w", err)
	}
	defer deleteNamespace(env.Client, ns.Name)
	d.Namespace = ns.Name
	// A trace request reads its ConfigMap, which make demo creates from the sample trace.
	if w := d.Spec.Workload; w != nil && w.Trace != nil && w.Trace.Source != nil && w.Trace.Source.ConfigMap != nil {
		src := w.Trace.Source.ConfigMap
		trace, err := os.ReadFile(filepath.Join(root, "examples", "traces", "mooncake-sample.jsonl"))
		if err != nil {
			return p11Result{}, err
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: src.Name}, Data: map[string]string{src.Key: string(trace)}}
		if err := env.Client.Create(ctx, cm); err != nil {
			return p11Result{}, fmt.Errorf("creating the trace ConfigMap: %w", err)
		}
	}
	t0 := time.Now()
	if err := env.Client.Create(ctx, d); err != nil {
		return p11Result{}, fmt.Errorf("creating the request: %w", err)
	}
	key := client.ObjectKeyFromObject(d)
	var res p11Result
	var searchEnd string
	err = sandboxtest.Poll(p11SearchTimeout, p11Poll, func(ctx context.Context) (bool, string, error) {
		got := &v1beta2.DynamoGraphDeploymentRequest{}
		if err := env.Client.Get(ctx, key, got); err != nil {
			return false, "", err
		}
		s := got.Status
		if s.ObservedGeneration != got.Generation || s.ActiveRunRef != nil || s.LatestRun == nil || s.LatestRun.Phase == "" {
			return false, fmt.Sprintf("latest Run %+v", s.LatestRun), nil
		}
		if s.LatestRun.Phase != v1beta2.RunPhaseSucceeded {
			searchEnd = fmt.Sprintf("the search ended %s (%s)", s.LatestRun.Phase, s.LatestRun.Reason)
		}
		return true, "", nil
	})
	if err != nil {
		return p11Result{}, fmt.Errorf("the search did not end: %w", err)
	}
	if searchEnd != "" {
		return p11Result{}, errors.New(searchEnd)
	}
	res.search = time.Since(t0)

	var got *v1beta2.DynamoGraphDeploymentRequest
	var notDeployed string
	err = sandboxtest.Poll(p11RealizeTimeout+time.Duration(int64(maxDuration)+verification.StartGraceSeconds)*time.Second, p11Poll, func(ctx context.Context) (bool, string, error) {
		got = &v1beta2.DynamoGraphDeploymentRequest{}
		if err := env.Client.Get(ctx, key, got); err != nil {
			return false, "", err
		}
		deployed := meta.FindStatusCondition(got.Status.Conditions, v1beta2.ConditionDeployed)
		if deployed != nil && slices.Contains([]string{v1beta2.ReasonDeploymentFailed, v1beta2.ReasonDeploymentConflict, v1beta2.ReasonDeploymentCRDMissing}, deployed.Reason) {
			notDeployed = fmt.Sprintf("not deployed: %s: %s", deployed.Reason, deployed.Message)
			return true, "", nil
		}
		if v := got.Status.Verification; v != nil && v.Phase != v1beta2.VerificationRunning {
			return true, "", nil
		}
		return false, deploymentState(ctx, env.Client, got, deployed), nil
	})
	if err != nil {
		return p11Result{}, fmt.Errorf("no verification result: %w", err)
	}
	if notDeployed != "" {
		return p11Result{}, errors.New(notDeployed)
	}
	v := got.Status.Verification
	if v.Phase != v1beta2.VerificationSucceeded {
		return p11Result{}, fmt.Errorf("verification %s %s: %s", v.Phase, v.Reason, v.Message)
	}
	job := &batchv1.Job{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: v.JobName}, job); err != nil {
		return p11Result{}, fmt.Errorf("reading the verification Job: %w", err)
	}
	if v.MeasuredAt == nil {
		return p11Result{}, fmt.Errorf("verification Succeeded without measuredAt")
	}
	res.toJob = job.CreationTimestamp.Sub(t0)
	res.wall = v.MeasuredAt.Sub(job.CreationTimestamp.Time)
	res.metrics = map[v1beta2.VerificationMetricName]v1beta2.VerifiedMetric{}
	for _, m := range v.Metrics {
		res.metrics[m.Name] = m
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, v1beta2.ConditionPredictionHeld); c != nil {
		res.held = string(c.Status)
	}
	// The operator says whether the Job offered the prediction's traffic.
	res.load, res.modeled = fmt.Sprintf("%d requests, %s", v.Requests, describeLoad(v)), v.LoadAsPredicted != nil && *v.LoadAsPredicted
	cand := &v1beta2.DynamoGraphDeploymentCandidate{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: v.Candidate}, cand); err == nil {
		res.candidate = fmt.Sprintf("%s/%s/%dgpu", cand.Spec.Backend, cand.Spec.Mode, cand.Spec.GPUs)
	} else {
		res.candidate = v.Candidate
	}
	return res, nil
}

func describeLoad(v *v1beta2.VerificationStatus) string {
	s := "load"
	if t := v.Trace; t != nil {
		s += " " + string(t.Format) + " trace"
		if t.ArrivalSpeedupRatio != nil {
			s += fmt.Sprintf(" at its timestamps sped up %gx", *t.ArrivalSpeedupRatio)
		}
	}
	l := v.Load
	if l == nil {
		return s
	}
	if l.Concurrency != nil {
		s += fmt.Sprintf(" concurrency %d", *l.Concurrency)
	}
	if l.RequestsPerSecond != nil {
		s += fmt.Sprintf(" %g req/s", *l.RequestsPerSecond)
	}
	if l.InputTokens != nil && l.OutputTokens != nil {
		s += fmt.Sprintf(" %d/%d tokens", *l.InputTokens, *l.OutputTokens)
	}
	return s
}

// deploymentState describes where a request is on its way to a verification, with the
// DynamoGraphDeployment's readiness as the realizer wrote it (what a timeout reports).
func deploymentState(ctx context.Context, c client.Client, d *v1beta2.DynamoGraphDeploymentRequest, deployed *metav1.Condition) string {
	s := fmt.Sprintf("Deployed=%v", deployed)
	if v := d.Status.Verification; v != nil {
		s += fmt.Sprintf(", verification %s (Job %s)", v.Phase, v.JobName)
	}
	if dep := d.Status.Deployment; dep != nil {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(promote.GVK)
		if err := c.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: dep.Name}, u); err == nil {
			state, _, _ := unstructured.NestedString(u.Object, "status", "state")
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			s += fmt.Sprintf(", DynamoGraphDeployment %s state %q conditions %v", dep.Name, state, conds)
		}
	}
	return s
}

// deleteNamespace deletes a P11 namespace and waits until it is gone, so that the next
// request's pods find the Node's GPUs free.
func deleteNamespace(c client.Client, name string) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Delete(context.Background(), ns); err != nil && !apierrors.IsNotFound(err) {
		fmt.Fprintf(os.Stderr, "P11: deleting namespace %s: %v\n", name, err)
		return
	}
	err := sandboxtest.Poll(p11DeleteTimeout, p11Poll, func(ctx context.Context) (bool, string, error) {
		err := c.Get(ctx, client.ObjectKey{Name: name}, &corev1.Namespace{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		return false, "terminating", err
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "P11: namespace %s: %v\n", name, err)
	}
}
