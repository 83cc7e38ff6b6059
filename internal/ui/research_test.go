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

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
	"github.com/dgdr-operator/dgdr-operator/internal/ui"
)

// TestResearchSection: the request page shows the re-search schedule, the history newest first
// — window, requests, the deployed candidate's baseline beside the best candidate's objective,
// the change, the decision with its reason and the message, escaped (html/template writes + as
// &#43;) — links the re-search Runs
// the request still has, and ImprovementAvailable; the JSON view carries the same.
func TestResearchSection(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	req := builders.Request(ns, "llm").MaxCandidates(3).ITL(fixtureITLMs).Obj()
	req.Spec.Research = &v1beta2.ResearchSpec{IntervalMinutes: 360,
		WindowMinutes: ptr.To[int32](1440), MinRequests: ptr.To[int32](100)}
	req.Spec.Deployment = &v1beta2.DeploymentSpec{ReplaceMargin: "10%"}
	req.Spec.Objective = &v1beta2.ObjectiveSpec{Target: v1beta2.TargetThroughputPerGPU}
	if err := env.Client.Create(ctx, req); err != nil {
		t.Fatal(err)
	}
	deployedRun := newRun(t, req, 1, `{}`)
	researchRun := newRun(t, req, 2, `{}`)

	end := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	at := func(t time.Time) *metav1.Time { return &metav1.Time{Time: t} }
	hostile := `window cut failed <script>alert(1)</script> & "quoted"`
	req.Status.Deployment = &v1beta2.DeploymentStatus{Name: "llm-prod", Run: deployedRun.Name, Candidate: "llm-run-1-c07"}
	req.Status.Research = &v1beta2.ResearchStatus{
		NextTime: &metav1.Time{Time: time.Now().Add(3*time.Hour + 30*time.Second)},
		History: []v1beta2.ResearchRecord{
			{Run: researchRun.Name, WindowStart: at(end.Add(-24 * time.Hour)), WindowEnd: at(end), Requests: 48210,
				DeployedCandidate: "llm-run-1-c07", BaselineObjective: ptr.To(1840.0), BestCandidate: "llm-run-2-c03", BestObjective: ptr.To(2243.0),
				Decision: v1beta2.ResearchReplaced, Reason: v1beta2.ReasonBetterCandidate,
				Message: "candidate llm-run-2-c03 2,243 tok/s/GPU vs deployed llm-run-1-c07 1,840 (+21.9%, margin 10%)"},
			{Run: "llm-g1-r0600", WindowStart: at(end.Add(-30 * time.Hour)), WindowEnd: at(end.Add(-6 * time.Hour)), Requests: 51002,
				DeployedCandidate: "llm-run-1-c07", BaselineObjective: ptr.To(1850.0), BestCandidate: "llm-g1-r0600-c01", BestObjective: ptr.To(1900.0),
				Decision: v1beta2.ResearchKept, Reason: v1beta2.ReasonBaselineStillBest, Message: "kept"},
			{Run: "llm-g1-r0000", WindowStart: at(end.Add(-36 * time.Hour)), WindowEnd: at(end.Add(-12 * time.Hour)),
				DeployedCandidate: "llm-run-1-c07", Decision: v1beta2.ResearchUndecided, Reason: "InputFailed", Message: hostile},
		},
	}
	meta.SetStatusCondition(&req.Status.Conditions, metav1.Condition{Type: v1beta2.ConditionImprovementAvailable, Status: metav1.ConditionTrue,
		Reason: v1beta2.ReasonBetterCandidate, Message: researchRun.Name + ": <better> candidate"})
	if err := env.Client.Status().Update(ctx, req); err != nil {
		t.Fatal(err)
	}

	ts, _ := serve(t, env.Config, ns)
	page := "/ns/" + ns + "/requests/llm"
	code, body := get(t, ts, page)
	if code != http.StatusOK {
		t.Fatalf("%s: %d\n%s", page, code, body)
	}
	for _, want := range []string{
		`<h2>Re-searches <small>every 6h over the last 24h of captured traffic, at least 100 requests, replace margin 10%</small></h2>`,
		`<p id="research-next">Next re-search: `, ` (in 3h)</p>`,
		`<tr class="replaced"><th><a href="/ns/` + ns + `/requests/llm?run=llm-run-2">llm-run-2</a></th><td>2025-05-31 12:00 – 2025-06-01 12:00 UTC</td><td>48,210</td>` +
			`<td><a href="/ns/` + ns + `/candidates/llm-run-1-c07">llm-run-1-c07</a></td><td>1,840 tok/s/GPU</td>` +
			`<td><a href="/ns/` + ns + `/candidates/llm-run-2-c03">llm-run-2-c03</a></td><td>2,243 tok/s/GPU</td><td>&#43;21.9%</td>` +
			`<td>Replaced (BetterCandidate)</td><td class="message">candidate llm-run-2-c03 2,243 tok/s/GPU vs deployed llm-run-1-c07 1,840 (&#43;21.9%, margin 10%)</td></tr>`,
		// A Run the request no longer has is named, not linked.
		`<tr class="kept"><th>llm-g1-r0600</th>`, `<td>&#43;2.7%</td><td>Kept (BaselineStillBest)</td>`,
		`<tr class="undecided"><th>llm-g1-r0000</th><td>2025-05-31 00:00 – 2025-06-01 00:00 UTC</td><td>–</td>`,
		`<td>–</td><td>–</td><td>–</td><td>–</td><td>Undecided (InputFailed)</td><td class="message">` + html.EscapeString(hostile) + `</td></tr>`,
		`<p id="improvement-available" class="result">ImprovementAvailable: True (BetterCandidate): llm-run-2: &lt;better&gt; candidate</p>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the request page lacks %q", want)
		}
	}
	if strings.Contains(body, "<script>alert") {
		t.Error("the page shows a message unescaped")
	}
	if strings.Index(body, `id="research"`) > strings.Index(body, `id="history"`) {
		t.Error("the re-searches come after the Run history")
	}

	var v ui.RequestView
	getJSON(t, ts, "/api/ns/"+ns+"/requests/llm", &v)
	r := v.Research
	if r == nil || r.Schedule == nil || r.Schedule.Interval != "6h" || r.Schedule.Margin != "10%" || r.Schedule.Next == nil ||
		len(r.History) != 3 || r.History[0].Change != "+21.9%" || r.History[2].Message != hostile ||
		r.Condition == nil || r.Condition.Status != "True" {
		t.Errorf("the JSON view's research: %+v", r)
	}
}
