package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/golden"
)

const goldenInput = `
traffic:
  source: {type: synthetic, input_tokens: 512, output_tokens: 32}
  load: {type: kv_capacity_fraction, fraction: {choices: [0.01, 0.02]}}
  stop: {requests: 24}
engine:
  model: meta-llama/Llama-3.1-8B-Instruct
  hardware: h200_sxm
  backend: {choices: [vllm, sglang]}
  workers: {aggregated: {}, prefill: {}, decode: {}} # the default engine.mode domain's roles
evaluation: {sla: {ttft_ms: 400, itl_ms: 25}}
optimization: {target: throughput_per_gpu, strict_sla: true, constraints: {max_candidate_gpus: 2}}
optimizer: {max_trials: 8, seed: 3}
`

func runRecommend(t *testing.T, doc string, extra ...string) (dir string, code int, stdout, stderr string) {
	t.Helper()
	t.Setenv(EnvFixedTime, "2026-01-02T03:04:05Z")
	tmp := t.TempDir()
	cfg := filepath.Join(tmp, "input.yaml")
	if err := os.WriteFile(cfg, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(tmp, "out")
	var out, errb bytes.Buffer
	code = Recommend(context.Background(), Options{ConfigPath: cfg, OutputDir: dir, Format: "json", Sets: extra, Stdout: &out, Stderr: &errb})
	return dir, code, out.String(), errb.String()
}

func TestRecommendGoldenFiles(t *testing.T) {
	dir, code, _, stderr := runRecommend(t, goldenInput)
	if code != aisimulate.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	files := []string{output.RecommendationFile, output.EventsFile, "recommendations/0001.yaml"}
	for _, f := range files {
		got, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		golden.Assert(t, filepath.Join("testdata", "golden", strings.ReplaceAll(f, "/", "_")), got)
	}
}

// The files parse back into the same structures the run produced, and
// agree with each other (views ↔ YAMLs ↔ ledger ↔ stdout rows).
func TestRecommendOutputsRoundTrip(t *testing.T) {
	dir, code, stdout, stderr := runRecommend(t, goldenInput, "optimizer.max_trials=20")
	if code != aisimulate.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	sweep, err := output.ReadSweepResult(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Re-encoding what was read gives the identical file: nothing was lost.
	again, err := output.MarshalCanonical(sweep)
	if err != nil {
		t.Fatal(err)
	}
	onDisk, _ := os.ReadFile(filepath.Join(dir, output.RecommendationFile))
	if diff := cmp.Diff(string(onDisk), string(again)); diff != "" {
		t.Errorf("recommendation.json does not round-trip (-file +reencoded):\n%s", diff)
	}
	recs, err := output.ReadRecommendations(dir)
	if err != nil {
		t.Fatal(err)
	}
	sel := sweep.Selected()
	if len(sel) == 0 || len(recs) != len(sel) {
		t.Fatalf("%d selected, %d YAML files", len(sel), len(recs))
	}
	for i, c := range sel {
		// JSON and YAML both decode numbers as float64 into map[string]any,
		// so the decoded trees are directly comparable.
		want := map[string]any{}
		data, _ := yaml.Marshal(c.PredictionConfig)
		_ = yaml.Unmarshal(data, &want)
		if diff := cmp.Diff(want, recs[i]); diff != "" {
			t.Errorf("recommendations/%04d.yaml != %s.prediction_config (-want +got):\n%s", i+1, c.CandidateID, diff)
		}
		if _, bad := recs[i]["optimization"]; bad {
			t.Errorf("saved YAML %d contains optimization", i+1)
		}
	}
	f, _ := os.Open(filepath.Join(dir, output.EventsFile))
	defer f.Close()
	events, err := output.ReadEvents(f)
	if err != nil {
		t.Fatal(err)
	}
	// AISimulate's ledger: requested_config with the applied budget, then each candidate record
	// that is not a cache hit, in candidate order, whole.
	if len(events) == 0 || events[0].Event != output.EventRequestedConfig {
		t.Fatalf("the ledger does not start with requested_config: %+v", events)
	}
	if n, ok := events[0].MaxTrials(); !ok || n != 20 {
		t.Errorf("requested_config max_trials = %d, %v; want the applied 20", n, ok)
	}
	var recorded []output.Candidate
	for _, e := range events[1:] {
		c, err := e.Candidate()
		if err != nil {
			t.Fatalf("%s: %v", e.Event, err)
		}
		recorded = append(recorded, *c)
	}
	var want []output.Candidate
	for _, c := range sweep.Candidates {
		if c.Provenance["cache_hit"] != true {
			want = append(want, c)
		}
	}
	if diff := cmp.Diff(want, recorded); diff != "" {
		t.Errorf("candidate_completed records (-recommendation.json +events):\n%s", diff)
	}
	c := sweep.Counts
	if c.Evaluated != c.Feasible+c.Infeasible+c.TimedOut+c.Failed || c.Evaluated+c.Unsupported != len(sweep.Candidates) {
		t.Errorf("inconsistent counts %+v for %d candidates", c, len(sweep.Candidates))
	}
	var rows []output.Row
	if err := yaml.Unmarshal([]byte(stdout), &rows); err != nil {
		t.Fatal(err)
	}
	for i, r := range rows {
		if r.Rank != i+1 || r.ConfigPath != output.RecommendationPath(dir, i) || *r.Score != *sel[i].Score {
			t.Errorf("row %d = %+v, candidate %s score %v", i, r, sel[i].CandidateID, *sel[i].Score)
		}
	}
	p := sweep.Provenance
	if p.Implementation != "aisim" || p.CreatedAt != "2026-01-02T03:04:05Z" || !strings.HasPrefix(p.InputFingerprint, "sha256:") || p.RunID == "" {
		t.Errorf("provenance %+v", p)
	}
}

func TestOverwriteKeepsForeignFiles(t *testing.T) {
	dir, code, _, stderr := runRecommend(t, goldenInput)
	if code != aisimulate.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	foreign := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(foreign, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	stale := output.RecommendationPath(dir, 98)
	if err := os.WriteFile(stale, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(filepath.Dir(dir), "input.yaml")
	var out, errb bytes.Buffer
	opts := Options{ConfigPath: cfg, OutputDir: dir, Format: "table", Stdout: &out, Stderr: &errb}
	if code := Recommend(context.Background(), opts); code != aisimulate.ExitInvalidInput || !strings.Contains(errb.String(), "is not empty") {
		t.Fatalf("without --overwrite: exit %d, stderr %q", code, errb.String())
	}
	opts.Overwrite = true
	if code := Recommend(context.Background(), opts); code != aisimulate.ExitOK {
		t.Fatalf("with --overwrite: exit %d, stderr %q", code, errb.String())
	}
	if _, err := os.Stat(foreign); err != nil {
		t.Errorf("foreign file removed: %v", err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale numbered YAML kept: %v", err)
	}
}
