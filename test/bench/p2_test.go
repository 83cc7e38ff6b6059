package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/dgdr-operator/dgdr-operator/internal/config"
	"github.com/dgdr-operator/dgdr-operator/internal/scheme"
	dgdrwebhook "github.com/dgdr-operator/dgdr-operator/internal/webhook"
)

// BenchmarkAdmissionHandlers serves P2's admission review (mutate, then validate) to the
// operator's handlers in process, without TLS or sockets, next to the same review served to a
// no-op handler: what the handlers themselves cost, decoding and encoding the reviews included.
// It reports both per admission and their ratio; ns/op and the allocations are of both together.
// Profile it with -cpuprofile (docs/develop/performance.md, P2).
func BenchmarkAdmissionHandlers(b *testing.B) {
	cfg := config.Default()
	body, err := reviewBodies(cfg)
	if err != nil {
		b.Fatal(err)
	}
	hooks := &dgdrwebhook.RequestWebhook{Config: cfg}
	mutate := dgdrwebhook.DefaultingWebhook(scheme.Scheme, hooks)
	validate := admission.WithValidator(scheme.Scheme, hooks)
	noop := &admission.Webhook{Handler: admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
		return admission.Allowed("")
	})}
	serve := func(b *testing.B, h http.Handler, body []byte) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		h.ServeHTTP(rec, req)
		review := &admissionv1.AdmissionReview{}
		if err := json.Unmarshal(rec.Body.Bytes(), review); err != nil || review.Response == nil || !review.Response.Allowed {
			b.Fatalf("admission not allowed: %v %s", err, rec.Body.String())
		}
	}
	// Alternate the two in each iteration, so that load on a shared machine weighs on both.
	var ours, noops time.Duration
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		serve(b, mutate, body.mutate)
		serve(b, validate, body.validate)
		t1 := time.Now()
		serve(b, noop, body.mutate)
		serve(b, noop, body.validate)
		ours, noops = ours+t1.Sub(t0), noops+time.Since(t1)
	}
	b.ReportMetric(float64(ours.Nanoseconds())/float64(b.N), "operator-ns/op")
	b.ReportMetric(float64(noops.Nanoseconds())/float64(b.N), "noop-ns/op")
	b.ReportMetric(float64(ours)/float64(noops), "operator/noop")
}
