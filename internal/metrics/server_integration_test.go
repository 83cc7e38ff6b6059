package metrics_test

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/internal/metrics"
	"github.com/dgdr-operator/dgdr-operator/internal/scheme"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/poll"
)

// TestMetricsNeedAuthorization: the operator's metrics endpoint, as ServerOptions configures it
// on a real API server, answers an anonymous caller and one whose token the API server does not
// accept 401, a ServiceAccount the API server authenticates but does not allow get on /metrics
// 403, and one bound to a ClusterRole that allows it 200 with the metrics; plain HTTP gets none
// of them. Without the filter any pod of the cluster read them.
func TestMetricsNeedAuthorization(t *testing.T) {
	env, err := testenv.Start(testenv.Options{NoProjectCRDs: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Stop)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	mgr, err := ctrl.New(env.Config, ctrl.Options{Scheme: scheme.Scheme, HealthProbeBindAddress: "0",
		Metrics: metrics.ServerOptions(v1alpha1.MetricsConfig{BindAddress: addr})})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = mgr.Start(ctx) }()

	ns := testenv.Namespace(t, env.Client, "metrics")
	reader := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ns + "-metrics-reader"},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	if err := env.Client.Create(ctx, reader); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ns + "-scraper"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: reader.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "scraper"}}}
	if err := env.Client.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), binding)
		_ = env.Client.Delete(context.Background(), reader)
	})
	cs := kubernetes.NewForConfigOrDie(env.Config)
	token := func(name string) string {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if err := env.Client.Create(ctx, sa); err != nil {
			t.Fatal(err)
		}
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	scraper, stranger := token("scraper"), token("stranger")

	get := func(url, token string) (int, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		// The endpoint's certificate is self-signed: the test is about who may read.
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed
		defer c.CloseIdleConnections()
		resp, err := c.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	url := "https://" + addr + "/metrics"
	poll.Eventually(t, 30*time.Second, "the metrics endpoint to serve", func() (bool, error) {
		code, _ := get(url, "")
		return code != 0, nil
	})
	// The binding is read from the API server's RBAC informer: wait until it allows the scraper.
	var code int
	var body string
	poll.Eventually(t, 30*time.Second, "the scraper's metrics", func() (bool, error) {
		code, body = get(url, scraper)
		return code == http.StatusOK, nil
	})
	if !strings.Contains(body, "rest_client_requests_total") {
		t.Errorf("the scraper read no metrics:\n%.500s", body)
	}
	for _, c := range []struct {
		who, url, token string
		want            int
	}{
		{"an anonymous caller", url, "", http.StatusUnauthorized},
		{"a caller with a token the API server does not know", url, "not-a-token", http.StatusUnauthorized},
		{"a ServiceAccount without get on /metrics", url, stranger, http.StatusForbidden},
		{"the scraper over plain HTTP", "http://" + addr + "/metrics", scraper, http.StatusBadRequest},
	} {
		if got, body := get(c.url, c.token); got != c.want || strings.Contains(body, "rest_client_requests_total") {
			t.Errorf("%s: HTTP %d, want %d and no metrics:\n%.300s", c.who, got, c.want, body)
		}
	}
}
