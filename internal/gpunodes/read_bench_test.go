package gpunodes_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/internal/controller/fit"
	"github.com/dgdr-operator/dgdr-operator/internal/gpunodes"
	"github.com/dgdr-operator/dgdr-operator/internal/scheme"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
)

// benchNodes is the number of GPU Nodes of BenchmarkReadInventory: a large GPU cluster.
const benchNodes = 1000

// BenchmarkReadInventory reads the inventory of 1,000 GPU Nodes of two products, labelled as GPU
// feature discovery labels them, from an informer cache that holds Nodes as the operator's
// manager does (fit.StripNode): with Read (what a Tracker does after a Node changed), from a
// Tracker of the cache's Node informer while no Node changes (admission and the fit controller),
// and as the baseline in the
// same process with the same list deep-copied (the cache's default). It reports each per read
// and their ratios to the baseline.
func BenchmarkReadInventory(b *testing.B) {
	e, err := testenv.Start(testenv.Options{NoProjectCRDs: true})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := createGPUNodes(ctx, e.Client, benchNodes); err != nil {
		b.Fatal(err)
	}
	c, err := cache.New(e.Config, cache.Options{Scheme: scheme.Scheme, ByObject: map[client.Object]cache.ByObject{
		&corev1.Node{}: {Transform: fit.StripNode},
	}})
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	deepCopied := func() (gpunodes.Inventory, error) {
		nodes := &corev1.NodeList{}
		if err := c.List(ctx, nodes, client.HasLabels{gpunodes.ProductLabel}); err != nil {
			return gpunodes.Inventory{}, err
		}
		return gpunodes.FromNodes(nodes.Items), nil
	}
	// The informer has synced once it lists every Node with its GPUs.
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		inv, err := deepCopied()
		return err == nil && inv.Pool("h100_sxm").GPUs+inv.Pool("h200_sxm").GPUs == 8*benchNodes, nil
	})
	if err != nil {
		b.Fatalf("the cache did not list the %d Nodes: %v", benchNodes, err)
	}
	want, _ := deepCopied()
	got, err := gpunodes.Read(ctx, c)
	if err != nil {
		b.Fatal(err)
	}
	pools := func(inv gpunodes.Inventory) map[string]gpunodes.Pool {
		return map[string]gpunodes.Pool{"h100_sxm": inv.Pool("h100_sxm"), "h200_sxm": inv.Pool("h200_sxm")}
	}
	if diff := cmp.Diff(pools(want), pools(got)); diff != "" || !cmp.Equal(want.Products, got.Products) {
		b.Fatalf("Read's inventory differs from the deep-copied list's (-want +got):\n%s", diff)
	}

	tracker, err := gpunodes.NewTracker(ctx, c)
	if err != nil {
		b.Fatal(err)
	}
	tracked, err := tracker.Inventory(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if diff := cmp.Diff(pools(want), pools(tracked)); diff != "" {
		b.Fatalf("the Tracker's inventory differs from the deep-copied list's (-want +got):\n%s", diff)
	}

	// Alternate the three in each iteration, so that load on a shared machine weighs on all.
	var read, fromTracker, copied time.Duration
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		if _, err := gpunodes.Read(ctx, c); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := tracker.Inventory(ctx); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if _, err := deepCopied(); err != nil {
			b.Fatal(err)
		}
		read, fromTracker, copied = read+t1.Sub(t0), fromTracker+t2.Sub(t1), copied+time.Since(t2)
	}
	b.ReportMetric(float64(read.Nanoseconds())/float64(b.N), "read-ns/op")
	b.ReportMetric(float64(fromTracker.Nanoseconds())/float64(b.N), "tracker-ns/op")
	b.ReportMetric(float64(copied.Nanoseconds())/float64(b.N), "deepcopy-ns/op")
	b.ReportMetric(float64(read)/float64(copied), "read/deepcopy")
	b.ReportMetric(float64(fromTracker)/float64(copied), "tracker/deepcopy")
}

// createGPUNodes registers n Nodes of 8 GPUs each, half H100 and half H200, with the labels GPU
// feature discovery and the kubelet set.
func createGPUNodes(ctx context.Context, c client.Client, n int) error {
	products := []string{"NVIDIA-H100-80GB-HBM3", "NVIDIA-H200"}
	errs := make(chan error, n)
	sem := make(chan struct{}, 8)
	for i := range n {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			errs <- createGPUNode(ctx, c, fmt.Sprintf("gpu-%04d", i), products[i%2])
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			return err
		}
	}
	return nil
}

func createGPUNode(ctx context.Context, c client.Client, name, product string) error {
	labels := map[string]string{
		gpunodes.ProductLabel:                         product,
		"nvidia.com/gpu.count":                        "8",
		"nvidia.com/gpu.memory":                       "81559",
		"nvidia.com/gpu.family":                       "hopper",
		"nvidia.com/gpu.machine":                      "p5.48xlarge",
		"nvidia.com/gpu.present":                      "true",
		"nvidia.com/gpu.replicas":                     "1",
		"nvidia.com/gpu.sharing-strategy":             "none",
		"nvidia.com/gpu.compute.major":                "9",
		"nvidia.com/gpu.compute.minor":                "0",
		"nvidia.com/cuda.driver.major":                "550",
		"nvidia.com/cuda.driver.minor":                "90",
		"nvidia.com/cuda.driver.rev":                  "07",
		"nvidia.com/cuda.runtime.major":               "12",
		"nvidia.com/cuda.runtime.minor":               "4",
		"nvidia.com/gfd.timestamp":                    "1733400000",
		"nvidia.com/mig.capable":                      "true",
		"nvidia.com/mps.capable":                      "true",
		"kubernetes.io/arch":                          "amd64",
		"kubernetes.io/hostname":                      name,
		"kubernetes.io/os":                            "linux",
		"node.kubernetes.io/instance-type":            "p5.48xlarge",
		"topology.kubernetes.io/region":               "us-east-1",
		"topology.kubernetes.io/zone":                 "us-east-1a",
		"feature.node.kubernetes.io/pci-10de.present": "true",
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if err := c.Create(ctx, node); err != nil {
		return err
	}
	gpus := corev1.ResourceList{gpunodes.GPUResource: resource.MustParse("8"), corev1.ResourceCPU: resource.MustParse("192"), corev1.ResourceMemory: resource.MustParse("2Ti")}
	node.Status.Capacity, node.Status.Allocatable = gpus, gpus
	return c.Status().Update(ctx, node)
}
