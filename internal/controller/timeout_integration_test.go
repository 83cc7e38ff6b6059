package controller_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/controller"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/controllertest"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/fit"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/request"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/run"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/poll"
)

// hangingWrites is an API server that never answers the manager's writes (reads and Events go
// through): each write waits until its request's context ends (at most a minute), and the
// context's error is recorded.
type hangingWrites struct {
	mu    sync.Mutex
	ended []error
}

func (h *hangingWrites) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		if req.Method == http.MethodGet || strings.Contains(req.URL.Path, "/events") {
			return rt.RoundTrip(req)
		}
		select {
		case <-req.Context().Done():
		case <-time.After(time.Minute):
		}
		h.mu.Lock()
		h.ended = append(h.ended, req.Context().Err())
		h.mu.Unlock()
		return nil, fmt.Errorf("%s %s: no answer: %w", req.Method, req.URL.Path, req.Context().Err())
	})
}

func (h *hangingWrites) deadlines() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, err := range h.ended {
		if errors.Is(err, context.DeadlineExceeded) {
			n++
		}
	}
	return n
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// TestEveryReconcileEndsAtReconciliationTimeout runs the operator's controllers (controller.Setup
// on a manager configured like cmd/dgdr-operator's) against an API server that never answers
// their writes. Each controller's reconcile of a fresh object (a request, a Run, a Candidate)
// blocks in a write; with reconciliationTimeout 2s the write ends with the reconcile's context,
// DeadlineExceeded, and controller-runtime counts a reconcile timeout for each controller (the
// request's three reconcilers, the Run's and the fit controller). Without the timeout the writes would hold every worker for good.
func TestEveryReconcileEndsAtReconciliationTimeout(t *testing.T) {
	env, err := testenv.Start(testenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Stop()
	ctx := context.Background()
	cfg := controllertest.Config()
	cfg.ReconciliationTimeout = &metav1.Duration{Duration: 2 * time.Second}
	hanging := &hangingWrites{}
	restCfg := rest.CopyConfig(env.Config)
	restCfg.Wrap(hanging.wrap)
	mgr, err := controllertest.NewManagerAs(env, restCfg, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := controller.Setup(mgr, cfg); err != nil {
		t.Fatal(err)
	}
	stop, err := controllertest.Start(env, mgr)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()

	if _, err := controllertest.GPUNode(ctx, env.Client, "gpu-a", "NVIDIA-H200", 8); err != nil {
		t.Fatal(err)
	}
	ns := testenv.Namespace(t, env.Client, "timeout")
	r := builders.Run(ns, "hung-run").Label(v1beta2.LabelRequestName, "req").Obj()
	r.Spec.Model.Name = "Qwen/Qwen3-0.6B"
	for _, obj := range []client.Object{
		// autoApply and re-searches on: each of the request's three reconcilers has a status to write.
		builders.Request(ns, "hung-request").Model("Qwen/Qwen3-0.6B").GPUSKU("h200_sxm").AutoApply("hung").Capture("traffic").Research(60, 1).Obj(),
		r,
		builders.Candidate(ns, "hung-candidate").GPUs(4).GraphDeployment([]byte(`{}`)).Parameters(`{"engine":{"hardware":"h200_sxm"}}`).Obj(),
	} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}

	start := time.Now()
	want := []string{run.ControllerName, fit.ControllerName}
	for _, o := range request.StatusOwners {
		want = append(want, o.Manager)
	}
	poll.WaitFor(t, time.Minute, 200*time.Millisecond, "a reconcile timeout of every controller", func(context.Context) (bool, string, error) {
		got, err := reconcileTimeouts()
		if err != nil {
			return false, "", err
		}
		for _, name := range want {
			if got[name] == 0 {
				return false, fmt.Sprintf("timeouts %v", got), nil
			}
		}
		return true, "", nil
	})
	if took := time.Since(start); took < 2*time.Second {
		t.Errorf("timeouts counted after %s, before the 2s reconciliationTimeout", took)
	}
	if hanging.deadlines() == 0 {
		t.Error("no hung write ended with DeadlineExceeded")
	}
}

// reconcileTimeouts reads controller-runtime's controller_runtime_reconcile_timeouts_total per
// controller.
func reconcileTimeouts() (map[string]float64, error) {
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_timeouts_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" {
					out[l.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return out, nil
}
