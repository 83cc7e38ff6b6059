// Package gpunodes reads what the cluster's GPU Nodes offer: which GPU products they carry (GPU
// discovery at admission) and how many allocatable GPUs of each AISimulate system there are
// (whether a candidate fits the cluster). FromNodes and what follows from it are pure; Read lists
// the Nodes from the caller's reader (the manager's Node informer).
package gpunodes

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/render/dgdv1beta1"
)

// ProductLabel is the Node label GPU feature discovery sets.
const ProductLabel = "nvidia.com/gpu.product"

// GPUResource is the extended resource of NVIDIA GPUs.
const GPUResource corev1.ResourceName = "nvidia.com/gpu"

// Pool is the GPUs of the schedulable Nodes of one AISimulate system.
type Pool struct {
	Nodes       int32
	GPUs        int64
	LargestNode int64
}

// Inventory is what the cluster's labelled GPU Nodes offer.
type Inventory struct {
	// Products are the distinct nvidia.com/gpu.product values of the Nodes, sorted.
	Products []string
	pools    map[string]Pool
}

// Read builds the inventory of the labelled GPU Nodes that c lists. From the manager's cache the
// Nodes are not deep-copied: FromNodes only reads them, and it runs whenever a Tracker saw a Node
// change and at each autoApply choice of a fitting Candidate, where copying every GPU Node each
// time costs more than the rest of the work (BenchmarkReadInventory). Any other reader ignores
// the option.
func Read(ctx context.Context, c client.Reader) (Inventory, error) {
	nodes := &corev1.NodeList{}
	if err := c.List(ctx, nodes, client.HasLabels{ProductLabel}, client.UnsafeDisableDeepCopy); err != nil {
		return Inventory{}, err
	}
	return FromNodes(nodes.Items), nil
}

// FromNodes builds the inventory of nodes. Every labelled Node names its product; only
// schedulable ones (not cordoned) count towards the pools, with their allocatable
// nvidia.com/gpu.
func FromNodes(nodes []corev1.Node) Inventory {
	inv := Inventory{pools: map[string]Pool{}}
	for i := range nodes {
		n := &nodes[i]
		product, ok := n.Labels[ProductLabel]
		if !ok {
			continue
		}
		if !slices.Contains(inv.Products, product) {
			inv.Products = append(inv.Products, product)
		}
		sku, known := aisimulate.SKUForGPUProduct(product)
		if !known || n.Spec.Unschedulable {
			continue
		}
		gpus := n.Status.Allocatable[GPUResource]
		p := inv.pools[sku]
		p.Nodes++
		p.GPUs += gpus.Value()
		p.LargestNode = max(p.LargestNode, gpus.Value())
		inv.pools[sku] = p
	}
	slices.Sort(inv.Products)
	return inv
}

// Pool returns the GPUs of the Nodes of sku.
func (inv Inventory) Pool(sku string) Pool { return inv.pools[sku] }

// Needs is what a candidate takes of the cluster.
type Needs struct {
	// GPUs in all.
	GPUs int32
	// LargestPod is the GPUs of its largest pod, which one node must hold.
	LargestPod int32
}

// Fit compares needs with the pool of sku.
func Fit(needs Needs, sku string, pool Pool) v1beta2.ClusterFit {
	fit := v1beta2.ClusterFit{Fits: ptr.To(false), SKU: sku, GPUsNeeded: needs.GPUs, GPUsAvailable: ptr.To(pool.GPUs),
		GPUsPerNodeNeeded: needs.LargestPod, LargestNodeGPUs: pool.LargestNode, Nodes: pool.Nodes}
	switch {
	case pool.Nodes == 0:
		fit.Message = fmt.Sprintf("the cluster has no schedulable Node of %s (label %s)", sku, ProductLabel)
	case int64(needs.GPUs) > pool.GPUs:
		fit.Message = fmt.Sprintf("needs %d GPUs; the %d Nodes of %s have %d allocatable", needs.GPUs, pool.Nodes, sku, pool.GPUs)
	case int64(needs.LargestPod) > pool.LargestNode:
		fit.Message = fmt.Sprintf("a pod needs %d GPUs on one node; the largest Node of %s has %d allocatable", needs.LargestPod, sku, pool.LargestNode)
	default:
		fit.Fits = ptr.To(true)
		fit.Message = fmt.Sprintf("needs %d of the %d allocatable GPUs of %d Nodes of %s", needs.GPUs, pool.GPUs, pool.Nodes, sku)
	}
	return fit
}

// BudgetWarning says, when budget exceeds the allocatable GPUs of the Nodes of sku, that the
// search may recommend deployments the cluster cannot hold; "" when it does not.
func BudgetWarning(budget int32, sku string, pool Pool) string {
	if int64(budget) <= pool.GPUs {
		return ""
	}
	return fmt.Sprintf("spec.hardware.gpu.budget: %d GPUs exceed the %d allocatable GPUs of the cluster's %d schedulable Nodes of %s; candidates that need more will not fit (status.fitsCluster)",
		budget, pool.GPUs, pool.Nodes, sku)
}

// NeedsOf reads what a Candidate takes of the cluster and its GPU SKU: spec.gpus, the largest
// nvidia.com/gpu request of a pod of spec.graphDeployment, and engine.hardware of
// spec.parameters.
func NeedsOf(c *v1beta2.DynamoGraphDeploymentCandidate) (Needs, string, error) {
	var params struct {
		Engine struct {
			Hardware any `json:"hardware"`
		} `json:"engine"`
	}
	if err := json.Unmarshal(c.Spec.Parameters.Raw, &params); err != nil {
		return Needs{}, "", fmt.Errorf("spec.parameters: %w", err)
	}
	sku, ok := params.Engine.Hardware.(string)
	if !ok || sku == "" {
		return Needs{}, "", fmt.Errorf("spec.parameters.engine.hardware names no single GPU SKU")
	}
	var dgd dgdv1beta1.DynamoGraphDeployment
	if err := json.Unmarshal(c.Spec.GraphDeployment.Raw, &dgd); err != nil {
		return Needs{}, "", fmt.Errorf("spec.graphDeployment: %w", err)
	}
	needs := Needs{GPUs: c.Spec.GPUs}
	for _, comp := range dgd.Spec.Components {
		spec := comp.PodTemplate.Spec
		for _, ctr := range slices.Concat(spec.InitContainers, spec.Containers) {
			q := ctr.Resources.Limits[GPUResource]
			if r, ok := ctr.Resources.Requests[GPUResource]; ok && r.Cmp(q) > 0 {
				q = r
			}
			needs.LargestPod = max(needs.LargestPod, int32(q.Value()))
		}
	}
	return needs, sku, nil
}
