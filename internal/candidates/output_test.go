package candidates_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/internal/candidates"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/app"
)

var testImages = map[string]string{
	"vllm":   "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1",
	"sglang": "nvcr.io/nvidia/ai-dynamo/sglang-runtime:1.3.1",
	"trtllm": "nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:1.3.1",
}

const searchInput = `engine: {model: meta-llama/Llama-3.1-8B-Instruct, hardware: h200_sxm, workers: {aggregated: {}, prefill: {}, decode: {}}}
traffic: {source: {type: synthetic, input_tokens: 1024, output_tokens: 128}, load: {type: concurrency, concurrency: 10}, stop: {requests: 300}}
optimization: {}
optimizer: {max_trials: 40}
`

// searchOutput is one real (small) search of the local recommender, run once; each caller gets
// a fresh copy to break.
var searchOutput = struct {
	once sync.Once
	dir  string
	err  error
}{}

func freshOutput(t *testing.T) string {
	t.Helper()
	searchOutput.once.Do(func() {
		dir, err := os.MkdirTemp("", "candidates-output-")
		if err != nil {
			searchOutput.err = err
			return
		}
		in := filepath.Join(dir, "input.yaml")
		if err := os.WriteFile(in, []byte(searchInput), 0o644); err != nil {
			searchOutput.err = err
			return
		}
		var stderr bytes.Buffer
		out := filepath.Join(dir, "result")
		if code := app.Recommend(context.Background(), app.Options{ConfigPath: in, OutputDir: out, Format: "json",
			Stdout: &bytes.Buffer{}, Stderr: &stderr}); code != 0 {
			searchOutput.err = errors.New("aisim recommend: " + stderr.String())
			return
		}
		searchOutput.dir = out
	})
	if searchOutput.err != nil {
		t.Fatal(searchOutput.err)
	}
	dst := filepath.Join(t.TempDir(), "result")
	if err := os.CopyFS(dst, os.DirFS(searchOutput.dir)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// sparse makes path a sparse file of size bytes (no disk used, but reading it whole would
// allocate size bytes).
func sparse(t *testing.T, path string, size int64) {
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

func symlink(t *testing.T, target, path string) {
	t.Helper()
	_ = os.RemoveAll(path)
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}

func offlineRun() *v1beta2.DynamoGraphDeploymentRun {
	run := &v1beta2.DynamoGraphDeploymentRun{}
	run.Name, run.Namespace, run.UID = "caps-run", "caps", "caps-uid"
	run.Spec.Model = v1beta2.ModelSpec{Name: "meta-llama/Llama-3.1-8B-Instruct", Revision: "main"}
	return run
}

// TestOutputCaps breaks a real search output in each way the output contract forbids: the
// reader refuses it with an OutputRejectedError naming the file (and the cap), without reading
// it whole, following a link, or blocking on a FIFO.
func TestOutputCaps(t *testing.T) {
	const gib = 1 << 30
	cases := []struct {
		name    string
		corrupt func(t *testing.T, dir string)
		want    []string
	}{
		{"1 GiB recommendation.json", func(t *testing.T, dir string) {
			sparse(t, filepath.Join(dir, output.RecommendationFile), gib)
		}, []string{"recommendation.json is 1073741824 bytes", "cap of 32 MiB"}},
		{"recommendation.json one byte over the cap", func(t *testing.T, dir string) {
			sparse(t, filepath.Join(dir, output.RecommendationFile), jobcontract.MaxRecommendationBytes+1)
		}, []string{"recommendation.json is 33554433 bytes"}},
		{"recommendation.json links to /dev/zero", func(t *testing.T, dir string) {
			symlink(t, "/dev/zero", filepath.Join(dir, output.RecommendationFile))
		}, []string{"recommendation.json is a symbolic link"}},
		{"recommendation.json links to a valid copy", func(t *testing.T, dir string) {
			p := filepath.Join(dir, output.RecommendationFile)
			if err := os.Rename(p, p+".real"); err != nil {
				t.Fatal(err)
			}
			symlink(t, p+".real", p)
		}, []string{"recommendation.json is a symbolic link"}},
		{"recommendation.json is a FIFO", func(t *testing.T, dir string) {
			p := filepath.Join(dir, output.RecommendationFile)
			_ = os.Remove(p)
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
		}, []string{"recommendation.json is not a regular file"}},
		{"recommendation.json is a directory", func(t *testing.T, dir string) {
			p := filepath.Join(dir, output.RecommendationFile)
			_ = os.Remove(p)
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}, []string{"recommendation.json is not a regular file"}},
		{"the result directory is a link", func(t *testing.T, dir string) {
			if err := os.Rename(dir, dir+".real"); err != nil {
				t.Fatal(err)
			}
			symlink(t, dir+".real", dir)
		}, []string{"result is a symbolic link"}},
		{"a 1 GiB configuration", func(t *testing.T, dir string) {
			sparse(t, output.RecommendationPath(dir, 0), gib)
		}, []string{"recommendations/0001.yaml is 1073741824 bytes", "cap of 1 MiB"}},
		{"a configuration links to /dev/zero", func(t *testing.T, dir string) {
			symlink(t, "/dev/zero", output.RecommendationPath(dir, 1))
		}, []string{"recommendations/0002.yaml is a symbolic link"}},
		{"the configurations directory is a link", func(t *testing.T, dir string) {
			p := filepath.Join(dir, output.RecommendationsDir)
			if err := os.Rename(p, p+".real"); err != nil {
				t.Fatal(err)
			}
			symlink(t, p+".real", p)
		}, []string{"recommendations is a symbolic link"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := freshOutput(t)
			tc.corrupt(t, dir)
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			cands, err := candidates.FromOutput(offlineRun(), dir, candidates.Options{RuntimeImages: testImages})
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			var rejected *candidates.OutputRejectedError
			if !errors.As(err, &rejected) {
				t.Fatalf("err = %v (%d candidates), want an OutputRejectedError", err, len(cands))
			}
			if rejected.ExitCode() != jobcontract.ReporterExitOutputRejected {
				t.Errorf("exit code %d", rejected.ExitCode())
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %q, want it to contain %q", err, w)
				}
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
				t.Errorf("the refusal allocated %d MiB", alloc>>20)
			}
		})
	}
	t.Run("the intact output is accepted", func(t *testing.T) {
		cands, err := candidates.FromOutput(offlineRun(), freshOutput(t), candidates.Options{RuntimeImages: testImages})
		if err != nil || len(cands) == 0 {
			t.Fatalf("%d candidates, err %v", len(cands), err)
		}
	})
}
