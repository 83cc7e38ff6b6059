package aisimulate

import "slices"

// knownSKUs are the AISimulate system ids of the bundled AISimulate release
// (aisimulate_core/systems/*.yaml stems; see docs/lowering.md).
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
