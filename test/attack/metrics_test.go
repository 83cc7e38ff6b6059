//go:build attack

package attack

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dgdr-operator/dgdr-operator/test/sandboxtest"
)

// TestMetricsNeedAuthorization: E, any pod of the cluster with no rights, and T, a
// ServiceAccount the API server authenticates, scrape the operator's metrics (which name the
// namespaces that search and how their searches end). E gets 401 and T 403; a scraper bound to
// the chart's metrics-reader ClusterRole gets 200 with the metrics. Without the filter every one
// of them read them over plain HTTP.
func TestMetricsNeedAuthorization(t *testing.T) {
	url, tlsConfig := env.OperatorMetrics(t)
	scraper := env.MetricsReader(t, sandboxtest.MetricsReaderRole)
	tenant := env.MetricsReader(t, "")
	var code int
	var body []byte
	// RBAC is read from an informer: wait until the scraper's binding is in force.
	sandboxtest.WaitFor(t, 30*time.Second, poll, "the scraper's metrics", func(ctx context.Context) (bool, string, error) {
		var err error
		code, body, err = sandboxtest.Scrape(ctx, url, scraper, tlsConfig)
		return code == http.StatusOK, string(body), err
	})
	if !strings.Contains(string(body), "controller_runtime_reconcile_total") {
		t.Errorf("the scraper read no controller_runtime_reconcile_total (the operator's controllers):\n%.500s", body)
	}
	for _, c := range []struct {
		who, token string
		want       int
	}{{"E, anonymous", "", http.StatusUnauthorized}, {"T, without get on /metrics", tenant, http.StatusForbidden}} {
		got, body, err := sandboxtest.Scrape(context.Background(), url, c.token, tlsConfig)
		if err != nil || got != c.want || strings.Contains(string(body), "controller_runtime_reconcile_total") {
			t.Errorf("%s: HTTP %d (%v), want %d and no metrics:\n%.300s", c.who, got, err, c.want, body)
		}
	}
}
