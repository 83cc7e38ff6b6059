package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/config"
	"github.com/dgdr-operator/dgdr-operator/internal/scheme"
	dgdrwebhook "github.com/dgdr-operator/dgdr-operator/internal/webhook"
)

// benchAdmission (P2): admission latency of a request create (the mutating then the validating
// webhook, as the API server calls them) over TLS at a fixed rate, against two no-op webhooks
// served by the same server. Open loop: requests start on schedule whatever the latency.
func benchAdmission(rate int, duration time.Duration) (figure, error) {
	dir, err := os.MkdirTemp("", "bench-webhook-")
	if err != nil {
		return figure{}, err
	}
	defer os.RemoveAll(dir)
	pool, err := writeServingCert(dir)
	if err != nil {
		return figure{}, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return figure{}, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()

	cfg := config.Default()
	hooks := &dgdrwebhook.RequestWebhook{Config: cfg}
	srv := webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: dir})
	srv.Register("/mutate", dgdrwebhook.DefaultingWebhook(scheme.Scheme, hooks))
	srv.Register("/validate", admission.WithValidator(scheme.Scheme, hooks))
	noop := &admission.Webhook{Handler: admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
		return admission.Allowed("")
	})}
	srv.Register("/noop", noop)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = srv.Start(ctx) }()

	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		MaxIdleConnsPerHost: 256,
	}}
	base := fmt.Sprintf("https://127.0.0.1:%d", port)
	body, err := reviewBodies(cfg)
	if err != nil {
		return figure{}, err
	}
	// Wait for the server and warm up both paths (TLS sessions, caches, the compiled schema).
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := post(client, base+"/noop", body.mutate); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return figure{}, fmt.Errorf("the webhook server did not start")
		}
		time.Sleep(50 * time.Millisecond)
	}
	for i := 0; i < 200; i++ {
		if _, err := admit(client, base, "/mutate", "/validate", body); err != nil {
			return figure{}, err
		}
		if _, err := admit(client, base, "/noop", "/noop", body); err != nil {
			return figure{}, err
		}
	}
	// Alternate one-second slices of both so that background noise on a small machine hits
	// both sides alike.
	var ours, noops []float64
	slices := int(duration / time.Second)
	if slices < 1 {
		slices = 1
	}
	for i := 0; i < slices; i++ {
		o, err := load(client, base, "/mutate", "/validate", body, rate, time.Second)
		if err != nil {
			return figure{}, err
		}
		n, err := load(client, base, "/noop", "/noop", body, rate, time.Second)
		if err != nil {
			return figure{}, err
		}
		ours, noops = append(ours, o...), append(noops, n...)
	}
	p50, p99 := percentile(ours, 50), percentile(ours, 99)
	b50, b99 := percentile(noops, 50), percentile(noops, 99)
	ratio := p99 / b99
	return figure{
		id: "P2", name: "admission_p99_vs_noop", isRatio: true, ratio: ratio, goal: 1.5,
		ok:    ratio <= 1.5 && p99 <= 3,
		extra: fmt.Sprintf("p99_ms=%.2f p50_ms=%.2f noop_p99_ms=%.2f noop_p50_ms=%.2f", p99, p50, b99, b50),
		note: fmt.Sprintf("%d req/s for %s over TLS (mutate+validate per request, %d requests); goal also p99 <= 3 ms",
			rate, duration, len(ours)),
	}, nil
}

// load sends admissions at a fixed rate and returns their latencies in milliseconds.
func load(client *http.Client, base, mutate, validate string, body reviews, rate int, duration time.Duration) ([]float64, error) {
	n := int(float64(rate) * duration.Seconds())
	lat := make([]float64, n)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	interval := time.Second / time.Duration(rate)
	start := time.Now()
	for i := 0; i < n; i++ {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			d, err := admit(client, base, mutate, validate, body)
			if err != nil {
				errs <- err
				return
			}
			lat[i] = float64(d.Microseconds()) / 1000
		}(i)
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, err
	}
	return lat, nil
}

func admit(client *http.Client, base, mutate, validate string, body reviews) (time.Duration, error) {
	start := time.Now()
	if _, err := post(client, base+mutate, body.mutate); err != nil {
		return 0, err
	}
	resp, err := post(client, base+validate, body.validate)
	if err != nil {
		return 0, err
	}
	if resp.Response == nil || !resp.Response.Allowed {
		return 0, fmt.Errorf("admission denied: %+v", resp.Response)
	}
	return time.Since(start), nil
}

func post(client *http.Client, url string, body []byte) (*admissionv1.AdmissionReview, error) {
	resp, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	review := &admissionv1.AdmissionReview{}
	if err := json.NewDecoder(resp.Body).Decode(review); err != nil {
		return nil, err
	}
	return review, nil
}

// reviews are the AdmissionReviews of one request create, as the API server sends them: the
// object as the user wrote it to the mutating webhook, and the object with the mutating
// webhook's patch applied to the validating webhook.
type reviews struct {
	mutate, validate []byte
}

// reviewBodies are the reviews of creating a typical request (examples/goodput-sla.yaml shape,
// admitted) by a user bound to nothing but request edits. The validating review's object is
// what the operator's mutating webhook (with cfg) returns for the first, computed once here: it
// is the API server's work, not the webhook's.
func reviewBodies(cfg *v1alpha1.OperatorConfiguration) (reviews, error) {
	reqs, err := corpus()
	if err != nil {
		return reviews{}, err
	}
	var obj *v1beta2.DynamoGraphDeploymentRequest
	for _, r := range reqs {
		if r.Name == "llama-goodput" {
			obj = r
		}
	}
	if obj == nil {
		obj = reqs[0]
	}
	obj = obj.DeepCopy()
	obj.Namespace = "default"
	obj.APIVersion, obj.Kind = v1beta2.GroupVersion.String(), "DynamoGraphDeploymentRequest"
	raw, err := json.Marshal(obj)
	if err != nil {
		return reviews{}, err
	}
	gvk := metav1.GroupVersionKind{Group: "nvidia.com", Version: "v1beta2", Kind: "DynamoGraphDeploymentRequest"}
	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID: types.UID("bench"), Kind: gvk, Operation: admissionv1.Create, Namespace: "default", Name: obj.Name,
			Resource: metav1.GroupVersionResource{Group: "nvidia.com", Version: "v1beta2", Resource: "dynamographdeploymentrequests"},
			UserInfo: authenticationv1.UserInfo{Username: "bench-user", Groups: []string{"system:authenticated"}},
			Object:   runtime.RawExtension{Raw: raw},
		},
	}
	var out reviews
	if out.mutate, err = json.Marshal(review); err != nil {
		return reviews{}, err
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/mutate", bytes.NewReader(out.mutate))
	req.Header.Set("Content-Type", "application/json")
	dgdrwebhook.DefaultingWebhook(scheme.Scheme, &dgdrwebhook.RequestWebhook{Config: cfg}).ServeHTTP(rec, req)
	mutated := &admissionv1.AdmissionReview{}
	if err := json.Unmarshal(rec.Body.Bytes(), mutated); err != nil {
		return reviews{}, fmt.Errorf("the mutating webhook's review: %w", err)
	}
	if mutated.Response == nil || !mutated.Response.Allowed {
		return reviews{}, fmt.Errorf("the mutating webhook refused the request: %s", rec.Body.String())
	}
	if len(mutated.Response.Patch) > 0 {
		patch, err := jsonpatch.DecodePatch(mutated.Response.Patch)
		if err != nil {
			return reviews{}, err
		}
		if raw, err = patch.Apply(raw); err != nil {
			return reviews{}, err
		}
	}
	review.Request.Object = runtime.RawExtension{Raw: raw}
	if out.validate, err = json.Marshal(review); err != nil {
		return reviews{}, err
	}
	return out, nil
}

func percentile(ms []float64, p float64) float64 {
	s := append([]float64(nil), ms...)
	slices.Sort(s)
	i := int(float64(len(s)-1) * p / 100)
	return s[i]
}

// writeServingCert writes a self-signed certificate for 127.0.0.1 as tls.crt/tls.key and
// returns a pool trusting it.
func writeServingCert(dir string) (*x509.CertPool, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), certPEM, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	return pool, nil
}

// meanPercentile is the mean over bursts of each burst's p-th percentile.
func meanPercentile(bursts [][]float64, p float64) float64 {
	total := 0.0
	for _, ms := range bursts {
		total += percentile(ms, p)
	}
	return total / float64(len(bursts))
}
