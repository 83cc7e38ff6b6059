package sandboxtest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/controlplane"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/manager"
)

// MetricsReaderRole is the chart's ClusterRole that may get /metrics, as the sandbox installs it.
const MetricsReaderRole = manager.ChartRelease + "-metrics-reader"

// MetricsReader creates a ServiceAccount in a namespace of its own, binds it to the ClusterRole
// role (none when role is ""), and returns a bearer token of it: a scraper as the API server
// authenticates it.
func (e *Env) MetricsReader(t testing.TB, role string) string {
	t.Helper()
	ctx := context.Background()
	ns := Namespace(t, e.Client, "scraper")
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "scraper"}}
	if err := e.Client.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	if role != "" {
		b := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ns + "-metrics"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa.Name}}}
		if err := e.Client.Create(ctx, b); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Client.Delete(context.Background(), b) })
	}
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// OperatorMetrics is the URL of the sandbox operator's metrics and a TLS configuration that
// trusts its certificate (the sandbox's webhook serving certificate, for 127.0.0.1).
func (e *Env) OperatorMetrics(t testing.TB) (string, *tls.Config) {
	t.Helper()
	st, err := manager.LoadState(e.Root)
	if err != nil {
		t.Fatal(err)
	}
	pki := controlplane.New(filepath.Join(e.Root, "bin"), manager.StateDir(e.Root), controlplane.Ports{}).PKI
	pem, err := os.ReadFile(pki.WebhookCACert())
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("no certificate in %s", pki.WebhookCACert())
	}
	return fmt.Sprintf("https://127.0.0.1:%d/metrics", st.Ports.Metrics), &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

// Scrape gets url with token as its bearer token (none when token is "") over TLS with
// tlsConfig, and returns the status code and the body.
func Scrape(ctx context.Context, url, token string, tlsConfig *tls.Config) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig}}
	defer c.CloseIdleConnections()
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}
