package ui_test

import (
	"context"
	"html"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/ui"
)

// TestPredictedVsObserved: the request page and the deployed candidate's page show the
// verification of the deployed candidate — each metric predicted with its band, observed, its
// error and whether it held, a metric outside its band marked — and, for a failed verification,
// its reason and message instead of the table. Other candidates' pages show none of it.
func TestPredictedVsObserved(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	ts, _ := serve(t, env.Config, f.ns)
	deployed, other := f.published[0], f.published[1]

	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(f.req), f.req); err != nil {
		t.Fatal(err)
	}
	f.req.Status.Deployment = &v1beta2.DeploymentStatus{Name: "llm-prod", Run: f.run.Name, Candidate: deployed}
	f.req.Status.Verification = &v1beta2.VerificationStatus{
		Phase: v1beta2.VerificationSucceeded, JobName: "llm-verify-2", Deployment: "llm-prod", DeploymentGeneration: 2,
		Run: f.run.Name, Candidate: deployed, MeasuredAt: &metav1.Time{Time: time.Now().Add(-3 * time.Minute)},
		Load:     &v1beta2.VerificationLoad{Concurrency: ptr.To[int32](10), InputTokens: ptr.To[int32](1024), OutputTokens: ptr.To[int32](128)},
		Requests: 100, MaxDurationSeconds: 300,
		Observed: &v1beta2.ObservedMetrics{Requests: 100},
		Metrics: []v1beta2.VerifiedMetric{
			{Name: v1beta2.MetricTTFTMs, Predicted: ptr.To(154.0), Observed: ptr.To(171.5), RelativeErrorPct: ptr.To(11.4),
				TolerancePct: ptr.To(22.0), Held: ptr.To(true)},
			{Name: v1beta2.MetricITLMs, Predicted: ptr.To(4.2), Observed: ptr.To(6.35), RelativeErrorPct: ptr.To(51.2),
				TolerancePct: ptr.To(15.0), Held: ptr.To(false)},
			{Name: v1beta2.MetricThroughputPerGPU, Predicted: ptr.To(2600.0), Observed: ptr.To(2431.0), RelativeErrorPct: ptr.To(6.5),
				TolerancePct: ptr.To(25.0), Held: ptr.To(true)},
		},
	}
	meta.SetStatusCondition(&f.req.Status.Conditions, metav1.Condition{Type: v1beta2.ConditionPredictionHeld, Status: metav1.ConditionFalse,
		Reason: v1beta2.ReasonOutsideErrorBand, Message: "itlMs observed 6.35 ms <predicted 4.2 ms>"})
	if err := env.Client.Status().Update(ctx, f.req); err != nil {
		t.Fatal(err)
	}

	rows := []string{
		`<tr class="held"><th>TTFT</th><td>154 ms</td><td>±22%</td><td>172 ms</td><td>11.4%</td><td>held</td></tr>`,
		`<tr class="outside"><th>ITL</th><td>4.2 ms</td><td>±15%</td><td>6.35 ms</td><td>51.2%</td><td>outside band</td></tr>`,
		`<tr class="held"><th>throughput per GPU</th><td>2600 tokens/s</td><td>±25%</td><td>2431 tokens/s</td><td>6.5%</td><td>held</td></tr>`,
	}
	for _, page := range []string{"/ns/" + f.ns + "/requests/llm", "/ns/" + f.ns + "/candidates/" + deployed} {
		code, body := get(t, ts, page)
		if code != http.StatusOK {
			t.Fatalf("%s: %d\n%s", page, code, body)
		}
		for _, want := range append(rows,
			`<h2>Predicted vs observed <small>verification Succeeded · measured `, " (3m ago)</small>",
			`llm-prod generation 2`, `concurrency 10, 1024 input and 128 output tokens per request, 100 requests, at most 300 s`,
			`<p id="prediction-held" class="warning">PredictionHeld: False (OutsideErrorBand): itlMs observed 6.35 ms &lt;predicted 4.2 ms&gt;</p>`,
		) {
			if !strings.Contains(body, want) {
				t.Errorf("%s lacks %q", page, want)
			}
		}
	}
	if _, body := get(t, ts, "/ns/"+f.ns+"/candidates/"+other); strings.Contains(body, `id="verification"`) {
		t.Errorf("the page of %s, which the request did not deploy, shows the verification", other)
	}
	var v ui.RequestView
	getJSON(t, ts, "/api/ns/"+f.ns+"/requests/llm", &v)
	if v.Verification == nil || len(v.Verification.Metrics) != 3 || v.Verification.Metrics[1].Observed != "6.35 ms" ||
		v.Verification.Condition == nil || v.Verification.Condition.Status != "False" {
		t.Errorf("the JSON view's verification: %+v", v.Verification)
	}

	// A failed verification: its reason and message, escaped, and no table.
	f.req.Status.Verification.Phase = v1beta2.VerificationFailed
	f.req.Status.Verification.Reason = "FrontendUnreachable"
	f.req.Status.Verification.Message = `the frontend Service llm-prod-frontend does not exist <script>alert(1)</script>`
	f.req.Status.Verification.Metrics, f.req.Status.Verification.Observed = nil, nil
	meta.SetStatusCondition(&f.req.Status.Conditions, metav1.Condition{Type: v1beta2.ConditionPredictionHeld, Status: metav1.ConditionUnknown,
		Reason: v1beta2.ReasonVerificationFailed, Message: "verification of DynamoGraphDeployment llm-prod generation 2 failed (FrontendUnreachable)"})
	if err := env.Client.Status().Update(ctx, f.req); err != nil {
		t.Fatal(err)
	}
	for _, page := range []string{"/ns/" + f.ns + "/requests/llm", "/ns/" + f.ns + "/candidates/" + deployed} {
		_, body := get(t, ts, page)
		want := `<p class="error" id="verification-failed">Nothing usable was measured: <b>FrontendUnreachable</b>: ` +
			html.EscapeString(f.req.Status.Verification.Message) + `</p>`
		if !strings.Contains(body, want) {
			t.Errorf("%s lacks %q", page, want)
		}
		if strings.Contains(body, "<script>alert") {
			t.Errorf("%s shows the message unescaped", page)
		}
		if strings.Contains(body, `id="verified-metrics"`) {
			t.Errorf("%s shows a table of a failed verification", page)
		}
		if !strings.Contains(body, `<p id="prediction-held" class="note">PredictionHeld: Unknown (VerificationFailed)`) {
			t.Errorf("%s lacks the PredictionHeld condition", page)
		}
	}
}
