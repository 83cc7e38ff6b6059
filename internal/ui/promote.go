package ui

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/dgdr-operator/dgdr-operator/internal/promote"
)

// Promoting a candidate from the candidate page or the JSON API.

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
