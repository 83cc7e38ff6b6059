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

// calibrationNamespace holds the operator's calibration profile in this package's tests.
const calibrationNamespace = "dgdr-operator-calibration-test"

// TestCalibrationRecordedWithTheInput: the Run controller records, with the effective input, the
// profile's corrections for the Run's system and model that have at least minObservations
// (3 by default) observations, and nothing when none has.
func TestCalibrationRecordedWithTheInput(t *testing.T) {
	ctx := context.Background()
	key := func(model, parallelism string) calibration.Key {
		return calibration.Key{Backend: "vllm", System: "h100_sxm", Model: model, Mode: "aggregated", Parallelism: parallelism}
	}
	const observed, scarce = "meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen3-8B"
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	record := func(k calibration.Key, ttftObserved float64, minute int) {
		t.Helper()
		if err := calibration.Record(ctx, k8s, k8s, calibrationNamespace, calibration.Observation{Key: k,
			Metrics: map[string]calibration.Pair{
				calibration.MetricTTFTMs: {Predicted: 100, Observed: ttftObserved},
				calibration.MetricITLMs:  {Predicted: 10, Observed: 12},
			},
			MeasuredAt: at.Add(time.Duration(minute) * time.Minute), Source: fmt.Sprintf("team/req@gen%d", minute)}); err != nil {
			t.Fatal(err)
		}
	}
	for i, ttft := range []float64{150, 120, 200} {
		record(key(observed, "agg:tp2"), ttft, i)
	}
	// Two observations: below the minimum count, for either model.
	record(key(observed, "agg:tp4"), 300, 3)
	record(key(observed, "agg:tp4"), 300, 4)
	record(key(scarce, "agg:tp2"), 300, 5)
	record(key(scarce, "agg:tp2"), 300, 6)

	onH100 := func(model string) func(*v1beta2.DynamoGraphDeploymentRun) {
		return func(r *v1beta2.DynamoGraphDeploymentRun) {
			r.Spec.Model.Name = model
			r.Spec.Hardware.GPU.SKU = "h100_sxm"
		}
	}
	ns := testenv.Namespace(t, k8s, "t")
	calibrated := createRun(t, ns, "calibrated-run", onH100(observed))
	uncalibrated := createRun(t, ns, "uncalibrated-run", onH100(scarce))
	for _, r := range []*v1beta2.DynamoGraphDeploymentRun{calibrated, uncalibrated} {
		poll.Eventually(t, wait, "the effective input recorded", func() (bool, error) {
			return getRun(t, r).Status.AISimulate != nil, nil
		})
	}

	want := &v1beta2.RunCalibration{MinObservations: 3, Corrections: []v1beta2.CalibrationCorrection{
		{Backend: "vllm", Mode: "aggregated", Parallelism: "agg:tp2", Metric: "ttftMs", Ratio: ptr.To(1.5), Spread: ptr.To(0.3), Observations: 3},
		{Backend: "vllm", Mode: "aggregated", Parallelism: "agg:tp2", Metric: "itlMs", Ratio: ptr.To(1.2), Spread: ptr.To(0.0), Observations: 3},
	}}
	if diff := cmp.Diff(want, getRun(t, calibrated).Status.Calibration, approx); diff != "" {
		t.Errorf("status.calibration (-want +got):\n%s", diff)
	}
	if got := getRun(t, uncalibrated).Status.Calibration; got != nil {
		t.Errorf("status.calibration of a Run whose corrections are all below the minimum count: %+v", got)
	}
}

var approx = cmp.Comparer(func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 })
