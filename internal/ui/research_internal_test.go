package ui

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
)

// TestResearchBlockOfPartialStatus: a history record with only some fields (a skipped tick, an
// older or broken writer) renders dashes and its Run unlinked when the request does not list it;
// a request with nothing of re-searches renders nothing, and one with only the condition says so.
func TestResearchBlockOfPartialStatus(t *testing.T) {
	pages, err := parsePages()
	if err != nil {
		t.Fatal(err)
	}
	render := func(v *ResearchView) string {
		t.Helper()
		var b strings.Builder
		if err := pages["request"].ExecuteTemplate(&b, "research", v); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	now := time.Now()
	none := func(string) bool { return false }
	if got := researchView(&v1beta2.DynamoGraphDeploymentRequest{}, none, now); got != nil {
		t.Errorf("a request without re-searches has a view: %+v", got)
	}
	if got := strings.TrimSpace(render(nil)); got != "" {
		t.Errorf("no re-searches render %q", got)
	}

	req := &v1beta2.DynamoGraphDeploymentRequest{}
	req.Status.Research = &v1beta2.ResearchStatus{History: []v1beta2.ResearchRecord{
		{Run: "llm-g1-r0000", Decision: v1beta2.ResearchSkipped, Reason: "RunActive", Message: "Run llm-run-1 is still active"},
		{Decision: "Postponed"},
	}}
	body := render(researchView(req, none, now))
	for _, want := range []string{
		`<h2>Re-searches <small>not scheduled</small></h2>`,
		`<tr class="skipped"><th>llm-g1-r0000</th><td>–</td><td>–</td><td>–</td><td>–</td><td>–</td><td>–</td><td>–</td><td>Skipped (RunActive)</td><td class="message">Run llm-run-1 is still active</td></tr>`,
		`<tr class=""><th>–</th><td>–</td><td>–</td><td>–</td><td>–</td><td>–</td><td>–</td><td>–</td><td>Postponed</td><td class="message">–</td></tr>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the block lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "research-next") || strings.Contains(body, "improvement-available") {
		t.Errorf("a next re-search or a condition the request does not have is shown:\n%s", body)
	}

	// Scheduled, nothing recorded yet, only the condition.
	req.Spec.Research = &v1beta2.ResearchSpec{IntervalMinutes: 60}
	req.Status.Research = nil
	req.Status.Conditions = []metav1.Condition{{Type: v1beta2.ConditionImprovementAvailable, Status: metav1.ConditionUnknown, Reason: v1beta2.ReasonAwaitingResearch}}
	body = render(researchView(req, none, now))
	for _, want := range []string{
		`<small>every 1h over the last 1h of captured traffic, at least 1 request, replace margin 10%</small>`,
		`<p id="research-none">No re-searches yet.</p>`,
		`<p id="improvement-available" class="note">ImprovementAvailable: Unknown (AwaitingResearch)</p>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the block lacks %q:\n%s", want, body)
		}
	}
}
