package run_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/calibration"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/poll"
)

// trustedNamespace is this package's operator's one calibration.trustedNamespaces: its profile is
// the cluster profile.
const trustedNamespace = "dgdr-calibration-trusted-test"

const (
	observedModel = "meta-llama/Llama-3.1-8B-Instruct"
	scarceModel   = "Qwen/Qwen3-8B"
)

// calibrationKey is a key of the H100 system, which no other test of this package searches on.
func calibrationKey(model, parallelism string) calibration.Key {
	return calibration.Key{Backend: "vllm", System: "h100_sxm", Model: model, Mode: "aggregated", Parallelism: parallelism}
}

// recordObservation records in ns's profile an observation of key whose TTFT was observed at
// ttft for a prediction of 100 (and ITL at 12 for 10).
func recordObservation(t *testing.T, ns string, key calibration.Key, ttft float64, n int) {
	t.Helper()
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	if err := calibration.Record(context.Background(), k8s, k8s, ns, calibration.Observation{Key: key,
		Metrics: map[string]calibration.Pair{
			calibration.MetricTTFTMs: {Predicted: 100, Observed: ttft},
			calibration.MetricITLMs:  {Predicted: 10, Observed: 12},
		},
		MeasuredAt: at.Add(time.Duration(n) * time.Minute), Source: fmt.Sprintf("%s/req@gen%d", ns, n)}); err != nil {
		t.Fatal(err)
	}
}

// calibratedRun creates a Run of model on H100 in ns and returns its status.calibration once its
// effective input is recorded.
func calibratedRun(t *testing.T, ns, name, model string) *v1beta2.RunCalibration {
	t.Helper()
	r := createRun(t, ns, name, func(r *v1beta2.DynamoGraphDeploymentRun) {
		r.Spec.Model.Name = model
		r.Spec.Hardware.GPU.SKU = "h100_sxm"
	})
	poll.Eventually(t, wait, "the effective input of "+name+" recorded", func() (bool, error) {
		return getRun(t, r).Status.AISimulate != nil, nil
	})
	return getRun(t, r).Status.Calibration
}

// TestCalibrationRecordedWithTheInput: the Run controller records, with the effective input, the
// corrections of the Run's namespace's profile for the Run's system and model that have at least
// minObservations (3 by default) observations, and those of the cluster profile (the trusted
// namespace's) for keys the namespace has too few of; nothing when neither has enough.
func TestCalibrationRecordedWithTheInput(t *testing.T) {
	ns := testenv.Namespace(t, k8s, "t")
	for i, ttft := range []float64{150, 120, 200} {
		recordObservation(t, ns, calibrationKey(observedModel, "agg:tp2"), ttft, i)
	}
	// Two observations of the namespace's own: below the minimum count, for either model.
	recordObservation(t, ns, calibrationKey(observedModel, "agg:tp4"), 300, 3)
	recordObservation(t, ns, calibrationKey(observedModel, "agg:tp4"), 300, 4)
	recordObservation(t, ns, calibrationKey(scarceModel, "agg:tp2"), 300, 5)
	recordObservation(t, ns, calibrationKey(scarceModel, "agg:tp2"), 300, 6)
	// The trusted namespace has enough of agg:tp4 (ratio 1.1), and of agg:tp2 (2.0), which the
	// namespace's own observations take precedence over.
	for i := range 3 {
		recordObservation(t, trustedNamespace, calibrationKey(observedModel, "agg:tp4"), 110, 100+i)
		recordObservation(t, trustedNamespace, calibrationKey(observedModel, "agg:tp2"), 200, 200+i)
	}

	want := &v1beta2.RunCalibration{MinObservations: 3, Corrections: []v1beta2.CalibrationCorrection{
		{Backend: "vllm", Mode: "aggregated", Parallelism: "agg:tp2", Metric: "ttftMs", Ratio: ptr.To(1.5), Spread: ptr.To(0.3), Observations: 3, Profile: v1beta2.CalibrationProfileNamespace},
		{Backend: "vllm", Mode: "aggregated", Parallelism: "agg:tp2", Metric: "itlMs", Ratio: ptr.To(1.2), Spread: ptr.To(0.0), Observations: 3, Profile: v1beta2.CalibrationProfileNamespace},
		{Backend: "vllm", Mode: "aggregated", Parallelism: "agg:tp4", Metric: "ttftMs", Ratio: ptr.To(1.1), Spread: ptr.To(0.0), Observations: 3, Profile: v1beta2.CalibrationProfileCluster},
		{Backend: "vllm", Mode: "aggregated", Parallelism: "agg:tp4", Metric: "itlMs", Ratio: ptr.To(1.2), Spread: ptr.To(0.0), Observations: 3, Profile: v1beta2.CalibrationProfileCluster},
	}}
	if diff := cmp.Diff(want, calibratedRun(t, ns, "calibrated-run", observedModel), approx); diff != "" {
		t.Errorf("status.calibration (-want +got):\n%s", diff)
	}
	if got := calibratedRun(t, ns, "uncalibrated-run", scarceModel); got != nil {
		t.Errorf("status.calibration of a Run whose corrections are all below the minimum count: %+v", got)
	}
}

// TestOneNamespaceCannotCalibrateAnother is the attack on the profile from a tenant: namespace a
// records 20 observations (ratio 10) of a key, more than enough for a correction. A Run of that
// key in namespace b, with 3 observations of its own (ratio 1.5) of it, records b's correction
// only; a Run in a third namespace, with none, records none: a's observations are a's. A Run in
// a records a's own.
func TestOneNamespaceCannotCalibrateAnother(t *testing.T) {
	a, b, c := testenv.Namespace(t, k8s, "a"), testenv.Namespace(t, k8s, "b"), testenv.Namespace(t, k8s, "c")
	key := calibrationKey(scarceModel, "agg:tp8")
	for i := range 20 {
		recordObservation(t, a, key, 1000, i)
	}
	for i := range 3 {
		recordObservation(t, b, key, 150, i)
	}
	inB := calibratedRun(t, b, "run-b", scarceModel)
	wantB := &v1beta2.RunCalibration{MinObservations: 3, Corrections: []v1beta2.CalibrationCorrection{
		{Backend: "vllm", Mode: "aggregated", Parallelism: "agg:tp8", Metric: "ttftMs", Ratio: ptr.To(1.5), Spread: ptr.To(0.0), Observations: 3, Profile: v1beta2.CalibrationProfileNamespace},
		{Backend: "vllm", Mode: "aggregated", Parallelism: "agg:tp8", Metric: "itlMs", Ratio: ptr.To(1.2), Spread: ptr.To(0.0), Observations: 3, Profile: v1beta2.CalibrationProfileNamespace},
	}}
	if diff := cmp.Diff(wantB, inB, approx); diff != "" {
		t.Errorf("status.calibration of the Run in b (-want +got):\n%s", diff)
	}
	if got := calibratedRun(t, c, "run-c", scarceModel); got != nil {
		t.Errorf("status.calibration of a Run in a namespace without observations: %+v", got)
	}
	inA := calibratedRun(t, a, "run-a", scarceModel)
	if inA == nil || len(inA.Corrections) != 2 || *inA.Corrections[0].Ratio != 10 || inA.Corrections[0].Observations != 20 {
		t.Errorf("status.calibration of the Run in a: %+v, want a's own correction", inA)
	}
}

var approx = cmp.Comparer(func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 })
