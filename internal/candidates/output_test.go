package candidates_test

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

// TestEngineVersionsOfCandidates: every Candidate of aisim's output is rendered (Deployable True)
// and records the engine version of the performance data (aisim's provenance: vLLM 0.24.0,
// SGLang 0.5.14) and of its runtime image (the configuration's engineVersion). VersionSkew is
// False where they agree (vLLM here), True where they differ (SGLang 0.5.21), Unknown where the
// image's version is not configured.
func TestEngineVersionsOfCandidates(t *testing.T) {
	dir := outputtest.Search(t)
	for _, tc := range []struct {
		name   string
		images map[string]v1alpha1.RuntimeImage
		want   map[v1beta2.Backend][2]string // VersionSkew reason, runtime version
	}{
		{"configured", testImages, map[v1beta2.Backend][2]string{
			"vllm": {v1beta2.ReasonEngineVersionsMatch, "0.24.0"}, "sglang": {v1beta2.ReasonEngineVersionsDiffer, "0.5.21"}}},
		{"images alone", map[string]v1alpha1.RuntimeImage{"vllm": {Image: "v:1"}, "sglang": {Image: "s:1"}}, map[v1beta2.Backend][2]string{
			"vllm": {v1beta2.ReasonEngineVersionUnknown, ""}, "sglang": {v1beta2.ReasonEngineVersionUnknown, ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cands, err := candidates.FromOutput(offlineRun(), dir, candidates.Options{RuntimeImages: tc.images})
			if err != nil || len(cands) == 0 {
				t.Fatalf("%d candidates, err %v", len(cands), err)
			}
			perfData := map[v1beta2.Backend]string{"vllm": "0.24.0", "sglang": "0.5.14"}
			status := map[string]metav1.ConditionStatus{v1beta2.ReasonEngineVersionsMatch: metav1.ConditionFalse,
				v1beta2.ReasonEngineVersionsDiffer: metav1.ConditionTrue, v1beta2.ReasonEngineVersionUnknown: metav1.ConditionUnknown}
			for _, c := range cands {
				want, ok := tc.want[c.Spec.Backend]
				if !ok {
					t.Fatalf("%s: backend %s", c.Name, c.Spec.Backend)
				}
				if diff := cmp.Diff(&v1beta2.CandidateEngineVersions{PerformanceData: perfData[c.Spec.Backend], Runtime: want[1]}, c.Status.EngineVersions); diff != "" {
					t.Errorf("%s: engine versions (-want +got):\n%s", c.Name, diff)
				}
				s := meta.FindStatusCondition(c.Status.Conditions, v1beta2.ConditionVersionSkew)
				if s == nil || s.Reason != want[0] || s.Status != status[want[0]] {
					t.Errorf("%s: VersionSkew %+v, want %s", c.Name, s, want[0])
				}
				if d := meta.FindStatusCondition(c.Status.Conditions, v1beta2.ConditionDeployable); d == nil || d.Status != metav1.ConditionTrue || d.Reason != v1beta2.ReasonRendered {
					t.Errorf("%s: Deployable %+v", c.Name, d)
				}
			}
		})
	}
}
