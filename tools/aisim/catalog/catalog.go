// Package catalog holds aisim's embedded GPU and model catalogs and parses
// Hugging Face config.json files into the architecture numbers the
// performance model needs.
package catalog

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"sigs.k8s.io/yaml"
)

//go:embed data/gpus.yaml data/models/*.json
var data embed.FS

// GPU describes one system id (all values per GPU, see data/gpus.yaml).
type GPU struct {
	ID          string  `json:"id"`
	Name        string  `json:"name"`
	MemoryBytes float64 `json:"memory_bytes"`
	MemBW       float64 `json:"mem_bw"`
	BF16FLOPS   float64 `json:"bf16_flops"`
	FP8FLOPS    float64 `json:"fp8_flops"`
	IntraNodeBW float64 `json:"intra_node_bw"`
	InterNodeBW float64 `json:"inter_node_bw"`
	GPUsPerNode int     `json:"gpus_per_node"`
	P2PLatency  float64 `json:"p2p_latency"`
}

// RuntimeOverheadBytes is AISimulate's misc.other_mem (3.5 GiB): CUDA
// context, allocator slack and library workspaces resident on every rank.
const RuntimeOverheadBytes = 3.5 * (1 << 30)

// NCCLMemBytes is AISimulate's misc.nccl_mem by tensor-parallel size.
func NCCLMemBytes(tp int) float64 {
	switch {
	case tp <= 1:
		return 0
	case tp == 2:
		return 342e6
	default:
		return 392e6
	}
}

var (
	loadOnce sync.Once
	gpus     map[string]GPU
	loadErr  error
)

func loadGPUs() {
	raw, err := data.ReadFile("data/gpus.yaml")
	if err != nil {
		loadErr = err
		return
	}
	var list []GPU
	if err := yaml.UnmarshalStrict(raw, &list); err != nil {
		loadErr = fmt.Errorf("embedded gpus.yaml: %w", err)
		return
	}
	gpus = map[string]GPU{}
	for _, g := range list {
		gpus[g.ID] = g
	}
}

// LookupGPU returns the GPU for a system id.
func LookupGPU(id string) (GPU, error) {
	loadOnce.Do(loadGPUs)
	if loadErr != nil {
		return GPU{}, loadErr
	}
	g, ok := gpus[id]
	if !ok {
		return GPU{}, fmt.Errorf("unknown hardware %q (known: %s)", id, strings.Join(GPUIDs(), ", "))
	}
	return g, nil
}

// GPUIDs lists the catalog's system ids, sorted.
func GPUIDs() []string {
	loadOnce.Do(loadGPUs)
	ids := make([]string, 0, len(gpus))
	for id := range gpus {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// ModelIDs lists the embedded models by Hugging Face id, sorted.
func ModelIDs() []string {
	entries, _ := fs.ReadDir(data, "data/models")
	var ids []string
	for _, e := range entries {
		ids = append(ids, strings.Replace(strings.TrimSuffix(e.Name(), ".json"), "__", "/", 1))
	}
	slices.Sort(ids)
	return ids
}

// LoadModel resolves engine.model: an existing local directory containing a
// Hugging Face config.json wins; otherwise the id is looked up in the
// embedded catalog (case-insensitively, since HF ids are).
func LoadModel(ref string) (*Model, error) {
	if st, err := os.Stat(ref); err == nil && st.IsDir() {
		raw, err := os.ReadFile(filepath.Join(ref, "config.json"))
		if err != nil {
			return nil, fmt.Errorf("model directory %s: %w", ref, err)
		}
		return ParseHFConfig(ref, raw)
	}
	ids := ModelIDs()
	for _, id := range ids {
		if strings.EqualFold(id, ref) {
			return loadEmbedded(id, id)
		}
	}
	// A base or instruct checkpoint of a catalogued model has the same architecture
	// (config.json differs only in generation settings): Meta-Llama-3.1-8B, Llama-3.1-70B and
	// Qwen3-32B-Base resolve to the catalogued sibling, keeping the requested id.
	for _, id := range ids {
		if variantKey(id) == variantKey(ref) {
			return loadEmbedded(id, ref)
		}
	}
	return nil, fmt.Errorf("unknown model %q: not in aisim's catalog (%s) and not a directory with a config.json", ref, strings.Join(ModelIDs(), ", "))
}

func loadEmbedded(id, as string) (*Model, error) {
	raw, err := data.ReadFile("data/models/" + strings.Replace(id, "/", "__", 1) + ".json")
	if err != nil {
		return nil, err
	}
	return ParseHFConfig(as, raw)
}

// variantKey folds the spellings of one architecture's checkpoints together: case, the
// "Meta-" prefix of Llama names and the "-Instruct" / "-Base" suffixes. Quantized variants
// (-FP8) keep their suffix: they are different checkpoints.
func variantKey(id string) string {
	k := strings.ToLower(id)
	org, name, ok := strings.Cut(k, "/")
	if !ok {
		return k
	}
	name = strings.TrimPrefix(name, "meta-")
	for _, suf := range []string{"-instruct", "-base"} {
		name = strings.TrimSuffix(name, suf)
	}
	return org + "/" + name
}

// Model is the architecture summary used by the performance model.
type Model struct {
	ID              string
	Architecture    string
	Layers          int
	Hidden          int
	Intermediate    int // dense MLP width
	Heads           int
	KVHeads         int
	HeadDim         int
	Vocab           int
	MaxContext      int
	TiedEmbeddings  bool
	Experts         int // 0 for dense models
	ExpertsPerToken int
	MoEIntermediate int
	SharedExpertInt int
	// WeightBytes is bytes per linear-layer parameter (2 for BF16, 1 for FP8).
	WeightBytes float64
	// KVBytes is bytes per cached K or V element; FP8 checkpoints use an FP8
	// KV cache, which is what AISimulate's captured Qwen3-32B-FP8 numbers
	// imply (131,072 B/token = 2 × 64 layers × 8 heads × 128 × 1 byte).
	KVBytes float64
	// FMHAFP8 runs attention (FMHA) in FP8 at the FP8 tensor-core rate (fmha_quant_mode: fp8).
	FMHAFP8 bool
	// FP8Checkpoint is set when config.json declares quant_method fp8.
	FP8Checkpoint bool
}

// Precision mode spellings understood by WithPrecision (input.Precision's normalized values).
const (
	PrecisionFloat16 = "float16"
	PrecisionFP8     = "fp8"
)

// WithPrecision returns a copy of the model with the engine's precision overrides applied
// ("" keeps the checkpoint's format):
//
//   - gemm (and moe, for routed experts) fp8: linear weights are stored and multiplied in FP8
//     (one byte per parameter, FP8 tensor-core peak), as on-the-fly FP8 quantization of a
//     BF16 checkpoint or an FP8 checkpoint does; embeddings and the LM head stay BF16;
//   - kvcache fp8 / float16: one or two bytes per cached K/V element;
//   - fmha fp8: attention at the FP8 rate.
//
// Running an FP8 checkpoint's GEMMs in 16 bit, or experts and dense layers in different
// formats, is refused: aisim does not model dequantized or mixed-format weights.
func (m *Model) WithPrecision(gemm, moe, fmha, kv string) (*Model, error) {
	out := *m
	linear := gemm
	if m.IsMoE() && moe != "" {
		if gemm != "" && gemm != moe {
			return nil, fmt.Errorf("moe_quant_mode %s with gemm_quant_mode %s: mixed-format weights are not supported by aisim", moe, gemm)
		}
		linear = moe
	}
	switch linear {
	case PrecisionFP8:
		out.WeightBytes = 1
	case PrecisionFloat16:
		if m.FP8Checkpoint {
			return nil, fmt.Errorf("16-bit GEMMs on the FP8 checkpoint %s are not supported by aisim", m.ID)
		}
	}
	switch kv {
	case PrecisionFP8:
		out.KVBytes = 1
	case PrecisionFloat16:
		out.KVBytes = 2
	}
	out.FMHAFP8 = fmha == PrecisionFP8
	return &out, nil
}

// IsMoE reports whether the model has routed experts.
func (m *Model) IsMoE() bool { return m.Experts > 0 }

type hfConfig struct {
	Architectures         []string        `json:"architectures"`
	HiddenSize            int             `json:"hidden_size"`
	IntermediateSize      int             `json:"intermediate_size"`
	NumHiddenLayers       int             `json:"num_hidden_layers"`
	NumAttentionHeads     int             `json:"num_attention_heads"`
	NumKeyValueHeads      int             `json:"num_key_value_heads"`
	HeadDim               int             `json:"head_dim"`
	VocabSize             int             `json:"vocab_size"`
	MaxPositionEmbeddings int             `json:"max_position_embeddings"`
	TieWordEmbeddings     bool            `json:"tie_word_embeddings"`
	TorchDtype            string          `json:"torch_dtype"`
	Dtype                 string          `json:"dtype"`
	NumExperts            int             `json:"num_experts"`
	NumLocalExperts       int             `json:"num_local_experts"`
	NumExpertsPerTok      int             `json:"num_experts_per_tok"`
	MoEIntermediateSize   int             `json:"moe_intermediate_size"`
	SharedExpertInterSize int             `json:"shared_expert_intermediate_size"`
	QuantizationConfig    json.RawMessage `json:"quantization_config"`
	TextConfig            json.RawMessage `json:"text_config"`
}

var supportedArchitectures = map[string]bool{
	"LlamaForCausalLM":    true,
	"MistralForCausalLM":  true,
	"Qwen2ForCausalLM":    true,
	"Qwen3ForCausalLM":    true,
	"Qwen3MoeForCausalLM": true,
	"Qwen2MoeForCausalLM": true,
	"MixtralForCausalLM":  true,
}

// ParseHFConfig parses a Hugging Face config.json (unknown keys are fine:
// real configs carry many fields aisim does not need).
func ParseHFConfig(id string, raw []byte) (*Model, error) {
	var c hfConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("model %s: config.json: %w", id, err)
	}
	if len(c.Architectures) == 0 {
		return nil, fmt.Errorf("model %s: config.json has no architectures", id)
	}
	arch := c.Architectures[0]
	if !supportedArchitectures[arch] {
		return nil, fmt.Errorf("model %s: architecture %s is not supported by aisim (supported: Llama, Mistral, Qwen2/3, Qwen3-MoE, Mixtral)", id, arch)
	}
	m := &Model{
		ID: id, Architecture: arch, Layers: c.NumHiddenLayers, Hidden: c.HiddenSize,
		Intermediate: c.IntermediateSize, Heads: c.NumAttentionHeads, KVHeads: c.NumKeyValueHeads,
		HeadDim: c.HeadDim, Vocab: c.VocabSize, MaxContext: c.MaxPositionEmbeddings,
		TiedEmbeddings: c.TieWordEmbeddings, Experts: max(c.NumExperts, c.NumLocalExperts),
		ExpertsPerToken: c.NumExpertsPerTok, MoEIntermediate: c.MoEIntermediateSize,
		SharedExpertInt: c.SharedExpertInterSize, WeightBytes: 2, KVBytes: 2,
	}
	if m.KVHeads == 0 {
		m.KVHeads = m.Heads
	}
	if m.HeadDim == 0 && m.Heads > 0 {
		m.HeadDim = m.Hidden / m.Heads
	}
	if m.Experts > 0 && m.MoEIntermediate == 0 {
		m.MoEIntermediate = m.Intermediate // Mixtral names the expert width intermediate_size
	}
	if len(c.QuantizationConfig) > 0 && string(c.QuantizationConfig) != "null" {
		var q struct {
			QuantMethod string `json:"quant_method"`
		}
		if err := json.Unmarshal(c.QuantizationConfig, &q); err != nil {
			return nil, fmt.Errorf("model %s: quantization_config: %w", id, err)
		}
		if q.QuantMethod != "fp8" {
			return nil, fmt.Errorf("model %s: quantization %q is not supported by aisim (only fp8)", id, q.QuantMethod)
		}
		m.WeightBytes, m.KVBytes, m.FP8Checkpoint = 1, 1, true
	}
	var errs []error
	for name, v := range map[string]int{"hidden_size": m.Hidden, "num_hidden_layers": m.Layers,
		"num_attention_heads": m.Heads, "vocab_size": m.Vocab, "max_position_embeddings": m.MaxContext} {
		if v <= 0 {
			errs = append(errs, fmt.Errorf("%s must be > 0", name))
		}
	}
	if m.Experts == 0 && m.Intermediate <= 0 {
		errs = append(errs, errors.New("intermediate_size must be > 0"))
	}
	if m.Experts > 0 && (m.ExpertsPerToken <= 0 || m.ExpertsPerToken > m.Experts) {
		errs = append(errs, errors.New("num_experts_per_tok must be in 1..num_experts"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("model %s: config.json: %w", id, err)
	}
	return m, nil
}

// KVBytesPerToken is the KV-cache footprint of one token on one rank holding
// kvHeadsPerRank heads (K and V for every layer).
func (m *Model) KVBytesPerToken(tp int) float64 {
	return 2 * float64(m.Layers) * float64(m.KVHeadsPerRank(tp)) * float64(m.HeadDim) * m.KVBytes
}

// KVHeadsPerRank is ceil(kv_heads / tp): with tp > kv_heads the KV heads are
// replicated, so every rank still holds one.
func (m *Model) KVHeadsPerRank(tp int) int {
	return (m.KVHeads + tp - 1) / tp
}

// Param counts (elements, not bytes) of the building blocks.

// AttentionParamsPerLayer counts q, k, v and o projections.
func (m *Model) AttentionParamsPerLayer() float64 {
	q := float64(m.Heads * m.HeadDim)
	kv := float64(m.KVHeads * m.HeadDim)
	h := float64(m.Hidden)
	return h*q + 2*h*kv + q*h
}

// DenseMLPParamsPerLayer counts gate, up and down projections (0 for MoE layers).
func (m *Model) DenseMLPParamsPerLayer() float64 {
	if m.IsMoE() {
		return 0
	}
	return 3 * float64(m.Hidden) * float64(m.Intermediate)
}

// ExpertParams is one routed expert's parameters.
func (m *Model) ExpertParams() float64 { return 3 * float64(m.Hidden) * float64(m.MoEIntermediate) }

// SharedExpertParamsPerLayer covers always-active shared experts and the router.
func (m *Model) SharedExpertParamsPerLayer() float64 {
	if !m.IsMoE() {
		return 0
	}
	return 3*float64(m.Hidden)*float64(m.SharedExpertInt) + float64(m.Hidden)*float64(m.Experts)
}

// EmbeddingParams counts the input embedding and the LM head (kept in BF16
// even for FP8 checkpoints).
func (m *Model) EmbeddingParams() float64 {
	e := float64(m.Vocab) * float64(m.Hidden)
	if m.TiedEmbeddings {
		return e
	}
	return 2 * e
}

// TotalParams is an approximate parameter count (norms ignored).
func (m *Model) TotalParams() float64 {
	per := m.AttentionParamsPerLayer() + m.DenseMLPParamsPerLayer() + m.SharedExpertParamsPerLayer() +
		float64(m.Experts)*m.ExpertParams()
	return float64(m.Layers)*per + m.EmbeddingParams()
}
