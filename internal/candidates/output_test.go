package candidates_test

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/internal/candidates"
	"github.com/dgdr-operator/dgdr-operator/internal/candidates/outputtest"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/internal/searchoutput"
)

var testImages = map[string]v1alpha1.RuntimeImage{
	"vllm":   {Image: "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1", EngineVersion: "0.24.0"},
	"sglang": {Image: "nvcr.io/nvidia/ai-dynamo/sglang-runtime:1.3.1", EngineVersion: "0.5.21"},
	"trtllm": {Image: "nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:1.3.1"},
}

func offlineRun() *v1beta2.DynamoGraphDeploymentRun {
	run := &v1beta2.DynamoGraphDeploymentRun{}
	run.Name, run.Namespace, run.UID = "caps-run", "caps", "caps-uid"
	run.Spec.Model = v1beta2.ModelSpec{Name: "meta-llama/Llama-3.1-8B-Instruct", Revision: "main"}
	return run
}

// TestOutputCaps breaks a real search output in each way the output contract forbids: the
// reader refuses it with a searchoutput.RejectedError naming the file (and the cap), without reading
// it whole, following a link, or blocking on a FIFO.
func TestOutputCaps(t *testing.T) {
	const gib = 1 << 30
	cases := []struct {
		name    string
		corrupt func(t *testing.T, dir string)
		want    []string
	}{
		{"1 GiB recommendation.json", func(t *testing.T, dir string) {
			outputtest.Sparse(t, filepath.Join(dir, output.RecommendationFile), gib)
		}, []string{"recommendation.json is 1073741824 bytes", "cap of 32 MiB"}},
		{"recommendation.json one byte over the cap", func(t *testing.T, dir string) {
			outputtest.Sparse(t, filepath.Join(dir, output.RecommendationFile), searchoutput.MaxRecommendationBytes+1)
		}, []string{"recommendation.json is 33554433 bytes"}},
		{"recommendation.json links to /dev/zero", func(t *testing.T, dir string) {
			outputtest.Symlink(t, "/dev/zero", filepath.Join(dir, output.RecommendationFile))
		}, []string{"recommendation.json is a symbolic link"}},
		{"recommendation.json links to a valid copy", func(t *testing.T, dir string) {
			p := filepath.Join(dir, output.RecommendationFile)
			if err := os.Rename(p, p+".real"); err != nil {
				t.Fatal(err)
			}
			outputtest.Symlink(t, p+".real", p)
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
			outputtest.Symlink(t, dir+".real", dir)
		}, []string{"result is a symbolic link"}},
		{"a 1 GiB configuration", func(t *testing.T, dir string) {
			outputtest.Sparse(t, output.RecommendationPath(dir, 0), gib)
		}, []string{"recommendations/0001.yaml is 1073741824 bytes", "cap of 1 MiB"}},
		{"a configuration links to /dev/zero", func(t *testing.T, dir string) {
			outputtest.Symlink(t, "/dev/zero", output.RecommendationPath(dir, 1))
		}, []string{"recommendations/0002.yaml is a symbolic link"}},
		{"the configurations directory is a link", func(t *testing.T, dir string) {
			p := filepath.Join(dir, output.RecommendationsDir)
			if err := os.Rename(p, p+".real"); err != nil {
				t.Fatal(err)
			}
			outputtest.Symlink(t, p+".real", p)
		}, []string{"recommendations is a symbolic link"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := outputtest.Search(t)
			tc.corrupt(t, dir)
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			cands, err := candidates.FromOutput(offlineRun(), dir, candidates.Options{RuntimeImages: testImages})
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			var rejected *searchoutput.RejectedError
			if !errors.As(err, &rejected) {
				t.Fatalf("err = %v (%d candidates), want a searchoutput.RejectedError", err, len(cands))
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
		cands, err := candidates.FromOutput(offlineRun(), outputtest.Search(t), candidates.Options{RuntimeImages: testImages})
		if err != nil || len(cands) == 0 {
			t.Fatalf("%d candidates, err %v", len(cands), err)
		}
	})
}
