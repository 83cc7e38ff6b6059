package aisimulate_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/upstreamtest"
)

// TestCatalogueIsTheWheels: the generated catalogue (systems_generated.go) is what the pinned
// AISimulate of the upstream venv says about its systems (hack/upstream/systems.py): the same
// systems, memory, node size and performance data. Fails when the venv is missing.
func TestCatalogueIsTheWheels(t *testing.T) {
	var report struct {
		AISimulate string              `json:"aisimulate"`
		Systems    []aisimulate.System `json:"systems"`
	}
	dec := json.NewDecoder(bytes.NewReader(upstreamtest.RunPython(t, "systems.py", nil)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&report); err != nil {
		t.Fatal(err)
	}
	var ours []aisimulate.System
	for _, sku := range aisimulate.KnownSKUs() {
		s, _ := aisimulate.LookupSystem(sku)
		ours = append(ours, s)
	}
	if report.AISimulate != aisimulate.SystemsAISimulateVersion {
		t.Errorf("the catalogue is of aisimulate %s, the venv has %s: run make generate", aisimulate.SystemsAISimulateVersion, report.AISimulate)
	}
	if diff := cmp.Diff(report.Systems, ours); diff != "" {
		t.Errorf("the catalogue differs from the wheel's systems (-wheel +catalogue); run make generate:\n%s", diff)
	}
}

// searchDoc is a search small enough for seconds: Qwen3-8B (a model config AISimulate bundles,
// so it runs offline) on at most 2 GPUs.
func searchDoc(hardware, backend string) string {
	return `engine: {backend: ` + backend + `, mode: aggregated, hardware: ` + hardware + `, model: Qwen/Qwen3-8B, workers: {aggregated: {}}}
evaluation: {sla: {itl_ms: 25, ttft_ms: 300}}
optimization: {constraints: {max_candidate_gpus: 2}, target: throughput_per_gpu}
optimizer: {max_trials: 1}
traffic: {load: {concurrency: 8, type: concurrency}, source: {input_tokens: 512, output_tokens: 64, type: synthetic}, stop: {requests: 10}}
`
}

// TestRealAISimulateNeedsPerfData: the real AISimulate judges SystemProblems. The search it
// refuses (a system it has no spec of, an estimate-only spec, a backend the system has no data
// for) fails when the real `aisimulate recommend` starts, and the same search on a system with
// data runs. When a wheel makes an estimate-only spec searchable, this fails: SystemProblems
// then refuses what AISimulate runs.
func TestRealAISimulateNeedsPerfData(t *testing.T) {
	type search struct{ hardware, backend string }
	const noViable = "no deployment_mode has a viable parallel config"
	// The search and the error the real AISimulate fails it with.
	refused := map[search]string{{"gb10", "vllm"}: "unknown hardware_sku 'gb10'", {"b60", "sglang"}: noViable}
	for _, sku := range aisimulate.KnownSKUs() {
		if s, _ := aisimulate.LookupSystem(sku); len(s.PerfData) == 0 {
			refused[search{sku, "vllm"}] = noViable
		}
	}
	if len(refused) < 3 {
		t.Fatalf("the wheel has no estimate-only system any more: %v", refused)
	}
	run := func(t *testing.T, s search) (int, string) {
		dir := t.TempDir()
		doc := searchDoc(s.hardware, s.backend)
		if err := os.WriteFile(filepath.Join(dir, "search.yaml"), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		parsed, err := aisimulate.DecodeDocument([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		if ps := aisimulate.CheckInput(parsed); len(ps) > 0 {
			t.Fatalf("the search document is invalid: %v", ps)
		}
		problems := aisimulate.SystemProblems(parsed)
		cmd := exec.Command(upstreamtest.MustExecutable(t, "aisimulate"), "recommend", "-c", "search.yaml", "--output-dir", "rec", "--format", "json")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HF_HUB_OFFLINE=1", "TRANSFORMERS_OFFLINE=1", "PYTHONDONTWRITEBYTECODE=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err = cmd.Run()
		var exit *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &exit):
			return exit.ExitCode(), stderr.String() + "\nSystemProblems: " + describeProblems(problems)
		default:
			t.Fatal(err)
		}
		return 0, "SystemProblems: " + describeProblems(problems)
	}
	for s, want := range refused {
		t.Run(s.hardware+"/"+s.backend, func(t *testing.T) {
			parsed, _ := aisimulate.DecodeDocument([]byte(searchDoc(s.hardware, s.backend)))
			if ps := aisimulate.SystemProblems(parsed); len(ps) != 1 {
				t.Errorf("SystemProblems: %v, want one problem", ps)
			}
			code, out := run(t, s)
			if code != 2 || !strings.Contains(out, want) {
				t.Errorf("the real aisimulate exited %d, want 2 (%s):\n%s", code, want, out)
			}
		})
	}
	t.Run("h100_sxm/vllm", func(t *testing.T) {
		if code, out := run(t, search{"h100_sxm", "vllm"}); code != 0 || !strings.HasSuffix(out, "SystemProblems: none") {
			t.Errorf("the control search on h100_sxm: exit %d, want 0 with no SystemProblems:\n%s", code, out)
		}
	})
}

func describeProblems(ps []aisimulate.Problem) string {
	if len(ps) == 0 {
		return "none"
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return strings.Join(out, "; ")
}
