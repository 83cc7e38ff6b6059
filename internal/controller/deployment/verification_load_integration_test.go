package deployment_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
)

// kvTraffic is the traffic of a kvCapacityFraction request's Candidate as AISimulate writes it:
// the fraction it chose for the candidate resolved to concurrency 37.
const kvTraffic = `{"source":{"type":"synthetic","input_tokens":1024,"output_tokens":128},"load":{"type":"concurrency","concurrency":37},"stop":{"requests":1000}}`

// kvRequest is an autoApply request of a kvCapacityFraction range with verification v.
func kvRequest(ns, name string, v *v1beta2.VerificationSpec) *v1beta2.DynamoGraphDeploymentRequest {
	return builders.Request(ns, name).GPUSKU("h200_sxm").AutoApply(name + "-dgd").Verification(v).
		Load(v1beta2.LoadSpec{KVCapacityFraction: &v1beta2.KVCapacityFraction{Range: &v1beta2.FractionRange{Min: 0.2, Max: 0.9}}}).Obj()
}

// withPercentiles are predicted() with p90 and p99 close to the real AIPerf run's (TTFT 27.05
// and 45.14 ms, ITL 5.86 and 6.02 ms).
func withPercentiles() *v1beta2.CandidateMetrics {
	m := predicted()
	m.Percentiles = &v1beta2.CandidatePercentiles{
		TTFTMs: &v1beta2.LatencyPercentiles{P50: ptr.To(23.0), P90: ptr.To(26.0), P99: ptr.To(44.0)},
		ITLMs:  &v1beta2.LatencyPercentiles{P50: ptr.To(5.5), P90: ptr.To(5.8), P99: ptr.To(6.1)},
	}
	return m
}

// TestVerificationAtTheMaterializedLoad: a kvCapacityFraction request is verified at the
// concurrency the search resolved for the deployed candidate (37, from its spec.parameters),
// with the prediction's token lengths, not at concurrency 1: the Job's arguments and
// status.verification say so, the p90 and p99 are compared beside the means, and the
// observation of the means enters the calibration profile.
func TestVerificationAtTheMaterializedLoad(t *testing.T) {
	ns := testenv.Namespace(t, k8s, "v")
	d := deployedAs(t, kvRequest(ns, "kv", &v1beta2.VerificationSpec{Enabled: ptr.To(true), Requests: ptr.To[int32](30)}), kvTraffic, withPercentiles())
	job := verificationJob(t, d)
	args := strings.Join(job.Spec.Template.Spec.Containers[0].Args[2:], " ")
	if !strings.HasSuffix(args, "--max-duration 300 --requests 30 --isl 1024 --osl 128 --concurrency 37") {
		t.Errorf("verification arguments %s, want concurrency 37 with 1024/128 tokens", args)
	}
	running := waitForStatus(t, d, "verification Running", func(d *v1beta2.DynamoGraphDeploymentRequest) bool {
		return d.Status.Verification != nil && d.Status.Verification.Load != nil
	})
	v := running.Status.Verification
	if l := v.Load; l.Concurrency == nil || *l.Concurrency != 37 || *l.InputTokens != 1024 || *l.OutputTokens != 128 ||
		v.LoadAsPredicted == nil || !*v.LoadAsPredicted || v.LoadDifference != "" || v.Trace != nil {
		t.Errorf("running verification %+v, load %+v", v, v.Load)
	}

	msg := realResult(t, "termination-ok.json")
	finishVerification(t, job, &msg, "")
	got := waitForStatus(t, d, "verification Succeeded", func(d *v1beta2.DynamoGraphDeploymentRequest) bool {
		return d.Status.Verification != nil && d.Status.Verification.Phase == v1beta2.VerificationSucceeded
	})
	var names []string
	for _, m := range got.Status.Verification.Metrics {
		names = append(names, string(m.Name))
		if m.Held == nil || !*m.Held {
			t.Errorf("%s %+v: want held", m.Name, m)
		}
	}
	if want := "ttftMs ttftP90Ms ttftP99Ms itlMs itlP90Ms itlP99Ms throughputPerGpu"; strings.Join(names, " ") != want {
		t.Errorf("compared metrics %v, want %s", names, want)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, v1beta2.ConditionPredictionHeld); c.Status != metav1.ConditionTrue || strings.Contains(c.Message, "another load") {
		t.Errorf("PredictionHeld %+v", c)
	}
	obs := observationOf(t, ns+"/kv@gen1")
	if obs == nil {
		t.Fatal("the verification at the prediction's load is not in the calibration profile")
	}
	if len(obs.Metrics) != 3 {
		t.Errorf("observation metrics %v, want the means and throughput per GPU only", obs.Metrics)
	}
}

// TestVerificationAtAnotherLoad: an explicit load other than the prediction's is measured and
// compared, but status.verification says it differs and how, PredictionHeld says so, and the
// observation stays out of the calibration profile.
func TestVerificationAtAnotherLoad(t *testing.T) {
	ns := testenv.Namespace(t, k8s, "v")
	d := deployedAs(t, kvRequest(ns, "other", &v1beta2.VerificationSpec{Enabled: ptr.To(true),
		Load: &v1beta2.VerificationLoad{Concurrency: ptr.To[int32](1)}}), kvTraffic, predicted())
	job := verificationJob(t, d)
	if args := strings.Join(job.Spec.Template.Spec.Containers[0].Args[2:], " "); !strings.HasSuffix(args, "--isl 1024 --osl 128 --concurrency 1") {
		t.Errorf("verification arguments %s, want the explicit concurrency 1", args)
	}
	msg := realResult(t, "termination-ok.json")
	finishVerification(t, job, &msg, "")
	got := waitForStatus(t, d, "verification Succeeded", func(d *v1beta2.DynamoGraphDeploymentRequest) bool {
		return d.Status.Verification != nil && d.Status.Verification.Phase == v1beta2.VerificationSucceeded
	})
	v := got.Status.Verification
	if v.LoadAsPredicted == nil || *v.LoadAsPredicted || !strings.Contains(v.LoadDifference, "the prediction's is concurrency 37") {
		t.Errorf("loadAsPredicted %v, loadDifference %q", v.LoadAsPredicted, v.LoadDifference)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, v1beta2.ConditionPredictionHeld); c == nil || !strings.HasPrefix(c.Message, "measured at another load than predicted") {
		t.Errorf("PredictionHeld %+v", c)
	}
	if obs := observationOf(t, ns+"/other@gen1"); obs != nil {
		t.Errorf("a measurement at another load entered the calibration profile: %+v", obs)
	}
}

// TestVerificationReplaysTheTrace: a trace request's verification Job replays the request's
// trace at its timestamps, as the search did: the ConfigMap's key mounted read-only where the
// search read it, the launcher told the file, its format and the speedup; status.verification
// records the replay.
func TestVerificationReplaysTheTrace(t *testing.T) {
	ns := testenv.Namespace(t, k8s, "v")
	trace := v1beta2.TraceWorkload{Format: v1beta2.TraceFormatMooncake,
		Source: &v1beta2.TraceSource{ConfigMap: &v1beta2.TraceConfigMapSource{Name: "traffic", Key: "day.jsonl"}},
		Replay: &v1beta2.TraceReplay{ArrivalSpeedupRatio: ptr.To(2.0)}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "traffic"},
		Data: map[string]string{"day.jsonl": `{"timestamp": 0, "input_length": 100, "output_length": 10, "hash_ids": [0]}` + "\n"}}
	if err := k8s.Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	d := builders.Request(ns, "traced").GPUSKU("h200_sxm").AutoApply("traced-dgd").Verification(&v1beta2.VerificationSpec{Enabled: ptr.To(true)}).Trace(trace).Obj()
	d = deployedAs(t, d, `{"source":{"type":"trace","paths":["/var/run/dgdr/trace/trace.jsonl"],"format":"mooncake"},"load":{"type":"trace_timestamps","speedup":2}}`, predicted())
	job := createdVerificationJob(t, d)
	pod := job.Spec.Template.Spec
	if len(pod.Volumes) != 2 || pod.Volumes[1].ConfigMap == nil || pod.Volumes[1].ConfigMap.Name != "traffic" ||
		pod.Volumes[1].ConfigMap.Items[0].Key != "day.jsonl" || pod.Volumes[1].ConfigMap.Items[0].Path != "trace.jsonl" {
		t.Errorf("volumes %+v, want the trace ConfigMap's key as trace.jsonl", pod.Volumes)
	}
	if m := pod.Containers[0].VolumeMounts; len(m) != 2 || m[1].MountPath != "/var/run/dgdr/trace" || !m[1].ReadOnly {
		t.Errorf("mounts %+v, want the trace read-only at /var/run/dgdr/trace", m)
	}
	if args := strings.Join(pod.Containers[0].Args[2:], " "); !strings.HasSuffix(args, "--max-duration 300 --trace-file /var/run/dgdr/trace/trace.jsonl --trace-format mooncake --trace-speedup 2") {
		t.Errorf("verification arguments %s", args)
	}
	got := waitForStatus(t, d, "verification Running", func(d *v1beta2.DynamoGraphDeploymentRequest) bool {
		return d.Status.Verification != nil && d.Status.Verification.Trace != nil
	})
	v := got.Status.Verification
	if tr := v.Trace; tr.Format != v1beta2.TraceFormatMooncake || tr.ArrivalSpeedupRatio == nil || *tr.ArrivalSpeedupRatio != 2 ||
		v.Load != nil || v.Requests != 0 || v.LoadAsPredicted == nil || !*v.LoadAsPredicted {
		t.Errorf("verification %+v, trace %+v", v, v.Trace)
	}
}
