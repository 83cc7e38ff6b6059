package perf

import (
	"math"

	"github.com/dgdr-operator/dgdr-operator/tools/aisim/catalog"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/input"
)

// The roofline's efficiencies and per-backend overheads are the fitted constants of
// calibrated.go (Calibrated); layerOverhead is ~6 memory-bound kernels × AISimulate's 3 µs
// mem_empirical_constant_latency per layer and step.
const layerOverhead = 6 * 3e-6

// Batch is one forward step of a worker, summed over its attention-DP ranks.
type Batch struct {
	PrefillTokens float64 // new prompt tokens computed
	PrefillPast   float64 // already-cached prompt tokens the chunks attend to
	PrefillAttn   float64 // Σ chunk × (past + chunk/2): causal attention pairs
	DecodeSeqs    float64
	DecodeKV      float64 // Σ KV length over decoding sequences
	OutputRows    float64 // rows that go through the LM head
}

// StepModel prices forward steps of one worker configuration.
type StepModel struct {
	dp, tp, moeEP     float64
	layers            float64
	denseParamsRank   float64 // linear params per rank excluding experts and LM head
	lmHeadParamsRank  float64
	expertsPerGPU     float64
	expertBytesPerGPU float64 // bytes of one expert's slice on one GPU
	expertsTotal      float64
	topK              float64
	expertParams      float64
	weightBytes       float64
	linearPeak        float64
	attnPeak          float64
	memBW             float64
	link              float64
	linkLatency       float64
	hidden            float64
	attnHeadDimRank   float64 // heads per rank × head dim
	kvBytesPerTokRank float64
	overhead          float64
	gemmEff           float64
	attnEff           float64
	commEff           float64
	arLatency         float64
	// fixedPrefill/fixedDecode > 0 replace the model (timing: {type: fixed}), seconds.
	fixedPrefill, fixedDecode float64
}

// WithFixedTiming returns a step model whose steps take prefill seconds when they compute
// prompt tokens and decode seconds otherwise (workers.<role>.timing: {type: fixed}).
func (s *StepModel) WithFixedTiming(prefill, decode float64) *StepModel {
	c := *s
	c.fixedPrefill, c.fixedDecode = prefill, decode
	return &c
}

// NewStepModel precomputes the constants for a model, GPU, backend and shape.
func NewStepModel(m *catalog.Model, g catalog.GPU, backend string, s input.Shape) *StepModel {
	c := Calibrated
	tr := c.Backends[backend]
	sm := &StepModel{
		dp: float64(s.AttentionData), tp: float64(s.Tensor), moeEP: float64(s.MoEExpert),
		layers:            float64(m.Layers),
		denseParamsRank:   float64(m.Layers) * (m.AttentionParamsPerLayer() + m.DenseMLPParamsPerLayer() + m.SharedExpertParamsPerLayer()) / float64(s.Tensor),
		lmHeadParamsRank:  float64(m.Vocab) * float64(m.Hidden) / float64(s.Tensor),
		weightBytes:       m.WeightBytes,
		linearPeak:        g.BF16FLOPS,
		attnPeak:          g.BF16FLOPS,
		memBW:             g.MemBW * c.MemEfficiency,
		link:              g.IntraNodeBW,
		linkLatency:       g.P2PLatency,
		hidden:            float64(m.Hidden),
		attnHeadDimRank:   float64(max(1, m.Heads/s.Tensor) * m.HeadDim),
		kvBytesPerTokRank: m.KVBytesPerToken(s.Tensor),
		overhead:          tr.StepOverhead + float64(m.Layers)*layerOverhead,
		gemmEff:           math.Min(0.95, tr.GEMMEfficiency),
		attnEff:           c.AttnEfficiency,
		commEff:           tr.CommEfficiency,
		arLatency:         c.AllReduceLatency,
	}
	if m.WeightBytes == 1 {
		// FP8 GEMMs: the FP8 peak at a lower efficiency, and FP8 weights stream as if they
		// were FP8StreamBytes bytes per parameter (scales, activation quantization kernels).
		sm.linearPeak = g.FP8FLOPS
		sm.gemmEff = math.Min(0.95, sm.gemmEff*c.FP8GEMMScale)
		sm.weightBytes = c.FP8StreamBytes
		if m.IsMoE() {
			sm.expertBytesPerGPU *= c.FP8StreamBytes
		}
	}
	if m.FMHAFP8 {
		sm.attnPeak = g.FP8FLOPS
	}
	if s.GPUsPerWorker() > g.GPUsPerNode {
		sm.link = g.InterNodeBW
	}
	if m.IsMoE() {
		gpus := float64(s.MoETensor * s.MoEExpert)
		sm.expertsTotal = float64(m.Experts)
		sm.expertsPerGPU = float64(m.Experts) / float64(s.MoEExpert)
		sm.expertBytesPerGPU = m.ExpertParams() / float64(s.MoETensor) * m.WeightBytes
		sm.topK = float64(m.ExpertsPerToken)
		sm.expertParams = m.ExpertParams() / gpus
	}
	return sm
}

// Time returns the latency in seconds of one forward step. Linear layers
// and attention are each priced as max(compute, memory) (roofline), then
// tensor-parallel all-reduces, expert-parallel all-to-alls and fixed
// per-step overheads are added.
func (s *StepModel) Time(b Batch) float64 {
	tokens := (b.PrefillTokens + b.DecodeSeqs) / s.dp // per rank
	if tokens <= 0 {
		return 0
	}
	if s.fixedDecode > 0 {
		if b.PrefillTokens > 0 {
			return s.fixedPrefill
		}
		return s.fixedDecode
	}
	rows := b.OutputRows / s.dp

	// Linear layers: every weight on the rank is read once per step.
	flops := 2*tokens*s.denseParamsRank + 2*rows*s.lmHeadParamsRank
	bytes := s.denseParamsRank*s.weightBytes + s.lmHeadParamsRank*2
	if s.expertsTotal > 0 {
		workerTokens := tokens * s.dp
		flops += 2 * workerTokens * s.topK * s.expertParams * s.layers
		// Only experts hit by at least one token are streamed from HBM.
		hit := 1 - math.Pow(1-s.topK/s.expertsTotal, workerTokens)
		bytes += s.layers * s.expertsPerGPU * hit * s.expertBytesPerGPU
	}
	linear := math.Max(flops/(s.linearPeak*s.gemmEff), bytes/s.memBW)

	// Attention: QKᵀ and PV over the cached context; KV is read once and the
	// new tokens' KV written once.
	attnPairs := (b.PrefillAttn + b.DecodeKV) / s.dp
	aFlops := 4 * s.layers * s.attnHeadDimRank * attnPairs
	aBytes := s.kvBytesPerTokRank * (b.DecodeKV + b.PrefillPast + b.PrefillTokens + b.DecodeSeqs) / s.dp
	attn := math.Max(aFlops/(s.attnPeak*s.attnEff), aBytes/s.memBW)

	comm := 0.0
	if s.tp > 1 {
		// Two ring all-reduces of the BF16 hidden states per layer.
		msg := tokens * s.hidden * 2
		comm += 2 * s.layers * (2*(s.tp-1)/s.tp*msg/(s.link*s.commEff) + s.arLatency)
	}
	if s.moeEP > 1 {
		// Dispatch and combine all-to-alls of the routed token copies.
		msg := tokens * s.topK * s.hidden * 2 * (s.moeEP - 1) / s.moeEP
		comm += 2 * s.layers * (msg/s.link + s.linkLatency)
	}
	return linear + attn + comm + s.overhead
}
