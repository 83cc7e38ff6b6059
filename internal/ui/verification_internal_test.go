package ui

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

// TestVerificationBlockOfPartialStatus: a verification status with missing fields (the API
// requires them, an older or broken writer may not have set them) renders dashes, and no
// verification renders nothing.
func TestVerificationBlockOfPartialStatus(t *testing.T) {
	pages, err := parsePages()
	if err != nil {
		t.Fatal(err)
	}
	render := func(v *VerificationView) string {
		t.Helper()
		var b strings.Builder
		if err := pages["candidate"].ExecuteTemplate(&b, "verification", v); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	now := time.Now()
	if got := verificationView(&v1beta2.DynamoGraphDeploymentRequest{}, now); got != nil {
		t.Errorf("a request without verification has a view: %+v", got)
	}
	if got := strings.TrimSpace(render(nil)); got != "" {
		t.Errorf("no verification renders %q", got)
	}

	req := &v1beta2.DynamoGraphDeploymentRequest{}
	req.Status.Verification = &v1beta2.VerificationStatus{
		Load:    &v1beta2.VerificationLoad{},
		Metrics: []v1beta2.VerifiedMetric{{Name: v1beta2.MetricTTFTMs}, {Name: "e2eMs", Observed: ptr.To(900.0), Held: ptr.To(false)}},
	}
	body := render(verificationView(req, now))
	for _, want := range []string{
		`<h2>Predicted vs observed <small>verification –</small></h2>`,
		`<tr class=""><th>TTFT</th><td>–</td><td>–</td><td>–</td><td>–</td><td>–</td></tr>`,
		`<tr class="outside"><th>e2eMs</th><td>–</td><td>–</td><td>900</td><td>–</td><td>outside band</td></tr>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the block lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "prediction-held") || strings.Contains(body, "verification-facts") {
		t.Errorf("facts or a PredictionHeld condition the request does not have are shown:\n%s", body)
	}

	// Only the condition: the block says so.
	req.Status.Verification = nil
	req.Status.Conditions = []metav1.Condition{{Type: v1beta2.ConditionPredictionHeld, Status: metav1.ConditionUnknown, Reason: v1beta2.ReasonVerifying}}
	body = render(verificationView(req, now))
	for _, want := range []string{`verification none recorded`, `<p id="prediction-held" class="note">PredictionHeld: Unknown (Verifying)</p>`} {
		if !strings.Contains(body, want) {
			t.Errorf("the block lacks %q:\n%s", want, body)
		}
	}
}
