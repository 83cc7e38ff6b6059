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
	"crypto/rand"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"slices"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

//go:embed assets
var assets embed.FS

// Options configure a Server.
type Options struct {
	// Client reads and writes with the user's credentials; it is never a cache.
	Client client.WithWatch
	// Namespace is the one namespace served; "" serves all namespaces.
	Namespace string
	// CalibrationNamespace is the namespace whose calibration profile the calibration page
	// shows (each namespace has its own).
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
