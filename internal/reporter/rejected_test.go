package reporter_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/internal/candidates"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/internal/reporter"
)

// searchOutput runs one real (small) search once and returns a fresh copy of its output
// directory for each caller to break.
var searchOutput = struct {
	once sync.Once
	dir  string
}{}

func freshOutput(t *testing.T) string {
	t.Helper()
	searchOutput.once.Do(func() {
		// Next to the aisim binary: TestMain removes that directory.
		dir := filepath.Join(filepath.Dir(aisimBin), "caps-output")
		if code := recommend(t, searchInput, dir); code != 0 {
			t.Fatalf("aisim exit %d", code)
		}
		searchOutput.dir = dir
	})
	dst := filepath.Join(t.TempDir(), "result")
	copyResult(t, searchOutput.dir, dst)
	if data, err := os.ReadFile(filepath.Join(searchOutput.dir, output.EventsFile)); err == nil {
		if err := os.WriteFile(filepath.Join(dst, output.EventsFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// searchTmp is where the tests put the search's tmp of the output directory dir.
func searchTmp(dir string) string { return filepath.Join(filepath.Dir(dir), "search-tmp") }

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

// TestRejectedOutputPublishesNothing runs the reporter against the API server on outputs that
// break the contract, the events ledger (and the live one in the search's tmp) included: it
// fails with an OutputRejectedError and publishes no Candidate, no candidateRefs and no
// recommendation.
func TestRejectedOutputPublishesNothing(t *testing.T) {
	cases := []struct {
		name    string
		corrupt func(t *testing.T, dir string)
		want    string
	}{
		{"1 GiB ledger", func(t *testing.T, dir string) {
			sparse(t, filepath.Join(dir, output.EventsFile), 1<<30)
		}, "execution-events.jsonl is 1073741824 bytes, over the reporter's cap of 64 MiB"},
		{"ledger line over the cap", func(t *testing.T, dir string) {
			// A sparse file is all NUL bytes: one 2 MiB line without a newline.
			sparse(t, filepath.Join(dir, output.EventsFile), 2<<20)
		}, "execution-events.jsonl has a line longer than the reporter's cap of 1 MiB"},
		{"ledger links to /dev/zero", func(t *testing.T, dir string) {
			symlink(t, "/dev/zero", filepath.Join(dir, output.EventsFile))
		}, "execution-events.jsonl is a symbolic link"},
		{"recommendation.json links to /dev/zero", func(t *testing.T, dir string) {
			symlink(t, "/dev/zero", filepath.Join(dir, output.RecommendationFile))
		}, "recommendation.json is a symbolic link"},
		{"the live ledger in the search's tmp links to /dev/zero", func(t *testing.T, dir string) {
			monitor := filepath.Join(searchTmp(dir), "aisimulate-monitor-abcdefgh")
			if err := os.MkdirAll(monitor, 0o700); err != nil {
				t.Fatal(err)
			}
			symlink(t, "/dev/zero", filepath.Join(monitor, "events.jsonl"))
		}, "/tmp/aisimulate-monitor-abcdefgh/events.jsonl is a symbolic link"},
		{"the last configuration is over the cap", func(t *testing.T, dir string) {
			// The first Candidates are valid: none of them may be published either.
			sparse(t, output.RecommendationPath(dir, 2), jobcontract.MaxConfigurationBytes+1)
		}, "recommendations/0003.yaml is 1048577 bytes"},
	}
	ns := newNamespace(t)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := freshOutput(t)
			tc.corrupt(t, dir)
			run := newRun(t, ns, "rejected-"+string(rune('a'+i)), 3)
			exited := make(chan int, 1)
			exited <- 0
			r := newReporter(ns, run.Name, dir, reporter.ChanWatcher(exited))
			r.SearchTmpDir = searchTmp(dir)
			_, err := r.Run(context.Background())
			if !candidates.IsOutputRejected(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want an output rejection containing %q", err, tc.want)
			}
			for _, c := range listCandidates(t, ns) {
				if c.Labels[v1beta2.LabelRunUID] == string(run.UID) {
					t.Errorf("Candidate %s published from rejected output", c.Name)
				}
			}
			st := getRun(t, ns, run.Name).Status
			if len(st.CandidateRefs) != 0 || st.Recommendation != nil {
				t.Errorf("status published from rejected output: refs %v recommendation %+v", st.CandidateRefs, st.Recommendation)
			}
		})
	}
}
