package metrics

import (
	"crypto/tls"

	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
)

// The metrics endpoint authenticates each caller's bearer token with the API server and asks it
// whether the caller may get the non-resource URL /metrics:
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// ServerOptions are the metrics server's options for cfg: HTTPS only (cfg.CertDir's certificate,
// else a self-signed one), HTTP/1.1 only, and every path behind AuthenticatedAndAuthorized, so
// that a caller without a token the API server accepts gets 401, and one the API server does
// not allow get on /metrics gets 403. The metrics tell which namespaces run searches, how many
// and how they end.
func ServerOptions(cfg v1alpha1.MetricsConfig) metricsserver.Options {
	return metricsserver.Options{
		BindAddress:    cfg.BindAddress,
		SecureServing:  true,
		CertDir:        cfg.CertDir,
		FilterProvider: AuthenticatedAndAuthorized,
		// HTTP/2's stream handling has let a client exhaust servers (CVE-2023-44487,
		// CVE-2023-39325); the endpoint needs none of it.
		TLSOpts: []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }},
	}
}
