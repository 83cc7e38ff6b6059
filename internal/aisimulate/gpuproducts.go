package aisimulate

// gpuProducts are, per system of the pinned AISimulate, the values of the nvidia.com/gpu.product
// Node label (GPU feature discovery: the NVML device name with its spaces as dashes) of the GPUs
// the system's spec describes. The wheel does not carry them: this table is the one place that
// knows. Admission defaults spec.hardware.gpu.sku from them, the cluster fit counts their Nodes,
// and the renderer pins every GPU role to them.
//
// A product is listed only when it is the GPU of the spec, memory included: a search plans the
// KV cache of the spec's memory, which a smaller part of the same name does not have. Products
// deliberately mapped to no system, so that a request on their Nodes names its SKU itself:
//   - NVIDIA-A100-SXM4-40GB, NVIDIA-A100-PCIE-40GB: 40 GB; a100_sxm and a100_pcie model the 80 GB parts.
//   - NVIDIA-H100-NVL: 94 GB at 400 W, neither h100_sxm nor h100_pcie (80 GB).
//   - NVIDIA-H200-NVL: the PCIe H200 (600 W, NVLink bridges only), not the h200_sxm baseboard.
//   - NVIDIA-L40: half the tensor throughput of the L40S that l40s models.
//   - NVIDIA-H20, NVIDIA-GB10, NVIDIA-GeForce-RTX-5090: no system in the pinned AISimulate.
//
// TestGPUProductsCoverTheWheel holds every system to exactly one of gpuProducts and noGPUProduct.
var gpuProducts = map[string][]string{
	"a100_pcie":           {"NVIDIA-A100-80GB-PCIe"},
	"a100_sxm":            {"NVIDIA-A100-SXM4-80GB"},
	"a30":                 {"NVIDIA-A30"},
	"b200_sxm":            {"NVIDIA-B200"},
	"b300_sxm":            {"NVIDIA-B300-SXM6-AC", "NVIDIA-B300"},
	"gb200":               {"NVIDIA-GB200"},
	"gb300":               {"NVIDIA-GB300"},
	"h100_pcie":           {"NVIDIA-H100-PCIe"},
	"h100_sxm":            {"NVIDIA-H100-80GB-HBM3", "NVIDIA-H100-SXM5-80GB"},
	"h200_sxm":            {"NVIDIA-H200", "NVIDIA-H200-SXM-141GB"},
	"l4":                  {"NVIDIA-L4"},
	"l40s":                {"NVIDIA-L40S"},
	"rtx_pro_6000_server": {"NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition"},
}

// noGPUProduct are the systems of the pinned AISimulate with no nvidia.com/gpu.product label,
// and why. Their requests name spec.hardware.gpu.sku themselves, and their rendered workers are
// not pinned to a product.
var noGPUProduct = map[string]string{
	"b60": "the Intel Arc Pro B60 (an XPU spec): GPU feature discovery labels NVIDIA GPUs only",
}

// NoGPUProductReason says why the catalogue maps no Node product label to sku; empty when it
// maps some, or sku is not a system.
func NoGPUProductReason(sku string) string { return noGPUProduct[sku] }
