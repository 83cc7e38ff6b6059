package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
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
	"github.com/dgdr-operator/dgdr-operator/internal/scheme"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/upstreamcrd"
	"github.com/dgdr-operator/dgdr-operator/internal/webhook"
)

// benchMemory (P5): resident memory of the operator process (the real binary) after it has
// cached and reconciled n requests, n Runs and n Jobs, in a cluster with the sandbox's Nodes
// (GPU discovery over two products) and the DynamoGraphDeployment CRD (autoApply's CRD watch).
func benchMemory(n int) (figure, error) {
	dgd, err := upstreamcrd.DGD()
	if err != nil {
		return figure{}, err
	}
	env, err := testenv.Start(testenv.Options{CRDs: []*apiextensionsv1.CustomResourceDefinition{dgd}})
	if err != nil {
		return figure{}, err
	}
	defer env.Stop()
	ctx := context.Background()
	cfgREST := rest.CopyConfig(env.Config)
	cfgREST.QPS, cfgREST.Burst = 500, 1000
	c, err := client.New(cfgREST, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		return figure{}, err
	}
	opCfg := config.Default()
	opCfg.Reporter.Image = "bench.local/dgdr-operator:dev"
	const ns = "bench-memory"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return figure{}, err
	}
	if err := createSandboxNodes(ctx, c); err != nil {
		return figure{}, err
	}
	start := time.Now()
	if err := parallelN(n, 16, func(i int) error { return seed(ctx, c, opCfg, ns, i) }); err != nil {
		return figure{}, err
	}
	fmt.Fprintf(os.Stderr, "P5: created %d requests, Runs and Jobs in %s\n", n, time.Since(start).Round(time.Second))

	dir, err := os.MkdirTemp("", "bench-operator-")
	if err != nil {
		return figure{}, err
	}
	defer os.RemoveAll(dir)
	if _, err := writeServingCert(dir); err != nil {
		return figure{}, err
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["b"] = &clientcmdapi.Cluster{Server: env.Config.Host, CertificateAuthorityData: env.Config.CAData}
	kc.AuthInfos["b"] = &clientcmdapi.AuthInfo{ClientCertificateData: env.Config.CertData, ClientKeyData: env.Config.KeyData}
	kc.Contexts["b"] = &clientcmdapi.Context{Cluster: "b", AuthInfo: "b"}
	kc.CurrentContext = "b"
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		return figure{}, err
	}
	health, webhookPort := freeLoopbackPort(), freeLoopbackPort()
	configFile := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(configFile, []byte(fmt.Sprintf(`apiVersion: config.dgdr.nvidia.com/v1alpha1
kind: OperatorConfiguration
featureGates: {DGDRV1Beta2: true}
planner: {image: bench.local/planner:dev}
reporter: {image: bench.local/dgdr-operator:dev}
metrics: {bindAddress: "0"}
health: {bindAddress: "127.0.0.1:%d"}
webhook: {host: 127.0.0.1, port: %d, certDir: %s}
`, health, webhookPort, dir)), 0o644); err != nil {
		return figure{}, err
	}
	bin := filepath.Join(testenv.Root(), "bin", "dgdr-operator")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/dgdr-operator/dgdr-operator/cmd/dgdr-operator").CombinedOutput(); err != nil {
		return figure{}, fmt.Errorf("building the operator: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "--config", configFile)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	logFile, err := os.Create(filepath.Join(dir, "operator.log"))
	if err != nil {
		return figure{}, err
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return figure{}, err
	}
	defer func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() }() // on early returns

	deadline := time.Now().Add(3 * time.Minute)
	for {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", health))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			return figure{}, fmt.Errorf("operator not ready; see its log")
		}
		time.Sleep(500 * time.Millisecond)
	}
	// Let the initial reconcile of every object finish, then sample the resident set a few
	// times and keep the largest. The resident set on the way is printed (stderr); the line splits
	// the last sample into anonymous memory (the heap) and the binary's pages.
	var trace []string
	for t := 0; t < 20; t += 2 {
		if v, err := vmRSS(cmd.Process.Pid); err == nil {
			trace = append(trace, fmt.Sprintf("%ds:%.0f", t, v))
		}
		time.Sleep(2 * time.Second)
	}
	fmt.Fprintf(os.Stderr, "P5: RSS MB after ready: %s\n", strings.Join(trace, " "))
	var rss float64
	for i := 0; i < 5; i++ {
		v, err := vmRSS(cmd.Process.Pid)
		if err != nil {
			return figure{}, err
		}
		if v > rss {
			rss = v
		}
		time.Sleep(time.Second)
	}
	anon, file := residentSplit(cmd.Process.Pid)
	_ = cmd.Process.Kill()
	_, _ = cmd.Process.Wait()
	if p5HeapProfile != "" {
		if err := heapProfile(env, configFile, p5HeapProfile); err != nil {
			return figure{}, err
		}
	}
	return figure{
		id: "P5", name: "operator_rss_5k_objects_mb", value: rss, goal: 100, ok: rss <= 100,
		extra: fmt.Sprintf("anon_mb=%.1f file_mb=%.1f", anon, file),
		note:  fmt.Sprintf("VmRSS of bin/dgdr-operator with %d requests + %d Runs + %d Jobs in the cluster (3 Nodes: CPU, H200, H100; DGD CRD installed; cache: label-selected Jobs/Pods, no Job that succeeded, managed fields stripped, accepted requests without spec, terminal Runs and Jobs trimmed to what is read; GOGC 50)", n, n, n),
	}, nil
}

// p5HeapProfile, when set (-p5-heapprofile), receives a heap profile of the operator's manager
// (cache, controllers and webhooks, as the binary sets them up) run in this process against P5's
// cluster after the binary's figure is taken.
var p5HeapProfile string

// heapProfile runs the operator's manager in process with the configuration P5 gave the binary,
// lets it cache and reconcile everything as long as P5 waits, and writes a heap profile of what
// stays live.
func heapProfile(env *testenv.Env, configFile, path string) error {
	cfg, err := config.Load(configFile)
	if err != nil {
		return err
	}
	counter := &writeCounter{}
	restCfg := rest.CopyConfig(env.Config)
	restCfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter }
	mgr, err := ctrl.NewManager(restCfg, ctrl.Options{
		Scheme:                 scheme.Scheme,
		Cache:                  controller.CacheOptions(cfg),
		Controller:             controller.ControllerConfig(cfg),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer:          ctrlwebhook.NewServer(ctrlwebhook.Options{Host: cfg.Webhook.Host, Port: freeLoopbackPort(), CertDir: cfg.Webhook.CertDir}),
	})
	if err != nil {
		return err
	}
	if err := webhook.Setup(mgr, cfg); err != nil {
		return err
	}
	if err := controller.Setup(mgr, cfg); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return fmt.Errorf("the in-process manager's cache did not sync")
	}
	time.Sleep(20 * time.Second)
	fmt.Fprintf(os.Stderr, "P5 in process: writes per object in the first 20 s: %s\n", counter.breakdown(1))
	goruntime.GC()
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	fmt.Fprintf(os.Stderr, "P5 in process: heap in use %.1f MB, next GC at %.1f MB, from the OS %.1f MB\n",
		float64(ms.HeapInuse)/1e6, float64(ms.NextGC)/1e6, float64(ms.Sys)/1e6)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return pprof.WriteHeapProfile(f)
}

// seed creates one accepted request with its terminal Run and succeeded search Job.
func seed(ctx context.Context, c client.Client, cfg *v1alpha1.OperatorConfiguration, ns string, i int) error {
	dgdr := benchRequest(ns, fmt.Sprintf("m-%d", i))
	dgdr.Spec.Hardware = &v1beta2.HardwareSpec{GPU: &v1beta2.GPUSpec{SKU: "h200_sxm"}}
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
	job := run.BuildJob(r, cfg)
	if err := c.Create(ctx, job); err != nil {
		return err
	}
	now := metav1.Now()
	// As the Job controller leaves a search Job that succeeded.
	job.Status = batchv1.JobStatus{
		StartTime: &now, CompletionTime: &now, Succeeded: 1, Ready: ptr.To[int32](0), Terminating: ptr.To[int32](0),
		Conditions: []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonCompletionsReached, LastTransitionTime: now, LastProbeTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonCompletionsReached, LastTransitionTime: now, LastProbeTime: now},
		},
	}
	if err := c.Status().Update(ctx, job); err != nil {
		return err
	}
	r.Status = v1beta2.DynamoGraphDeploymentRunStatus{
		Phase:          v1beta2.RunPhaseSucceeded,
		AISimulate:     &v1beta2.AISimulateStatus{Input: &runtime.RawExtension{Raw: in.JSON}, InputHash: in.Hash},
		JobRef:         &v1beta2.JobReference{Name: job.Name, UID: job.UID},
		StartTime:      &now,
		CompletionTime: &now,
		Conditions: []metav1.Condition{{Type: v1beta2.ConditionCompleted, Status: metav1.ConditionTrue,
			Reason: v1beta2.ReasonSucceeded, Message: "seeded", LastTransitionTime: now, ObservedGeneration: 1}},
	}
	if err := c.Status().Update(ctx, r); err != nil {
		return err
	}
	dgdr.Status = v1beta2.DynamoGraphDeploymentRequestStatus{
		ObservedGeneration: dgdr.Generation,
		RecentRunRefs:      []v1beta2.RunReference{{Name: r.Name, UID: r.UID}},
		LatestRun:          &v1beta2.RunSummary{Name: r.Name, Phase: v1beta2.RunPhaseSucceeded, Reason: v1beta2.ReasonSucceeded},
		Conditions: []metav1.Condition{{Type: v1beta2.ConditionAccepted, Status: metav1.ConditionTrue,
			Reason: v1beta2.ReasonRunCreated, Message: "seeded", LastTransitionTime: now, ObservedGeneration: dgdr.Generation}},
	}
	return c.Status().Update(ctx, dgdr)
}

func vmRSS(pid int) (float64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("no VmRSS for pid %d", pid)
}

// residentSplit is how much of a process's resident set is anonymous memory (the Go heap,
// stacks, runtime metadata) and how much the pages of its binary, in MB (0 when unknown).
func residentSplit(pid int) (anon, file float64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "Pss_Anon:":
			anon = kb / 1024
		case "Pss_File:":
			file = kb / 1024
		}
	}
	return anon, file
}

func freeLoopbackPort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
