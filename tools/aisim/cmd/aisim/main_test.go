package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
)

var binary string

// TestMain builds the real binary once; every test runs it as a process.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "aisim-cli")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "aisim")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		panic("building aisim: " + err.Error())
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type res struct {
	code           int
	stdout, stderr string
}

func aisim(t *testing.T, dir string, args ...string) res {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "AISIM_FIXED_TIME=2026-01-02T03:04:05Z")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return res{code, out.String(), errb.String()}
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// allRoles is engine.workers with the worker role AISimulate requires for each mode of the
// default engine.mode domain (aggregated and disaggregated); {} takes the defaults.
const allRoles = "workers: {aggregated: {}, prefill: {}, decode: {}}"

// The document shape the operator's lowering emits (its underlay gives the default modes their
// worker roles).
const operatorDoc = `{engine: {model: meta-llama/Llama-3.1-8B-Instruct, hardware: h200_sxm, backend: {choices: [vllm, sglang]}, ` + allRoles + `},
optimization: {target: throughput_per_gpu, strict_sla: true, constraints: {max_candidate_gpus: 8}}, optimizer: {max_trials: 64},
evaluation: {sla: {ttft_ms: 500, itl_ms: 30}}, traffic: {source: {type: synthetic, input_tokens: 1024, output_tokens: 128},
load: {type: kv_capacity_fraction, fraction: {range: {min: 0.1, max: 1.0}}}, stop: {requests: 200}}}`

func TestRecommendTableDefaultOutputDir(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "in.yaml", operatorDoc)
	r := aisim(t, dir, "recommend", "-c", "in.yaml")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.HasPrefix(r.stdout, "aisim recommendations") || !strings.Contains(r.stdout, "1: score=") ||
		!strings.Contains(r.stdout, "Saved full result to: aisimulate-output/recommendation.json") {
		t.Errorf("stdout:\n%s", r.stdout)
	}
	for _, f := range []string{"recommendation.json", "execution-events.jsonl", "recommendations/0001.yaml"} {
		if _, err := os.Stat(filepath.Join(dir, "aisimulate-output", f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
	// A second run into the same, now non-empty directory is refused.
	if r := aisim(t, dir, "recommend", "-c", "in.yaml"); r.code != 2 || !strings.Contains(r.stderr, "--output-dir: ") {
		t.Errorf("rerun without --overwrite: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := aisim(t, dir, "recommend", "-c", "in.yaml", "--overwrite"); r.code != 0 {
		t.Errorf("rerun with --overwrite: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestRecommendJSONModelOnlyDocument(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "in.yaml", `{engine: {model: meta-llama/Llama-3.1-8B-Instruct, hardware: h200_sxm, `+allRoles+`}, optimization: {},
traffic: {source: {type: synthetic, input_tokens: 1024, output_tokens: 128}, load: {type: concurrency, concurrency: 10}, stop: {requests: 1000}}}`)
	r := aisim(t, dir, "recommend", "-c", "in.yaml", "--output-dir", "out", "--format", "json", "--set", "optimizer.max_trials=12")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var rows []output.Row
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil {
		t.Fatalf("stdout is not a JSON array of rows: %v\n%s", err, r.stdout)
	}
	if len(rows) == 0 || rows[0].Rank != 1 || rows[0].Score == nil {
		t.Fatalf("rows = %+v", rows)
	}
	for _, row := range rows {
		if _, err := os.Stat(filepath.Join(dir, row.ConfigPath)); err != nil {
			t.Errorf("config_path %s: %v", row.ConfigPath, err)
		}
	}
	sweep, err := output.ReadSweepResult(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	if len(sweep.Candidates) != 12 || sweep.Provenance.Implementation != "aisim" {
		t.Errorf("%d candidates, provenance %+v", len(sweep.Candidates), sweep.Provenance)
	}
	// Saved recommendations replay through predict.
	p := aisim(t, dir, "predict", "-c", rows[0].ConfigPath, "--output-dir", "pred", "--format", "json")
	if p.code != 0 {
		t.Fatalf("predict of %s: exit %d: %s", rows[0].ConfigPath, p.code, p.stderr)
	}
	s, err := output.ParsePrediction([]byte(p.stdout))
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := s.Metric("completed_requests"); n != 1000 {
		t.Errorf("completed_requests = %v, want 1000", n)
	}
}

func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	// engine is an engine section with the worker roles of the default engine.mode domain and
	// fields (written "k: v, ") ahead of them: each document is complete but for what its case
	// is about.
	engine := func(fields string) string { return "engine: {" + fields + allRoles + "}" }
	cases := []struct {
		name   string
		doc    string
		args   []string
		code   int
		stderr string // exact first line, with <file> for the config path
	}{
		{"unknown field", engine("model: m, hardware: h200_sxm, foo: 1, ") + "\noptimization: {}", nil, 2, "<file>: engine.foo: unknown field"},
		{"not supported", engine("model: m, hardware: h200_sxm, backend: vllm, speculation: {kind: ngram, num_speculative_tokens: 1, acceptance_rates: [0.5]}, ") + "\noptimization: {}", nil, 2, "<file>: engine.speculation: not supported by aisim"},
		// The contract's own rules (internal/aisimulate) reject before aisim's decoding.
		{"float for int", engine("model: m, hardware: h200_sxm, ") + "\noptimization: {}\ntraffic: {source: {type: synthetic, input_tokens: 1024.0}, load: {type: concurrency}, stop: {requests: 1}}", nil, 2, "<file>: traffic.source.input_tokens: must be written as an integer, got 1024.0"},
		{"contract rule", engine("model: m, hardware: h200_sxm, ") + "\noptimization: {target: goodput}", nil, 2, "<file>: optimization.target: "},
		{"non-finite number", engine("model: m, hardware: h200_sxm, ") + "\nevaluation: {sla: {ttft_ms: .inf}}\noptimization: {}", nil, 2, "<file>: evaluation.sla.ttft_ms: .inf is not a finite number"},
		{"duplicate key", engine("model: m, hardware: h200_sxm, ") + "\noptimization: {}\noptimization: {}", nil, 2, "<file>: optimization: duplicate key"},
		{"unknown hardware", engine("model: Qwen/Qwen3-8B, hardware: h900, ") + "\noptimization: {}", nil, 2, `<file>: engine.hardware: unknown hardware "h900" (known: a100_sxm, b200_sxm, b300_sxm, gb200, gb300, h100_sxm, h200_sxm, l40s)`},
		{"unknown model", engine("model: acme/Nope, hardware: h200_sxm, ") + "\noptimization: {}", nil, 2, "<file>: engine.model: unknown model"},
		{"model fits nowhere", engine("model: meta-llama/Llama-3.1-70B-Instruct, hardware: l40s, ") + "\noptimization: {constraints: {max_candidate_gpus: 1}}", nil, 2, "<file>: engine: no viable parallel configuration"},
		{"bad --set", engine("model: Qwen/Qwen3-8B, hardware: h200_sxm, ") + "\noptimization: {}", []string{"--set", "engine.model.x=1"}, 2, "<file>: --set engine.model.x: engine.model is a string, not a mapping"},
		{"bad format", engine("model: Qwen/Qwen3-8B, hardware: h200_sxm, ") + "\noptimization: {}", []string{"--format", "xml"}, 2, `--format: must be table or json, got "xml"`},
		{"no feasible candidate", "engine: {model: Qwen/Qwen3-8B, hardware: h200_sxm, mode: aggregated, workers: {aggregated: {}}}\nevaluation: {sla: {ttft_ms: 0.001}}\noptimization: {strict_sla: true, constraints: {max_candidate_gpus: 2}}\ntraffic: {source: {type: synthetic}, load: {type: concurrency}, stop: {requests: 10}}", nil, 1, "no feasible candidate found; saved full result to: "},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			file := writeFile(t, dir, strings.ReplaceAll(tc.name, " ", "_")+".yaml", tc.doc)
			out := filepath.Join(dir, "out", string(rune('a'+i)))
			r := aisim(t, dir, append([]string{"recommend", "-c", file, "--output-dir", out}, tc.args...)...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %q", r.code, tc.code, r.stderr)
			}
			want := strings.ReplaceAll(tc.stderr, "<file>", file)
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if got := lines[len(lines)-1]; !strings.HasPrefix(got, want) {
				t.Errorf("stderr %q, want prefix %q", r.stderr, want)
			}
			_, err := os.Stat(filepath.Join(out, "recommendation.json"))
			if tc.code == 2 && err == nil {
				t.Errorf("invalid input wrote recommendation.json")
			}
			if tc.code == 1 {
				// Exit 1 still leaves the full ledger behind: AISimulate's, requested_config then a
				// candidate_completed record per settled candidate (no end event), none feasible.
				sweep, err := output.ReadSweepResult(out)
				if err != nil || sweep.Counts.Feasible != 0 || sweep.Counts.Infeasible == 0 {
					t.Errorf("result %+v, err %v", sweep, err)
				}
				f, err := os.Open(filepath.Join(out, "execution-events.jsonl"))
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				ledger, err := output.ReadEvents(f)
				if err != nil || len(ledger) < 2 || ledger[0].Event != output.EventRequestedConfig {
					t.Fatalf("ledger %d events, err %v; want requested_config then the candidates", len(ledger), err)
				}
				for _, e := range ledger[1:] {
					if c, err := e.Candidate(); err != nil || c.Status == output.StatusFeasible {
						t.Errorf("ledger record %s: %v, %v", e.Event, c, err)
					}
				}
			}
		})
	}
	if r := aisim(t, dir, "recommend"); r.code != 2 {
		t.Errorf("missing -c: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestPredict(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "p.yaml", `engine: {model: Qwen/Qwen3-32B-FP8, hardware: h200_sxm, backend: vllm}
traffic: {source: {type: synthetic, input_tokens: 1024, output_tokens: 128}, load: {type: concurrency, concurrency: 16}, stop: {requests: 64}}`)
	r := aisim(t, dir, "predict", "-c", "p.yaml", "--output-dir", "out", "--format", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	s, err := output.ParsePrediction([]byte(r.stdout))
	if err != nil {
		t.Fatal(err)
	}
	m := s.Report()
	if m["mean_ttft_ms"] <= 0 || m["p99_tpot_ms"] < m["median_tpot_ms"] || m["p90_e2e_latency_ms"] <= 0 || m["mean_itl_ms"] <= 0 || m["output_throughput_tok_s"] <= 0 ||
		m["min_ttft_ms"] > m["max_ttft_ms"] || m["gpu_hours"] <= 0 {
		t.Errorf("report %v", m)
	}
	if len(s.PowerDiagnostics) != 0 {
		t.Error("stdout carries power_diagnostics, which only prediction.json has")
	}
	pred, err := output.ReadPrediction(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	if len(pred.PowerDiagnostics) == 0 {
		t.Error("prediction.json has no power_diagnostics")
	}
	// The simulator's own speed differs between two runs.
	for _, k := range []string{"wall_time_ms", "processed_tokens_per_s", "processed_output_tokens_per_s"} {
		s.Metrics[k], pred.Metrics[k] = nil, nil
	}
	if diff := cmp.Diff(s, pred.Summary()); diff != "" {
		t.Errorf("prediction.json differs from stdout (-stdout +file):\n%s", diff)
	}
	table := aisim(t, dir, "predict", "-c", "p.yaml", "--output-dir", "out2")
	if table.code != 0 || !strings.Contains(table.stdout, "TTFT (ms)") || !strings.Contains(table.stdout, "KV-cache capacity (tokens): aggregated=73") ||
		!strings.Contains(table.stdout, "Saved full report to: out2/prediction.json") {
		t.Errorf("table output (exit %d):\n%s", table.code, table.stdout)
	}
	writeFile(t, dir, "big.yaml", "engine: {model: meta-llama/Llama-3.1-70B-Instruct, hardware: l40s}")
	if r := aisim(t, dir, "predict", "-c", "big.yaml", "--output-dir", "out3"); r.code != 1 || !strings.HasPrefix(r.stderr, "aisim predict failed: kv_capacity: ") {
		t.Errorf("70B on one L40S: exit %d, stderr %q", r.code, r.stderr)
	}
	writeFile(t, dir, "rec.yaml", "engine: {model: Qwen/Qwen3-8B, hardware: h200_sxm}\noptimization: {}")
	if r := aisim(t, dir, "predict", "-c", "rec.yaml", "--output-dir", "out4"); r.code != 2 || !strings.Contains(r.stderr, "rec.yaml: optimization: not allowed in predict") {
		t.Errorf("recommend document to predict: exit %d, stderr %q", r.code, r.stderr)
	}
}

// SIGINT stops the search, keeps the settled ledger and exits 130.
func TestInterruptExits130(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "in.yaml", `engine: {model: Qwen/Qwen3-32B, hardware: h100_sxm, backend: {choices: [vllm, sglang, trtllm]}, `+allRoles+`}
optimization: {constraints: {max_candidate_gpus: 64}}
optimizer: {max_trials: 100000, parallelism: 1}
traffic: {source: {type: synthetic, input_tokens: 4096, output_tokens: 512}, load: {concurrency: {choices: [64, 256]}}, stop: {requests: 4000}}`)
	cmd := exec.Command(binary, "recommend", "-c", "in.yaml", "--output-dir", "out")
	cmd.Dir = dir
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	events := filepath.Join(dir, "out", "execution-events.jsonl")
	deadline := time.Now().Add(20 * time.Second)
	for {
		data, _ := os.ReadFile(events)
		if bytes.Contains(data, []byte(`"event":"candidate_completed"`)) {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatal("no candidate settled within 20s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit = %v, want 130; stderr %q", err, errb.String())
	}
	sweep, err := output.ReadSweepResult(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	if len(sweep.Candidates) == 0 {
		t.Errorf("interrupted run kept no candidates")
	}
	// The ledger keeps the record of every candidate that settled before the interruption (the
	// cache hits aside), as recommendation.json does: AISimulate's ledger has no end event.
	f, err := os.Open(events)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ledger, err := output.ReadEvents(f)
	if err != nil {
		t.Fatal(err)
	}
	var recorded, want []string
	for _, e := range ledger {
		if c, err := e.Candidate(); err == nil {
			recorded = append(recorded, c.CandidateID)
		}
	}
	for _, c := range sweep.Candidates {
		if c.Provenance["cache_hit"] != true {
			want = append(want, c.CandidateID)
		}
	}
	if len(ledger) == 0 || ledger[0].Event != output.EventRequestedConfig || !slices.Equal(recorded, want) {
		t.Errorf("ledger after the interruption: %d events, candidates %v, want requested_config then %v", len(ledger), recorded, want)
	}
}
