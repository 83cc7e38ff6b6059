package ui

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
)

// TestPointsFromTheRealLedger: the kept ledger of the real AISimulate (its candidate_completed
// records, internal/aisimulate/output/testdata) gives one point per feasible record, with the
// backend, mode and shape of AISimulate's sample (deployment_mode, unprefixed aggregated knobs).
func TestPointsFromTheRealLedger(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "aisimulate", "output", "testdata", "aisimulate-0.13", output.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	p := &Points{Points: []Point{}}
	if !p.fromEvents(data) {
		t.Fatal("the real ledger was not read")
	}
	type pt struct{ ID, Backend, Mode, Shape string }
	var got []pt
	for _, x := range p.Points {
		if x.ThroughputPerGPU <= 0 || x.ThroughputPerUser <= 0 || x.TTFTMs == nil || x.GPUs == 0 {
			t.Errorf("%s: %+v", x.ID, x)
		}
		got = append(got, pt{x.ID, x.Backend, x.Mode, x.Shape})
	}
	want := []pt{
		{"candidate-000001", "sglang", "aggregated", "agg tp2 ×2, concurrency 10"},
		{"candidate-000002", "sglang", "aggregated", "agg tp1 ×3, concurrency 10"},
		{"candidate-000003", "sglang", "aggregated", "agg tp2 ×3, concurrency 10"},
		{"candidate-000004", "sglang", "aggregated", "agg tp4 ×1, concurrency 10"},
		{"candidate-000005", "vllm", "aggregated", "agg tp1 ×5, concurrency 10"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("points (-want +got):\n%s", diff)
	}
	if p.Source != SourceEvents || p.Evaluated != 5 || len(p.Infeasible) != 0 {
		t.Errorf("source %q, evaluated %d, infeasible %v", p.Source, p.Evaluated, p.Infeasible)
	}
}
