package reporter_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/calibration"
	"github.com/dgdr-operator/dgdr-operator/internal/candidates/outputtest"
	"github.com/dgdr-operator/dgdr-operator/internal/reporter"
)

// TestPublishedCalibration: from a profile on the API server, the corrections a Run records
// (calibration.Profile.For, as the Run controller does) reach the Candidates of their backend,
// mode and parallelism with enough observations, next to the uncalibrated metrics published
// unchanged; a key below the minimum count, and a Run without corrections, publish none.
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
	// The profile as verifications leave it: the best candidate's key observed 4 times (TTFT
	// ratios 1.25, 1.5, 1.5, 2: median 1.5, MAD 0.125) and 3 times for throughput per GPU
	// (0.8 each); another candidate's key only twice, below the minimum count of 3.
	profileNS := newNamespace(t)
	var other calibration.Key
	for _, c := range plain {
		if k := keys[c.Status.CandidateID]; k != best {
			other = k
			break
		}
	}
	// The Run's spec names no GPU system: the profile's observations name the one they ran on.
	observedBest, observedOther := best, other
	observedBest.System, observedOther.System = "h200_sxm", "h200_sxm"
	at := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	for i, o := range []struct {
		key        calibration.Key
		ttft       float64
		throughput float64
	}{{observedBest, 125, 80}, {observedBest, 150, 80}, {observedBest, 150, 80}, {observedBest, 200, 0}, {observedOther, 300, 0}, {observedOther, 300, 0}} {
		m := map[string]calibration.Pair{calibration.MetricTTFTMs: {Predicted: 100, Observed: o.ttft}}
		if o.throughput > 0 {
			m[calibration.MetricThroughputPerGPU] = calibration.Pair{Predicted: 100, Observed: o.throughput}
		}
		if err := calibration.Record(ctx, k8s, k8s, profileNS, calibration.Observation{Key: o.key, Metrics: m,
			MeasuredAt: at.Add(time.Duration(i) * time.Minute), Source: fmt.Sprintf("%s/llm@gen%d", profileNS, i+1)}); err != nil {
			t.Fatal(err)
		}
	}
	profile, err := calibration.Load(ctx, k8s, profileNS)
	if err != nil {
		t.Fatal(err)
	}
	// What the Run controller records for the Run's system and model.
	rc := calibration.Profiles{Namespace: profile.Of(profileNS)}.For(observedBest.System, observedBest.Model, 3)
	if rc == nil || len(rc.Corrections) != 2 {
		t.Fatalf("recorded corrections %+v, want the best key's two", rc)
	}
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
				{Metric: "ttftMs", Predicted: ptr.To(*m.TTFTMs), Calibrated: ptr.To(*m.TTFTMs * 1.5), Ratio: ptr.To(1.5), Spread: ptr.To(0.125), Observations: 4},
				{Metric: "throughputPerGpu", Predicted: ptr.To(*m.ThroughputPerGPU), Calibrated: ptr.To(*m.ThroughputPerGPU * 0.8), Ratio: ptr.To(0.8), Spread: ptr.To(0.0), Observations: 3},
			}}
		}
		if diff := cmp.Diff(want, c.Status.Calibration); diff != "" {
			t.Errorf("%s (%s): status.calibration (-want +got):\n%s", c.Name, keys[c.Status.CandidateID], diff)
		}
	}
}
