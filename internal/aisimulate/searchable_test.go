package aisimulate_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
)

// TestSystemProblems: where SystemProblems refuses a document's systems, and when the document
// brings what the wheel lacks.
func TestSystemProblems(t *testing.T) {
	cases := []struct {
		name string
		doc  string
		want []string // problem paths
	}{
		{"a system with data", `engine: {hardware: h200_sxm}`, nil},
		{"unknown system", `engine: {hardware: gb10}`, []string{"engine.hardware"}},
		{"estimate-only system", `engine: {hardware: h100_pcie}`, []string{"engine.hardware"}},
		{"estimate-only, every backend", `engine: {hardware: l4, backend: {choices: [vllm, sglang, trtllm]}}`, []string{"engine.hardware"}},
		{"estimate-only with systems_paths", `engine: {hardware: l4, systems_paths: [/data]}`, nil},
		{"estimate-only with the legacy systems_path", `engine: {hardware: a30, systems_path: /data}`, nil},
		{"estimate-only with a worker's systems_paths", `engine: {hardware: a30, workers: {aggregated: {timing: {systems_paths: [/data]}}}}`, nil},
		{"estimate-only with an FPM profile", `engine: {hardware: a100_pcie, fpm_profile: {model: m}}`, nil},
		{"unknown system with systems_paths", `engine: {hardware: gb10, systems_paths: [/data]}`, []string{"engine.hardware"}},
		{"b60, default backends", `engine: {hardware: b60}`, nil},
		{"b60, vLLM", `engine: {hardware: b60, backend: vllm}`, nil},
		{"b60, SGLang", `engine: {hardware: b60, backend: sglang}`, []string{"engine.backend"}},
		{"b60, SGLang and TRT-LLM", `engine: {hardware: b60, backend: {choices: [sglang, trtllm]}}`, []string{"engine.backend"}},
		{"hardware auto", `engine: {hardware: auto}`, nil},
		{"per-role systems", `engine: {hardware: h200_sxm, workers: {prefill: {hardware: h100_pcie}, decode: {hardware: gb10}}}`,
			[]string{"engine.workers.prefill.hardware", "engine.workers.decode.hardware"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := aisimulate.DecodeDocument([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range aisimulate.SystemProblems(doc) {
				got = append(got, p.PathString())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
