package reporter_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/calibration"
	"github.com/dgdr-operator/dgdr-operator/internal/candidates/outputtest"
	"github.com/dgdr-operator/dgdr-operator/internal/reporter"
)

// TestPublishedCalibration: the reporter applies the corrections the Run recorded in
// status.calibration to the Candidates of their backend, mode and parallelism, next to the
// uncalibrated metrics it publishes unchanged; a Run without corrections publishes none.
func TestPublishedCalibration(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "out")
	if code := recommend(t, outputtest.SearchInput, dir); code != 0 {
		t.Fatalf("aisim exit %d", code)
	}
	publish := func(rc *v1beta2.RunCalibration) (*v1beta2.DynamoGraphDeploymentRun, []v1beta2.DynamoGraphDeploymentCandidate) {
		t.Helper()
		ns := newNamespace(t)
		run := newRun(t, ns, "llm-run-3", 3)
		run.Status.Calibration = rc
		if err := k8s.Status().Update(ctx, run); err != nil {
			t.Fatal(err)
		}
		exited := make(chan int, 1)
		exited <- 0
		if _, err := newReporter(ns, run.Name, dir, reporter.ChanWatcher(exited)).Run(ctx); err != nil {
			t.Fatal(err)
		}
		return run, listCandidates(t, ns)
	}

	run, plain := publish(nil)
	if len(plain) < 2 {
		t.Fatalf("%d Candidates published, want at least 2", len(plain))
	}
	keys := map[string]calibration.Key{}
	for _, c := range plain {
		if c.Status.Calibration != nil {
			t.Errorf("%s: calibrated without corrections: %+v", c.Name, c.Status.Calibration)
		}
		k, err := calibration.CandidateKey(&run.Spec, &c)
		if err != nil {
			t.Fatal(err)
		}
		keys[c.Status.CandidateID] = k
	}

	best := keys[plain[0].Status.CandidateID]
	if !slices.ContainsFunc(plain, func(c v1beta2.DynamoGraphDeploymentCandidate) bool { return keys[c.Status.CandidateID] != best }) {
		t.Fatalf("every Candidate has the key %s: the test needs one of another key", best)
	}
	rc := &v1beta2.RunCalibration{MinObservations: 3, Corrections: []v1beta2.CalibrationCorrection{
		{Backend: best.Backend, Mode: best.Mode, Parallelism: best.Parallelism, Metric: "ttftMs", Ratio: ptr.To(1.5), Spread: ptr.To(0.25), Observations: 4},
		{Backend: best.Backend, Mode: best.Mode, Parallelism: best.Parallelism, Metric: "throughputPerGpu", Ratio: ptr.To(0.8), Spread: ptr.To(0.05), Observations: 3},
	}}
	_, calibrated := publish(rc)
	if len(calibrated) != len(plain) {
		t.Fatalf("%d Candidates published with corrections, %d without", len(calibrated), len(plain))
	}
	for i, c := range calibrated {
		if diff := cmp.Diff(plain[i].Status.Metrics, c.Status.Metrics); diff != "" {
			t.Errorf("%s: status.metrics changed by calibration (-uncalibrated +calibrated):\n%s", c.Name, diff)
		}
		var want *v1beta2.CandidateCalibration
		if keys[c.Status.CandidateID] == best {
			m := c.Status.Metrics
			want = &v1beta2.CandidateCalibration{Metrics: []v1beta2.CalibratedMetric{
				{Metric: "ttftMs", Predicted: ptr.To(*m.TTFTMs), Calibrated: ptr.To(*m.TTFTMs * 1.5), Ratio: ptr.To(1.5), Spread: ptr.To(0.25), Observations: 4},
				{Metric: "throughputPerGpu", Predicted: ptr.To(*m.ThroughputPerGPU), Calibrated: ptr.To(*m.ThroughputPerGPU * 0.8), Ratio: ptr.To(0.8), Spread: ptr.To(0.05), Observations: 3},
			}}
		}
		if diff := cmp.Diff(want, c.Status.Calibration); diff != "" {
			t.Errorf("%s (%s): status.calibration (-want +got):\n%s", c.Name, keys[c.Status.CandidateID], diff)
		}
	}
}
