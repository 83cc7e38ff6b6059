package ui_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/ui"
)

// titleOf is the hover text of the plot point of a published candidate.
func titleOf(t *testing.T, body, candidate string) string {
	t.Helper()
	re := regexp.MustCompile(`data-candidate="` + regexp.QuoteMeta(candidate) + `" data-rank="\d+"[^>]*><title>([^<]*)</title>`)
	m := re.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no point of %s on the plot", candidate)
	}
	return html.UnescapeString(m[1])
}

// TestBandsAndDeployed: the candidate page and the plot's hover text show every predicted metric,
// the latencies with the recommender's error band and their percentiles, and the plot rings the
// candidate the request deployed.
func TestBandsAndDeployed(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	ts, _ := serve(t, env.Config, f.ns)
	best := f.published[0]
	var cand v1beta2.DynamoGraphDeploymentCandidate
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: best}, &cand); err != nil {
		t.Fatal(err)
	}
	b := cand.Status.Metrics.ErrorBand
	if b == nil || b.TTFTPct == nil || b.TTFTP80Pct == nil || b.ITLPct == nil || b.ITLP80Pct == nil {
		t.Fatalf("the published candidate has no error band: %+v", b)
	}
	ttftBand := fmt.Sprintf("±%.0f%% (4 in 5 within ±%.0f%%)", *b.TTFTPct, *b.TTFTP80Pct)
	itlBand := fmt.Sprintf("±%.0f%% (4 in 5 within ±%.0f%%)", *b.ITLPct, *b.ITLP80Pct)

	code, body := get(t, ts, "/ns/"+f.ns+"/candidates/"+best)
	if code != http.StatusOK {
		t.Fatalf("candidate page: %d\n%s", code, body)
	}
	for _, want := range []string{
		`<th>TTFT</th><td>`, `<td class="band">` + ttftBand + `</td>`,
		`<th>ITL</th><td>`, `<td class="band">` + itlBand + `</td>`,
		`<th>throughput per GPU</th><td>`, `<th>throughput per user</th><td>`, `<th>throughput</th><td>`,
		`<th>requests</th><td>`, `<th>E2E</th><td>`,
		`<td class="band">not measured</td>`, `id="band-basis"`, html.EscapeString(b.Basis),
		// The local recommender's percentiles, and what they are.
		`<th>TTFT p50</th><td>`, `<th>TTFT p90</th><td>`, `<th>TTFT p99</th><td>`, `<th>ITL p90</th><td>`, `<th>E2E p99</th><td>`, `id="percentiles-note"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the candidate page lacks %q", want)
		}
	}

	// Nothing deployed: no ring.
	_, body = get(t, ts, "/ns/"+f.ns+"/runs/"+f.run.Name+"/candidates")
	if strings.Contains(body, `id="deployed"`) {
		t.Error("a deployed candidate is drawn before the request deployed one")
	}
	hover := titleOf(t, body, best)
	for _, want := range []string{"TTFT ", ttftBand, "ITL ", itlBand, "throughput per GPU ", "throughput per user ", "E2E ", "TTFT p99 ", "E2E p90 "} {
		if !strings.Contains(hover, want) {
			t.Errorf("hover text of %s lacks %q:\n%s", best, want, hover)
		}
	}

	// The request deployed the Run's second candidate.
	deployed := f.published[1]
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(f.req), f.req); err != nil {
		t.Fatal(err)
	}
	f.req.Status.Deployment = &v1beta2.DeploymentStatus{Name: "llm-prod", Run: f.run.Name, Candidate: deployed}
	if err := env.Client.Status().Update(ctx, f.req); err != nil {
		t.Fatal(err)
	}
	_, body = get(t, ts, "/ns/"+f.ns+"/runs/"+f.run.Name+"/candidates")
	ring := `<circle id="deployed" class="deployed" `
	if n := strings.Count(body, ring); n != 1 {
		t.Fatalf("%d deployed rings drawn, want 1", n)
	}
	if !strings.Contains(body, fmt.Sprintf(`data-candidate="%s" data-deployment="llm-prod"><title>deployed as llm-prod</title>`, deployed)) {
		t.Error("the ring is not on the deployed candidate")
	}
	if hover := titleOf(t, body, deployed); !strings.Contains(hover, "deployed as llm-prod") {
		t.Errorf("hover text of the deployed candidate:\n%s", hover)
	}
	var v ui.CandidatesView
	getJSON(t, ts, "/api/ns/"+f.ns+"/runs/"+f.run.Name+"/candidates", &v)
	var marked []string
	for _, p := range v.Points.Points {
		if p.Deployed != "" {
			marked = append(marked, p.Published+"="+p.Deployed)
		}
	}
	if want := deployed + "=llm-prod"; len(marked) != 1 || marked[0] != want {
		t.Errorf("deployed points %v, want [%s]", marked, want)
	}
}

// TestCandidatePageShowsCostAndFit: the candidate page states the cost the publisher computed and
// the operator's judgement of whether the cluster's GPU Nodes can hold the candidate.
func TestCandidatePageShowsCostAndFit(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	ts, _ := serve(t, env.Config, f.ns)
	name := f.published[0]
	var cand v1beta2.DynamoGraphDeploymentCandidate
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: name}, &cand); err != nil {
		t.Fatal(err)
	}
	cost := cand.Status.Metrics.Cost
	if cost == nil || cost.PerHour == "" || cost.PerMillionOutputTokens == "" {
		t.Fatalf("the published candidate has no cost: %+v", cost)
	}
	_, body := get(t, ts, "/ns/"+f.ns+"/candidates/"+name)
	wantCost := fmt.Sprintf("Cost: <b>%s %s</b> per hour, %s %s per million output tokens", cost.PerHour, cost.Currency, cost.PerMillionOutputTokens, cost.Currency)
	if !strings.Contains(body, wantCost) {
		t.Errorf("the candidate page lacks %q", wantCost)
	}
	if strings.Contains(body, `id="fits"`) {
		t.Error("the page states a cluster fit the operator has not judged")
	}

	msg := "needs 8 GPUs; the 1 Nodes of h200_sxm have 4 allocatable"
	cand.Status.FitsCluster = &v1beta2.ClusterFit{Fits: new(false), SKU: "h200_sxm", GPUsNeeded: 8, GPUsAvailable: new(int64(4)), Message: msg}
	if err := env.Client.Status().Update(ctx, &cand); err != nil {
		t.Fatal(err)
	}
	_, body = get(t, ts, "/ns/"+f.ns+"/candidates/"+name)
	if want := `<p id="fits" class="warning">Does not fit this cluster: ` + msg + `.</p>`; !strings.Contains(body, want) {
		t.Errorf("the candidate page lacks %q", want)
	}
}
