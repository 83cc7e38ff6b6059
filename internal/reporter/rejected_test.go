package reporter_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/internal/candidates/outputtest"
	"github.com/dgdr-operator/dgdr-operator/internal/reporter"
	"github.com/dgdr-operator/dgdr-operator/internal/searchoutput"
)

// searchTmp is where the tests put the search's tmp of the output directory dir.
func searchTmp(dir string) string { return filepath.Join(filepath.Dir(dir), "search-tmp") }

// TestRejectedOutputPublishesNothing runs the reporter against the API server on outputs that
// break the contract, the events ledger (and the live one in the search's tmp) included: it
// fails with a searchoutput.RejectedError and publishes no Candidate, no candidateRefs and no
// recommendation.
func TestRejectedOutputPublishesNothing(t *testing.T) {
	cases := []struct {
		name    string
		corrupt func(t *testing.T, dir string)
		want    string
	}{
		{"1 GiB ledger", func(t *testing.T, dir string) {
			outputtest.Sparse(t, filepath.Join(dir, output.EventsFile), 1<<30)
		}, "execution-events.jsonl is 1073741824 bytes, over the reporter's cap of 64 MiB"},
		{"ledger line over the cap", func(t *testing.T, dir string) {
			// A sparse file is all NUL bytes: one 2 MiB line without a newline.
			outputtest.Sparse(t, filepath.Join(dir, output.EventsFile), 2<<20)
		}, "execution-events.jsonl has a line longer than the reporter's cap of 1 MiB"},
		{"ledger links to /dev/zero", func(t *testing.T, dir string) {
			outputtest.Symlink(t, "/dev/zero", filepath.Join(dir, output.EventsFile))
		}, "execution-events.jsonl is a symbolic link"},
		{"recommendation.json links to /dev/zero", func(t *testing.T, dir string) {
			outputtest.Symlink(t, "/dev/zero", filepath.Join(dir, output.RecommendationFile))
		}, "recommendation.json is a symbolic link"},
		{"the live ledger in the search's tmp links to /dev/zero", func(t *testing.T, dir string) {
			monitor := filepath.Join(searchTmp(dir), "aisimulate-monitor-abcdefgh")
			if err := os.MkdirAll(monitor, 0o700); err != nil {
				t.Fatal(err)
			}
			outputtest.Symlink(t, "/dev/zero", filepath.Join(monitor, "events.jsonl"))
		}, "/tmp/aisimulate-monitor-abcdefgh/events.jsonl is a symbolic link"},
		{"the last configuration is over the cap", func(t *testing.T, dir string) {
			// The first Candidates are valid: none of them may be published either.
			outputtest.Sparse(t, output.RecommendationPath(dir, 2), searchoutput.MaxConfigurationBytes+1)
		}, "recommendations/0003.yaml is 1048577 bytes"},
	}
	ns := newNamespace(t)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := outputtest.Search(t)
			tc.corrupt(t, dir)
			run := newRun(t, ns, "rejected-"+string(rune('a'+i)), 3)
			exited := make(chan int, 1)
			exited <- 0
			r := newReporter(ns, run.Name, dir, reporter.ChanWatcher(exited))
			r.SearchTmpDir = searchTmp(dir)
			_, err := r.Run(context.Background())
			if !searchoutput.IsRejected(err) || !strings.Contains(err.Error(), tc.want) {
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
