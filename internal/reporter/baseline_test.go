package reporter_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/candidates/outputtest"
	"github.com/dgdr-operator/dgdr-operator/internal/reporter"
	"github.com/dgdr-operator/dgdr-operator/internal/searchoutput"
)

const baselineCandidate = "llm-run-1-0001"

// validPrediction is the real AISimulate's prediction.json of one static replica on one GPU
// (the flat summary `aisimulate predict` writes, with its diagnostics).
const validPrediction = `{
  "completed_requests": 36,
  "duration_ms": 8580.0,
  "goodput_output_throughput_tok_s": 512.5,
  "gpu_hours": 0.0023833333333333333,
  "mean_e2e_latency_ms": 1210.5,
  "mean_itl_ms": 9.5,
  "mean_output_token_throughput_per_user": 105.2,
  "mean_tpot_ms": 9.75,
  "mean_ttft_ms": 40.25,
  "num_requests": 36,
  "output_throughput_tok_s": 537.0,
  "p99_ttft_ms": 80.0,
  "power_diagnostics": {"publication_status": "unsupported", "power_coverage": null},
  "prediction_provenance": {"aggregated": {"estimator": "fpm", "timing_source": "profile", "data_version": "1"}},
  "request_throughput_rps": 4.2
}
`

// invalidPrediction is what predict writes (and exits 1 with) when no request completed.
const invalidPrediction = `{"completed_requests": 0, "duration_ms": 1000.0, "gpu_hours": 0.0002777777777777778,
  "mean_ttft_ms": null, "mean_tpot_ms": null, "output_throughput_tok_s": null,
  "prediction_status": "invalid", "stop_reason": "no_completed_requests", "diagnostic": "No requests completed"}`

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// recordBaseline records status.aisimulate.baseline as the Run controller does.
func recordBaseline(t *testing.T, run *v1beta2.DynamoGraphDeploymentRun) {
	t.Helper()
	run = getRun(t, run.Namespace, run.Name)
	run.Status.AISimulate = &v1beta2.AISimulateStatus{Baseline: &v1beta2.BaselineInputStatus{
		Candidate: baselineCandidate, Input: &runtime.RawExtension{Raw: []byte(`{"engine":{}}`)}, InputHash: "sha256:base"}}
	if err := k8s.Status().Update(context.Background(), run); err != nil {
		t.Fatal(err)
	}
}

// exited is a watcher that has seen its container exit with code.
func exited(code int) reporter.ChanWatcher {
	c := make(chan int, 1)
	c <- code
	return c
}

// TestBaselinePublished: the baseline Job's reporter publishes the baseline's prediction as
// status.baseline in the Candidates' metrics form, and nothing of the search's.
func TestBaselinePublished(t *testing.T) {
	ns := newNamespace(t)
	run := newRun(t, ns, "llm-run-base", 2)
	recordBaseline(t, run)
	baseDir := filepath.Join(t.TempDir(), "baseline")
	writeFile(t, filepath.Join(baseDir, reporter.PredictionFile), validPrediction)

	got, err := newReporter(ns, run.Name, baseDir, exited(0)).PublishBaseline(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := &v1beta2.BaselineStatus{
		Candidate: baselineCandidate,
		// The score recommend would give it for the Run's target (throughput per GPU).
		Metrics: &v1beta2.CandidateMetrics{Score: ptr.To(537.0 / (0.0023833333333333333 / (8580.0 / 3.6e6))), TTFTMs: ptr.To(40.25), ITLMs: ptr.To(9.5), E2EMs: ptr.To(1210.5), Throughput: ptr.To(537.0),
			ThroughputPerGPU: ptr.To(537.0 / (0.0023833333333333333 / (8580.0 / 3.6e6))), ThroughputPerUser: ptr.To(105.2),
			RequestsPerSecond: ptr.To(4.2), GPUs: 1,
			Percentiles: &v1beta2.CandidatePercentiles{TTFTMs: &v1beta2.LatencyPercentiles{P99: ptr.To(80.0)}}},
		MeanTPOTMs:        ptr.To(9.75),
		GPUs:              ptr.To(0.0023833333333333333 / (8580.0 / 3.6e6)),
		CompletedRequests: 36,
	}
	st := getRun(t, ns, run.Name).Status
	if diff := cmp.Diff(want, st.Baseline); diff != "" {
		t.Errorf("status.baseline (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("returned baseline (-want +got):\n%s", diff)
	}
	if st.Recommendation != nil || len(st.CandidateRefs) != 0 || st.Progress != nil {
		t.Errorf("the baseline's reporter published search results: %+v", st)
	}
	if len(listCandidates(t, ns)) != 0 {
		t.Error("the baseline's reporter created Candidates")
	}
}

// TestBaselineFailures: whatever goes wrong with the baseline container or its output,
// status.baseline.error says why there are no baseline metrics, and the publication succeeds.
func TestBaselineFailures(t *testing.T) {
	cases := []struct {
		name    string
		write   func(t *testing.T, dir string)
		code    int
		wantErr string
	}{
		{name: "exit 1 with an invalid prediction", code: 1, write: func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, reporter.PredictionFile), invalidPrediction)
		}, wantErr: "the baseline container exited with code 1: no_completed_requests: No requests completed"},
		{name: "exit 2 without a prediction", code: 2,
			wantErr: "the baseline container exited with code 2; see the baseline container's logs"},
		{name: "invalid prediction with exit 0", write: func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, reporter.PredictionFile), invalidPrediction)
		}, wantErr: "the baseline prediction is invalid: no_completed_requests"},
		{name: "missing prediction", wantErr: "reading the baseline's prediction"},
		{name: "oversized prediction", write: func(t *testing.T, dir string) {
			outputtest.Sparse(t, filepath.Join(dir, reporter.PredictionFile), searchoutput.MaxPredictionBytes+1)
		}, wantErr: "baseline/prediction.json is 1048577 bytes, over the reporter's cap of 1 MiB"},
		{name: "prediction links to /dev/zero", write: func(t *testing.T, dir string) {
			outputtest.Symlink(t, "/dev/zero", filepath.Join(dir, reporter.PredictionFile))
		}, wantErr: "baseline/prediction.json is a symbolic link"},
		{name: "not JSON", write: func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, reporter.PredictionFile), `{"completed_requests": NaN}`)
		}, wantErr: "baseline/prediction.json: invalid character"},
		{name: "no completed_requests", write: func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, reporter.PredictionFile), `{"mean_ttft_ms": 1}`)
		}, wantErr: "baseline/prediction.json: completed_requests: required"},
	}
	ns := newNamespace(t)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run := newRun(t, ns, "llm-run-fail-"+string(rune('a'+i)), 1)
			recordBaseline(t, run)
			baseDir := filepath.Join(t.TempDir(), "baseline")
			if err := os.MkdirAll(baseDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if tc.write != nil {
				tc.write(t, baseDir)
			}
			if _, err := newReporter(ns, run.Name, baseDir, exited(tc.code)).PublishBaseline(context.Background()); err != nil {
				t.Fatalf("a failed baseline failed the publication: %v", err)
			}
			b := getRun(t, ns, run.Name).Status.Baseline
			if b == nil || b.Candidate != baselineCandidate || b.Metrics != nil || !strings.Contains(b.Error, tc.wantErr) {
				t.Errorf("status.baseline = %+v, want an error containing %q", b, tc.wantErr)
			}
		})
	}
}

// TestBaselineNeedsARecordedOne: a Run without status.aisimulate.baseline has no baseline to
// publish: the reporter fails (its outcome fails the baseline Job) and writes nothing.
func TestBaselineNeedsARecordedOne(t *testing.T) {
	ns := newNamespace(t)
	run := newRun(t, ns, "llm-run-plain", 1)
	_, err := newReporter(ns, run.Name, t.TempDir(), exited(0)).PublishBaseline(context.Background())
	if err == nil || !strings.Contains(err.Error(), "records no baseline (status.aisimulate.baseline)") {
		t.Errorf("err = %v, want one naming status.aisimulate.baseline", err)
	}
	if b := getRun(t, ns, run.Name).Status.Baseline; b != nil {
		t.Errorf("status.baseline = %+v, want none", b)
	}
}

// TestBaselineStopped: a reporter stopped before the baseline ended publishes nothing.
func TestBaselineStopped(t *testing.T) {
	ns := newNamespace(t)
	run := newRun(t, ns, "llm-run-stop", 1)
	recordBaseline(t, run)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := newReporter(ns, run.Name, t.TempDir(), make(reporter.ChanWatcher)).PublishBaseline(ctx); err == nil {
		t.Error("a stopped baseline reporter reported success")
	}
	if b := getRun(t, ns, run.Name).Status.Baseline; b != nil {
		t.Errorf("status.baseline = %+v, want none", b)
	}
}
