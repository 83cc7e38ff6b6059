// Package ui is the web view of `dgdrctl ui`: a local HTTP server that shows requests, Runs and
// candidates (with the Pareto front of the search) and promotes a candidate, with the user's own
// kubeconfig credentials: it sees and does exactly what the user may (docs/ui.md).
//
// Every page is rendered on the server (html/template, the plot as SVG); the assets are
// embedded, so the pages work offline. Requests whose Host header is not the server's own are
// refused (DNS rebinding), and the promote POST needs the server's per-process token.
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
	"slices"
	"strings"
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

// TokenHeader carries the server's token on a promote request made by a script (the pages send
// it as the form field "token").
const TokenHeader = "X-DGDR-UI-Token"

// Options configure a Server.
type Options struct {
	// Client reads and writes with the user's credentials; it is never a cache.
	Client client.WithWatch
	// Namespace is the one namespace served; "" serves all namespaces.
	Namespace string
	// Token authorizes the promote POST; New generates one when empty.
	Token string
}

// Server serves the pages, the JSON API and the event stream.
type Server struct {
	c     client.WithWatch
	ns    string
	token string
	pages map[string]*template.Template
	// hosts are the Host header values accepted (set by Allow).
	hosts map[string]bool
}

// New builds a Server. Call Allow with the listening address before serving.
func New(o Options) (*Server, error) {
	s := &Server{c: o.Client, ns: o.Namespace, token: o.Token, hosts: map[string]bool{}}
	if s.token == "" {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return nil, err
		}
		s.token = hex.EncodeToString(b)
	}
	var err error
	if s.pages, err = parsePages(); err != nil {
		return nil, err
	}
	return s, nil
}

// Token is the server's promote token.
func (s *Server) Token() string { return s.token }

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
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets/static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /{$}", s.requestsPage)
	mux.HandleFunc("GET /events", s.events)
	mux.HandleFunc("GET /ns/{ns}/requests/{name}", s.requestPage)
	mux.HandleFunc("GET /ns/{ns}/runs/{run}/candidates", s.candidatesPage)
	mux.HandleFunc("GET /ns/{ns}/runs/{run}/plot.svg", s.plotSVG)
	mux.HandleFunc("GET /ns/{ns}/candidates/{name}", s.candidatePage)
	mux.HandleFunc("POST /ns/{ns}/candidates/{name}/promote", s.promote)
	mux.HandleFunc("GET /api/requests", s.apiRequests)
	mux.HandleFunc("GET /api/ns/{ns}/requests/{name}", s.apiRequest)
	mux.HandleFunc("GET /api/ns/{ns}/requests/{name}/diff", s.apiDiff)
	mux.HandleFunc("GET /api/ns/{ns}/runs/{run}/candidates", s.apiCandidates)
	mux.HandleFunc("POST /api/ns/{ns}/candidates/{name}/promote", s.promote)
	return s.guard(mux)
}

// guard refuses a Host header that is not the server's (DNS rebinding: a page of another site
// whose name resolves to 127.0.0.1 would otherwise read the user's cluster through this
// server) and sets headers that keep the pages out of other sites' frames and scripts.
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
		next.ServeHTTP(w, r)
	})
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
	DiffA    string     `json:"diffA,omitempty"`
	DiffB    string     `json:"diffB,omitempty"`
	Diff     []DiffLine `json:"diff,omitempty"`
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
	v := &RequestView{Request: requestRow(&req, time.Now()), Runs: []RunView{}}
	byName := map[string]*v1beta2.DynamoGraphDeploymentRun{}
	for i := range runs {
		v.Runs = append(v.Runs, runView(&runs[i]))
		byName[runs[i].Name] = &runs[i]
	}
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
	// Provisional marks a candidate published while its search ran (its rank may change).
	Provisional bool `json:"provisional,omitempty"`
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
	v := &CandidatesView{Namespace: ns, Run: run.Name, Request: run.Labels[v1beta2.LabelRequestName], Phase: string(run.Status.Phase),
		SLA: run.Spec.SLA, Points: pts, Candidates: []CandidateRow{}}
	for i := range cands {
		c := &cands[i]
		row := CandidateRow{Name: c.Name, Rank: c.Status.Rank, CandidateID: c.Status.CandidateID, Backend: string(c.Spec.Backend),
			Mode: string(c.Spec.Mode), GPUs: c.Spec.GPUs, Provisional: c.Status.Provisional}
		if m := c.Status.Metrics; m != nil {
			row.ThroughputPerGPU, row.ThroughputPerUser, row.TTFTMs, row.ITLMs, row.E2EMs = m.ThroughputPerGPU, m.ThroughputPerUser, m.TTFTMs, m.ITLMs, m.E2EMs
		}
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
	Token     string
	RunError  string
	Result    string
	Error     string
	Preview   bool
	Force     bool
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
		Request: cand.Labels[v1beta2.LabelRequestName], Name: cmp.Or(name, cand.Labels[v1beta2.LabelRequestName], cand.Name), Token: s.token}
	var err error
	if v.YAML, err = renderDGD(cand, v.Name); err != nil {
		v.Error = err.Error()
	}
	if err := promote.CheckRunSucceeded(r.Context(), s.c, cand); err != nil {
		v.RunError = err.Error()
	}
	return v
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
// ever creates). It needs the server's token and, from a browser, a same-origin request.
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

// checkPost requires the server's token and refuses a cross-site browser request.
func (s *Server) checkPost(r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return &httpError{http.StatusBadRequest, err.Error()}
	}
	tok := r.Header.Get(TokenHeader)
	if tok == "" {
		tok = r.PostFormValue("token")
	}
	if subtle.ConstantTimeCompare([]byte(tok), []byte(s.token)) != 1 {
		return &httpError{http.StatusForbidden, "missing or wrong token: promote from the page this server served"}
	}
	if o := r.Header.Get("Origin"); o != "" && o != "null" && o != "http://"+r.Host {
		return &httpError{http.StatusForbidden, "cross-origin request refused"}
	}
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return &httpError{http.StatusForbidden, "cross-site request refused"}
	}
	return nil
}
