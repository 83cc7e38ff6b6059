package nodeagent

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Kubernetes defaults of a probe's timing fields.
const (
	defaultProbePeriod    = 10 * time.Second
	defaultProbeTimeout   = time.Second
	defaultProbeThreshold = 3 // failureThreshold
)

// prober runs one container's readiness probe as the kubelet does: httpGet (a status in
// [200, 400) succeeds; HTTPS without verifying the certificate) and tcpSocket (a connection
// succeeds), against the pod's IP unless the probe names a host. exec and grpc probes are not
// run: such a container counts as ready once started.
type prober struct {
	probe *corev1.Probe
	host  string
	ports map[string]int32
}

// newProber returns nil when the container has no probe the agent can run.
func newProber(p *corev1.Probe, host string, c *corev1.Container) *prober {
	if p == nil || (p.HTTPGet == nil && p.TCPSocket == nil) {
		return nil
	}
	ports := map[string]int32{}
	for _, cp := range c.Ports {
		if cp.Name != "" {
			ports[cp.Name] = cp.ContainerPort
		}
	}
	return &prober{probe: p, host: host, ports: ports}
}

func (p *prober) port(v intstr.IntOrString) (int, error) {
	if v.Type == intstr.Int {
		return v.IntValue(), nil
	}
	if n, ok := p.ports[v.StrVal]; ok {
		return int(n), nil
	}
	return 0, fmt.Errorf("the container has no port named %q", v.StrVal)
}

// check runs the probe once.
func (p *prober) check(ctx context.Context) error {
	timeout := defaultProbeTimeout
	if p.probe.TimeoutSeconds > 0 {
		timeout = time.Duration(p.probe.TimeoutSeconds) * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch {
	case p.probe.HTTPGet != nil:
		g := p.probe.HTTPGet
		port, err := p.port(g.Port)
		if err != nil {
			return err
		}
		host := g.Host
		if host == "" {
			host = p.host
		}
		scheme := "http"
		if g.Scheme == corev1.URISchemeHTTPS {
			scheme = "https"
		}
		u := url.URL{Scheme: scheme, Host: net.JoinHostPort(host, strconv.Itoa(port)), Path: g.Path}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return err
		}
		for _, h := range g.HTTPHeaders {
			req.Header.Add(h.Name, h.Value)
		}
		client := &http.Client{Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // as the kubelet's HTTPS probes
			DisableKeepAlives: true,
		}}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode >= 400 {
			return fmt.Errorf("HTTP probe failed with statuscode: %d", resp.StatusCode)
		}
		return nil
	default:
		port, err := p.port(p.probe.TCPSocket.Port)
		if err != nil {
			return err
		}
		host := p.probe.TCPSocket.Host
		if host == "" {
			host = p.host
		}
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			return err
		}
		return c.Close()
	}
}

// run probes after the initial delay and then every period until ctx ends, calling set with
// the container's readiness whenever the thresholds change it. A container starts not ready.
func (p *prober) run(ctx context.Context, set func(ready bool, failure string)) {
	period := defaultProbePeriod
	if p.probe.PeriodSeconds > 0 {
		period = time.Duration(p.probe.PeriodSeconds) * time.Second
	}
	successes, failures := int32(1), int32(defaultProbeThreshold)
	if p.probe.SuccessThreshold > 0 {
		successes = p.probe.SuccessThreshold
	}
	if p.probe.FailureThreshold > 0 {
		failures = p.probe.FailureThreshold
	}
	wait := time.Duration(p.probe.InitialDelaySeconds) * time.Second
	ready := false
	var okRun, failRun int32
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = period
		err := p.check(ctx)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			okRun, failRun = okRun+1, 0
			if !ready && okRun >= successes {
				ready = true
				set(true, "")
			}
			continue
		}
		okRun, failRun = 0, failRun+1
		if ready && failRun >= failures {
			ready = false
			set(false, err.Error())
		} else if !ready && failRun == 1 {
			set(false, err.Error()) // say why it is not ready yet (logged once)
		}
	}
}
