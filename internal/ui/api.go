package ui

import (
	"encoding/json"
	"net/http"
)

// The JSON API: the views of views.go as JSON.

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
