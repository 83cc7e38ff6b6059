// Package ui is the web view of `dgdrctl ui`: a local HTTP server that shows requests, Runs and
// candidates (with the Pareto front of the search) and promotes a candidate, with the user's own
// kubeconfig credentials: it sees and does exactly what the user may (docs/guide/ui.md).
//
// Every page is rendered on the server (html/template, the plot as SVG); the assets are
// embedded, so the pages work offline.
//
// Every route needs the server's session cookie: the URL dgdrctl ui prints carries a one-time
// secret, which the first request exchanges for an HttpOnly, SameSite=Strict cookie before it is
// redirected to the clean URL; the secret cannot be exchanged again, and anything without the
// cookie gets 401. Requests whose Host header is not the server's own are refused (DNS
// rebinding), and a POST must come from the server's own origin (docs/operate/security.md).
package ui

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/promote"
	"github.com/dgdr-operator/dgdr-operator/internal/resultsview"
)

//go:embed assets
var assets embed.FS

// SecretParam is the query parameter of the one-time secret in the URL dgdrctl ui prints.
const SecretParam = "secret"

// Options configure a Server.
type Options struct {
	// Client reads and writes with the user's credentials; it is never a cache.
	Client client.WithWatch
	// Namespace is the one namespace served; "" serves all namespaces.
	Namespace string
	// CalibrationNamespace is the operator's namespace, where the calibration profile is
	// (the operator configuration's calibration.namespace).
	CalibrationNamespace string
	// MinObservations is the operator configuration's calibration.minObservations: the
	// calibration page marks the corrections searches use.
	MinObservations int32
}

// Server serves the pages, the JSON API and the event stream.
type Server struct {
	c  client.WithWatch
	ns string
	// calibrationNS and minObservations locate and read the calibration profile.
	calibrationNS   string
	minObservations int32
	pages           map[string]*template.Template
	// hosts are the Host header values accepted (set by Allow).
	hosts map[string]bool

	// mu guards secret: the one-time secret of the printed URL, "" once it was exchanged.
	mu     sync.Mutex
	secret string
	// cookie is the name of the session cookie (random, so that two servers on one host do not
	// overwrite each other's cookie: cookies are not kept apart by port) and session its value.
	cookie, session string

	handler http.Handler
	routes  []string
}

// New builds a Server. Call Allow with the listening address before serving.
func New(o Options) (*Server, error) {
	s := &Server{c: o.Client, ns: o.Namespace, calibrationNS: o.CalibrationNamespace, minObservations: o.MinObservations, hosts: map[string]bool{}}
	var id string
	for _, v := range []*string{&s.secret, &s.session, &id} {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return nil, err
		}
		*v = hex.EncodeToString(b)
	}
	s.cookie = "dgdr-ui-" + id[:16]
	var err error
	if s.pages, err = parsePages(); err != nil {
		return nil, err
	}
	s.handler = s.buildHandler()
	return s, nil
}

// LoginURL is u (a URL of this server, e.g. http://127.0.0.1:8080/) with the one-time secret
// added: the URL to print. Its first use exchanges the secret for the session cookie.
func (s *Server) LoginURL(u string) string {
	parsed, err := url.Parse(u)
	if err != nil {
		return u
	}
	q := parsed.Query()
	s.mu.Lock()
	q.Set(SecretParam, s.secret)
	s.mu.Unlock()
	parsed.RawQuery = q.Encode()
	return parsed.String()
}

// Routes are the patterns the server's mux serves ("GET /events", ...), as registered: every
// one of them needs the session cookie.
func (s *Server) Routes() []string { return slices.Clone(s.routes) }

// Allow accepts the Host header values that name the listening address addr (host:port): the
// address itself and, for a loopback address, localhost, 127.0.0.1 and [::1] with its port.
func (s *Server) Allow(addr string) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		s.hosts[addr] = true
		return
	}
	s.hosts[net.JoinHostPort(host, port)] = true
	if isLoopback(host) {
		for _, h := range []string{"localhost", "127.0.0.1", "::1"} {
			s.hosts[net.JoinHostPort(h, port)] = true
		}
	}
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CheckBind refuses a listening address that is not loopback unless the user asked for that
// address explicitly (--address).
func CheckBind(addr string, explicit bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if isLoopback(host) || explicit {
		return nil
	}
	return fmt.Errorf("refusing to listen on %s: not a loopback address (give --address explicitly to serve beyond this machine)", addr)
}

// Handler is the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

func (s *Server) buildHandler() http.Handler {
	mux := http.NewServeMux()
	// handle registers a route and records it in Routes, so a test over Routes covers every
	// route the mux serves.
	handle := func(pattern string, h http.Handler) {
		mux.Handle(pattern, h)
		s.routes = append(s.routes, pattern)
	}
	static, _ := fs.Sub(assets, "assets/static")
	handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	handle("GET /{$}", http.HandlerFunc(s.requestsPage))
	handle("GET /events", http.HandlerFunc(s.events))
	handle("GET /calibration", http.HandlerFunc(s.calibrationPage))
	handle("GET /ns/{ns}/requests/{name}", http.HandlerFunc(s.requestPage))
	handle("GET /ns/{ns}/runs/{run}/candidates", http.HandlerFunc(s.candidatesPage))
	handle("GET /ns/{ns}/runs/{run}/plot.svg", http.HandlerFunc(s.plotSVG))
	handle("GET /ns/{ns}/candidates/{name}", http.HandlerFunc(s.candidatePage))
	handle("POST /ns/{ns}/candidates/{name}/promote", http.HandlerFunc(s.promote))
	handle("GET /api/requests", http.HandlerFunc(s.apiRequests))
	handle("GET /api/ns/{ns}/requests/{name}", http.HandlerFunc(s.apiRequest))
	handle("GET /api/ns/{ns}/requests/{name}/diff", http.HandlerFunc(s.apiDiff))
	handle("GET /api/ns/{ns}/runs/{run}/candidates", http.HandlerFunc(s.apiCandidates))
	handle("POST /api/ns/{ns}/candidates/{name}/promote", http.HandlerFunc(s.promote))
	return s.guard(mux)
}

// guard refuses a Host header that is not the server's (DNS rebinding: a page of another site
// whose name resolves to 127.0.0.1 would otherwise read the user's cluster through this
// server), sets headers that keep the pages out of other sites' frames and scripts, exchanges
// the one-time secret for the session cookie, and refuses every request without that cookie.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hosts[r.Host] {
			http.Error(w, "Host "+r.Host+" is not this server's address: refused (DNS rebinding protection)", http.StatusMisdirectedRequest)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		if r.URL.Query().Has(SecretParam) {
			s.exchange(w, r)
			return
		}
		if !s.authenticated(r) {
			unauthorized(w, "no valid session: open the URL dgdrctl ui printed (its one-time secret gives this browser a session)")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// authenticated reports whether r carries the session cookie.
func (s *Server) authenticated(r *http.Request) bool {
	c, err := r.Cookie(s.cookie)
	return err == nil && subtle.ConstantTimeCompare([]byte(c.Value), []byte(s.session)) == 1
}

// exchange trades the one-time secret of a GET for the session cookie (once: the secret is
// forgotten) and redirects to the same URL without the secret.
func (s *Server) exchange(w http.ResponseWriter, r *http.Request) {
	given := r.URL.Query().Get(SecretParam)
	s.mu.Lock()
	ok := r.Method == http.MethodGet && s.secret != "" && subtle.ConstantTimeCompare([]byte(given), []byte(s.secret)) == 1
	if ok {
		s.secret = ""
	}
	s.mu.Unlock()
	if !ok && !s.authenticated(r) {
		unauthorized(w, "this secret is wrong or was already used: restart dgdrctl ui for a new URL")
		return
	}
	if ok {
		http.SetCookie(w, &http.Cookie{Name: s.cookie, Value: s.session, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	}
	clean := *r.URL
	q := clean.Query()
	q.Del(SecretParam)
	clean.RawQuery = q.Encode()
	target := clean.RequestURI()
	if !strings.HasPrefix(target, "/") || strings.HasPrefix(target, "//") {
		target = "/" // never a redirect to another host
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
}

func unauthorized(w http.ResponseWriter, msg string) {
	http.Error(w, "401 Unauthorized: "+msg, http.StatusUnauthorized)
}

// namespace checks the path's namespace against the one served.
func (s *Server) namespace(r *http.Request) (string, error) {
	ns := r.PathValue("ns")
	if s.ns != "" && ns != s.ns {
		return "", &httpError{http.StatusNotFound, fmt.Sprintf("this server shows namespace %s only (start it with --all-namespaces to see others)", s.ns)}
	}
	return ns, nil
}

type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

// statusOf maps an error to an HTTP status: the API server's own for its errors (403 when the
// user may not read it, 404 when it does not exist).
func statusOf(err error) int {
	var he *httpError
	if errors.As(err, &he) {
		return he.code
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) && st.Status().Code >= 400 {
		return int(st.Status().Code)
	}
	return http.StatusBadGateway
}

// ---- JSON ----

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func jsonError(w http.ResponseWriter, err error) {
	writeJSON(w, statusOf(err), map[string]string{"error": err.Error()})
}

func (s *Server) apiRequests(w http.ResponseWriter, r *http.Request) {
	rows, err := s.requestRows(r.Context())
	if err != nil {
		jsonError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, rows)
}

func (s *Server) apiRequest(w http.ResponseWriter, r *http.Request) {
	v, err := s.requestView(r)
	if err != nil {
		jsonError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) apiDiff(w http.ResponseWriter, r *http.Request) {
	v, err := s.requestView(r)
	if err != nil {
		jsonError(w, err)
		return
	}
	if v.Diff == nil {
		jsonError(w, &httpError{http.StatusBadRequest, "name two Runs of the request: ?a=RUN&b=RUN"})
		return
	}
	writeJSON(w, http.StatusOK, v.Diff)
}

func (s *Server) apiCandidates(w http.ResponseWriter, r *http.Request) {
	v, err := s.candidatesView(r)
	if err != nil {
		jsonError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// ---- views ----

// requestRows lists the requests with the progress of their newest Run.
func (s *Server) requestRows(ctx context.Context) ([]RequestRow, error) {
	rows, err := listRequests(ctx, s.c, s.ns)
	if err != nil {
		return nil, err
	}
	var runs v1beta2.DynamoGraphDeploymentRunList
	var opts []client.ListOption
	if s.ns != "" {
		opts = append(opts, client.InNamespace(s.ns))
	}
	if err := s.c.List(ctx, &runs, opts...); err == nil {
		progress := map[types.NamespacedName]*v1beta2.RunProgress{}
		for i := range runs.Items {
			progress[types.NamespacedName{Namespace: runs.Items[i].Namespace, Name: runs.Items[i].Name}] = runs.Items[i].Status.Progress
		}
		for i := range rows {
			run := cmp.Or(rows[i].ActiveRun, rows[i].LatestRun)
			if p := progress[types.NamespacedName{Namespace: rows[i].Namespace, Name: run}]; p != nil && p.Budget > 0 {
				rows[i].Progress = fmt.Sprintf("%d/%d", p.Settled, p.Budget)
			}
		}
	}
	return rows, nil
}

// RunView is a Run on the request page.
type RunView struct {
	Name          string                         `json:"name"`
	Phase         string                         `json:"phase"`
	Message       string                         `json:"message,omitempty"`
	Created       time.Time                      `json:"created"`
	Generation    int64                          `json:"requestGeneration,omitempty"`
	Progress      v1beta2.RunProgress            `json:"progress"`
	Percent       int                            `json:"percent"`
	BestCandidate string                         `json:"bestCandidate,omitempty"`
	InputHash     string                         `json:"inputHash,omitempty"`
	Input         string                         `json:"input,omitempty"`
	Infeasible    []ReasonCountView              `json:"infeasibleByReason,omitempty"`
	PointsSource  string                         `json:"pointsSource,omitempty"`
	Summary       *v1beta2.RecommendationSummary `json:"recommendation,omitempty"`
}

// ReasonCountView counts the candidates that were not feasible for one reason.
type ReasonCountView struct {
	Reason string `json:"reason"`
	Count  int    `json:"count"`
}

// RequestView is the request page.
type RequestView struct {
	Request  RequestRow `json:"request"`
	Runs     []RunView  `json:"runs"`
	Selected *RunView   `json:"selected,omitempty"`
	// Verification is the measurement of the deployed candidate against its prediction.
	Verification *VerificationView `json:"verification,omitempty"`
	// Research is the re-search schedule and history with ImprovementAvailable.
	Research *ResearchView `json:"research,omitempty"`
	DiffA    string        `json:"diffA,omitempty"`
	DiffB    string        `json:"diffB,omitempty"`
	Diff     []DiffLine    `json:"diff,omitempty"`
}

func runView(run *v1beta2.DynamoGraphDeploymentRun) RunView {
	v := RunView{Name: run.Name, Phase: string(run.Status.Phase), Message: run.Status.Message, Created: run.CreationTimestamp.Time,
		Summary: run.Status.Recommendation}
	if g, ok := run.Labels[v1beta2.LabelRequestGeneration]; ok {
		_, _ = fmt.Sscan(g, &v.Generation)
	}
	if p := run.Status.Progress; p != nil {
		v.Progress = *p
		if p.Budget > 0 {
			v.Percent = int(min(100, p.Settled*100/p.Budget))
		}
	}
	if rec := run.Status.Recommendation; rec != nil {
		v.BestCandidate = rec.BestCandidate
	}
	if ai := run.Status.AISimulate; ai != nil {
		v.InputHash = ai.InputHash
		if ai.Input != nil {
			v.Input = prettyJSON(ai.Input.Raw)
		}
	}
	if v.Phase == "" {
		v.Phase = "Pending"
	}
	return v
}

func (s *Server) requestView(r *http.Request) (*RequestView, error) {
	ns, err := s.namespace(r)
	if err != nil {
		return nil, err
	}
	ctx := r.Context()
	var req v1beta2.DynamoGraphDeploymentRequest
	if err := s.c.Get(ctx, types.NamespacedName{Namespace: ns, Name: r.PathValue("name")}, &req); err != nil {
		return nil, err
	}
	runs, err := resultsview.RequestRuns(ctx, s.c, &req)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	v := &RequestView{Request: requestRow(&req, now), Runs: []RunView{}, Verification: verificationView(&req, now)}
	byName := map[string]*v1beta2.DynamoGraphDeploymentRun{}
	for i := range runs {
		v.Runs = append(v.Runs, runView(&runs[i]))
		byName[runs[i].Name] = &runs[i]
	}
	v.Research = researchView(&req, func(run string) bool { return byName[run] != nil }, now)
	sel := r.URL.Query().Get("run")
	if sel == "" && len(runs) > 0 {
		sel = runs[0].Name
	}
	if run, ok := byName[sel]; ok {
		rv := runView(run)
		cands, err := resultsview.RunCandidates(ctx, s.c, run)
		if err != nil {
			return nil, err
		}
		pts, err := runPoints(ctx, s.c, run, cands)
		if err != nil {
			return nil, err
		}
		rv.PointsSource = pts.Source
		for reason, n := range pts.Infeasible {
			rv.Infeasible = append(rv.Infeasible, ReasonCountView{reason, n})
		}
		slices.SortFunc(rv.Infeasible, func(a, b ReasonCountView) int {
			return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.Reason, b.Reason))
		})
		v.Selected = &rv
	} else if sel != "" && r.URL.Query().Get("run") != "" {
		return nil, &httpError{http.StatusNotFound, fmt.Sprintf("Run %s is not a Run of request %s", sel, req.Name)}
	}
	a, b := r.URL.Query().Get("a"), r.URL.Query().Get("b")
	if a == "" && b == "" && len(runs) >= 2 {
		a, b = runs[1].Name, runs[0].Name
	}
	v.DiffA, v.DiffB = a, b
	if a != "" && b != "" {
		ra, okA := byName[a]
		rb, okB := byName[b]
		if !okA || !okB {
			return nil, &httpError{http.StatusNotFound, "a and b must name Runs of the request"}
		}
		if v.Diff, err = diffJSON(inputOf(ra), inputOf(rb)); err != nil {
			return nil, err
		}
	}
	return v, nil
}

func inputOf(run *v1beta2.DynamoGraphDeploymentRun) []byte {
	if run.Status.AISimulate == nil || run.Status.AISimulate.Input == nil {
		return nil
	}
	return run.Status.AISimulate.Input.Raw
}

// CandidateRow is one line of the ranked table.
type CandidateRow struct {
	Name              string   `json:"name"`
	Rank              int32    `json:"rank"`
	CandidateID       string   `json:"candidateID"`
	Backend           string   `json:"backend"`
	Mode              string   `json:"mode"`
	GPUs              int32    `json:"gpus"`
	ThroughputPerGPU  *float64 `json:"throughputPerGpu,omitempty"`
	ThroughputPerUser *float64 `json:"throughputPerUser,omitempty"`
	TTFTMs            *float64 `json:"ttftMs,omitempty"`
	ITLMs             *float64 `json:"itlMs,omitempty"`
	E2EMs             *float64 `json:"e2eMs,omitempty"`
	// Cost is what the candidate costs at the price its Run recorded (none without pricing).
	Cost *v1beta2.CandidateCost `json:"cost,omitempty"`
	// Provisional marks a candidate published while its search ran (its rank may change).
	Provisional bool `json:"provisional,omitempty"`
	// ParetoRole is why the candidate was chosen from the Pareto front.
	ParetoRole string `json:"paretoRole,omitempty"`
}

// CandidatesView is the candidates page.
type CandidatesView struct {
	Namespace  string           `json:"namespace"`
	Run        string           `json:"run"`
	Request    string           `json:"request"`
	Phase      string           `json:"phase"`
	SLA        *v1beta2.SLASpec `json:"sla,omitempty"`
	Points     *Points          `json:"plot"`
	Candidates []CandidateRow   `json:"candidates"`
	plot       template.HTML
}

func (s *Server) candidatesView(r *http.Request) (*CandidatesView, error) {
	ns, err := s.namespace(r)
	if err != nil {
		return nil, err
	}
	ctx := r.Context()
	var run v1beta2.DynamoGraphDeploymentRun
	if err := s.c.Get(ctx, types.NamespacedName{Namespace: ns, Name: r.PathValue("run")}, &run); err != nil {
		return nil, err
	}
	cands, err := resultsview.RunCandidates(ctx, s.c, &run)
	if err != nil {
		return nil, err
	}
	pts, err := runPoints(ctx, s.c, &run, cands)
	if err != nil {
		return nil, err
	}
	// The deployed candidate is drawn when the user may read the request; the plot stands without.
	var req v1beta2.DynamoGraphDeploymentRequest
	if name := run.Labels[v1beta2.LabelRequestName]; name != "" && s.c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &req) == nil {
		pts.markDeployed(&req, run.Name)
	}
	v := &CandidatesView{Namespace: ns, Run: run.Name, Request: run.Labels[v1beta2.LabelRequestName], Phase: string(run.Status.Phase),
		SLA: run.Spec.SLA, Points: pts, Candidates: []CandidateRow{}}
	for i := range cands {
		c := &cands[i]
		row := CandidateRow{Name: c.Name, Rank: c.Status.Rank, CandidateID: c.Status.CandidateID, Backend: string(c.Spec.Backend),
			Mode: string(c.Spec.Mode), GPUs: c.Spec.GPUs, Provisional: c.Status.Provisional}
		if m := c.Status.Metrics; m != nil {
			row.ThroughputPerGPU, row.ThroughputPerUser, row.TTFTMs, row.ITLMs, row.E2EMs = m.ThroughputPerGPU, m.ThroughputPerUser, m.TTFTMs, m.ITLMs, m.E2EMs
			row.Cost = m.Cost
		}
		row.ParetoRole = string(c.Status.ParetoRole)
		v.Candidates = append(v.Candidates, row)
	}
	v.plot = renderPlot(pts, run.Spec.SLA)
	return v, nil
}

// CandidateView is the candidate page and the promote preview.
type CandidateView struct {
	Namespace string
	Candidate *v1beta2.DynamoGraphDeploymentCandidate
	Run       string
	Request   string
	Name      string
	YAML      string
	RunError  string
	Result    string
	Error     string
	Preview   bool
	Force     bool
	// Verification is set when the candidate is the one its request deployed and verified.
	Verification *VerificationView
}

func (s *Server) candidate(r *http.Request) (*v1beta2.DynamoGraphDeploymentCandidate, error) {
	ns, err := s.namespace(r)
	if err != nil {
		return nil, err
	}
	var cand v1beta2.DynamoGraphDeploymentCandidate
	if err := s.c.Get(r.Context(), types.NamespacedName{Namespace: ns, Name: r.PathValue("name")}, &cand); err != nil {
		return nil, err
	}
	return &cand, nil
}

// renderDGD is what `dgdrctl promote --dry-run` prints: promote.Render without an owner, as YAML.
func renderDGD(cand *v1beta2.DynamoGraphDeploymentCandidate, name string) (string, error) {
	obj, err := promote.Render(cand, name, nil)
	if err != nil {
		return "", err
	}
	data, err := yaml.Marshal(obj.Object)
	return string(data), err
}

func (s *Server) candidateView(r *http.Request, cand *v1beta2.DynamoGraphDeploymentCandidate, name string) *CandidateView {
	v := &CandidateView{Namespace: cand.Namespace, Candidate: cand, Run: cand.Labels[v1beta2.LabelRunName],
		Request: cand.Labels[v1beta2.LabelRequestName], Name: cmp.Or(name, cand.Labels[v1beta2.LabelRequestName], cand.Name)}
	var err error
	if v.YAML, err = renderDGD(cand, v.Name); err != nil {
		v.Error = err.Error()
	}
	if err := promote.CheckRunSucceeded(r.Context(), s.c, cand); err != nil {
		v.RunError = err.Error()
	}
	v.Verification = s.candidateVerification(r.Context(), cand)
	return v
}

// candidateVerification is the verification of cand when its request deployed it; nil otherwise,
// and when the user may not read the request (the page stands without).
func (s *Server) candidateVerification(ctx context.Context, cand *v1beta2.DynamoGraphDeploymentCandidate) *VerificationView {
	name := cand.Labels[v1beta2.LabelRequestName]
	if name == "" {
		return nil
	}
	var req v1beta2.DynamoGraphDeploymentRequest
	if s.c.Get(ctx, types.NamespacedName{Namespace: cand.Namespace, Name: name}, &req) != nil {
		return nil
	}
	st := req.Status.Verification
	if st == nil || st.Candidate != cand.Name || (st.Run != "" && st.Run != cand.Labels[v1beta2.LabelRunName]) {
		return nil
	}
	return verificationView(&req, time.Now())
}

// ---- HTML ----

func (s *Server) render(w http.ResponseWriter, code int, page string, data any) {
	var buf strings.Builder
	if err := s.pages[page].ExecuteTemplate(&buf, "layout", data); err != nil {
		http.Error(w, "rendering "+page+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(buf.String()))
}

func (s *Server) htmlError(w http.ResponseWriter, err error) {
	code := statusOf(err)
	s.render(w, code, "error", map[string]any{"Title": http.StatusText(code), "Code": code, "Message": err.Error()})
}

func (s *Server) requestsPage(w http.ResponseWriter, r *http.Request) {
	rows, err := s.requestRows(r.Context())
	if err != nil {
		s.htmlError(w, err)
		return
	}
	scope := "all namespaces"
	if s.ns != "" {
		scope = "namespace " + s.ns
	}
	s.render(w, http.StatusOK, "requests", map[string]any{"Title": "Requests", "Rows": rows, "Scope": scope})
}

func (s *Server) requestPage(w http.ResponseWriter, r *http.Request) {
	v, err := s.requestView(r)
	if err != nil {
		s.htmlError(w, err)
		return
	}
	s.render(w, http.StatusOK, "request", map[string]any{"Title": v.Request.Name, "V": v})
}

func (s *Server) candidatesPage(w http.ResponseWriter, r *http.Request) {
	v, err := s.candidatesView(r)
	if err != nil {
		s.htmlError(w, err)
		return
	}
	s.render(w, http.StatusOK, "candidates", map[string]any{"Title": "Candidates of " + v.Run, "V": v, "Plot": v.plot})
}

func (s *Server) plotSVG(w http.ResponseWriter, r *http.Request) {
	v, err := s.candidatesView(r)
	if err != nil {
		http.Error(w, err.Error(), statusOf(err))
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	_, _ = w.Write([]byte(v.plot))
}

func (s *Server) candidatePage(w http.ResponseWriter, r *http.Request) {
	cand, err := s.candidate(r)
	if err != nil {
		s.htmlError(w, err)
		return
	}
	v := s.candidateView(r, cand, r.URL.Query().Get("name"))
	s.render(w, http.StatusOK, "candidate", map[string]any{"Title": cand.Name, "V": v})
}

// promote is the promote action of the candidate page (and of the JSON API): with dryRun it
// shows the DynamoGraphDeployment it would create; with confirm=yes it creates it, through the
// same code path as `dgdrctl promote` (promote.Render and promote.Apply, no owner: it only
// ever creates). Like every route it needs the session cookie; being a POST it must also come
// from the server's own origin (checkPost).
func (s *Server) promote(w http.ResponseWriter, r *http.Request) {
	api := strings.HasPrefix(r.URL.Path, "/api/")
	fail := func(err error) {
		if api {
			jsonError(w, err)
		} else {
			s.htmlError(w, err)
		}
	}
	if err := s.checkPost(r); err != nil {
		fail(err)
		return
	}
	cand, err := s.candidate(r)
	if err != nil {
		fail(err)
		return
	}
	name := strings.TrimSpace(r.PostFormValue("name"))
	if name == "" {
		fail(&httpError{http.StatusBadRequest, "name the DynamoGraphDeployment to create"})
		return
	}
	dryRun := r.PostFormValue("dryRun") != ""
	force := r.PostFormValue("force") != ""
	v := s.candidateView(r, cand, name)
	v.Preview, v.Force = true, force
	if v.Error != "" {
		fail(&httpError{http.StatusUnprocessableEntity, v.Error})
		return
	}
	if !dryRun {
		if r.PostFormValue("confirm") != "yes" {
			fail(&httpError{http.StatusBadRequest, "confirm the promotion (confirm=yes), or preview it (dryRun=1)"})
			return
		}
		if v.RunError != "" && !force {
			fail(&httpError{http.StatusConflict, v.RunError + " (force to promote anyway)"})
			return
		}
		obj, err := promote.Render(cand, name, nil)
		if err == nil {
			_, err = promote.Apply(r.Context(), s.c, obj, nil)
		}
		if err != nil {
			var conflict *promote.ConflictError
			switch {
			case errors.As(err, &conflict):
				fail(&httpError{http.StatusConflict, err.Error()})
			case errors.Is(err, promote.ErrCRDMissing):
				fail(&httpError{http.StatusUnprocessableEntity, err.Error()})
			default:
				fail(err)
			}
			return
		}
		v.Result = fmt.Sprintf("dynamographdeployment.nvidia.com/%s created from %s", name, cand.Name)
	}
	if api {
		out := map[string]any{"name": name, "candidate": cand.Name, "dryRun": dryRun, "yaml": v.YAML}
		if v.Result != "" {
			out["result"] = v.Result
		}
		if v.RunError != "" {
			out["runWarning"] = v.RunError
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	s.render(w, http.StatusOK, "candidate", map[string]any{"Title": cand.Name, "V": v})
}

// checkPost refuses a POST that a browser sent from another origin. The session cookie is
// SameSite=Strict, but a site is not an origin: a page served by another port of this host is
// same-site and its requests carry the cookie. A browser names the origin of a POST (Origin;
// "null" under Referrer-Policy no-referrer, which the pages set, and then Sec-Fetch-Site says
// same-origin); a request with neither header comes from a program, not a page.
func (s *Server) checkPost(r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return &httpError{http.StatusBadRequest, err.Error()}
	}
	origin, site := r.Header.Get("Origin"), r.Header.Get("Sec-Fetch-Site")
	if origin != "" && origin != "null" && origin != "http://"+r.Host {
		return &httpError{http.StatusForbidden, "cross-origin request refused: origin " + origin}
	}
	if site != "" && site != "same-origin" {
		return &httpError{http.StatusForbidden, "request from another origin refused (Sec-Fetch-Site: " + site + ")"}
	}
	if origin == "null" && site == "" {
		return &httpError{http.StatusForbidden, "request of an opaque origin refused"}
	}
	return nil
}
