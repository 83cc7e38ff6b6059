//go:build ui

// The browser test of `dgdrctl ui` (docs/guide/ui.md): on the sandbox, after the demo searches
// (examples/demo), headless Chromium (Debian's chromium package, installed here when missing)
// loads the pages served by the real UI server, and the test checks what a person sees: the plot
// has one point per feasible evaluated candidate of the Run's kept artifacts, the Pareto front is
// drawn, and the table lists the published candidates in rank order. Screenshots are saved in
// the test's artifact directory (make test-ui keeps them under .test-output/ui). Run with
// `make test-ui` (DGDR_UI=1, -tags ui). A running sandbox is reused (and left running);
// otherwise TestMain starts one and stops it at the end unless DGDR_UI_KEEP=1.
package ui

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/internal/candidates"
	"github.com/dgdr-operator/dgdr-operator/internal/scheme"
	"github.com/dgdr-operator/dgdr-operator/internal/ui"
	"github.com/dgdr-operator/dgdr-operator/test/sandboxtest"
)

var (
	env      *sandboxtest.Env
	chromium string
)

const searchTimeout = 5 * time.Minute

func TestMain(m *testing.M) {
	if os.Getenv("DGDR_UI") != "1" {
		fmt.Println("ui: skipped (set DGDR_UI=1, or run make test-ui)")
		os.Exit(0)
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if chromium, err = ensureChromium(); err != nil {
		fmt.Fprintln(os.Stderr, "ui:", err)
		return 1
	}
	env, err = sandboxtest.Setup(sandboxtest.Options{Suite: "ui", QPS: 50, Burst: 100})
	if err != nil {
		fmt.Fprintln(os.Stderr, "ui:", err)
		return 1
	}
	return env.Finish(m.Run(), "DGDR_UI_KEEP")
}

// ensureChromium finds Debian's chromium, installing the package when it is missing.
func ensureChromium() (string, error) {
	if p, err := exec.LookPath("chromium"); err == nil {
		return p, nil
	}
	fmt.Println("ui: chromium is missing: apt-get install -y chromium")
	install := func() error {
		cmd := exec.Command("apt-get", "install", "-y", "--no-install-recommends", "chromium")
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		return cmd.Run()
	}
	if err := install(); err != nil {
		update := exec.Command("apt-get", "update")
		update.Stdout, update.Stderr = os.Stdout, os.Stderr
		if err := update.Run(); err != nil {
			return "", fmt.Errorf("apt-get update: %w", err)
		}
		if err := install(); err != nil {
			return "", fmt.Errorf("apt-get install chromium: %w", err)
		}
	}
	return exec.LookPath("chromium")
}

// startUI serves the UI of all namespaces with the sandbox's kubeconfig, as `dgdrctl ui -A` does,
// until the test ends, and returns the URL of path as dgdrctl ui prints it: with the one-time
// secret, which the browser exchanges for its session cookie on the first load. Each browser
// run has a profile of its own, hence a server of its own.
func startUI(t *testing.T, path string) string {
	t.Helper()
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ui.New(ui.Options{Client: c})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Allow(ln.Addr().String())
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return srv.LoginURL("http://" + ln.Addr().String() + path)
}

// browse runs headless Chromium on path: the DOM once the page has loaded, and a screenshot
// saved as name.png in the test's artifact directory.
func browse(t *testing.T, path, name string) *html.Node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	profile := t.TempDir()
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
		"--user-data-dir=" + profile, "--window-size=1280,1600"}
	cmd := exec.CommandContext(ctx, chromium, append(args, "--dump-dom", startUI(t, path))...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom %s: %v\n%s", path, err, stderr.String())
	}
	shot := filepath.Join(t.ArtifactDir(), name+".png")
	cmd = exec.CommandContext(ctx, chromium, append(args, "--screenshot="+shot, startUI(t, path))...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium --screenshot %s: %v\n%s", path, err, out)
	}
	if st, err := os.Stat(shot); err != nil || st.Size() == 0 {
		t.Fatalf("no screenshot %s: %v", shot, err)
	}
	t.Logf("screenshot of %s: %s", path, shot)
	doc, err := html.Parse(bytes.NewReader(dom))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasClass(n *html.Node, class string) bool {
	return slices.Contains(strings.Fields(attr(n, "class")), class)
}

// find returns the nodes under n that match.
func find(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	for d := range n.Descendants() {
		if d.Type == html.ElementNode && match(d) {
			out = append(out, d)
		}
	}
	return out
}

func byID(n *html.Node, id string) *html.Node {
	if found := find(n, func(d *html.Node) bool { return attr(d, "id") == id }); len(found) > 0 {
		return found[0]
	}
	return nil
}

func newNamespace(t *testing.T) string {
	t.Helper()
	return sandboxtest.Namespace(t, env.Client, "ui-demo")
}

// runDemo applies examples/demo (as make demo does) and waits for every search: the Runs.
func runDemo(t *testing.T, ns string) map[string]*v1beta2.DynamoGraphDeploymentRun {
	t.Helper()
	ctx := context.Background()
	files, err := filepath.Glob(filepath.Join(env.Root, "examples", "demo", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("examples/demo: %v %v", files, err)
	}
	var names []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d v1beta2.DynamoGraphDeploymentRequest
		if err := yaml.Unmarshal(data, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		d.Namespace = ns
		if err := env.Client.Create(ctx, &d); err != nil {
			t.Fatalf("creating %s: %v", d.Name, err)
		}
		names = append(names, d.Name)
	}
	runs := map[string]*v1beta2.DynamoGraphDeploymentRun{}
	for _, n := range names {
		var runName string
		sandboxtest.WaitFor(t, searchTimeout, time.Second, "the search of "+n, func(ctx context.Context) (bool, string, error) {
			var d v1beta2.DynamoGraphDeploymentRequest
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: n}, &d); err != nil {
				return false, "", err
			}
			s := d.Status
			if s.ObservedGeneration != d.Generation || s.ActiveRunRef != nil || s.LatestRun == nil || s.LatestRun.Phase == "" {
				return false, fmt.Sprintf("active=%v latest=%+v", s.ActiveRunRef, s.LatestRun), nil
			}
			runName = s.LatestRun.Name
			return true, "", nil
		})
		var run v1beta2.DynamoGraphDeploymentRun
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: runName}, &run); err != nil {
			t.Fatal(err)
		}
		if run.Status.Phase != v1beta2.RunPhaseSucceeded {
			t.Fatalf("Run %s ended %s: %s", run.Name, run.Status.Phase, run.Status.Message)
		}
		runs[n] = &run
	}
	return runs
}

// expectation is what the candidates page must show for a Run, read from the cluster
// independently of the UI: the feasible evaluated candidates of the kept recommendation.json,
// their Pareto front (by definition), and the published candidates by rank.
type expectation struct {
	artifacts bool
	feasible  []string
	front     int
	ranked    []string
	// costs are the ranked candidates' costs per hour as the table prints them ("28.00 USD").
	costs []string
}

func expect(t *testing.T, run *v1beta2.DynamoGraphDeploymentRun) expectation {
	t.Helper()
	ctx := context.Background()
	var e expectation
	var cands v1beta2.DynamoGraphDeploymentCandidateList
	if err := env.Client.List(ctx, &cands, client.InNamespace(run.Namespace), client.MatchingLabels{v1beta2.LabelRunName: run.Name}); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(cands.Items, func(a, b v1beta2.DynamoGraphDeploymentCandidate) int {
		return cmp.Compare(a.Status.Rank, b.Status.Rank)
	})
	for _, c := range cands.Items {
		e.ranked = append(e.ranked, c.Name)
		// The sandbox's example price list covers the demo's GPU system.
		if c.Status.Metrics == nil || c.Status.Metrics.Cost == nil {
			t.Errorf("Candidate %s has no status.metrics.cost", c.Name)
			continue
		}
		e.costs = append(e.costs, c.Status.Metrics.Cost.PerHour+" "+c.Status.Metrics.Cost.Currency)
	}
	if len(e.ranked) == 0 {
		t.Fatalf("Run %s published no candidates", run.Name)
	}
	type pt struct{ gpu, user float64 }
	var pts []pt
	var cm corev1.ConfigMap
	err := env.Client.Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: "dgdr-artifacts-" + string(run.UID)}, &cm)
	switch {
	case apierrors.IsNotFound(err):
		// The reporter of this tree keeps no artifacts: the page falls back to the published
		// candidates and says so.
		t.Logf("Run %s kept no artifacts: expecting the published candidates only", run.Name)
		for _, c := range cands.Items {
			e.feasible = append(e.feasible, c.Status.CandidateID)
			pts = append(pts, pt{*c.Status.Metrics.ThroughputPerGPU, *c.Status.Metrics.ThroughputPerUser})
		}
	case err != nil:
		t.Fatal(err)
	default:
		e.artifacts = true
		zr, err := gzip.NewReader(bytes.NewReader(cm.BinaryData["recommendation.json.gz"]))
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		res, err := output.ParseSweepResult(data)
		if err != nil {
			t.Fatalf("Run %s: kept recommendation.json: %v", run.Name, err)
		}
		for i := range res.Candidates {
			c := &res.Candidates[i]
			if c.Status != output.StatusFeasible {
				continue
			}
			m := candidates.Metrics(c)
			e.feasible = append(e.feasible, c.CandidateID)
			pts = append(pts, pt{*m.ThroughputPerGPU, *m.ThroughputPerUser})
		}
	}
	slices.Sort(e.feasible)
	for _, p := range pts {
		if !slices.ContainsFunc(pts, func(q pt) bool {
			return q.gpu >= p.gpu && q.user >= p.user && (q.gpu > p.gpu || q.user > p.user)
		}) {
			e.front++
		}
	}
	return e
}

func TestDemoInTheBrowser(t *testing.T) {
	ns := newNamespace(t)
	runs := runDemo(t, ns)

	// The requests page lists every demo request.
	doc := browse(t, "/", "requests")
	rows := find(doc, func(n *html.Node) bool { return n.Data == "tr" && attr(n, "data-namespace") == ns })
	if len(rows) != len(runs) {
		t.Errorf("requests page: %d rows of namespace %s, want %d", len(rows), ns, len(runs))
	}

	names := make([]string, 0, len(runs))
	for n := range runs {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		run := runs[name]
		t.Run(name, func(t *testing.T) {
			want := expect(t, run)
			doc := browse(t, "/ns/"+ns+"/runs/"+run.Name+"/candidates", "candidates-"+name)
			plot := byID(doc, "plot")
			if plot == nil {
				t.Fatal("no plot")
			}
			points := find(plot, func(n *html.Node) bool { return hasClass(n, "pt") })
			var ids []string
			for _, p := range points {
				ids = append(ids, attr(p, "data-id"))
			}
			slices.Sort(ids)
			if !slices.Equal(ids, want.feasible) {
				t.Errorf("plot: %d points %v, want one per feasible evaluated candidate: %d %v", len(ids), ids, len(want.feasible), want.feasible)
			}
			front := byID(plot, "front")
			if front == nil || len(strings.Fields(attr(front, "points"))) != want.front {
				t.Errorf("the Pareto front is not drawn with its %d points: %v", want.front, front)
			}
			published := find(plot, func(n *html.Node) bool { return hasClass(n, "pt") && hasClass(n, "published") })
			if len(published) != len(want.ranked) {
				t.Errorf("%d published points highlighted, want %d", len(published), len(want.ranked))
			}
			table := byID(doc, "ranked")
			if table == nil {
				t.Fatal("no ranked table")
			}
			var ranked []string
			for _, tr := range find(table, func(n *html.Node) bool { return n.Data == "tr" && attr(n, "data-candidate") != "" }) {
				ranked = append(ranked, attr(tr, "data-candidate"))
			}
			if !slices.Equal(ranked, want.ranked) {
				t.Errorf("table %v, want the published candidates in rank order %v", ranked, want.ranked)
			}
			var costs []string
			for _, tr := range find(table, func(n *html.Node) bool { return n.Data == "tr" && attr(n, "data-candidate") != "" }) {
				if cells := find(tr, func(n *html.Node) bool { return n.Data == "td" && hasClass(n, "cost") }); len(cells) > 0 {
					costs = append(costs, textOf(cells[0]))
				}
			}
			if !slices.Equal(costs, want.costs) {
				t.Errorf("the table's costs per hour %v, want %v", costs, want.costs)
			}
			src := byID(doc, "source")
			if !want.artifacts && (byID(doc, "note") == nil || attr(src, "data-source") != ui.SourceCandidates) {
				t.Error("without artifacts the page does not say it shows the published candidates only")
			}
			if want.artifacts && attr(src, "data-source") != ui.SourceRecommendation {
				t.Errorf("source %q, want %q", attr(src, "data-source"), ui.SourceRecommendation)
			}
			t.Logf("%s: %d feasible points, %d on the front, %d published (artifacts: %v)", run.Name, len(ids), want.front, len(ranked), want.artifacts)

			// The request page (progress, effective input) and the best candidate's page with its
			// rendered DynamoGraphDeployment.
			doc = browse(t, "/ns/"+ns+"/requests/"+name, "request-"+name)
			if in := byID(doc, "input"); in == nil || !strings.Contains(textOf(in), "\"engine\"") {
				t.Error("the request page does not show the effective input")
			}
			doc = browse(t, "/ns/"+ns+"/candidates/"+want.ranked[0], "candidate-"+name)
			if dgd := byID(doc, "dgd"); dgd == nil || !strings.Contains(textOf(dgd), "kind: DynamoGraphDeployment") {
				t.Error("the candidate page does not show the rendered DynamoGraphDeployment")
			}
			if byID(doc, "preview-form") == nil {
				t.Error("the candidate page has no promote form")
			}
			// Every predicted metric with its error band: the published record's TTFT band, and
			// "not measured" for the metrics the recommender has no band for.
			var best v1beta2.DynamoGraphDeploymentCandidate
			if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: want.ranked[0]}, &best); err != nil {
				t.Fatal(err)
			}
			metrics := byID(doc, "metrics")
			if metrics == nil || !strings.Contains(textOf(metrics), "not measured") {
				t.Error("the candidate page does not list every metric with its band")
			} else if b := best.Status.Metrics.ErrorBand; b != nil && b.TTFTPct != nil && !strings.Contains(textOf(metrics), fmt.Sprintf("±%.0f%%", *b.TTFTPct)) {
				t.Errorf("the candidate page lacks the TTFT band ±%.0f%%: %s", *b.TTFTPct, textOf(metrics))
			}
			// A Pareto Run's candidates span the front, and the table says why each was chosen.
			if run.Spec.Objective != nil && run.Spec.Objective.Target == v1beta2.TargetPareto {
				if role := best.Status.ParetoRole; role != v1beta2.ParetoRoleMaxThroughputPerGPU {
					t.Errorf("rank 1 of the Pareto Run has role %q, want %s", role, v1beta2.ParetoRoleMaxThroughputPerGPU)
				}
				roles := find(table, func(n *html.Node) bool { return hasClass(n, "role") })
				if len(roles) != len(want.ranked) {
					t.Errorf("the ranked table shows %d Pareto roles, want one per candidate (%d)", len(roles), len(want.ranked))
				}
			}
		})
	}
}

func textOf(n *html.Node) string {
	var b strings.Builder
	for d := range n.Descendants() {
		if d.Type == html.TextNode {
			b.WriteString(d.Data)
		}
	}
	return b.String()
}
