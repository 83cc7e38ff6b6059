package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/config"
	"github.com/dgdr-operator/dgdr-operator/internal/controller"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/request"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/run"
	"github.com/dgdr-operator/dgdr-operator/internal/naming"
	"github.com/dgdr-operator/dgdr-operator/internal/scheme"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/upstreamcrd"
	"github.com/dgdr-operator/dgdr-operator/internal/webhook"
	sandbox "github.com/dgdr-operator/dgdr-operator/tools/sandbox/manager"
)

const (
	operatorNS = "bench-operator"
	bareNS     = "bench-bare"
	workers    = 4 // the operator's default concurrency per controller, and the bare client's
)

// writeCounter counts the API writes that pass through a transport.
type writeCounter struct {
	next   http.RoundTripper
	writes atomic.Int64
	mu     sync.Mutex
	byKind map[string]int
}

func (w *writeCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		w.writes.Add(1)
		w.mu.Lock()
		if w.byKind == nil {
			w.byKind = map[string]int{}
		}
		w.byKind[r.Method+" "+resourceOf(r.URL.Path)]++
		w.mu.Unlock()
	}
	return w.next.RoundTrip(r)
}

// resourceOf reduces an API path to its resource (and subresource): /apis/g/v/namespaces/ns/runs/x/status → runs/status.
func resourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i := 0; i+1 < len(parts); i++ {
		if parts[i] == "namespaces" && i+2 < len(parts) {
			rest := parts[i+2:]
			if len(rest) >= 3 {
				return rest[0] + "/" + rest[2]
			}
			return rest[0]
		}
	}
	return path
}

// breakdown renders the writes per request by kind.
func (w *writeCounter) breakdown(n int) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	keys := make([]string, 0, len(w.byKind))
	for k := range w.byKind {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%.2f ", k, float64(w.byKind[k])/float64(n))
	}
	return strings.TrimSpace(b.String())
}

// benchBurst measures P3 (DGDR create → Job created under a burst, against a bare client that
// issues the same writes) and P4 (API writes per request until its Job exists, counted at the
// operator's transport), on a real API server with the admission webhooks served over TLS, the
// sandbox's Nodes (GPU discovery over two products, the fit controller) and the
// DynamoGraphDeployment CRD (autoApply's CRD watch): the operator as it ships.
func benchBurst(n int) ([]figure, error) {
	dgd, err := upstreamcrd.DGD()
	if err != nil {
		return nil, err
	}
	env, err := testenv.Start(testenv.Options{Webhooks: true, CRDs: []*apiextensionsv1.CustomResourceDefinition{dgd}})
	if err != nil {
		return nil, err
	}
	defer env.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	cfg := config.Default()
	cfg.Reporter.Image = "bench.local/dgdr-operator:dev"
	zero := int32(0)
	cfg.Limits.MaxActiveRunsPerNamespace = &zero // a burst, not a queue: measure the operator
	cfg.Namespaces = []string{operatorNS}        // the bare client's namespace is not reconciled
	cfg.Defaults.GPUSKU = sandbox.DefaultGPUSKU  // as in the sandbox: its Nodes have two GPU products
	if err := createSandboxNodes(ctx, env.Client); err != nil {
		return nil, err
	}

	counter := &writeCounter{}
	opCfg := rest.CopyConfig(env.Config)
	opCfg.QPS, opCfg.Burst = 200, 400
	opCfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter }
	w := env.Env.WebhookInstallOptions
	mgr, err := ctrl.NewManager(opCfg, ctrl.Options{
		Scheme:                 scheme.Scheme,
		Cache:                  controller.CacheOptions(cfg),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer:          ctrlwebhook.NewServer(ctrlwebhook.Options{Host: w.LocalServingHost, Port: w.LocalServingPort, CertDir: w.LocalServingCertDir}),
	})
	if err != nil {
		return nil, err
	}
	env.Manager = mgr
	if err := webhook.Setup(mgr, cfg); err != nil {
		return nil, err
	}
	if err := controller.Setup(mgr, cfg); err != nil {
		return nil, err
	}
	if err := env.StartManager(); err != nil {
		return nil, err
	}
	userCfg := rest.CopyConfig(env.Env.Config)
	userCfg.QPS, userCfg.Burst = 200, 400
	c, err := client.New(userCfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		return nil, err
	}
	for _, ns := range []string{operatorNS, bareNS} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			return nil, err
		}
	}
	seen, err := watchJobs(ctx, userCfg)
	if err != nil {
		return nil, err
	}

	// Warm up both paths (schema compilation, TLS, informers) with a few requests each.
	if _, err := bare(ctx, c, cfg, "warm", 4); err != nil {
		return nil, err
	}
	if _, err := viaOperator(ctx, c, "warm", 4, seen); err != nil {
		return nil, err
	}
	time.Sleep(2 * time.Second)

	// Four bursts in the order bare, operator, operator, bare: load that drifts during the
	// measurement (other processes on a shared machine) weighs on both paths alike. Each path's
	// figure is the mean of its two bursts' percentiles.
	var opLat, bareLat [][]float64
	opCPU, bareCPU := cpuSample{}, cpuSample{}
	var writes int64
	for round, path := range []string{"bare", "operator", "operator", "bare"} {
		time.Sleep(time.Second)
		cpu0 := sampleCPU()
		prefix := fmt.Sprintf("%c%d", path[0], round)
		if path == "bare" {
			lat, err := bare(ctx, c, cfg, prefix, n)
			if err != nil {
				return nil, err
			}
			bareLat = append(bareLat, lat)
			bareCPU.add(sampleCPU(), cpu0)
			continue
		}
		before := counter.writes.Load()
		if round == 1 {
			counter.mu.Lock()
			counter.byKind = nil
			counter.mu.Unlock()
		}
		stopProfile := func() {}
		if round == 1 {
			var err error
			if stopProfile, err = startProfile(p3CPUProfile); err != nil {
				return nil, err
			}
		}
		lat, err := viaOperator(ctx, c, prefix, n, seen)
		stopProfile()
		if err != nil {
			return nil, err
		}
		opLat = append(opLat, lat)
		opCPU.add(sampleCPU(), cpu0)
		// Let the operator finish the writes that follow the Job (Run status), then count.
		settle(counter)
		writes += counter.writes.Load() - before
	}
	perRequest := float64(writes) / float64(n*len(opLat))

	o50, o99 := meanPercentile(opLat, 50), meanPercentile(opLat, 99)
	b50, b99 := meanPercentile(bareLat, 50), meanPercentile(bareLat, 99)
	ratio := o99 / b99
	return []figure{
		{
			id: "P3", name: "dgdr_to_job_vs_bare", isRatio: true, ratio: ratio, goal: 1.15, ok: ratio <= 1.15,
			extra: fmt.Sprintf("p99_ms=%.0f p50_ms=%.0f bare_p99_ms=%.0f bare_p50_ms=%.0f operator_%s bare_%s", o99, o50, b99, b50, opCPU.format(len(opLat)), bareCPU.format(len(bareLat))),
			note: fmt.Sprintf("bursts (bare, operator, operator, bare; each path's mean) of %d requests created by %d clients; operator: %d request and %d run workers; bare client: %d workers issuing request create, Run, Job, statuses",
				n, workers, *cfg.Concurrency.Requests, *cfg.Concurrency.Runs, workers),
		},
		{
			id: "P4", name: "api_writes_per_dgdr", value: perRequest, goal: 5, ok: perRequest <= 5,
			note: "writes (POST/PUT/PATCH/DELETE, events included) the operator sent per request until its Job existed and the Run recorded it: " + counter.breakdown(n*len(opLat)),
		},
	}, nil
}

// watchJobs records when each search Job first appears, keyed by namespace/name.
func watchJobs(ctx context.Context, cfg *rest.Config) (*sync.Map, error) {
	inf, err := cache.New(cfg, cache.Options{Scheme: scheme.Scheme})
	if err != nil {
		return nil, err
	}
	informer, err := inf.GetInformer(ctx, &batchv1.Job{})
	if err != nil {
		return nil, err
	}
	seen := &sync.Map{}
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		if j, ok := obj.(*batchv1.Job); ok {
			seen.LoadOrStore(j.Namespace+"/"+j.Name, time.Now())
		}
	}}); err != nil {
		return nil, err
	}
	go func() { _ = inf.Start(ctx) }()
	if !inf.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("job informer did not sync")
	}
	return seen, nil
}

func benchRequest(ns, name string) *v1beta2.DynamoGraphDeploymentRequest {
	return builders.Request(ns, name).TTFT(500).ITL(30).Obj()
}

// viaOperator creates n requests (a burst, from `workers` clients) and returns, per request, the
// milliseconds from the start of the burst to the moment its search Job appeared.
func viaOperator(ctx context.Context, c client.Client, prefix string, n int, seen *sync.Map) ([]float64, error) {
	start := time.Now()
	if err := parallel(n, func(i int) error {
		return c.Create(ctx, benchRequest(operatorNS, fmt.Sprintf("%s-%d", prefix, i)))
	}); err != nil {
		return nil, err
	}
	lat := make([]float64, n)
	deadline := time.Now().Add(5 * time.Minute)
	for i := 0; i < n; i++ {
		key := operatorNS + "/" + naming.JobName(naming.RunName(fmt.Sprintf("%s-%d", prefix, i), 1))
		for {
			if t, ok := seen.Load(key); ok {
				lat[i] = float64(t.(time.Time).Sub(start).Microseconds()) / 1000
				break
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("job %s never appeared", key)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return lat, nil
}

// bare gets the same burst and issues, per request, the writes the operator would (latency from
// the start of the burst to the Job's creation): create the request (through
// admission), its Run and the Job, then the Run's and the request's status;
// plus the Run's search ServiceAccount and RoleBinding, and the reporter Role once for the
// namespace.
func bare(ctx context.Context, c client.Client, cfg *v1alpha1.OperatorConfiguration, prefix string, n int) ([]float64, error) {
	if err := c.Create(ctx, run.BuildReporterRole(bareNS)); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	lat := make([]float64, n)
	start := time.Now()
	err := parallel(n, func(i int) error {
		dgdr := benchRequest(bareNS, fmt.Sprintf("%s-%d", prefix, i))
		if err := c.Create(ctx, dgdr); err != nil {
			return err
		}
		in, errs := aisimulate.Lower(&dgdr.Spec, aisimulate.Options{})
		if len(errs) > 0 {
			return errs.ToAggregate()
		}
		r, err := request.BuildRun(dgdr, in.Hash)
		if err != nil {
			return err
		}
		if err := c.Create(ctx, r); err != nil {
			return err
		}
		sa, binding := run.BuildSearchIdentity(r)
		if err := c.Create(ctx, sa); err != nil {
			return err
		}
		if err := c.Create(ctx, binding); err != nil {
			return err
		}
		job := run.BuildJob(r, cfg)
		if err := c.Create(ctx, job); err != nil {
			return err
		}
		lat[i] = float64(time.Since(start).Microseconds()) / 1000
		base := r.DeepCopy()
		r.Status.AISimulate = &v1beta2.AISimulateStatus{Input: &runtime.RawExtension{Raw: in.JSON}, InputHash: in.Hash}
		r.Status.JobRef = &v1beta2.JobReference{Name: job.Name, UID: job.UID}
		r.Status.Phase = v1beta2.RunPhasePending
		if err := c.Status().Patch(ctx, r, client.MergeFrom(base)); err != nil {
			return err
		}
		dbase := dgdr.DeepCopy()
		dgdr.Status.ObservedGeneration = dgdr.Generation
		dgdr.Status.ActiveRunRef = &v1beta2.RunReference{Name: r.Name}
		return c.Status().Patch(ctx, dgdr, client.MergeFrom(dbase))
	})
	return lat, err
}

// parallel runs f(0..n-1) on `workers` goroutines.
func parallel(n int, f func(i int) error) error { return parallelN(n, workers, f) }

// parallelN runs f(0..n-1) on w goroutines and returns the first error.
func parallelN(n, w int, f func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, w)
	for k := 0; k < w; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// settle waits until the counted writes stop for a second (bounded).
func settle(c *writeCounter) {
	last, quiet := c.writes.Load(), 0
	for i := 0; i < 60 && quiet < 10; i++ {
		time.Sleep(100 * time.Millisecond)
		if now := c.writes.Load(); now == last {
			quiet++
		} else {
			last, quiet = now, 0
		}
	}
}
