package ui

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
)

func TestShapeOf(t *testing.T) {
	worker := func(par output.Parallelism) *output.Worker { return &output.Worker{Parallelism: par} }
	tests := []struct {
		name string
		doc  output.PredictionConfig
		want string
	}{
		{
			name: "aggregated with its concurrency",
			doc: output.PredictionConfig{
				Engine:  output.Engine{Workers: output.Workers{Aggregated: worker(output.Parallelism{Replicas: 2, Tensor: 2, Pipeline: 1, AttentionData: 1, MoEExpert: 1})}},
				Traffic: &output.Traffic{Load: output.Load{Type: "concurrency", Concurrency: 10}},
			},
			want: "agg tp2 ×2, concurrency 10",
		},
		{
			name: "disaggregated: prefill then decode, degrees above one",
			doc: output.PredictionConfig{Engine: output.Engine{Workers: output.Workers{
				Prefill: worker(output.Parallelism{Replicas: 1, Tensor: 1, Pipeline: 2}),
				Decode:  worker(output.Parallelism{Replicas: 3, Tensor: 4, AttentionData: 2, MoEExpert: 8}),
			}}},
			want: "prefill tp1 pp2 ×1, decode tp4 dp2 ep8 ×3",
		},
		{
			name: "an open-loop rate has no concurrency",
			doc: output.PredictionConfig{
				Engine:  output.Engine{Workers: output.Workers{Aggregated: worker(output.Parallelism{Replicas: 1, Tensor: 8})}},
				Traffic: &output.Traffic{Load: output.Load{Type: "poisson"}},
			},
			want: "agg tp8 ×1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, shapeOf(&tt.doc)); diff != "" {
				t.Errorf("shapeOf (-want +got):\n%s", diff)
			}
		})
	}
}
