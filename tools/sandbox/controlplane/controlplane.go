package controlplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Ports are the loopback ports of the sandbox components, chosen free at `up`.
type Ports struct {
	EtcdClient int `json:"etcdClient"`
	EtcdPeer   int `json:"etcdPeer"`
	APIServer  int `json:"apiServer"`
	KCM        int `json:"controllerManager"`
	Scheduler  int `json:"scheduler"`
	Webhook    int `json:"webhook"`
	Metrics    int `json:"metrics"`
	Health     int `json:"health"`
}

// FreePorts picks distinct free loopback ports.
func FreePorts() (Ports, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	next := func() (int, error) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		ls = append(ls, l)
		return l.Addr().(*net.TCPAddr).Port, nil
	}
	var p Ports
	for _, f := range []*int{&p.EtcdClient, &p.EtcdPeer, &p.APIServer, &p.KCM, &p.Scheduler, &p.Webhook, &p.Metrics, &p.Health} {
		n, err := next()
		if err != nil {
			return p, err
		}
		*f = n
	}
	return p, nil
}

// Process is one component to start: its name (log and pid file), binary and arguments.
type Process struct {
	Name string
	Path string
	Args []string
	Env  []string
}

// Cluster describes the control plane of one sandbox.
type Cluster struct {
	BinDir   string
	StateDir string
	Ports    Ports
	PKI      PKI
}

// New returns the control plane rooted in stateDir using binaries from binDir.
func New(binDir, stateDir string, ports Ports) *Cluster {
	return &Cluster{BinDir: binDir, StateDir: stateDir, Ports: ports, PKI: PKI{Dir: filepath.Join(stateDir, "pki")}}
}

// APIServerURL is the loopback address of the kube-apiserver.
func (c *Cluster) APIServerURL() string {
	return "https://127.0.0.1:" + strconv.Itoa(c.Ports.APIServer)
}

// Kubeconfig is the admin kubeconfig path.
func (c *Cluster) Kubeconfig() string { return c.PKI.AdminKubeconfig() }

// WriteKubeconfig writes the admin kubeconfig (client certificate in system:masters).
func (c *Cluster) WriteKubeconfig() error {
	return os.WriteFile(c.Kubeconfig(), []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: dgdr-sandbox
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: sandbox-admin
  user:
    client-certificate: %s
    client-key: %s
contexts:
- name: dgdr-sandbox
  context: {cluster: dgdr-sandbox, user: sandbox-admin, namespace: default}
current-context: dgdr-sandbox
`, c.APIServerURL(), c.PKI.CACert(), c.PKI.AdminCert(), c.PKI.AdminKey())), 0o600)
}

// Etcd is the etcd process (no fsync: the sandbox is disposable).
func (c *Cluster) Etcd() Process {
	client := "http://127.0.0.1:" + strconv.Itoa(c.Ports.EtcdClient)
	peer := "http://127.0.0.1:" + strconv.Itoa(c.Ports.EtcdPeer)
	return Process{Name: "etcd", Path: filepath.Join(c.BinDir, "etcd"), Args: []string{
		"--name=sandbox",
		"--data-dir=" + filepath.Join(c.StateDir, "etcd"),
		"--listen-client-urls=" + client, "--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=sandbox=" + peer,
		"--unsafe-no-fsync=true", "--log-level=warn",
	}}
}

// APIServer is the kube-apiserver process.
func (c *Cluster) APIServer() Process {
	p := c.PKI
	return Process{Name: "kube-apiserver", Path: filepath.Join(c.BinDir, "kube-apiserver"), Args: append([]string{
		"--etcd-servers=http://127.0.0.1:" + strconv.Itoa(c.Ports.EtcdClient),
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(c.Ports.APIServer),
		"--tls-cert-file=" + p.ServingCert(), "--tls-private-key-file=" + p.ServingKey(),
		"--client-ca-file=" + p.CACert(),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + p.SAPub(),
		"--service-account-signing-key-file=" + p.SAKey(),
		"--service-cluster-ip-range=10.0.0.0/24",
		"--authorization-mode=Node,RBAC",
		// The admission of a hardened cluster (OpenShift enables OwnerReferencesPermissionEnforcement
		// by default): setting blockOwnerDeletion needs update on the owner's finalizers. GPU nodes
		// carry the taint nvidia.com/gpu=present:NoSchedule, and ExtendedResourceToleration gives
		// every pod that requests nvidia.com/gpu its toleration, as GPU clusters commonly do.
		"--enable-admission-plugins=NodeRestriction,OwnerReferencesPermissionEnforcement,ExtendedResourceToleration",
		"--allow-privileged=true",
		"--enable-priority-and-fairness=false",
		"--endpoint-reconciler-type=none",
		// Webhooks and aggregated APIs behind a Service are called at an endpoint's address:
		// the sandbox has no kube-proxy, so cluster IPs route nowhere.
		"--enable-aggregator-routing=true",
		"--profiling=false",
		"--v=1",
	}, c.auditArgs()...)}
}

// ControllerManager is the kube-controller-manager (Job, garbage collector, service-account
// token, root CA publisher, TTL-after-finished and the other default controllers).
func (c *Cluster) ControllerManager() Process {
	kc := c.Kubeconfig()
	return Process{Name: "kube-controller-manager", Path: filepath.Join(c.BinDir, "kube-controller-manager"), Args: []string{
		"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
		"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(c.Ports.KCM),
		"--leader-elect=false",
		"--service-account-private-key-file=" + c.PKI.SAKey(),
		"--root-ca-file=" + c.PKI.CACert(),
		"--use-service-account-credentials=true",
		"--controllers=*,-node-ipam-controller",
		"--concurrent-gc-syncs=5",
		"--v=1",
	}}
}

// Scheduler is the kube-scheduler.
func (c *Cluster) Scheduler() Process {
	kc := c.Kubeconfig()
	return Process{Name: "kube-scheduler", Path: filepath.Join(c.BinDir, "kube-scheduler"), Args: []string{
		"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
		"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(c.Ports.Scheduler),
		"--leader-elect=false", "--v=1",
	}}
}

// adminHTTP is an HTTP client that trusts the cluster CA and presents the admin certificate.
func (c *Cluster) adminHTTP() (*http.Client, error) {
	pem, err := os.ReadFile(c.PKI.CACert())
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	cert, err := tls.LoadX509KeyPair(c.PKI.AdminCert(), c.PKI.AdminKey())
	if err != nil {
		return nil, err
	}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: pool, Certificates: []tls.Certificate{cert},
	}}}, nil
}

// insecureHTTP is for the self-signed /healthz of the controller manager and scheduler.
func insecureHTTP() *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // loopback health probe
	}}
}

// WaitEtcd waits for etcd's /health.
func (c *Cluster) WaitEtcd(ctx context.Context) error {
	return WaitHTTP(ctx, http.DefaultClient, fmt.Sprintf("http://127.0.0.1:%d/health", c.Ports.EtcdClient))
}

// WaitAPIServer waits for the apiserver's /readyz.
func (c *Cluster) WaitAPIServer(ctx context.Context) error {
	hc, err := c.adminHTTP()
	if err != nil {
		return err
	}
	return WaitHTTP(ctx, hc, c.APIServerURL()+"/readyz")
}

// WaitControllers waits for the controller manager's and the scheduler's /healthz.
func (c *Cluster) WaitControllers(ctx context.Context) error {
	if err := WaitHTTP(ctx, insecureHTTP(), fmt.Sprintf("https://127.0.0.1:%d/healthz", c.Ports.KCM)); err != nil {
		return fmt.Errorf("kube-controller-manager: %w", err)
	}
	if err := WaitHTTP(ctx, insecureHTTP(), fmt.Sprintf("https://127.0.0.1:%d/healthz", c.Ports.Scheduler)); err != nil {
		return fmt.Errorf("kube-scheduler: %w", err)
	}
	return nil
}

// WaitHTTP polls url until it answers 200 or ctx ends.
func WaitHTTP(ctx context.Context, hc *http.Client, url string) error {
	var last error
	for {
		resp, err := hc.Get(url)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("%s: HTTP %d", url, resp.StatusCode)
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last error: %v)", url, ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
