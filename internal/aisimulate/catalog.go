package aisimulate

import (
	"slices"
	"strings"
)

// The GPU catalogue: the systems of the pinned AISimulate (systems_generated.go, written by
// hack/catalog from the wheel by make generate) are the GPU SKUs the operator accepts, and
// gpuproducts.go says which Node product labels each stands for.

// System is one system (engine.hardware value) of the pinned AISimulate, as its bundled spec
// (aisimulate_core/systems/<id>.yaml) describes it.
type System struct {
	// ID is the system id, spec.hardware.gpu.sku and engine.hardware.
	ID string `json:"id"`
	// MemoryBytes is the memory of one GPU (gpu.mem_capacity).
	MemoryBytes int64 `json:"memoryBytes"`
	// MemoryBandwidth is one GPU's memory bandwidth in bytes per second (gpu.mem_bw).
	MemoryBandwidth int64 `json:"memoryBandwidth"`
	// PowerWatts is one GPU's power (gpu.power).
	PowerWatts int32 `json:"powerWatts"`
	// GPUsPerNode is the GPUs of one node (node.num_gpus_per_node).
	GPUsPerNode int32 `json:"gpusPerNode"`
	// SMVersion is the NVIDIA compute capability (gpu.sm_version, 90 for Hopper); 0 for the
	// non-NVIDIA (XPU) specs, which have none.
	SMVersion int32 `json:"smVersion,omitempty"`
	// PerfData maps each backend the wheel has performance data for to the engine version of
	// that data a search uses by default (its "current" version slot). Empty for an
	// estimate-only spec: its search cannot estimate the KV cache and skips every backend.
	PerfData map[string]string `json:"perfData"`
}

// LookupSystem returns the pinned AISimulate's system id.
func LookupSystem(id string) (System, bool) {
	i, ok := slices.BinarySearchFunc(wheelSystems, id, func(s System, id string) int { return strings.Compare(s.ID, id) })
	if !ok {
		return System{}, false
	}
	return wheelSystems[i], true
}

// KnownSKU reports whether sku is a system id of the pinned AISimulate.
func KnownSKU(sku string) bool {
	_, ok := LookupSystem(sku)
	return ok
}

// KnownSKUs lists the system ids of the pinned AISimulate, sorted.
func KnownSKUs() []string {
	out := make([]string, len(wheelSystems))
	for i, s := range wheelSystems {
		out[i] = s.ID
	}
	return out
}

// GPUsPerNode returns the GPUs per node of a known SKU, from its AISimulate spec.
func GPUsPerNode(sku string) (int32, bool) {
	s, ok := LookupSystem(sku)
	return s.GPUsPerNode, ok
}

// PerfDataVersion returns the engine version of the performance data the pinned AISimulate
// searches sku with on backend by default; false when it has none for the pair.
func PerfDataVersion(sku, backend string) (string, bool) {
	s, _ := LookupSystem(sku)
	v, ok := s.PerfData[backend]
	return v, ok
}

// SKUForGPUProduct maps a nvidia.com/gpu.product label value to an AISimulate system id.
func SKUForGPUProduct(product string) (string, bool) {
	for sku, products := range gpuProducts {
		if slices.Contains(products, product) {
			return sku, true
		}
	}
	return "", false
}

// GPUProductsOf lists, sorted, the nvidia.com/gpu.product label values that map to sku: the
// Nodes a deployment searched for sku must run on. Empty when the catalogue knows no label of
// sku (noGPUProduct says why).
func GPUProductsOf(sku string) []string {
	out := slices.Clone(gpuProducts[sku])
	slices.Sort(out)
	return out
}
