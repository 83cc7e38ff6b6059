package ui

import (
	"html/template"
	"net/http"
	"strings"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/resultsview"
)

// pageNames are the page templates under assets/, each rendered inside layout.html; any of them
// may use the blocks of verification.html and research.html.
var pageNames = []string{"requests", "request", "candidates", "candidate", "calibration", "error"}

var funcs = template.FuncMap{
	// num formats an optional metric.
	"num": func(v *float64) string {
		if v == nil {
			return "–"
		}
		return fmtNum(*v)
	},
	// metrics lists a candidate's predicted metrics, each with its error band.
	"metrics": resultsview.Metrics,
	// value formats a metric's value with its unit, band says its expected error.
	"value": func(m resultsview.Metric) string { return metricText(resultsview.Metric{Value: m.Value, Unit: m.Unit}) },
	// fits says whether the operator judged that the cluster's GPU Nodes can hold a candidate.
	"fits": func(f *v1beta2.ClusterFit) bool { return f != nil && f.Fits != nil && *f.Fits },
	"band": func(b *resultsview.Band) string {
		if b == nil {
			return "not measured"
		}
		return bandText(b)
	},
}

func parsePages() (map[string]*template.Template, error) {
	pages := map[string]*template.Template{}
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(funcs).ParseFS(assets, "assets/layout.html", "assets/verification.html", "assets/research.html", "assets/"+name+".html")
		if err != nil {
			return nil, err
		}
		pages[name] = t
	}
	return pages, nil
}

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
