// Package perf is aisim's analytical performance model: per-rank memory and
// KV-cache capacity, a roofline forward-step latency model, and a
// request-level simulation of continuous batching.
package perf

import (
	"fmt"
	"math"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/catalog"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/input"
)

// Backend defaults, as AISimulate documents them (contract §4.3).
var (
	defaultBlockSize      = map[string]int{output.BackendVLLM: 64, output.BackendSGLang: 1, output.BackendTRTLLM: 32}
	defaultMemoryFraction = map[string]float64{output.BackendVLLM: 0.9, output.BackendSGLang: 0.88, output.BackendTRTLLM: 0.9}
)

// DefaultBlockSize is the KV block size a backend uses when none is given.
func DefaultBlockSize(backend string) int { return defaultBlockSize[backend] }

// DefaultMemoryFraction is the backend's default KV memory fraction.
func DefaultMemoryFraction(backend string) float64 { return defaultMemoryFraction[backend] }

// WorkerConfig is one role's concrete engine configuration.
type WorkerConfig struct {
	Backend          string
	Shape            input.Shape
	MaxBatchedTokens int // per attention-DP rank
	MaxSequences     int // per attention-DP rank
	BlockSize        int
	MemoryFraction   float64
	FixedBlocks      int // >0: fixed KV capacity in blocks per rank
}

// Memory is the per-rank memory breakdown of a worker.
type Memory struct {
	CapacityBytes   float64 `json:"capacity_bytes"`
	WeightsBytes    float64 `json:"weights_bytes"`
	ActivationBytes float64 `json:"activation_bytes"`
	OverheadBytes   float64 `json:"runtime_overhead_bytes"`
	KVBytes         float64 `json:"kv_cache_bytes"`
	BytesPerToken   float64 `json:"kv_bytes_per_token"`
	// TokensPerRank is the usable KV capacity (floored to whole blocks).
	TokensPerRank int `json:"kv_tokens_per_rank"`
	Blocks        int `json:"kv_blocks_per_rank"`
}

// WeightsPerRank estimates the resident weight bytes on one GPU of a worker
// with the given shape. Linear layers use the checkpoint precision;
// embeddings and the LM head stay in BF16 and are vocab-parallel over TP.
func WeightsPerRank(m *catalog.Model, s input.Shape) float64 {
	tp := float64(s.Tensor)
	dense := float64(m.Layers) * (m.AttentionParamsPerLayer() + m.DenseMLPParamsPerLayer() + m.SharedExpertParamsPerLayer()) / tp
	experts := 0.0
	if m.IsMoE() {
		experts = float64(m.Layers) * float64(m.Experts) * m.ExpertParams() / float64(s.MoETensor*s.MoEExpert)
	}
	return (dense+experts)*m.WeightBytes + m.EmbeddingParams()/tp*2
}

// ActivationsPerRank estimates the peak activation memory the engine profiles
// at startup: one max_batched_tokens forward pass in BF16 (gate/up output,
// a few hidden-sized buffers, the fused QKV output) plus FP32 logits for
// max_sequences sampled rows. Calibrated so Qwen3-32B at 8192 tokens gives
// AISimulate's captured 1.48 GB.
func ActivationsPerRank(m *catalog.Model, w WorkerConfig) float64 {
	tp := float64(w.Shape.Tensor)
	inter := float64(m.Intermediate) / tp
	if m.IsMoE() {
		inter = float64(m.ExpertsPerToken*m.MoEIntermediate)/float64(w.Shape.MoETensor) + float64(m.SharedExpertInt)/tp
	}
	qkv := float64(m.Heads*m.HeadDim+2*m.KVHeads*m.HeadDim) / tp
	perToken := (2*inter + 4*float64(m.Hidden) + qkv) * 2
	logits := float64(w.MaxSequences) * float64(m.Vocab) / tp * 4
	return float64(w.MaxBatchedTokens)*perToken + logits
}

// KVCapacity computes the per-rank KV-cache capacity with the backend's
// accounting (contract §14.2):
//
//	vLLM:    kv = capacity × fraction − (weights + activations + overhead)
//	TRT-LLM: kv = (capacity − (weights + activations + overhead)) × fraction
//	SGLang:  kv = (capacity − overhead) × fraction − weights
//
// where overhead is the runtime overhead plus NCCL buffers for the TP size.
func KVCapacity(m *catalog.Model, g catalog.GPU, w WorkerConfig) (Memory, error) {
	mem := Memory{
		CapacityBytes:   g.MemoryBytes,
		WeightsBytes:    WeightsPerRank(m, w.Shape),
		ActivationBytes: ActivationsPerRank(m, w),
		OverheadBytes:   catalog.RuntimeOverheadBytes + catalog.NCCLMemBytes(w.Shape.Tensor),
		BytesPerToken:   m.KVBytesPerToken(w.Shape.Tensor),
	}
	frac := w.MemoryFraction
	nonKV := mem.WeightsBytes + mem.ActivationBytes + mem.OverheadBytes
	switch w.Backend {
	case output.BackendSGLang:
		mem.KVBytes = (mem.CapacityBytes-mem.OverheadBytes)*frac - mem.WeightsBytes
	case output.BackendTRTLLM:
		mem.KVBytes = (mem.CapacityBytes - nonKV) * frac
	default:
		mem.KVBytes = mem.CapacityBytes*frac - nonKV
	}
	if w.FixedBlocks > 0 {
		if nonKV+float64(w.FixedBlocks*w.BlockSize)*mem.BytesPerToken > mem.CapacityBytes {
			return mem, fmt.Errorf("%d fixed KV blocks do not fit next to %.1f GB of weights on %s", w.FixedBlocks, mem.WeightsBytes/1e9, g.ID)
		}
		mem.KVBytes = float64(w.FixedBlocks*w.BlockSize) * mem.BytesPerToken
	}
	if mem.KVBytes <= 0 {
		return mem, fmt.Errorf("weights (%.1f GB) and overheads leave no KV-cache memory on %s with tensor=%d",
			mem.WeightsBytes/1e9, g.ID, w.Shape.Tensor)
	}
	tokens := int(math.Floor(mem.KVBytes / mem.BytesPerToken))
	mem.Blocks = tokens / w.BlockSize
	mem.TokensPerRank = mem.Blocks * w.BlockSize
	return mem, nil
}
