package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dgdr-operator/dgdr-operator/cmd/dgdrctl/app"
)

// syncBuffer is a bytes buffer the command writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestUICommand: `dgdrctl ui` serves the namespace with the kubeconfig's credentials on a free
// loopback port, prints its URL with the one-time secret, answers 401 without the session the
// secret gives, refuses a foreign Host header, and stops with its context.
func TestUICommand(t *testing.T) {
	f := newFixture(t, 2)
	var stdout syncBuffer
	root := app.NewRootCommand(&stdout, io.Discard)
	root.SetArgs([]string{"ui", "--kubeconfig", kubeconfig, "-n", f.ns, "--port", "0"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	urlRE := regexp.MustCompile(`serving namespace ` + f.ns + ` at (http://127\.0\.0\.1:\d+/)\?secret=([0-9a-f]{64}) `)
	var url, secret string
	deadline := time.Now().Add(10 * time.Second)
	for url == "" {
		if m := urlRE.FindStringSubmatch(stdout.String()); m != nil {
			url, secret = m[1], m[2]
		} else if time.Now().After(deadline) {
			cancel()
			t.Fatalf("no URL printed: %q", stdout.String())
		} else {
			time.Sleep(20 * time.Millisecond)
		}
	}
	// Without the session: 401.
	if resp, err := http.Get(url + "api/requests"); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET /api/requests without the session: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	resp, err := browser.Get(url + "api/requests?secret=" + secret)
	if err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	err = json.NewDecoder(resp.Body).Decode(&rows)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || len(rows) != 1 || rows[0]["name"] != f.req.Name || resp.Request.URL.RawQuery != "" {
		t.Errorf("GET /api/requests with the secret: %d %v %v, ended at %s", resp.StatusCode, rows, err, resp.Request.URL)
	}
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Host = "attacker.example"
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("a foreign Host header: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("ui returned %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ui did not stop with its context")
	}

	// --namespace and --all-namespaces exclude each other.
	if _, err := dgdrctlRun(t, "ui", "-A", "-n", f.ns); err == nil || !strings.Contains(err.Error(), "exclude each other") {
		t.Errorf("-A with -n: %v", err)
	}
}

// TestUIAddressWarning: served beyond loopback (--address given explicitly), dgdrctl ui says
// what stays exposed: plain HTTP without TLS, and whoever obtains the URL or sees the traffic.
func TestUIAddressWarning(t *testing.T) {
	f := newFixture(t, 1)
	var stdout syncBuffer
	root := app.NewRootCommand(&stdout, io.Discard)
	root.SetArgs([]string{"ui", "--kubeconfig", kubeconfig, "-n", f.ns, "--port", "0", "--address", "0.0.0.0"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	// Other warnings (no operator configuration found) may come first: wait for the address's.
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(stdout.String(), "plain HTTP") {
		if time.Now().After(deadline) {
			t.Fatalf("no warning about the address printed: %q", stdout.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	out := stdout.String()
	for _, want := range []string{"?secret=", "plain HTTP (no TLS)", "obtains the URL", "sees your traffic", "promotes candidates"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "token") {
		t.Errorf("the warning still speaks of a token:\n%s", out)
	}
}
