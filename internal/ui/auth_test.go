package ui_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dgdr-operator/dgdr-operator/internal/ui"
)

// routeURL turns a route pattern of the server ("GET /ns/{ns}/runs/{run}/candidates") into a
// request of the fixture: its method and a path naming the fixture's objects.
func routeURL(t *testing.T, f *fixture, run2, pattern string) (method, path string) {
	t.Helper()
	method, path, ok := strings.Cut(pattern, " ")
	if !ok {
		t.Fatalf("route %q has no method: every route must name one", pattern)
	}
	path = strings.NewReplacer(
		"{ns}", f.ns,
		"requests/{name}", "requests/"+f.req.Name,
		"candidates/{name}", "candidates/"+f.published[0],
		"{run}", f.run.Name,
		"{$}", "",
	).Replace(path)
	if strings.HasSuffix(path, "/static/") {
		path += "style.css"
	}
	if strings.Contains(path, "{") {
		t.Fatalf("route %q: no fixture value for %s", pattern, path)
	}
	// Two Runs to compare, for the diff routes (the others ignore it).
	return method, path + "?a=" + f.run.Name + "&b=" + run2
}

// status sends one request of the route with client and returns its status (an event stream is
// closed after its headers).
func status(t *testing.T, client *http.Client, base, method, path string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader(url.Values{"name": {"llm-prod"}, "dryRun": {"1"}}.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", base)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	return resp.StatusCode
}

// TestEveryRouteNeedsTheSession walks the routes the server's mux registered (ui.Server.Routes,
// recorded at registration, so a new route cannot be missed): without the session cookie each
// answers 401, with a cookie of the right name and a wrong value 401, after the exchange of the
// printed URL's secret 200. The secret is then spent: a second exchange, from another client,
// gets 401, as does a wrong secret.
func TestEveryRouteNeedsTheSession(t *testing.T) {
	f := newFixture(t)
	run2 := newRun(t, f.req, 2, `{"engine":{"model":"meta-llama/Llama-3.1-8B-Instruct","backend":"vllm"}}`)
	ts, srv := serveUnopened(t, env.Config, f.ns)
	routes := srv.Routes()
	if len(routes) < 13 {
		t.Fatalf("only %d routes: %v", len(routes), routes)
	}

	stranger := &http.Client{}
	wrongJar, _ := cookiejar.New(nil)
	wrongCookie := &http.Client{Jar: wrongJar}
	browserJar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: browserJar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	// The exchange: 303 to the clean URL with an HttpOnly, SameSite=Strict session cookie.
	login := srv.LoginURL(ts.URL + "/api/requests?x=1")
	resp, err := browser.Get(login)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cookies := resp.Cookies()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/api/requests?x=1" || len(cookies) != 1 {
		t.Fatalf("exchange: %d, Location %q, cookies %v", resp.StatusCode, resp.Header.Get("Location"), cookies)
	}
	ck := cookies[0]
	got := map[string]any{"httpOnly": ck.HttpOnly, "sameSite": ck.SameSite, "path": ck.Path, "persistent": ck.MaxAge != 0 || !ck.Expires.IsZero()}
	want := map[string]any{"httpOnly": true, "sameSite": http.SameSiteStrictMode, "path": "/", "persistent": false}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("session cookie (-want +got):\n%s", diff)
	}
	u, _ := url.Parse(ts.URL)
	wrongJar.SetCookies(u, []*http.Cookie{{Name: ck.Name, Value: strings.Repeat("0", len(ck.Value)), Path: "/"}})

	for _, pattern := range routes {
		t.Run(pattern, func(t *testing.T) {
			method, path := routeURL(t, f, run2.Name, pattern)
			got := map[string]int{
				"no cookie":    status(t, stranger, ts.URL, method, path),
				"wrong cookie": status(t, wrongCookie, ts.URL, method, path),
				"session":      status(t, browser, ts.URL, method, path),
			}
			want := map[string]int{"no cookie": http.StatusUnauthorized, "wrong cookie": http.StatusUnauthorized, "session": http.StatusOK}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s %s (-want +got):\n%s", method, path, diff)
			}
		})
	}

	// The secret is spent: a second exchange (another client) and a wrong secret get 401 on
	// every route, and no cookie.
	for name, u := range map[string]string{"reused secret": login, "wrong secret": ts.URL + "/?" + ui.SecretParam + "=" + strings.Repeat("ab", 32)} {
		resp, err := stranger.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
			t.Errorf("%s: %d, cookies %v; want 401 and none", name, resp.StatusCode, resp.Cookies())
		}
	}
	// The browser that holds the session and opens the printed URL again is just sent to the
	// clean URL (no new cookie).
	resp, err = browser.Get(login)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 0 {
		t.Errorf("reopening the URL with the session: %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
}
