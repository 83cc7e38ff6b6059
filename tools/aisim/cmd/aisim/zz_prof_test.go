package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/dgdr-operator/dgdr-operator/tools/aisim/app"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/trace"
)

func TestZZProf(t *testing.T) {
	dir := t.TempDir()
	f, _ := os.Create(filepath.Join(dir, "t.jsonl"))
	_ = trace.Generate(f, trace.GenerateOptions{Seed: 8, Requests: 20000, Rate: 20, PrefixGroups: 16, PrefixTokens: 2048, InputTokens: 3072, OutputTokens: 256, BlockSize: 512})
	f.Close()
	os.WriteFile(filepath.Join(dir, "in.yaml"), []byte(fmt.Sprintf(`engine: {model: meta-llama/Llama-3.1-8B-Instruct, hardware: h200_sxm}
optimization: {strict_sla: true, constraints: {max_candidate_gpus: 8}}
evaluation: {sla: {ttft_ms: 500, itl_ms: 25}}
traffic:
  source: {type: trace, paths: [%s], format: mooncake}
  load: {type: trace_timestamps, speedup: 2}
`, filepath.Join(dir, "t.jsonl"))), 0o644)
	code := app.Recommend(context.Background(), app.Options{ConfigPath: filepath.Join(dir, "in.yaml"), OutputDir: filepath.Join(dir, "out"), Format: "json", Stdout: io.Discard, Stderr: os.Stderr})
	if code != 0 {
		t.Fatal(code)
	}
}
