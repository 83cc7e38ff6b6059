package catalog

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Parameter counts derived from the embedded configs must match the models'
// published sizes, which validates the architecture numbers.
func TestModelParameterCounts(t *testing.T) {
	cases := map[string]float64{
		"meta-llama/Llama-3.1-8B-Instruct":  8.03e9,
		"meta-llama/Llama-3.1-70B-Instruct": 70.6e9,
		"Qwen/Qwen3-8B":                     8.19e9,
		"Qwen/Qwen3-32B":                    32.8e9,
		"Qwen/Qwen3-32B-FP8":                32.8e9,
		"Qwen/Qwen3-30B-A3B":                30.5e9,
	}
	for id, want := range cases {
		m, err := LoadModel(id)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.TotalParams(); math.Abs(got-want)/want > 0.01 {
			t.Errorf("%s: %.3g params, want %.3g ± 1%%", id, got, want)
		}
	}
	if diff := cmp.Diff([]string{"Qwen/Qwen3-30B-A3B", "Qwen/Qwen3-32B", "Qwen/Qwen3-32B-FP8", "Qwen/Qwen3-8B",
		"meta-llama/Llama-3.1-70B-Instruct", "meta-llama/Llama-3.1-8B-Instruct"}, ModelIDs()); diff != "" {
		t.Errorf("ModelIDs (-want +got):\n%s", diff)
	}
}

func TestLoadModelFromDirectory(t *testing.T) {
	dir := t.TempDir()
	cfg := `{"architectures": ["MixtralForCausalLM"], "hidden_size": 4096, "intermediate_size": 14336,
"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 32000,
"max_position_embeddings": 32768, "num_local_experts": 8, "num_experts_per_tok": 2, "rope_theta": 1e6}`
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := LoadModel(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := []any{m.Experts, m.ExpertsPerToken, m.MoEIntermediate, m.HeadDim, m.WeightBytes, m.KVBytesPerToken(1)}
	want := []any{8, 2, 14336, 128, 2.0, 2.0 * 32 * 8 * 128 * 2}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if p := m.TotalParams(); math.Abs(p-46.7e9)/46.7e9 > 0.01 {
		t.Errorf("Mixtral-8x7B params = %.3g, want 46.7B", p)
	}
}

func TestLoadModelErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"architectures": ["GPT2LMHeadModel"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	awq := t.TempDir()
	if err := os.WriteFile(filepath.Join(awq, "config.json"), []byte(`{"architectures": ["LlamaForCausalLM"], "hidden_size": 8,
"intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 1, "vocab_size": 8, "max_position_embeddings": 8,
"quantization_config": {"quant_method": "awq"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		"nope/NoModel": "unknown model",
		dir:            "architecture GPT2LMHeadModel is not supported by aisim",
		awq:            `quantization "awq" is not supported by aisim`,
		t.TempDir():    "config.json",
	}
	for ref, want := range cases {
		if _, err := LoadModel(ref); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("LoadModel(%s) error = %v, want it to contain %q", ref, err, want)
		}
	}
}

func TestGPUCatalog(t *testing.T) {
	want := []string{"a100_sxm", "b200_sxm", "b300_sxm", "gb200", "gb300", "h100_sxm", "h200_sxm", "l40s"}
	if diff := cmp.Diff(want, GPUIDs()); diff != "" {
		t.Errorf("GPUIDs (-want +got):\n%s", diff)
	}
	h200, err := LookupGPU("h200_sxm")
	if err != nil {
		t.Fatal(err)
	}
	// Values from AISimulate's systems/h200_sxm.yaml (contract §14.3).
	got := []float64{h200.MemoryBytes, h200.MemBW, h200.BF16FLOPS, h200.FP8FLOPS, h200.IntraNodeBW, float64(h200.GPUsPerNode)}
	if diff := cmp.Diff([]float64{151397597184, 4.8e12, 989e12, 1978e12, 450e9, 8}, got); diff != "" {
		t.Errorf("h200_sxm (-want +got):\n%s", diff)
	}
	for _, id := range want {
		g, _ := LookupGPU(id)
		if g.MemoryBytes <= 0 || g.MemBW <= 0 || g.BF16FLOPS <= 0 || g.FP8FLOPS < g.BF16FLOPS || g.IntraNodeBW <= 0 || g.GPUsPerNode <= 0 {
			t.Errorf("%s has an incomplete entry: %+v", id, g)
		}
	}
	if _, err := LookupGPU("h900"); err == nil || !strings.Contains(err.Error(), "unknown hardware") {
		t.Errorf("LookupGPU(h900) = %v", err)
	}
}

// Issue #20: base and instruct checkpoints of a catalogued model resolve to its architecture and
// keep the requested id; quantized variants do not fold into their 16-bit sibling.
func TestLoadModelVariants(t *testing.T) {
	for ref, arch := range map[string]string{
		"meta-llama/Meta-Llama-3.1-8B": "meta-llama/Llama-3.1-8B-Instruct",
		"meta-llama/Llama-3.1-70B":     "meta-llama/Llama-3.1-70B-Instruct",
		"Qwen/Qwen3-32B-Base":          "Qwen/Qwen3-32B",
	} {
		m, err := LoadModel(ref)
		if err != nil {
			t.Fatalf("LoadModel(%s): %v", ref, err)
		}
		want, _ := LoadModel(arch)
		if m.ID != ref || m.Layers != want.Layers || m.Hidden != want.Hidden || m.WeightBytes != want.WeightBytes {
			t.Errorf("LoadModel(%s) = %+v, want %s's architecture under the requested id", ref, m, arch)
		}
	}
	if m, _ := LoadModel("Qwen/Qwen3-32B-FP8"); !m.FP8Checkpoint {
		t.Error("Qwen3-32B-FP8 must stay the FP8 checkpoint")
	}
}

// Issue #20: the precision overrides change bytes and rates, and refuse what aisim cannot model.
func TestWithPrecision(t *testing.T) {
	bf16, _ := LoadModel("Qwen/Qwen3-32B")
	fp8, err := bf16.WithPrecision(PrecisionFP8, "", "", PrecisionFP8)
	if err != nil {
		t.Fatal(err)
	}
	if fp8.WeightBytes != 1 || fp8.KVBytes != 1 || bf16.WeightBytes != 2 || bf16.KVBytes != 2 {
		t.Errorf("fp8 gemm+kv: weights %v B, kv %v B (original left %v/%v)", fp8.WeightBytes, fp8.KVBytes, bf16.WeightBytes, bf16.KVBytes)
	}
	if fp8.KVBytesPerToken(1)*2 != bf16.KVBytesPerToken(1) {
		t.Error("an FP8 KV cache holds twice the tokens")
	}
	ckpt, _ := LoadModel("Qwen/Qwen3-32B-FP8")
	if m, err := ckpt.WithPrecision("", "", PrecisionFP8, PrecisionFloat16); err != nil || m.KVBytes != 2 || !m.FMHAFP8 || m.WeightBytes != 1 {
		t.Errorf("FP8 checkpoint with a 16-bit KV cache and FP8 attention: %+v, %v", m, err)
	}
	if _, err := ckpt.WithPrecision(PrecisionFloat16, "", "", ""); err == nil || !strings.Contains(err.Error(), "not supported by aisim") {
		t.Errorf("16-bit GEMMs on an FP8 checkpoint: err = %v", err)
	}
	moe, _ := LoadModel("Qwen/Qwen3-30B-A3B")
	if _, err := moe.WithPrecision(PrecisionFP8, PrecisionFloat16, "", ""); err == nil {
		t.Error("mixed-format MoE weights must be refused")
	}
}
