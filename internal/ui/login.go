package ui

import (
	"crypto/subtle"
	"net/http"
	"net/url"
	"strings"
)

// The session: the one-time secret of the printed URL is exchanged for the session cookie
// (guard runs the exchange and checks the cookie on every route).

// SecretParam is the query parameter of the one-time secret in the URL dgdrctl ui prints.
const SecretParam = "secret"

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
