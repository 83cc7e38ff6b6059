package reporter_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/internal/candidates"
	"github.com/dgdr-operator/dgdr-operator/internal/naming"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/builders"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/poll"
)

// paretoInput is a search of the local recommender with a Pareto target over a range of
// concurrencies, whose front has more points than paretoMax.
const paretoInput = `engine: {model: meta-llama/Llama-3.1-8B-Instruct, hardware: h200_sxm, workers: {aggregated: {}, prefill: {}, decode: {}}}
traffic: {source: {type: synthetic, input_tokens: 1024, output_tokens: 128}, load: {type: concurrency, concurrency: 10}, stop: {requests: 300}}
optimization: {target: pareto}
optimizer: {max_trials: 40}
`

const paretoMax = 4

func paretoSpec() v1beta2.DynamoGraphDeploymentRequestSpec {
	spec := builders.Request("", "").Revision("main").MaxCandidates(paretoMax).Spec
	spec.Objective = &v1beta2.ObjectiveSpec{Target: v1beta2.TargetPareto}
	return spec
}

// publishedRoles lists the Run's Candidates by rank as "name role".
func publishedRoles(t *testing.T, ns string) []string {
	t.Helper()
	var out []string
	for _, c := range listCandidates(t, ns) {
		out = append(out, c.Name+" "+string(c.Status.ParetoRole))
	}
	return out
}

// spreadOf is the spread of front (records by increasing throughput per user) as "name role".
func spreadOf(run string, front []*output.Candidate) []string {
	var out []string
	for _, p := range output.SpreadFront(front, paretoMax, candidates.FrontObjectives) {
		out = append(out, naming.CandidateName(run, front[p.Index].CandidateID)+" "+p.Role)
	}
	return out
}

// TestParetoSpreadPublished: with a Pareto target and a front larger than maxCandidates, the
// provisional and the final publications are a spread of the front, both ends and the knee
// among them, ranked along the front and each labelled with why it was chosen.
func TestParetoSpreadPublished(t *testing.T) {
	ls := startSearchOf(t, "llm-pareto", paretoInput, paretoSpec(), 300*time.Millisecond, "")
	ls.write(0, ls.settledLines(), 5*time.Millisecond)

	// Provisional: the spread of the front of what settled, first of identical configurations.
	feas := distinctFeasible(t, ls.lines)
	order := func(a, b *output.Candidate) int { return slices.Index(feas, a) - slices.Index(feas, b) }
	wantProv := spreadOf(ls.run.Name, output.ParetoFront(feas, candidates.FrontObjectives, order))
	poll.WaitFor(t, 15*time.Second, 50*time.Millisecond, "provisional spread", func(context.Context) (bool, string, error) {
		got := publishedRoles(t, ls.ns)
		return slices.Equal(got, wantProv), fmt.Sprintf("published %v, want %v", got, wantProv), nil
	})

	// Final: the spread of recommendation.json's Pareto view.
	copyResult(t, ls.src, ls.dir)
	ls.exit <- 0
	if err := <-ls.result; err != nil {
		t.Fatal(err)
	}
	sweep, err := output.ReadSweepResult(ls.dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(sweep.Views.ParetoFront) <= paretoMax {
		t.Fatalf("the front has %d points: the test needs more than %d", len(sweep.Views.ParetoFront), paretoMax)
	}
	front := make([]*output.Candidate, len(sweep.Views.ParetoFront))
	for i, id := range sweep.Views.ParetoFront {
		front[i], _ = sweep.Candidate(id)
	}
	want := spreadOf(ls.run.Name, front)
	got := publishedRoles(t, ls.ns)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("published (-want +got):\n%s", diff)
	}
	if !strings.HasSuffix(got[0], " max-throughput-per-gpu") || !strings.HasSuffix(got[len(got)-1], " max-throughput-per-user") ||
		!slices.ContainsFunc(got, func(s string) bool { return strings.HasSuffix(s, " knee") }) {
		t.Errorf("published %v: want both ends and the knee", got)
	}
	cands := listCandidates(t, ls.ns)
	for i, c := range cands {
		if c.Status.Rank != int32(i+1) || c.Status.Provisional {
			t.Errorf("%s: rank %d provisional %v, want rank %d final", c.Name, c.Status.Rank, c.Status.Provisional, i+1)
		}
		if i > 0 && *c.Status.Metrics.ThroughputPerUser < *cands[i-1].Status.Metrics.ThroughputPerUser {
			t.Errorf("%s: ranks do not follow the front by increasing throughput per user", c.Name)
		}
		// Parameters are the view entry's own recommendations/NNNN.yaml.
		data, err := os.ReadFile(output.RecommendationPath(ls.dir, slices.Index(sweep.Views.ParetoFront, c.Status.CandidateID)))
		if err != nil {
			t.Fatal(err)
		}
		var wantParams, gotParams map[string]any
		_ = yaml.Unmarshal(data, &wantParams)
		_ = json.Unmarshal(c.Spec.Parameters.Raw, &gotParams)
		if diff := cmp.Diff(wantParams, gotParams); diff != "" {
			t.Errorf("%s parameters (-want +got):\n%s", c.Name, diff)
		}
	}
}
