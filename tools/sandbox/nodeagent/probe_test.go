package nodeagent

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func serverPort(t *testing.T, addr string) int32 {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(p)
	return int32(n)
}

func TestProberCheck(t *testing.T) {
	var status atomic.Int32
	status.Store(http.StatusOK)
	var gotHeader atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotHeader.Store(r.Header.Get("X-Probe") + " " + r.URL.Path)
		w.WriteHeader(int(status.Load()))
	}))
	defer srv.Close()
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer tlsSrv.Close()
	port := serverPort(t, srv.Listener.Addr().String())
	container := &corev1.Container{Ports: []corev1.ContainerPort{{Name: "health", ContainerPort: port}}}
	httpProbe := func(p intstr.IntOrString) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: "/readyz", Port: p, HTTPHeaders: []corev1.HTTPHeader{{Name: "X-Probe", Value: "yes"}},
		}}}
	}

	named := newProber(httpProbe(intstr.FromString("health")), "127.0.0.1", container)
	if err := named.check(context.Background()); err != nil {
		t.Errorf("httpGet on a named port: %v", err)
	}
	if got := gotHeader.Load(); got != "yes /readyz" {
		t.Errorf("the probe sent %q, want header and path %q", got, "yes /readyz")
	}
	status.Store(http.StatusServiceUnavailable)
	if err := named.check(context.Background()); err == nil {
		t.Error("a 503 passed the probe")
	}
	status.Store(http.StatusFound) // redirects count as success, as with the kubelet
	if err := named.check(context.Background()); err != nil {
		t.Errorf("a 302 failed the probe: %v", err)
	}
	if err := newProber(httpProbe(intstr.FromString("nope")), "127.0.0.1", container).check(context.Background()); err == nil {
		t.Error("an unknown port name passed the probe")
	}

	https := httpProbe(intstr.FromInt32(serverPort(t, tlsSrv.Listener.Addr().String())))
	https.HTTPGet.Scheme = corev1.URISchemeHTTPS
	if err := newProber(https, "127.0.0.1", container).check(context.Background()); err != nil {
		t.Errorf("HTTPS probe with a self-signed certificate: %v", err)
	}

	tcp := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(port)}}}
	if err := newProber(tcp, "127.0.0.1", container).check(context.Background()); err != nil {
		t.Errorf("tcpSocket on a listening port: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := serverPort(t, l.Addr().String())
	l.Close()
	tcp.TCPSocket.Port = intstr.FromInt32(closed)
	if err := newProber(tcp, "127.0.0.1", container).check(context.Background()); err == nil {
		t.Error("tcpSocket on a closed port passed")
	}

	exec := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
	if newProber(exec, "127.0.0.1", container) != nil || newProber(nil, "127.0.0.1", container) != nil {
		t.Error("exec probes and no probe must not be run")
	}
}

// TestProberRunThresholds: not ready until the first success; once ready, ready until
// failureThreshold consecutive failures.
func TestProberRunThresholds(t *testing.T) {
	// The server answers from a script: fail, ok, fail, ok, fail, fail, then ok forever.
	script := []int{503, 200, 503, 200, 503, 503}
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		i := int(calls.Add(1)) - 1
		code := 200
		if i < len(script) {
			code = script[i]
		}
		w.WriteHeader(code)
	}))
	defer srv.Close()
	probe := &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(serverPort(t, srv.Listener.Addr().String()))}},
		PeriodSeconds: 1, FailureThreshold: 2,
	}
	p := newProber(probe, "127.0.0.1", &corev1.Container{})
	var mu sync.Mutex
	var got []bool
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.run(ctx, func(ready bool, _ string) {
			mu.Lock()
			got = append(got, ready)
			mu.Unlock()
		})
	}()
	deadline := time.Now().Add(20 * time.Second)
	for calls.Load() < int32(len(script)+1) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	// fail → reported not ready (why); ok → ready; one fail (below threshold) → still ready;
	// ok; two fails → not ready; ok → ready.
	want := []bool{false, true, false, true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("readiness transitions (-want +got):\n%s", diff)
	}
}
