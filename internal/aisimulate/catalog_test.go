package aisimulate_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
)

// TestGPUProductsCoverTheWheel: the hand-written label table names only systems of the pinned
// AISimulate, every one of its systems either has labels or a reason it has none (never both),
// no label maps to two systems, and every label is a valid label value.
func TestGPUProductsCoverTheWheel(t *testing.T) {
	known := aisimulate.KnownSKUs()
	for sku := range aisimulate.GPUProductsForTest {
		if !slices.Contains(known, sku) {
			t.Errorf("gpuProducts names %s, which the pinned AISimulate %s does not have", sku, aisimulate.SystemsAISimulateVersion)
		}
	}
	for sku, reason := range aisimulate.NoGPUProductForTest {
		if !slices.Contains(known, sku) {
			t.Errorf("noGPUProduct names %s, which the pinned AISimulate %s does not have", sku, aisimulate.SystemsAISimulateVersion)
		}
		if reason == "" {
			t.Errorf("noGPUProduct[%s] gives no reason", sku)
		}
	}
	owner := map[string]string{}
	for _, sku := range known {
		products, labelled := aisimulate.GPUProductsForTest[sku]
		_, excused := aisimulate.NoGPUProductForTest[sku]
		switch {
		case labelled && excused:
			t.Errorf("%s has labels and is listed in noGPUProduct", sku)
		case !labelled && !excused:
			t.Errorf("%s, a system of the pinned AISimulate, has no nvidia.com/gpu.product label: add its labels to gpuProducts, or say in noGPUProduct why it has none", sku)
		case labelled && len(products) == 0:
			t.Errorf("gpuProducts[%s] is empty: list it in noGPUProduct with a reason instead", sku)
		}
		for _, p := range products {
			if other, dup := owner[p]; dup {
				t.Errorf("%s maps to %s and %s", p, other, sku)
			}
			owner[p] = sku
			if errs := validation.IsValidLabelValue(p); len(errs) > 0 {
				t.Errorf("%s of %s is not a label value: %v", p, sku, errs)
			}
		}
	}
}

// TestGPUProducts: the labels of the systems the wheel has, PCIe and L4 included, map to them and
// back; labels of parts the wheel's specs do not describe map to nothing.
func TestGPUProducts(t *testing.T) {
	type mapping struct {
		SKU   string
		Known bool
	}
	cases := map[string]mapping{
		"NVIDIA-H100-80GB-HBM3": {"h100_sxm", true},
		"NVIDIA-H100-PCIe":      {"h100_pcie", true},
		"NVIDIA-A100-SXM4-80GB": {"a100_sxm", true},
		"NVIDIA-A100-80GB-PCIe": {"a100_pcie", true},
		"NVIDIA-A30":            {"a30", true},
		"NVIDIA-L4":             {"l4", true},
		"NVIDIA-L40S":           {"l40s", true},
		"NVIDIA-H200":           {"h200_sxm", true},
		"NVIDIA-B300-SXM6-AC":   {"b300_sxm", true},
		"NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition": {"rtx_pro_6000_server", true},
		// 40 GB parts: the a100 specs model 80 GB.
		"NVIDIA-A100-SXM4-40GB": {},
		"NVIDIA-A100-PCIE-40GB": {},
		"NVIDIA-H100-NVL":       {},
		"NVIDIA-L40":            {},
		"NVIDIA-H20-3e":         {},
	}
	got := map[string]mapping{}
	for product := range cases {
		sku, ok := aisimulate.SKUForGPUProduct(product)
		got[product] = mapping{sku, ok}
	}
	if diff := cmp.Diff(cases, got); diff != "" {
		t.Errorf("SKUForGPUProduct (-want +got):\n%s", diff)
	}

	products := map[string][]string{}
	for _, sku := range []string{"h100_sxm", "h100_pcie", "l4", "b60", "gb10"} {
		products[sku] = aisimulate.GPUProductsOf(sku)
	}
	want := map[string][]string{
		"h100_sxm":  {"NVIDIA-H100-80GB-HBM3", "NVIDIA-H100-SXM5-80GB"},
		"h100_pcie": {"NVIDIA-H100-PCIe"},
		"l4":        {"NVIDIA-L4"},
		"b60":       nil,
		"gb10":      nil,
	}
	if diff := cmp.Diff(want, products); diff != "" {
		t.Errorf("GPUProductsOf (-want +got):\n%s", diff)
	}
	if aisimulate.NoGPUProductReason("b60") == "" || aisimulate.NoGPUProductReason("h100_sxm") != "" {
		t.Errorf("NoGPUProductReason: b60 %q, h100_sxm %q", aisimulate.NoGPUProductReason("b60"), aisimulate.NoGPUProductReason("h100_sxm"))
	}
}

// TestPerfDataVersion: the performance data a search uses per system and backend, from the
// catalogue; none for an estimate-only spec or a backend the system has no data for.
func TestPerfDataVersion(t *testing.T) {
	type version struct {
		V  string
		OK bool
	}
	got := map[string]version{}
	for _, c := range [][2]string{{"h200_sxm", "vllm"}, {"h200_sxm", "sglang"}, {"h100_pcie", "vllm"}, {"b60", "sglang"}, {"gb10", "vllm"}} {
		v, ok := aisimulate.PerfDataVersion(c[0], c[1])
		got[c[0]+"/"+c[1]] = version{v, ok}
	}
	h200, _ := aisimulate.LookupSystem("h200_sxm")
	want := map[string]version{
		"h200_sxm/vllm":   {h200.PerfData["vllm"], true},
		"h200_sxm/sglang": {h200.PerfData["sglang"], true},
		"h100_pcie/vllm":  {},
		"b60/sglang":      {},
		"gb10/vllm":       {},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if want["h200_sxm/vllm"].V == "" {
		t.Errorf("h200_sxm has no vLLM performance data in the catalogue")
	}
}
