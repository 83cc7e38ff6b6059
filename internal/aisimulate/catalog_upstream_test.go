package aisimulate_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/upstreamtest"
)

// TestCatalogueIsTheWheels: the generated catalogue (systems_generated.go) is what the pinned
// AISimulate of the upstream venv says about its systems (hack/upstream/systems.py): the same
// systems, memory, node size and performance data. Fails when the venv is missing.
func TestCatalogueIsTheWheels(t *testing.T) {
	var report struct {
		AISimulate string              `json:"aisimulate"`
		Systems    []aisimulate.System `json:"systems"`
	}
	dec := json.NewDecoder(bytes.NewReader(upstreamtest.RunPython(t, "systems.py", nil)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&report); err != nil {
		t.Fatal(err)
	}
	var ours []aisimulate.System
	for _, sku := range aisimulate.KnownSKUs() {
		s, _ := aisimulate.LookupSystem(sku)
		ours = append(ours, s)
	}
	if report.AISimulate != aisimulate.SystemsAISimulateVersion {
		t.Errorf("the catalogue is of aisimulate %s, the venv has %s: run make generate", aisimulate.SystemsAISimulateVersion, report.AISimulate)
	}
	if diff := cmp.Diff(report.Systems, ours); diff != "" {
		t.Errorf("the catalogue differs from the wheel's systems (-wheel +catalogue); run make generate:\n%s", diff)
	}
}
