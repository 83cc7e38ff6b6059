package verification

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/specdefaults"
)

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestParseExportOfRealAIPerf: AIPerf 0.13.0's own export of a streaming chat run (40 requests
// at concurrency 4) yields its TTFT and ITL statistics and throughput per GPU.
func TestParseExportOfRealAIPerf(t *testing.T) {
	got, err := ParseExport(readTestdata(t, "aiperf-0.13.0-profile_export_aiperf.json"), 2)
	if err != nil {
		t.Fatal(err)
	}
	want := &v1beta2.ObservedMetrics{
		TTFTMs:           &v1beta2.Percentiles{Mean: ptr.To(24.528190925), P50: ptr.To(23.923033999999998), P90: ptr.To(27.634135000000004), P99: ptr.To(31.51375598)},
		ITLMs:            &v1beta2.Percentiles{Mean: ptr.To(5.7388125683333335), P50: ptr.To(5.754883433333333), P90: ptr.To(6.035709906666667), P99: ptr.To(6.177979318666666)},
		Throughput:       ptr.To(508.4653752832023),
		ThroughputPerGPU: ptr.To(508.4653752832023 / 2),
		Requests:         40,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("observed (-want +got):\n%s", diff)
	}
}

// TestParseResult: the launcher's termination messages, two captured from real runs (a
// measurement and a frontend that refuses connections) and the other outcomes.
func TestParseResult(t *testing.T) {
	ok := string(readTestdata(t, "termination-ok.json"))
	cases := []struct {
		name       string
		msg        string
		wantReason string
		wantInMsg  string
		wantObs    *v1beta2.ObservedMetrics
	}{
		{name: "real measurement", msg: ok, wantObs: &v1beta2.ObservedMetrics{
			TTFTMs:     &v1beta2.Percentiles{Mean: ptr.To(24.4833453), P50: ptr.To(22.260365999999998), P90: ptr.To(27.049311799999998), P99: ptr.To(45.14257258)},
			ITLMs:      &v1beta2.Percentiles{Mean: ptr.To(5.699484086666667), P50: ptr.To(5.707233733333333), P90: ptr.To(5.86340386), P99: ptr.To(6.022221324666667)},
			Throughput: ptr.To(390.2729498518211), ThroughputPerGPU: ptr.To(390.2729498518211), Requests: 30,
		}},
		{name: "real unreachable frontend", msg: string(readTestdata(t, "termination-unreachable.json")),
			wantReason: ReasonFrontendUnreachable, wantInMsg: "Connection refused"},
		{name: "timed out", msg: `{"timedOut":true,"error":"AIPerf did not finish within 30 s"}`,
			wantReason: ReasonTimedOut, wantInMsg: "within 30 s"},
		{name: "no export", msg: `{"exitCode":1,"error":"no AIPerf export"}`, wantReason: ReasonJobFailed, wantInMsg: "exit code 1"},
		{name: "no summary, every request failed", msg: `{"exitCode":1,"records":{"succeeded":0,"failed":2,"firstError":"TimeoutError: TimeoutError()"},"error":"no AIPerf export"}`,
			wantReason: ReasonNoRequestsCompleted, wantInMsg: "0 requests succeeded, 2 failed; first error: TimeoutError"},
		{name: "no summary, some succeeded", msg: `{"exitCode":1,"records":{"succeeded":20,"failed":0,"firstError":""},"error":"no AIPerf export"}`,
			wantReason: ReasonJobFailed, wantInMsg: "20 requests succeeded"},
		{name: "not JSON", msg: "Traceback (most recent call last)", wantReason: ReasonOutputRejected, wantInMsg: "not the launcher's JSON"},
		{name: "over the cap", msg: `{"error":"` + strings.Repeat("x", MaxResultBytes) + `"}`, wantReason: ReasonOutputRejected, wantInMsg: "over the cap"},
		{name: "wrong unit", msg: `{"exitCode":0,"aiperf":{"time_to_first_token":{"unit":"s","avg":0.02}}}`,
			wantReason: ReasonOutputRejected, wantInMsg: "aiperf.time_to_first_token.unit"},
		{name: "negative latency", msg: `{"exitCode":0,"aiperf":{"inter_token_latency":{"unit":"ms","avg":-1}}}`,
			wantReason: ReasonOutputRejected, wantInMsg: "aiperf.inter_token_latency.avg"},
		{name: "error rate above the threshold", msg: `{"exitCode":0,"errors":10,"aiperf":{"request_count":{"unit":"requests","avg":90}}}`,
			wantReason: ReasonErrorRateExceeded, wantInMsg: "10 of 100 requests failed"},
		{name: "nothing completed", msg: `{"exitCode":0,"errors":5,"aiperf":{"request_count":{"unit":"requests","avg":0}}}`,
			wantReason: ReasonNoRequestsCompleted, wantInMsg: "5 failed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ParseResult([]byte(tc.msg), 1)
			if got.FailReason != tc.wantReason || !strings.Contains(got.Message, tc.wantInMsg) {
				t.Errorf("ParseResult = %q %q, want reason %q and a message with %q", got.FailReason, got.Message, tc.wantReason, tc.wantInMsg)
			}
			if tc.wantObs != nil {
				if diff := cmp.Diff(tc.wantObs, got.Observed); diff != "" {
					t.Errorf("observed (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func request(workload *v1beta2.WorkloadSpec, v *v1beta2.VerificationSpec) *v1beta2.DynamoGraphDeploymentRequest {
	return &v1beta2.DynamoGraphDeploymentRequest{Spec: v1beta2.DynamoGraphDeploymentRequestSpec{
		Workload: workload, Deployment: &v1beta2.DeploymentSpec{Verification: v}}}
}

// candidate is a Candidate predicting m at the traffic of the prediction document traffic (the
// JSON of spec.parameters.traffic; none when empty).
func candidate(m *v1beta2.CandidateMetrics, traffic string) *v1beta2.DynamoGraphDeploymentCandidate {
	params := `{"engine":{"model":"org/llama"}}`
	if traffic != "" {
		params = `{"engine":{"model":"org/llama"},"traffic":` + traffic + `}`
	}
	c := &v1beta2.DynamoGraphDeploymentCandidate{Spec: v1beta2.DynamoGraphDeploymentCandidateSpec{GPUs: 4, Parameters: runtime.RawExtension{Raw: []byte(params)}},
		Status: v1beta2.DynamoGraphDeploymentCandidateStatus{Metrics: m}}
	c.Name = "c1"
	return c
}

// staticTraffic is the prediction document's traffic of a static request at concurrency 10.
const staticTraffic = `{"source":{"type":"synthetic","input_tokens":2048,"output_tokens":256},"load":{"type":"poisson","requests_per_second":3.5,"seed":42},"stop":{"requests":1000}}`

// TestResolve: the prediction's traffic and the error band are the defaults; explicit settings
// win; the percentiles a candidate predicts are compared with their metric's tolerance.
func TestResolve(t *testing.T) {
	metrics := &v1beta2.CandidateMetrics{TTFTMs: ptr.To(100.0), ITLMs: ptr.To(10.0), ThroughputPerGPU: ptr.To(500.0),
		ErrorBand: &v1beta2.MetricsErrorBand{TTFTP80Pct: ptr.To(12.0)}}
	withPercentiles := metrics.DeepCopy()
	withPercentiles.Percentiles = &v1beta2.CandidatePercentiles{
		TTFTMs: &v1beta2.LatencyPercentiles{P50: ptr.To(90.0), P90: ptr.To(150.0), P99: ptr.To(300.0)},
		ITLMs:  &v1beta2.LatencyPercentiles{P99: ptr.To(25.0)},
		E2EMs:  &v1beta2.LatencyPercentiles{P90: ptr.To(2000.0)}, // not measured by verification
	}
	static := &v1beta2.WorkloadSpec{Static: &v1beta2.StaticWorkload{InputTokens: ptr.To[int32](2048), OutputTokens: ptr.To[int32](256),
		Load: &v1beta2.LoadSpec{RequestsPerSecond: ptr.To(3.5)}}}
	means := []Prediction{
		{Name: v1beta2.MetricTTFTMs, Value: 100, BandPct: ptr.To(12.0), Tolerance: 12},
		{Name: v1beta2.MetricITLMs, Value: 10, Tolerance: specdefaults.VerificationTolerancePct},
		{Name: v1beta2.MetricThroughputPerGPU, Value: 500, Tolerance: specdefaults.VerificationTolerancePct},
	}
	cases := []struct {
		name    string
		req     *v1beta2.DynamoGraphDeploymentRequest
		metrics *v1beta2.CandidateMetrics
		want    *Plan
	}{
		{name: "defaults from the prediction and the band", req: request(static, &v1beta2.VerificationSpec{Enabled: ptr.To(true)}), metrics: metrics, want: &Plan{
			Load:     v1beta2.VerificationLoad{RequestsPerSecond: ptr.To(3.5), InputTokens: ptr.To[int32](2048), OutputTokens: ptr.To[int32](256)},
			Requests: specdefaults.VerificationRequests, MaxDurationSeconds: specdefaults.VerificationMaxDurationSeconds, GPUs: 4,
			Predictions: means, LoadAsPredicted: true,
		}},
		{name: "explicit settings", req: request(static, &v1beta2.VerificationSpec{
			Load:     &v1beta2.VerificationLoad{Concurrency: ptr.To[int32](8), OutputTokens: ptr.To[int32](32)},
			Requests: ptr.To[int32](20), MaxDurationSeconds: ptr.To[int32](60),
			Tolerance: &v1beta2.VerificationTolerance{TTFTPct: ptr.To(50.0), ThroughputPerGPUPct: ptr.To(40.0)},
		}), metrics: metrics, want: &Plan{
			Load:     v1beta2.VerificationLoad{Concurrency: ptr.To[int32](8), InputTokens: ptr.To[int32](2048), OutputTokens: ptr.To[int32](32)},
			Requests: 20, MaxDurationSeconds: 60, GPUs: 4,
			Predictions: []Prediction{
				{Name: v1beta2.MetricTTFTMs, Value: 100, BandPct: ptr.To(12.0), Tolerance: 50},
				{Name: v1beta2.MetricITLMs, Value: 10, Tolerance: specdefaults.VerificationTolerancePct},
				{Name: v1beta2.MetricThroughputPerGPU, Value: 500, Tolerance: 40},
			},
			LoadDifference: "spec.deployment.verification.load offers concurrency 8 (2048 input, 32 output tokens); the prediction's is 3.5 requests/s (2048 input, 256 output tokens)",
		}},
		{name: "percentiles with their metric's tolerance", req: request(static, &v1beta2.VerificationSpec{
			Tolerance: &v1beta2.VerificationTolerance{ITLPct: ptr.To(30.0)}}), metrics: withPercentiles, want: &Plan{
			Load:     v1beta2.VerificationLoad{RequestsPerSecond: ptr.To(3.5), InputTokens: ptr.To[int32](2048), OutputTokens: ptr.To[int32](256)},
			Requests: specdefaults.VerificationRequests, MaxDurationSeconds: specdefaults.VerificationMaxDurationSeconds, GPUs: 4,
			Predictions: []Prediction{
				{Name: v1beta2.MetricTTFTMs, Value: 100, BandPct: ptr.To(12.0), Tolerance: 12},
				{Name: v1beta2.MetricTTFTP90Ms, Value: 150, BandPct: ptr.To(12.0), Tolerance: 12},
				{Name: v1beta2.MetricTTFTP99Ms, Value: 300, BandPct: ptr.To(12.0), Tolerance: 12},
				{Name: v1beta2.MetricITLMs, Value: 10, Tolerance: 30},
				{Name: v1beta2.MetricITLP99Ms, Value: 25, Tolerance: 30},
				{Name: v1beta2.MetricThroughputPerGPU, Value: 500, Tolerance: specdefaults.VerificationTolerancePct},
			},
			LoadAsPredicted: true,
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Resolve(tc.req, candidate(tc.metrics, staticTraffic), Searched{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := Resolve(request(nil, nil), candidate(&v1beta2.CandidateMetrics{Score: ptr.To(1.0)}, staticTraffic), Searched{}); err == nil || !strings.Contains(err.Error(), "c1") {
		t.Errorf("a candidate without predicted metrics: err %v, want one naming it", err)
	}
}

// TestJudge: each metric's relative error against its tolerance; those outside are named.
func TestJudge(t *testing.T) {
	p := &Plan{Predictions: []Prediction{
		{Name: v1beta2.MetricTTFTMs, Value: 100, BandPct: ptr.To(12.0), Tolerance: 12},
		{Name: v1beta2.MetricITLMs, Value: 10, Tolerance: 25},
		{Name: v1beta2.MetricThroughputPerGPU, Value: 500, Tolerance: 25},
	}}
	obs := &v1beta2.ObservedMetrics{TTFTMs: &v1beta2.Percentiles{Mean: ptr.To(110.0)}, ITLMs: &v1beta2.Percentiles{Mean: ptr.To(15.0)}}
	got, outside := Judge(p, obs)
	want := []v1beta2.VerifiedMetric{
		{Name: v1beta2.MetricTTFTMs, Predicted: ptr.To(100.0), Observed: ptr.To(110.0), RelativeErrorPct: ptr.To(10.0), BandPct: ptr.To(12.0), TolerancePct: ptr.To(12.0), Held: ptr.To(true)},
		{Name: v1beta2.MetricITLMs, Predicted: ptr.To(10.0), Observed: ptr.To(15.0), RelativeErrorPct: ptr.To(50.0), TolerancePct: ptr.To(25.0), Held: ptr.To(false)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
	if len(outside) != 1 || !strings.HasPrefix(outside[0], "itlMs (observed 15, predicted 10: 50.0% off, tolerance 25%)") {
		t.Errorf("outside = %q", outside)
	}
}

// TestJudgePercentiles: the p90 and p99 of TTFT and ITL are compared with AIPerf's like the
// means, and one outside its tolerance is named; a percentile AIPerf did not report is left out.
// Only the means and throughput per GPU go to the calibration profile.
func TestJudgePercentiles(t *testing.T) {
	p := &Plan{Predictions: []Prediction{
		{Name: v1beta2.MetricTTFTMs, Value: 100, Tolerance: 25},
		{Name: v1beta2.MetricTTFTP90Ms, Value: 150, Tolerance: 25},
		{Name: v1beta2.MetricTTFTP99Ms, Value: 300, Tolerance: 25},
		{Name: v1beta2.MetricITLP90Ms, Value: 12, Tolerance: 25},
		{Name: v1beta2.MetricITLP99Ms, Value: 20, Tolerance: 25},
		{Name: v1beta2.MetricThroughputPerGPU, Value: 500, Tolerance: 25},
	}}
	obs := &v1beta2.ObservedMetrics{
		TTFTMs:           &v1beta2.Percentiles{Mean: ptr.To(110.0), P50: ptr.To(100.0), P90: ptr.To(160.0), P99: ptr.To(450.0)},
		ITLMs:            &v1beta2.Percentiles{Mean: ptr.To(10.0), P90: ptr.To(12.6)},
		ThroughputPerGPU: ptr.To(480.0),
	}
	got, outside := Judge(p, obs)
	want := []v1beta2.VerifiedMetric{
		{Name: v1beta2.MetricTTFTMs, Predicted: ptr.To(100.0), Observed: ptr.To(110.0), RelativeErrorPct: ptr.To(10.0), TolerancePct: ptr.To(25.0), Held: ptr.To(true)},
		{Name: v1beta2.MetricTTFTP90Ms, Predicted: ptr.To(150.0), Observed: ptr.To(160.0), RelativeErrorPct: ptr.To(6.67), TolerancePct: ptr.To(25.0), Held: ptr.To(true)},
		{Name: v1beta2.MetricTTFTP99Ms, Predicted: ptr.To(300.0), Observed: ptr.To(450.0), RelativeErrorPct: ptr.To(50.0), TolerancePct: ptr.To(25.0), Held: ptr.To(false)},
		{Name: v1beta2.MetricITLP90Ms, Predicted: ptr.To(12.0), Observed: ptr.To(12.6), RelativeErrorPct: ptr.To(5.0), TolerancePct: ptr.To(25.0), Held: ptr.To(true)},
		{Name: v1beta2.MetricThroughputPerGPU, Predicted: ptr.To(500.0), Observed: ptr.To(480.0), RelativeErrorPct: ptr.To(4.0), TolerancePct: ptr.To(25.0), Held: ptr.To(true)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
	if len(outside) != 1 || !strings.HasPrefix(outside[0], "ttftP99Ms (observed 450, predicted 300: 50.0% off") {
		t.Errorf("outside = %q", outside)
	}
	var names []v1beta2.VerificationMetricName
	for _, m := range CalibrationMetrics(got) {
		names = append(names, m.Name)
	}
	if diff := cmp.Diff([]v1beta2.VerificationMetricName{v1beta2.MetricTTFTMs, v1beta2.MetricThroughputPerGPU}, names); diff != "" {
		t.Errorf("calibration metrics (-want +got):\n%s", diff)
	}
}
