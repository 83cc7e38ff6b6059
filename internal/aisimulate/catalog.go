package aisimulate

import "slices"

// knownSKUs are the AISimulate system ids of the bundled AISimulate release
// (aisimulate_core/systems/*.yaml stems; see docs/design/lowering.md).
var knownSKUs = map[string]bool{
	"a100_sxm": true, "b200_sxm": true, "b300_sxm": true, "b60": true, "gb10": true,
	"gb200": true, "gb300": true, "h100_sxm": true, "h200_sxm": true, "h20_3e": true,
	"l40s": true, "rtx_5090": true, "rtx_pro_6000_server": true,
}

// KnownSKU reports whether sku is a system id of the bundled AISimulate.
func KnownSKU(sku string) bool { return knownSKUs[sku] }

// KnownSKUs lists the system ids of the bundled AISimulate, sorted.
func KnownSKUs() []string {
	out := make([]string, 0, len(knownSKUs))
	for k := range knownSKUs {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// gpuProducts maps the nvidia.com/gpu.product Node label (GPU feature discovery) to system ids.
var gpuProducts = map[string]string{
	"NVIDIA-A100-SXM4-80GB": "a100_sxm", "NVIDIA-A100-SXM4-40GB": "a100_sxm",
	"NVIDIA-H100-80GB-HBM3": "h100_sxm", "NVIDIA-H100-SXM5-80GB": "h100_sxm",
	"NVIDIA-H200": "h200_sxm", "NVIDIA-H200-SXM-141GB": "h200_sxm",
	"NVIDIA-B200": "b200_sxm", "NVIDIA-B300": "b300_sxm",
	"NVIDIA-GB200": "gb200", "NVIDIA-GB300": "gb300",
	"NVIDIA-L40S": "l40s", "NVIDIA-H20-3e": "h20_3e",
}

// SKUForGPUProduct maps a nvidia.com/gpu.product label value to an AISimulate system id.
func SKUForGPUProduct(product string) (string, bool) {
	sku, ok := gpuProducts[product]
	return sku, ok
}

// GPUProductsOf lists, sorted, the nvidia.com/gpu.product label values that map to sku: the
// Nodes a deployment searched for sku must run on. Empty when the catalogue knows no label of
// sku.
func GPUProductsOf(sku string) []string {
	var out []string
	for product, s := range gpuProducts {
		if s == sku {
			out = append(out, product)
		}
	}
	slices.Sort(out)
	return out
}

// gpusPerNode is the number of GPUs one node of each system has: 8 for HGX baseboards
// (A100/H100/H200/H20/B200/B300 SXM), 4 for the Grace Blackwell compute trays (GB200/GB300 NVL),
// 1 for a DGX Spark (GB10), and 8 for the PCIe server SKUs in their common 8-GPU chassis. A
// node with fewer GPUs sets spec.hardware.gpu.perNode.
var gpusPerNode = map[string]int32{
	"a100_sxm": 8, "b200_sxm": 8, "b300_sxm": 8, "b60": 8, "gb10": 1,
	"gb200": 4, "gb300": 4, "h100_sxm": 8, "h200_sxm": 8, "h20_3e": 8,
	"l40s": 8, "rtx_5090": 8, "rtx_pro_6000_server": 8,
}

// GPUsPerNode returns the GPUs per node of a known SKU.
func GPUsPerNode(sku string) (int32, bool) {
	n, ok := gpusPerNode[sku]
	return n, ok
}
