package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/admission"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/app"
)

// topK is how many of each tool's ranking P9 compares beyond the first.
const topK = 5

// benchSideBySide (P9): the demo's requests (examples/demo, examples/demo/trace), lowered as
// admission and the operator lower them, searched by aisim (in process) and by the real
// `aisimulate recommend` of the upstream venv (a process, as the search container runs it), one
// request after the other in the same run. The ratio is the real tool's total wall time over
// aisim's; the extra reports, per request, whether the two agree on the top candidate's backend,
// mode and GPUs, and how many of aisim's first topK candidates are among the real tool's first
// topK: by shape (backend, mode, GPUs) and by configuration (backend, mode and each role's tensor
// parallelism and replicas), each counted once (a multiset intersection) out of the shorter of
// the two lists (a Pareto front's first entries for a pareto request). trials > 0 replaces each
// request's optimizer.max_trials (the real tool spends seconds of CPU per candidate). It is a
// measurement with no goal.
func benchSideBySide(root string, trials int) (figure, error) {
	aisimulateBin := filepath.Join(root, "bin", "upstream", "bin", "aisimulate")
	if _, err := os.Stat(aisimulateBin); err != nil {
		return figure{}, fmt.Errorf("P9 runs the real AISimulate of the upstream venv, and %s is missing: run make upstream", aisimulateBin)
	}
	files := demoRequests(root)
	dir, err := os.MkdirTemp("", "bench-p9-")
	if err != nil {
		return figure{}, err
	}
	defer os.RemoveAll(dir)
	var aisimTotal, realTotal time.Duration
	var agree, shapes, configs, compared int
	var per []string
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		input, err := loweredInput(root, f, trials)
		if err != nil {
			return figure{}, fmt.Errorf("%s: %w", f, err)
		}
		cfg := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(cfg, input, 0o644); err != nil {
			return figure{}, err
		}
		aisimOut, realOut := filepath.Join(dir, name+"-aisim"), filepath.Join(dir, name+"-aisimulate")
		var stderr strings.Builder
		start := time.Now()
		if code := app.Recommend(context.Background(), app.Options{ConfigPath: cfg, OutputDir: aisimOut, Format: "json", Stdout: io.Discard, Stderr: &stderr}); code != 0 {
			return figure{}, fmt.Errorf("%s: aisim recommend exited %d: %s", name, code, stderr.String())
		}
		aisimTime := time.Since(start)
		cmd := exec.Command(aisimulateBin, "recommend", "--config", cfg, "--output-dir", realOut, "--format", "json")
		cmd.Env = append(os.Environ(), "HF_HUB_OFFLINE=1")
		start = time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			return figure{}, fmt.Errorf("%s: aisimulate recommend: %v\n%s", name, err, tail(string(out), 2000))
		}
		realTime := time.Since(start)
		aisimTotal += aisimTime
		realTotal += realTime
		a, err := topCandidates(aisimOut, topK)
		if err != nil {
			return figure{}, fmt.Errorf("%s (aisim): %w", name, err)
		}
		r, err := topCandidates(realOut, topK)
		if err != nil {
			return figure{}, fmt.Errorf("%s (aisimulate): %w", name, err)
		}
		same := a[0].shape == r[0].shape
		if same {
			agree++
		}
		n := min(len(a), len(r))
		s, c := overlap(a[:n], r[:n], func(t ranked) string { return t.shape }), overlap(a[:n], r[:n], func(t ranked) string { return t.config })
		shapes, configs, compared = shapes+s, configs+c, compared+n
		per = append(per, fmt.Sprintf("%s: aisim %.1fs %s, aisimulate %.0fs %s, top agrees=%t, top %d shapes %d/%d, configs %d/%d (aisim %s; aisimulate %s)",
			name, aisimTime.Seconds(), a[0].shape, realTime.Seconds(), r[0].shape, same, topK, s, n, c, n, joinConfigs(a[:n]), joinConfigs(r[:n])))
	}
	return figure{
		id: "P9", name: "aisimulate_over_aisim_wall", ratio: realTotal.Seconds() / aisimTotal.Seconds(), isRatio: true, measurement: true,
		extra: fmt.Sprintf("aisim_s=%.1f aisimulate_s=%.0f top_agrees=%d/%d top%d_shapes=%d/%d top%d_configs=%d/%d",
			aisimTotal.Seconds(), realTotal.Seconds(), agree, len(files), topK, shapes, compared, topK, configs, compared),
		note: "the demo's requests, lowered, searched by aisim in process and by the real aisimulate recommend (one process each)" + trialsNote(trials) + ": " + strings.Join(per, "; "),
	}, nil
}

// demoRequests lists the requests make demo applies (examples/demo, then examples/demo/trace).
func demoRequests(root string) []string {
	files, _ := filepath.Glob(filepath.Join(root, "examples", "demo", "*.yaml"))
	traces, _ := filepath.Glob(filepath.Join(root, "examples", "demo", "trace", "*.yaml"))
	return append(files, traces...)
}

func trialsNote(trials int) string {
	if trials > 0 {
		return fmt.Sprintf(" with optimizer.max_trials %d", trials)
	}
	return ""
}

// loweredInput is the effective input of an example request as the operator computes it
// (admission's defaults with the shipped GPU SKU, then lowering), as YAML, with a trace source
// pointing at the sample trace the demo's ConfigMap holds.
func loweredInput(root, path string, trials int) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	d := &v1beta2.DynamoGraphDeploymentRequest{}
	if err := yaml.UnmarshalStrict(data, d); err != nil {
		return nil, err
	}
	if errs := admission.Default(d, admission.DefaultingOptions{DefaultGPUSKU: "h200_sxm"}); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	in, errs := aisimulate.Lower(&d.Spec, aisimulate.Options{})
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	doc := in.Document
	if traffic, ok := doc["traffic"].(map[string]any); ok {
		if source, ok := traffic["source"].(map[string]any); ok && source["type"] == "trace" {
			source["paths"] = []any{filepath.Join(root, "examples", "traces", "mooncake-sample.jsonl")}
		}
	}
	if trials > 0 {
		optimizer, _ := doc["optimizer"].(map[string]any)
		if optimizer == nil {
			optimizer = map[string]any{}
			doc["optimizer"] = optimizer
		}
		optimizer["max_trials"] = trials
	}
	j, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	return yaml.JSONToYAML(j)
}

// ranked is one selected candidate of an output directory: its shape (backend/mode/GPUs) and
// its configuration (the shape's backend and mode with each role's tensor parallelism and
// replicas).
type ranked struct {
	shape, config string
	gpus          int
}

// topCandidates describes the first k selected candidates of an output directory, in view order.
func topCandidates(dir string, k int) ([]ranked, error) {
	sweep, err := output.ReadSweepResult(filepath.Join(dir, output.RecommendationFile))
	if err != nil {
		return nil, err
	}
	sel := sweep.Selected()
	if len(sel) == 0 {
		return nil, fmt.Errorf("no selected candidate")
	}
	var out []ranked
	for _, c := range sel[:min(k, len(sel))] {
		if c.PredictionConfig == nil {
			return nil, fmt.Errorf("%s has no prediction_config", c.CandidateID)
		}
		e := c.PredictionConfig.Engine
		var roles []string
		for _, r := range []struct {
			name string
			w    *output.Worker
		}{{"agg", e.Workers.Aggregated}, {"prefill", e.Workers.Prefill}, {"decode", e.Workers.Decode}} {
			if r.w != nil {
				roles = append(roles, fmt.Sprintf("%s tp%dx%d", r.name, max(r.w.Parallelism.Tensor, 1), max(r.w.Parallelism.Replicas, 1)))
			}
		}
		out = append(out, ranked{
			shape:  fmt.Sprintf("%s/%s/%dgpu", e.Backend, e.Mode, c.UsedGPUs),
			config: fmt.Sprintf("%s/%s %s", e.Backend, e.Mode, strings.Join(roles, ", ")),
			gpus:   c.UsedGPUs,
		})
	}
	return out, nil
}

// overlap counts the keys of a that are among those of b, each of b's matched once.
func overlap(a, b []ranked, key func(ranked) string) int {
	left := map[string]int{}
	for _, t := range b {
		left[key(t)]++
	}
	n := 0
	for _, t := range a {
		if left[key(t)] > 0 {
			left[key(t)]--
			n++
		}
	}
	return n
}

func joinConfigs(ts []ranked) string {
	var s []string
	for _, t := range ts {
		s = append(s, fmt.Sprintf("%s (%d GPUs)", t.config, t.gpus))
	}
	return strings.Join(s, " | ")
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
