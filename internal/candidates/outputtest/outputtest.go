// Package outputtest gives the tests of the search output's readers (candidates, the ledger, the
// reporter) real output to read and to break: a real search of the local recommender (its
// binary, so that nothing under internal/ links the tool), the real AISimulate's ledger, and
// files swapped for what the output contract forbids.
package outputtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
)

// SearchInput is a small search of the local recommender (40 trials, vLLM and SGLang
// candidates, most of them feasible).
const SearchInput = `engine: {model: meta-llama/Llama-3.1-8B-Instruct, hardware: h200_sxm, workers: {aggregated: {}, prefill: {}, decode: {}}}
traffic: {source: {type: synthetic, input_tokens: 1024, output_tokens: 128}, load: {type: concurrency, concurrency: 10}, stop: {requests: 300}}
optimization: {}
optimizer: {max_trials: 40}
`

// work is where the test binary keeps the local recommender it built and SearchInput's output,
// made once per test binary.
var work struct {
	once sync.Once
	dir  string
	err  error
}

func workDir() (string, error) {
	work.once.Do(func() { work.dir, work.err = os.MkdirTemp("", "outputtest-") })
	return work.dir, work.err
}

// search is SearchInput's output, searched once per test binary.
var search struct {
	once sync.Once
	dir  string
	err  error
}

// Search returns a fresh copy of SearchInput's output directory, named result, for the caller
// to read or break. The search runs once per test binary.
func Search(t testing.TB) string {
	t.Helper()
	search.once.Do(func() {
		dir, err := workDir()
		if err != nil {
			search.err = err
			return
		}
		search.dir = filepath.Join(dir, "result")
		search.err = Recommend(SearchInput, search.dir)
	})
	if search.err != nil {
		t.Fatal(search.err)
	}
	dst := filepath.Join(t.TempDir(), "result")
	if err := os.CopyFS(dst, os.DirFS(search.dir)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// BuildAISim returns the local recommender's binary for the tests: $AISIM_BIN when set (e.g.
// bin/aisim of the same tree), otherwise one built into dir.
func BuildAISim(dir string) (string, error) {
	if prebuilt := os.Getenv("AISIM_BIN"); prebuilt != "" {
		return prebuilt, nil
	}
	bin := filepath.Join(dir, "aisim")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/dgdr-operator/dgdr-operator/tools/aisim/cmd/aisim").CombinedOutput(); err != nil {
		return "", fmt.Errorf("building aisim: %w\n%s", err, out)
	}
	return bin, nil
}

// aisim is the local recommender's binary Recommend runs, built once per test binary.
var aisim struct {
	once sync.Once
	bin  string
	err  error
}

// Recommend runs the local recommender (aisim recommend) on the input document (YAML), writing
// its output to outDir.
func Recommend(input, outDir string) error {
	aisim.once.Do(func() {
		dir, err := workDir()
		if err != nil {
			aisim.err = err
			return
		}
		aisim.bin, aisim.err = BuildAISim(dir)
	})
	if aisim.err != nil {
		return aisim.err
	}
	in := outDir + ".input.yaml"
	if err := os.MkdirAll(filepath.Dir(in), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(in, []byte(input), 0o644); err != nil {
		return err
	}
	if out, err := exec.Command(aisim.bin, "recommend", "-c", in, "--output-dir", outDir, "--format", "json").CombinedOutput(); err != nil {
		return fmt.Errorf("aisim recommend: %w\n%s", err, out)
	}
	return nil
}

// RealLedger is the ledger the real AISimulate wrote (internal/aisimulate/output/testdata), line
// by line, each with its newline: requested_config (max_trials 48), then five wave_admitted /
// candidate_completed pairs, all feasible; by score: 4, 3, 1, 5, 2.
func RealLedger(t testing.TB) []string {
	t.Helper()
	_, self, _, _ := goruntime.Caller(0)
	data, err := os.ReadFile(filepath.Join(filepath.Dir(self), "..", "..", "aisimulate", "output", "testdata", "aisimulate-0.13", output.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) != 11 {
		t.Fatalf("the real ledger has %d lines, want 11", len(lines))
	}
	return lines
}

// Append appends data to the file at path, creating it and its directory, as a search writing
// its ledger does.
func Append(t testing.TB, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// Sparse makes path a sparse file of size bytes (no disk used, but reading it whole would
// allocate size bytes).
func Sparse(t testing.TB, path string, size int64) {
	t.Helper()
	_ = os.Remove(path)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
}

// Symlink replaces path with a symbolic link to target.
func Symlink(t testing.TB, target, path string) {
	t.Helper()
	_ = os.RemoveAll(path)
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}
