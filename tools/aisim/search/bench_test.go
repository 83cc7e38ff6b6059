package search

import (
	"context"
	"fmt"
	"testing"
)

// benchDoc is the operator's typical lowering output for Llama-3.1-8B on H200.
func benchDoc(budget int) string {
	return fmt.Sprintf(`
engine: {model: meta-llama/Llama-3.1-8B-Instruct, hardware: h200_sxm, backend: {choices: [vllm, sglang]}, workers: {aggregated: {}, prefill: {}, decode: {}}}
optimization: {target: throughput_per_gpu, strict_sla: true, constraints: {max_candidate_gpus: %d}}
optimizer: {max_trials: 320}
evaluation: {sla: {ttft_ms: 500, itl_ms: 30}}
traffic:
  source: {type: synthetic, input_tokens: 1024, output_tokens: 128}
  load: {type: kv_capacity_fraction, fraction: {range: {min: 0.1, max: 1.0}}}
  stop: {requests: 1000}
`, budget)
}

func benchmarkRecommend(b *testing.B, budget int) {
	env := mustEnv(b, benchDoc(budget))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		run, err := env.Recommend(context.Background(), Options{})
		if err != nil {
			b.Fatal(err)
		}
		if len(run.Selected) == 0 {
			b.Fatal("no feasible candidate")
		}
	}
}

// BenchmarkRecommendLlama8BH200Budget8 is the headline benchmark.
func BenchmarkRecommendLlama8BH200Budget8(b *testing.B) { benchmarkRecommend(b, 8) }

// BenchmarkRecommendLlama8BH200Budget64 exercises multi-node shapes and a large space.
func BenchmarkRecommendLlama8BH200Budget64(b *testing.B) { benchmarkRecommend(b, 64) }
