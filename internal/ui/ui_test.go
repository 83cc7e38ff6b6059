package ui_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/internal/candidates"
	"github.com/dgdr-operator/dgdr-operator/internal/promote"
	"github.com/dgdr-operator/dgdr-operator/internal/reporter/reportertest"
	"github.com/dgdr-operator/dgdr-operator/internal/scheme"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
	"github.com/dgdr-operator/dgdr-operator/internal/ui"
)

// The fixture's search: an ITL bound the aisim search can miss, so some candidates are
// infeasible (sla_constraint) and the plot draws the bound.
const (
	fixtureITLMs = 5.0
	fixtureInput = "engine: {model: meta-llama/Llama-3.1-8B-Instruct, hardware: h200_sxm, workers: {aggregated: {}, prefill: {}, decode: {}}}\n" +
		"evaluation: {sla: {itl_ms: 5, ttft_ms: 300}}\n" +
		"traffic: {source: {type: synthetic, input_tokens: 1024, output_tokens: 128}, load: {type: concurrency, concurrency: 10}, stop: {requests: 200}}\n" +
		"optimization: {strict_sla: true, target: throughput_per_gpu}\noptimizer: {max_trials: 24}\n"
)

// fixture is a request with one Run whose result the real reporter published from a real aisim
// search, and the Run's kept artifacts.
type fixture struct {
	ns        string
	req       *v1beta2.DynamoGraphDeploymentRequest
	run       *v1beta2.DynamoGraphDeploymentRun
	published []string
	// result is aisim's recommendation.json, read from its output directory.
	result *output.SweepResult
	dir    string
}

func newNamespace(t *testing.T) string {
	t.Helper()
	return testenv.Namespace(t, env.Client, "ui")
}

func newRequest(t *testing.T, ns, name string) *v1beta2.DynamoGraphDeploymentRequest {
	t.Helper()
	req := builders.Request(ns, name).MaxCandidates(3).ITL(fixtureITLMs).Obj()
	if err := env.Client.Create(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	return req
}

// newRun creates Run n of req with the effective input input (JSON) recorded in its status.
func newRun(t *testing.T, req *v1beta2.DynamoGraphDeploymentRequest, n int, input string) *v1beta2.DynamoGraphDeploymentRun {
	t.Helper()
	ctx := context.Background()
	b := builders.Run(req.Namespace, fmt.Sprintf("%s-run-%d", req.Name, n)).From(req, int64(n))
	run := b.Obj()
	if err := env.Client.Create(ctx, run); err != nil {
		t.Fatal(err)
	}
	run.Status = b.Phase(v1beta2.RunPhaseRunning).Input(input).InputHash(fmt.Sprintf("sha256:%064d", n)).
		Completed(metav1.ConditionFalse, v1beta2.ReasonEvaluatingCandidates, "test").Status
	// The price the operator records with the input: costs are computed from it.
	run.Status.Pricing = &v1beta2.RunPricing{System: "h200_sxm", Currency: "USD", PricePerGPUHour: "3.50"}
	if err := env.Client.Status().Update(ctx, run); err != nil {
		t.Fatal(err)
	}
	return run
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	ns := newNamespace(t)
	req := newRequest(t, ns, "llm")
	run := newRun(t, req, 1, `{"engine":{"model":"meta-llama/Llama-3.1-8B-Instruct"},"optimizer":{"max_trials":24}}`)
	req.Status.ActiveRunRef = &v1beta2.RunReference{Name: run.Name}
	if err := env.Client.Status().Update(ctx, req); err != nil {
		t.Fatal(err)
	}
	out, dir, err := reportertest.Publish(ctx, env.Config, aisimBin, t.TempDir(), ns, run.Name, fixtureInput)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Published) < 2 {
		t.Fatalf("published %v", out.Published)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(run), run); err != nil {
		t.Fatal(err)
	}
	res, err := output.ReadSweepResult(filepath.Join(dir, output.RecommendationFile))
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{ns: ns, req: req, run: run, published: out.Published, result: res, dir: dir}
	f.keepArtifacts(t, nil)
	return f
}

// keepArtifacts makes sure the Run has its artifacts ConfigMap as the reporter keeps it
// (docs/design/results.md): the reporter's own when it kept one, else one written here the same way
// (the reporter of this tree may predate artifacts). recommendation replaces the kept
// recommendation.json (nil: aisim's).
func (f *fixture) keepArtifacts(t *testing.T, recommendation []byte) {
	t.Helper()
	ctx := context.Background()
	name := "dgdr-artifacts-" + string(f.run.UID)
	var cm corev1.ConfigMap
	err := env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: name}, &cm)
	if err == nil && recommendation == nil {
		return
	}
	if err == nil {
		if err := env.Client.Delete(ctx, &cm); err != nil {
			t.Fatal(err)
		}
	} else if !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	if recommendation == nil {
		var err error
		if recommendation, err = os.ReadFile(filepath.Join(f.dir, output.RecommendationFile)); err != nil {
			t.Fatal(err)
		}
	}
	events, err := os.ReadFile(filepath.Join(f.dir, output.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	cm = corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name, Labels: map[string]string{v1beta2.LabelRunUID: string(f.run.UID)}, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: v1beta2.GroupVersion.String(), Kind: "DynamoGraphDeploymentRun", Name: f.run.Name, UID: f.run.UID, Controller: ptr.To(true),
		}}},
		BinaryData: map[string][]byte{"recommendation.json.gz": gz(t, recommendation), "execution-events.jsonl.gz": gz(t, events)},
	}
	if err := env.Client.Create(ctx, &cm); err != nil {
		t.Fatal(err)
	}
}

func gz(t *testing.T, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// serve starts the UI for cfg's user on an httptest server and opens its printed URL with
// ts.Client() (which then holds the session cookie).
func serve(t *testing.T, cfg *rest.Config, ns string) (*httptest.Server, *ui.Server) {
	t.Helper()
	ts, srv := serveUnopened(t, cfg, ns)
	// ts.Client() is the user's browser: it opens the printed URL once and keeps the cookie.
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	ts.Client().Jar = jar
	resp, err := ts.Client().Get(srv.LoginURL(ts.URL + "/"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// The requests page itself may be 403 for a user who may not list (TestRestrictedUser).
	if len(jar.Cookies(resp.Request.URL)) != 1 || resp.Request.URL.RawQuery != "" {
		t.Fatalf("opening the printed URL: %d at %s, cookies %v", resp.StatusCode, resp.Request.URL, jar.Cookies(resp.Request.URL))
	}
	return ts, srv
}

// serveUnopened starts the UI for cfg's user on an httptest server; nobody has its session yet.
func serveUnopened(t *testing.T, cfg *rest.Config, ns string) (*httptest.Server, *ui.Server) {
	t.Helper()
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ui.New(ui.Options{Client: c, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	srv.Allow(ts.Listener.Addr().String())
	t.Cleanup(ts.Close)
	return ts, srv
}

func get(t *testing.T, ts *httptest.Server, path string) (int, string) {
	t.Helper()
	resp, err := ts.Client().Get(ts.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

func getJSON(t *testing.T, ts *httptest.Server, path string, v any) {
	t.Helper()
	code, body := get(t, ts, path)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, code, body)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("GET %s: %v\n%s", path, err, body)
	}
}

// feasible returns the IDs of the feasible candidates of a recommendation.json.
func feasible(res *output.SweepResult) []string {
	var ids []string
	for _, c := range res.Candidates {
		if c.Status == output.StatusFeasible {
			ids = append(ids, c.CandidateID)
		}
	}
	slices.Sort(ids)
	return ids
}

// bruteFront is the Pareto front by definition: the points no other point dominates.
func bruteFront(pts []ui.Point) []string {
	var front []string
	for _, p := range pts {
		dominated := false
		for _, q := range pts {
			if q.ThroughputPerGPU >= p.ThroughputPerGPU && q.ThroughputPerUser >= p.ThroughputPerUser &&
				(q.ThroughputPerGPU > p.ThroughputPerGPU || q.ThroughputPerUser > p.ThroughputPerUser) {
				dominated = true
				break
			}
		}
		if !dominated {
			front = append(front, p.ID)
		}
	}
	slices.Sort(front)
	return front
}

var (
	pointRE     = regexp.MustCompile(`<(?:circle|path|rect) [^>]*class="pt[ "][^>]*data-id="([^"]+)"`)
	publishedRE = regexp.MustCompile(`class="pt published[^"]*" data-id="([^"]+)"`)
	rankedRE    = regexp.MustCompile(`<tr data-candidate="([^"]+)" data-rank="(\d+)">`)
)

func TestCandidatesPlotFromArtifacts(t *testing.T) {
	f := newFixture(t)
	ts, _ := serve(t, env.Config, f.ns)
	want := feasible(f.result)
	if len(want) < 3 || len(want) == len(f.result.Candidates) {
		t.Fatalf("the fixture's search should have feasible and infeasible candidates: %d of %d feasible", len(want), len(f.result.Candidates))
	}

	// JSON: one point per feasible evaluated candidate, the front by definition, the published
	// candidates marked with their rank.
	var v ui.CandidatesView
	getJSON(t, ts, "/api/ns/"+f.ns+"/runs/"+f.run.Name+"/candidates", &v)
	if v.Points.Source != ui.SourceRecommendation || v.Points.Evaluated != len(f.result.Candidates) {
		t.Errorf("source %q, evaluated %d; want %q, %d", v.Points.Source, v.Points.Evaluated, ui.SourceRecommendation, len(f.result.Candidates))
	}
	var got []string
	for _, p := range v.Points.Points {
		got = append(got, p.ID)
		if p.Backend == "" || p.Mode == "" || p.Shape == "" {
			t.Errorf("point %s: backend %q mode %q shape %q", p.ID, p.Backend, p.Mode, p.Shape)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("points %v, want the feasible candidates %v", got, want)
	}
	front := slices.Clone(v.Points.Front)
	slices.Sort(front)
	if bf := bruteFront(v.Points.Points); !slices.Equal(front, bf) || len(front) == 0 {
		t.Errorf("front %v, want %v", front, bf)
	}
	var published []string
	for _, p := range v.Points.Points {
		if p.Published != "" {
			published = append(published, p.Published)
		}
	}
	slices.Sort(published)
	if wantPub := slices.Sorted(slices.Values(f.published)); !slices.Equal(published, wantPub) {
		t.Errorf("published points %v, want %v", published, wantPub)
	}
	if v.Points.Infeasible["sla_constraint"] == 0 {
		t.Errorf("infeasible by reason: %v", v.Points.Infeasible)
	}
	// Every point and every ranked candidate costs its GPUs at the Run's price of 3.50 USD.
	perHour := func(gpus int) string { return strconv.FormatFloat(3.5*float64(gpus), 'f', 2, 64) }
	for _, p := range v.Points.Points {
		if p.Cost == nil || p.Cost.Currency != "USD" || p.Cost.PerHour != perHour(p.GPUs) || p.Cost.PerMillionOutputTokens == "" {
			t.Errorf("point %s (%d GPUs): cost %+v, want %s USD per hour and a cost per million tokens", p.ID, p.GPUs, p.Cost, perHour(p.GPUs))
		}
	}
	var ranked []string
	for _, c := range v.Candidates {
		ranked = append(ranked, c.Name)
		if c.Cost == nil || c.Cost.PerHour != perHour(int(c.GPUs)) {
			t.Errorf("ranked candidate %s (%d GPUs): cost %+v, want %s USD per hour", c.Name, c.GPUs, c.Cost, perHour(int(c.GPUs)))
		}
	}
	if !slices.Equal(ranked, f.published) {
		t.Errorf("ranked %v, want %v", ranked, f.published)
	}

	// HTML: the same points in the SVG, the front drawn, the ITL bound, the ranked table.
	code, body := get(t, ts, "/ns/"+f.ns+"/runs/"+f.run.Name+"/candidates")
	if code != http.StatusOK {
		t.Fatalf("candidates page: %d\n%s", code, body)
	}
	var svgIDs []string
	for _, m := range pointRE.FindAllStringSubmatch(body, -1) {
		svgIDs = append(svgIDs, m[1])
	}
	slices.Sort(svgIDs)
	if !slices.Equal(svgIDs, want) {
		t.Errorf("SVG points %v, want %v", svgIDs, want)
	}
	if n := len(publishedRE.FindAllString(body, -1)); n != len(f.published) {
		t.Errorf("%d published points highlighted, want %d", n, len(f.published))
	}
	if !strings.Contains(body, fmt.Sprintf(`<polyline id="front" class="front" data-points="%d"`, len(front))) {
		t.Error("the Pareto front is not drawn")
	}
	if !strings.Contains(body, `<g class="sla">`) || !strings.Contains(body, "ITL ≤ 5 ms") {
		t.Error("the ITL bound is not drawn")
	}
	if !strings.Contains(body, "<title>candidate-") {
		t.Error("points have no hover text")
	}
	if !regexp.MustCompile(`<title>candidate-[^<]*\d+\.\d{2} USD per hour, \d+\.\d{4} USD per million output tokens`).MatchString(body) {
		t.Error("the hover text has no cost")
	}
	if n, want := len(regexp.MustCompile(`<td class="cost">\d+\.\d{2} USD</td><td class="cost">\d+\.\d{4} USD</td>`).FindAllString(body, -1)), len(f.published); n != want {
		t.Errorf("%d ranked rows show their cost, want %d", n, want)
	}
	var rows []string
	for _, m := range rankedRE.FindAllStringSubmatch(body, -1) {
		rows = append(rows, m[1])
	}
	if !slices.Equal(rows, f.published) {
		t.Errorf("table rows %v, want %v", rows, f.published)
	}
	// The SVG alone.
	if code, svg := get(t, ts, "/ns/"+f.ns+"/runs/"+f.run.Name+"/plot.svg"); code != http.StatusOK || !strings.HasPrefix(svg, "<svg") {
		t.Errorf("plot.svg: %d %.80s", code, svg)
	}

	// A cut recommendation.json: the points come from the events ledger, whose
	// candidate_completed lines carry the same feasible records (a cache hit has no line).
	f.keepArtifacts(t, []byte("{\"candidates\": [\n"+candidates.TruncatedMarker+" cut\n"))
	getJSON(t, ts, "/api/ns/"+f.ns+"/runs/"+f.run.Name+"/candidates", &v)
	got = got[:0]
	for _, p := range v.Points.Points {
		got = append(got, p.ID)
	}
	slices.Sort(got)
	wantEvents, recorded := []string{}, 0
	for _, c := range f.result.Candidates {
		if c.Provenance["cache_hit"] == true {
			continue
		}
		recorded++
		if c.Status == output.StatusFeasible {
			wantEvents = append(wantEvents, c.CandidateID)
		}
	}
	slices.Sort(wantEvents)
	if v.Points.Source != ui.SourceEvents || !slices.Equal(got, wantEvents) || v.Points.Note == "" || v.Points.Evaluated != recorded {
		t.Errorf("from the events ledger: source %q note %q evaluated %d points %v, want %d evaluated, %v", v.Points.Source, v.Points.Note,
			v.Points.Evaluated, got, recorded, wantEvents)
	}
}

func TestCandidatesWithoutArtifacts(t *testing.T) {
	f := newFixture(t)
	var cm corev1.ConfigMap
	cm.Namespace, cm.Name = f.ns, "dgdr-artifacts-"+string(f.run.UID)
	if err := env.Client.Delete(context.Background(), &cm); err != nil {
		t.Fatal(err)
	}
	ts, _ := serve(t, env.Config, f.ns)
	var v ui.CandidatesView
	getJSON(t, ts, "/api/ns/"+f.ns+"/runs/"+f.run.Name+"/candidates", &v)
	if v.Points.Source != ui.SourceCandidates || len(v.Points.Points) != len(f.published) {
		t.Errorf("source %q with %d points, want the %d published candidates", v.Points.Source, len(v.Points.Points), len(f.published))
	}
	code, body := get(t, ts, "/ns/"+f.ns+"/runs/"+f.run.Name+"/candidates")
	if code != http.StatusOK || !strings.Contains(body, "kept no search artifacts") {
		t.Errorf("the page does not say the Run kept no artifacts: %d", code)
	}
	if n := len(pointRE.FindAllString(body, -1)); n != len(f.published) {
		t.Errorf("%d points, want %d", n, len(f.published))
	}
}

func TestRequestsAndRunPages(t *testing.T) {
	f := newFixture(t)
	ts, _ := serve(t, env.Config, f.ns)

	var rows []ui.RequestRow
	getJSON(t, ts, "/api/requests", &rows)
	if len(rows) != 1 || rows[0].Name != "llm" || rows[0].Model != "meta-llama/Llama-3.1-8B-Instruct" || rows[0].ActiveRun != f.run.Name || rows[0].Progress == "" {
		t.Errorf("rows %+v", rows)
	}
	code, body := get(t, ts, "/")
	if code != http.StatusOK || !strings.Contains(body, `<tr data-name="llm" data-namespace="`+f.ns+`">`) {
		t.Errorf("requests page: %d\n%s", code, body)
	}

	// A second Run with another effective input: the history and the diff.
	run2 := newRun(t, f.req, 2, `{"engine":{"model":"meta-llama/Llama-3.1-8B-Instruct","backend":"vllm"},"optimizer":{"max_trials":48}}`)
	var v ui.RequestView
	getJSON(t, ts, "/api/ns/"+f.ns+"/requests/llm", &v)
	if len(v.Runs) != 2 || v.Runs[0].Name != run2.Name || v.Runs[1].Name != f.run.Name {
		t.Fatalf("runs %+v", v.Runs)
	}
	getJSON(t, ts, "/api/ns/"+f.ns+"/requests/llm?run="+f.run.Name, &v)
	sel := v.Selected
	if sel == nil || sel.Name != f.run.Name || sel.Progress.Settled != int64(len(f.result.Candidates)) || sel.Progress.Budget == 0 ||
		!strings.Contains(sel.Input, "\n  \"optimizer\": {\n    \"max_trials\": 24\n") {
		t.Fatalf("selected run %+v", sel)
	}
	if len(sel.Infeasible) == 0 || sel.Infeasible[0].Reason != "sla_constraint" {
		t.Errorf("infeasible by reason %+v", sel.Infeasible)
	}
	var diff []ui.DiffLine
	getJSON(t, ts, "/api/ns/"+f.ns+"/requests/llm/diff?a="+f.run.Name+"&b="+run2.Name, &diff)
	wantDiff := []ui.DiffLine{
		{Path: "engine.backend", Op: "added", B: `"vllm"`},
		{Path: "optimizer.max_trials", Op: "changed", A: "24", B: "48"},
	}
	if !slices.Equal(diff, wantDiff) {
		t.Errorf("diff %+v, want %+v", diff, wantDiff)
	}
	code, body = get(t, ts, "/ns/"+f.ns+"/requests/llm?run="+f.run.Name+"&a="+f.run.Name+"&b="+run2.Name)
	if code != http.StatusOK {
		t.Fatalf("request page: %d\n%s", code, body)
	}
	for _, s := range []string{`<pre id="input">`, "&#34;max_trials&#34;: 24", `<table id="diff"`, `<tr class="changed"><td><code>optimizer.max_trials</code></td><td>24</td><td>48</td></tr>`,
		`<th>sla_constraint</th>`, `/ns/` + f.ns + `/runs/` + f.run.Name + `/candidates`} {
		if !strings.Contains(body, s) {
			t.Errorf("request page lacks %q", s)
		}
	}
	// A Run of another request is not shown as this request's.
	other := newRequest(t, f.ns, "other")
	otherRun := newRun(t, other, 1, `{}`)
	if code, _ := get(t, ts, "/api/ns/"+f.ns+"/requests/llm?run="+otherRun.Name); code != http.StatusNotFound {
		t.Errorf("a Run of another request: %d", code)
	}
	// Another namespace is not served by a server of one namespace.
	if code, _ := get(t, ts, "/api/ns/default/requests/llm"); code != http.StatusNotFound {
		t.Errorf("another namespace: %d", code)
	}
	if code, _ := get(t, ts, "/api/ns/"+f.ns+"/requests/missing"); code != http.StatusNotFound {
		t.Errorf("a missing request: %d", code)
	}
}

func TestEventsFollowWatches(t *testing.T) {
	ns := newNamespace(t)
	ts, _ := serve(t, env.Config, ns)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+"/events", nil)
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		t.Fatalf("%d %s", resp.StatusCode, ct)
	}
	events := make(chan [2]string, 64)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		var name string
		var data []string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				data = append(data, strings.TrimPrefix(line, "data: "))
			case line == "" && name != "":
				events <- [2]string{name, strings.Join(data, "\n")}
				name, data = "", nil
			}
		}
		close(events)
	}()
	// A request created after the stream opened arrives as rendered rows and as a change.
	time.Sleep(200 * time.Millisecond)
	req1 := newRequest(t, ns, "live")
	sawRows, sawChange := false, false
	for !sawRows || !sawChange {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("stream ended")
			}
			if ev[0] == "requests" && strings.Contains(ev[1], `data-name="live"`) {
				sawRows = true
			}
			if ev[0] == "changed" && slices.Contains(strings.Split(ev[1], "\n"), ns+"/live") {
				sawChange = true
			}
		case <-ctx.Done():
			t.Fatalf("no event for the new request (rows %v, change %v)", sawRows, sawChange)
		}
	}
	// A Run's progress is a change of its request.
	run := newRun(t, req1, 1, `{}`)
	req1.Status.ActiveRunRef = &v1beta2.RunReference{Name: run.Name}
	if err := env.Client.Status().Update(ctx, req1); err != nil {
		t.Fatal(err)
	}
	run.Status.Progress = &v1beta2.RunProgress{Budget: 10, Settled: 3}
	if err := env.Client.Status().Update(ctx, run); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case ev := <-events:
			if ev[0] == "requests" && strings.Contains(ev[1], "3/10") {
				return
			}
		case <-ctx.Done():
			t.Fatal("no event for the Run's progress")
		}
	}
}

func TestPromoteSameCodePathAsDgdrctl(t *testing.T) {
	f := newFixture(t)
	ts, _ := serve(t, env.Config, f.ns)
	best := f.published[0]
	post := func(path string, form url.Values, hdr map[string]string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, ts.URL+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	api := "/api/ns/" + f.ns + "/candidates/" + best + "/promote"
	page := "/ns/" + f.ns + "/candidates/" + best + "/promote"

	// The candidate page shows the rendered object; its forms carry no token (the session
	// cookie and the origin checks protect the POST).
	code, body := get(t, ts, "/ns/"+f.ns+"/candidates/"+best)
	if code != http.StatusOK || strings.Contains(body, `name="token"`) || !strings.Contains(body, "kind: DynamoGraphDeployment") {
		t.Fatalf("candidate page: %d\n%s", code, body)
	}
	// Without the session, or from another origin (a page of another port of this host is
	// same-site: its requests carry the cookie): refused.
	noSession, _ := http.NewRequest(http.MethodPost, ts.URL+api, strings.NewReader(url.Values{"name": {"llm-prod"}, "dryRun": {"1"}}.Encode()))
	noSession.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if resp, err := http.DefaultClient.Do(noSession); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("without the session: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	for name, hdr := range map[string]map[string]string{
		"another origin":           {"Origin": "http://evil.example"},
		"another port of the host": {"Origin": "http://127.0.0.1:1", "Sec-Fetch-Site": "same-site"},
		"same-site, no origin":     {"Sec-Fetch-Site": "same-site"},
		"opaque origin":            {"Origin": "null"},
	} {
		if code, _ := post(page, url.Values{"name": {"llm-prod"}, "dryRun": {"1"}}, hdr); code != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", name, code)
		}
	}

	// The dry run is promote.Render with no owner, as `dgdrctl promote --dry-run` prints it.
	var cand v1beta2.DynamoGraphDeploymentCandidate
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: best}, &cand); err != nil {
		t.Fatal(err)
	}
	obj, err := promote.Render(&cand, "llm-prod", nil)
	if err != nil {
		t.Fatal(err)
	}
	wantYAML, _ := yaml.Marshal(obj.Object)
	var dry map[string]any
	code, body = post(api, url.Values{"name": {"llm-prod"}, "dryRun": {"1"}}, nil)
	if code != http.StatusOK || json.Unmarshal([]byte(body), &dry) != nil || dry["yaml"] != string(wantYAML) {
		t.Fatalf("dry run: %d\n%s", code, body)
	}
	code, body = post(page, url.Values{"name": {"llm-prod"}, "dryRun": {"1"}}, map[string]string{"Origin": ts.URL})
	if code != http.StatusOK || !strings.Contains(body, `id="confirm-form"`) || !strings.Contains(body, "Preview (dry run)") {
		t.Fatalf("preview page: %d\n%s", code, body)
	}
	dgd := &unstructured.Unstructured{}
	dgd.SetGroupVersionKind(schema.GroupVersionKind{Group: "nvidia.com", Version: "v1beta1", Kind: "DynamoGraphDeployment"})
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "llm-prod"}, dgd); !apierrors.IsNotFound(err) {
		t.Fatalf("the dry run created the object: %v", err)
	}

	// Without confirmation nothing is created; the Run has not succeeded: refused unless forced.
	if code, _ := post(page, url.Values{"name": {"llm-prod"}}, map[string]string{"Origin": "null", "Sec-Fetch-Site": "same-origin"}); code != http.StatusBadRequest {
		t.Errorf("unconfirmed: %d", code)
	}
	confirm := url.Values{"name": {"llm-prod"}, "confirm": {"yes"}}
	if code, body := post(page, confirm, nil); code != http.StatusConflict || !strings.Contains(body, "has not completed") {
		t.Errorf("a running Run: %d %s", code, body)
	}
	reportertest.SetRunState(t, env.Client, f.run, v1beta2.RunPhaseSucceeded, metav1.ConditionTrue, v1beta2.ReasonSucceeded)
	code, body = post(page, confirm, map[string]string{"Origin": ts.URL})
	if code != http.StatusOK || !strings.Contains(body, "dynamographdeployment.nvidia.com/llm-prod created from "+best) {
		t.Fatalf("promote: %d\n%s", code, body)
	}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "llm-prod"}, dgd); err != nil {
		t.Fatal(err)
	}
	if dgd.GetAnnotations()[promote.AnnotationPromotedFrom] != best || dgd.GetAnnotations()[promote.AnnotationAppliedBy] != "" {
		t.Errorf("annotations %v", dgd.GetAnnotations())
	}
	// Never modifies an existing deployment (no owner: create only).
	if code, body := post(page, confirm, nil); code != http.StatusConflict || !strings.Contains(body, "already exists") {
		t.Errorf("second promotion: %d %s", code, body)
	}
	// force promotes a candidate of a Run that did not succeed.
	reportertest.SetRunState(t, env.Client, f.run, v1beta2.RunPhaseCancelled, metav1.ConditionTrue, v1beta2.ReasonCancelled)
	forced := url.Values{"name": {"llm-canary"}, "confirm": {"yes"}, "force": {"1"}}
	if code, body := post("/api/ns/"+f.ns+"/candidates/"+f.published[1]+"/promote", forced, nil); code != http.StatusOK {
		t.Errorf("force: %d %s", code, body)
	}
}

func TestHostHeaderAndBind(t *testing.T) {
	ns := newNamespace(t)
	ts, _ := serve(t, env.Config, ns)
	req, _ := http.NewRequest(http.MethodGet, ts.URL+"/api/requests", nil)
	req.Host = "rebind.example:" + ts.URL[strings.LastIndex(ts.URL, ":")+1:]
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("a foreign Host header: %d", resp.StatusCode)
	}
	// The cookie jar looks cookies up by the Host header: the browser that opened the URL at
	// 127.0.0.1 brings its cookie to localhost only by hand here.
	req, _ = http.NewRequest(http.MethodGet, ts.URL+"/api/requests", nil)
	req.Host = "localhost:" + ts.URL[strings.LastIndex(ts.URL, ":")+1:]
	u, _ := url.Parse(ts.URL)
	for _, c := range ts.Client().Jar.Cookies(u) {
		req.AddCookie(c)
	}
	resp, err = (&http.Client{}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Security-Policy") == "" || resp.Header.Get("X-Frame-Options") != "DENY" {
		t.Errorf("localhost: %d %v", resp.StatusCode, resp.Header)
	}
	for _, c := range []struct {
		addr     string
		explicit bool
		ok       bool
	}{
		{"127.0.0.1:0", false, true},
		{"[::1]:8080", false, true},
		{"localhost:0", false, true},
		{"0.0.0.0:0", false, false},
		{"192.0.2.10:80", false, false},
		{"0.0.0.0:0", true, true},
	} {
		if err := ui.CheckBind(c.addr, c.explicit); (err == nil) != c.ok {
			t.Errorf("CheckBind(%s, %v) = %v", c.addr, c.explicit, err)
		}
	}
}

// TestRestrictedUser: a user who may read requests, Runs and candidates in one namespace only
// (and no ConfigMaps) sees that namespace, and nothing of another, through the server.
func TestRestrictedUser(t *testing.T) {
	f := newFixture(t)
	secretNS := newNamespace(t)
	newRequest(t, secretNS, "secret-request")
	ctx := context.Background()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "ui-reader"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{"nvidia.com"}, Resources: []string{"dynamographdeploymentrequests", "dynamographdeploymentruns", "dynamographdeploymentcandidates"},
		Verbs: []string{"get", "list", "watch"},
	}}}
	if err := env.Client.Create(ctx, role); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "ui-reader"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "ui-reader"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}}); err != nil {
		t.Fatal(err)
	}
	alice, err := env.Env.ControlPlane.AddUser(envtest.User{Name: "alice"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := alice.Config()

	// Her namespace: the pages work; the plot falls back to the published candidates, since she
	// may not read the artifacts ConfigMap, and says so.
	own, _ := serve(t, cfg, f.ns)
	var rows []ui.RequestRow
	getJSON(t, own, "/api/requests", &rows)
	if len(rows) != 1 || rows[0].Name != "llm" {
		t.Errorf("rows %+v", rows)
	}
	var v ui.CandidatesView
	getJSON(t, own, "/api/ns/"+f.ns+"/runs/"+f.run.Name+"/candidates", &v)
	if v.Points.Source != ui.SourceCandidates || !strings.Contains(v.Points.Note, "may not read") || len(v.Candidates) != len(f.published) {
		t.Errorf("source %q note %q candidates %d", v.Points.Source, v.Points.Note, len(v.Candidates))
	}
	// Promoting needs create on DynamoGraphDeployments, which she lacks: the API server refuses.
	reportertest.SetRunState(t, env.Client, f.run, v1beta2.RunPhaseSucceeded, metav1.ConditionTrue, v1beta2.ReasonSucceeded)
	form := url.Values{"name": {"alice-dgd"}, "confirm": {"yes"}}
	resp, err := own.Client().PostForm(own.URL+"/api/ns/"+f.ns+"/candidates/"+f.published[0]+"/promote", form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("promote without create permission: %d", resp.StatusCode)
	}

	// The other namespace, and all namespaces: forbidden, and nothing of it is shown.
	other, _ := serve(t, cfg, secretNS)
	all, _ := serve(t, cfg, "")
	for _, c := range []struct {
		ts   *httptest.Server
		path string
	}{
		{other, "/"}, {other, "/api/requests"}, {other, "/api/ns/" + secretNS + "/requests/secret-request"},
		{other, "/ns/" + secretNS + "/requests/secret-request"}, {other, "/events"},
		{all, "/"}, {all, "/api/requests"}, {all, "/events"},
	} {
		code, body := get(t, c.ts, c.path)
		if code != http.StatusForbidden {
			t.Errorf("GET %s: %d, want 403", c.path, code)
		}
		if strings.Contains(body, "secret-request") && !strings.Contains(c.path, "secret-request") {
			t.Errorf("GET %s shows the other namespace's request:\n%s", c.path, body)
		}
	}
}
