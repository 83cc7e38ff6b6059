package aisimulate_test

import (
	"testing"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
)

// TestEveryKnownSKUHasANodeSize: admission defaults spec.hardware.gpu.perNode from the
// catalogue, so every SKU it accepts needs one.
func TestEveryKnownSKUHasANodeSize(t *testing.T) {
	for _, sku := range aisimulate.KnownSKUs() {
		if n, ok := aisimulate.GPUsPerNode(sku); !ok || n < 1 {
			t.Errorf("%s: GPUs per node %d, %v", sku, n, ok)
		}
	}
	for sku, want := range map[string]int32{"h100_sxm": 8, "h200_sxm": 8, "b200_sxm": 8, "a100_sxm": 8, "gb200": 4, "gb300": 4} {
		if n, _ := aisimulate.GPUsPerNode(sku); n != want {
			t.Errorf("%s: %d GPUs per node, want %d", sku, n, want)
		}
	}
}
