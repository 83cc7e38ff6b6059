package webhook_test

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/dgdr-operator/dgdr-operator/internal/config"
	"github.com/dgdr-operator/dgdr-operator/internal/webhook"
)

// echo answers 200 with the body it read, and counts its calls.
type echo struct{ calls atomic.Int32 }

func (e *echo) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.calls.Add(1)
	b, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	_, _ = fmt.Fprintf(w, "%d:%s", r.ContentLength, b)
}

// countingReader is an endless body that counts the bytes taken from it.
type countingReader struct{ n int64 }

func (c *countingReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	c.n += int64(len(p))
	return len(p), nil
}

// TestLimitBody: a body within the limit reaches the handler unchanged; a larger one is
// answered 413 and the handler never runs, after at most limit+1 bytes were taken from the
// client (none when the declared length is already too large).
func TestLimitBody(t *testing.T) {
	const limit = 1024
	cases := []struct {
		name     string
		body     string // "" : an endless body
		length   int64  // declared Content-Length (-1: unknown, chunked)
		wantCode int
		wantSeen string // what the handler saw ("" : not called)
		maxRead  int64  // the most bytes that may be taken from an endless body
	}{
		{name: "small body passes unchanged", body: "hello", length: 5, wantCode: http.StatusOK, wantSeen: "5:hello"},
		{name: "small chunked body passes", body: "hello", length: -1, wantCode: http.StatusOK, wantSeen: "5:hello"},
		{name: "body of exactly the limit passes", body: strings.Repeat("a", limit), length: limit, wantCode: http.StatusOK,
			wantSeen: fmt.Sprintf("%d:%s", limit, strings.Repeat("a", limit))},
		{name: "declared too large: refused unread", length: 600 << 20, wantCode: http.StatusRequestEntityTooLarge, maxRead: 0},
		{name: "chunked, endless: refused after limit+1 bytes", length: -1, wantCode: http.StatusRequestEntityTooLarge, maxRead: limit + 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			next := &echo{}
			endless := &countingReader{}
			var body io.Reader = endless
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			r := httptest.NewRequest(http.MethodPost, "/convert", body)
			r.ContentLength = tc.length
			w := httptest.NewRecorder()
			webhook.Limit(next, webhook.Limits{MaxBodyBytes: limit}).ServeHTTP(w, r)
			seen := ""
			if next.calls.Load() > 0 {
				seen = w.Body.String()
			}
			if diff := cmp.Diff(map[string]any{"code": tc.wantCode, "seen": tc.wantSeen},
				map[string]any{"code": w.Code, "seen": seen}); diff != "" {
				t.Errorf("(-want +got):\n%s\nresponse: %s", diff, w.Body)
			}
			if tc.body == "" && endless.n > tc.maxRead {
				t.Errorf("took %d bytes of an endless body, want at most %d", endless.n, tc.maxRead)
			}
		})
	}
}

// newTLSServer serves h over TLS with HTTP/1.1 and HTTP/2, as controller-runtime's webhook
// server does.
func newTLSServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// TestLimitReadTimeout trickles a body one byte every 100 ms, over HTTP/1.1 and HTTP/2: the
// handler must answer 408 once the read timeout has passed, long before the body would end.
func TestLimitReadTimeout(t *testing.T) {
	const timeout = 500 * time.Millisecond
	for _, proto := range []string{"HTTP/1.1", "HTTP/2.0"} {
		t.Run(proto, func(t *testing.T) {
			next := &echo{}
			srv := newTLSServer(t, webhook.Limit(next, webhook.Limits{MaxBodyBytes: 1 << 20, ReadTimeout: timeout}))
			client := srv.Client()
			if proto == "HTTP/1.1" {
				tr := client.Transport.(*http.Transport).Clone()
				tr.ForceAttemptHTTP2 = false
				tr.TLSClientConfig.NextProtos = []string{"http/1.1"}
				tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
				client = &http.Client{Transport: tr}
			}
			pr, pw := io.Pipe()
			stop := make(chan struct{})
			defer close(stop)
			go func() {
				defer pw.Close()
				for range 200 { // 20 s of body
					select {
					case <-stop:
						return
					case <-time.After(100 * time.Millisecond):
					}
					if _, err := pw.Write([]byte("x")); err != nil {
						return
					}
				}
			}()
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/convert", pr)
			req.ContentLength = 200
			start := time.Now()
			resp, err := client.Do(req)
			elapsed := time.Since(start)
			if err != nil {
				t.Fatalf("POST: %v after %s", err, elapsed)
			}
			defer resp.Body.Close()
			if resp.Proto != proto {
				t.Errorf("protocol %s, want %s", resp.Proto, proto)
			}
			if resp.StatusCode != http.StatusRequestTimeout || next.calls.Load() != 0 {
				t.Errorf("status %d, handler called %d times; want 408 and never", resp.StatusCode, next.calls.Load())
			}
			if elapsed < timeout || elapsed > timeout+3*time.Second {
				t.Errorf("answered after %s, want just after the %s read timeout", elapsed, timeout)
			}
		})
	}
}

// TestLimitRawSlowLoris plays a slow-loris client on a raw TLS connection: headers, then a body
// trickled byte by byte. The server answers 408 and closes the connection.
func TestLimitRawSlowLoris(t *testing.T) {
	const timeout = 500 * time.Millisecond
	srv := newTLSServer(t, webhook.Limit(&echo{}, webhook.Limits{MaxBodyBytes: 1 << 20, ReadTimeout: timeout}))
	conn, err := tls.Dial("tcp", srv.Listener.Addr().String(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}}) //nolint:gosec // test server
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(conn, "POST /convert HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"); err != nil {
		t.Fatal(err)
	}
	go func() {
		for range 100 {
			time.Sleep(100 * time.Millisecond)
			if _, err := conn.Write([]byte(" ")); err != nil {
				return
			}
		}
	}()
	start := time.Now()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the response: %v after %s", err, time.Since(start))
	}
	rest, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestTimeout || !resp.Close {
		t.Errorf("status %d, close %v (%s); want 408 and the connection closed", resp.StatusCode, resp.Close, bytes.TrimSpace(rest))
	}
	if e := time.Since(start); e > timeout+3*time.Second {
		t.Errorf("answered after %s", e)
	}
}

// TestLimitsFromConfig: the shipped defaults are 3 MiB and 10 s.
func TestLimitsFromConfig(t *testing.T) {
	got := webhook.LimitsFromConfig(config.Default())
	want := webhook.Limits{MaxBodyBytes: 3 << 20, ReadTimeout: 10 * time.Second}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestServerLimitsEveryPath: whatever registers a path on the server (the webhook builder
// registers /convert itself) gets the limits.
func TestServerLimitsEveryPath(t *testing.T) {
	srv := webhook.NewServer(ctrlwebhook.Options{Port: -1}, webhook.Limits{MaxBodyBytes: 16})
	for _, path := range []string{"/convert", webhook.MutateRequestPath} {
		srv.Register(path, &echo{})
		r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(strings.Repeat("x", 17)))
		w := httptest.NewRecorder()
		srv.WebhookMux().ServeHTTP(w, r)
		if w.Code != http.StatusRequestEntityTooLarge {
			t.Errorf("%s: status %d, want 413", path, w.Code)
		}
	}
}

// TestLimitSlowHandlerKeepsItsContext: the read deadline bounds the body only. A handler that
// takes longer than the read timeout after the body arrived (admission calls the API server)
// keeps its request context and answers, over HTTP/1.1 and HTTP/2.
func TestLimitSlowHandlerKeepsItsContext(t *testing.T) {
	const timeout = 300 * time.Millisecond
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(3 * timeout)
		if err := r.Context().Err(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	srv := newTLSServer(t, webhook.Limit(slow, webhook.Limits{MaxBodyBytes: 1 << 20, ReadTimeout: timeout}))
	for _, h2 := range []bool{false, true} {
		client := srv.Client()
		if !h2 {
			tr := client.Transport.(*http.Transport).Clone()
			tr.ForceAttemptHTTP2 = false
			tr.TLSClientConfig.NextProtos = []string{"http/1.1"}
			tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
			client = &http.Client{Transport: tr}
		}
		resp, err := client.Post(srv.URL+"/validate", "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatalf("h2=%v: %v", h2, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(body) != "ok" {
			t.Errorf("h2=%v: %d %s, want 200 ok", h2, resp.StatusCode, body)
		}
	}
}
