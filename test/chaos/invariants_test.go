//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	runctl "github.com/dgdr-operator/dgdr-operator/internal/controller/run"
	"github.com/dgdr-operator/dgdr-operator/test/sandboxtest"
)

// snapshot is every object the operator and the reporter create in one namespace.
type snapshot struct {
	ns         string
	dgdrs      []v1beta2.DynamoGraphDeploymentRequest
	runs       []v1beta2.DynamoGraphDeploymentRun
	jobs       []batchv1.Job
	configMaps []corev1.ConfigMap
	candidates []v1beta2.DynamoGraphDeploymentCandidate
}

func takeSnapshot(ctx context.Context, ns string) (*snapshot, error) {
	s := &snapshot{ns: ns}
	var dl v1beta2.DynamoGraphDeploymentRequestList
	var rl v1beta2.DynamoGraphDeploymentRunList
	var jl batchv1.JobList
	var cl corev1.ConfigMapList
	var kl v1beta2.DynamoGraphDeploymentCandidateList
	in := client.InNamespace(ns)
	for _, l := range []client.ObjectList{&dl, &rl, &jl, &kl} {
		if err := k8s.List(ctx, l, in); err != nil {
			return nil, err
		}
	}
	// ConfigMaps of Runs carry the Run label (kube-root-ca.crt does not).
	if err := k8s.List(ctx, &cl, in, client.HasLabels{v1beta2.LabelRunName}); err != nil {
		return nil, err
	}
	s.dgdrs, s.runs, s.jobs, s.configMaps, s.candidates = dl.Items, rl.Items, jl.Items, cl.Items, kl.Items
	return s, nil
}

// quiet tells whether every request has accepted its current generation and every Run is
// terminal.
func (s *snapshot) quiet() (bool, string) {
	pending := 0
	for _, d := range s.dgdrs {
		if d.Status.ObservedGeneration != d.Generation || d.Status.ActiveRunRef != nil {
			pending++
		}
	}
	active := 0
	for i := range s.runs {
		if _, _, done := sandboxtest.Completed(&s.runs[i]); !done {
			active++
		}
	}
	return pending == 0 && active == 0, fmt.Sprintf("%s: %d requests not settled, %d of %d Runs not terminal", s.ns, pending, active, len(s.runs))
}

func controllerOf(o metav1.Object, kind string) (types.UID, bool) {
	for _, r := range o.GetOwnerReferences() {
		if r.Controller != nil && *r.Controller && r.Kind == kind {
			return r.UID, true
		}
	}
	return "", false
}

// violations checks the invariants of a quiet namespace and returns every violation, plus a
// count of the Runs' terminal reasons.
func (s *snapshot) violations() (out []string, reasons map[string]int) {
	bad := func(format string, args ...any) { out = append(out, s.ns+": "+fmt.Sprintf(format, args...)) }
	reasons = map[string]int{}
	dgdrByUID := map[types.UID]*v1beta2.DynamoGraphDeploymentRequest{}
	for i := range s.dgdrs {
		dgdrByUID[s.dgdrs[i].UID] = &s.dgdrs[i]
	}
	runByUID := map[types.UID]*v1beta2.DynamoGraphDeploymentRun{}
	runByName := map[string]*v1beta2.DynamoGraphDeploymentRun{}
	gens := map[types.UID][]int64{}
	for i := range s.runs {
		r := &s.runs[i]
		runByUID[r.UID], runByName[r.Name] = r, r
		owner, ok := controllerOf(r, "DynamoGraphDeploymentRequest")
		if !ok || dgdrByUID[owner] == nil {
			bad("Run %s has no existing owner request", r.Name)
			continue
		}
		if string(owner) != r.Labels[v1beta2.LabelRequestUID] || dgdrByUID[owner].Name != r.Labels[v1beta2.LabelRequestName] {
			bad("Run %s: labels %v do not match its owner %s", r.Name, r.Labels, dgdrByUID[owner].Name)
		}
		g, err := strconv.ParseInt(r.Labels[v1beta2.LabelRequestGeneration], 10, 64)
		if err != nil {
			bad("Run %s: generation label %q", r.Name, r.Labels[v1beta2.LabelRequestGeneration])
			continue
		}
		gens[owner] = append(gens[owner], g)
		reason, _, done := sandboxtest.Completed(r)
		if !done {
			bad("Run %s is not terminal (phase %s)", r.Name, r.Status.Phase)
			continue
		}
		reasons[reason]++
	}
	// Exactly one Run per accepted generation.
	for _, d := range s.dgdrs {
		if d.Status.ObservedGeneration != d.Generation {
			bad("request %s: observedGeneration %d, generation %d", d.Name, d.Status.ObservedGeneration, d.Generation)
		}
		g := gens[d.UID]
		slices.Sort(g)
		want := make([]int64, 0, d.Status.ObservedGeneration)
		for i := int64(1); i <= d.Status.ObservedGeneration; i++ {
			want = append(want, i)
		}
		if fmt.Sprint(g) != fmt.Sprint(want) {
			bad("request %s: Runs of generations %v, want %v", d.Name, g, want)
		}
		st := d.Status
		if st.ActiveRunRef != nil {
			bad("request %s: activeRunRef %s although quiet", d.Name, st.ActiveRunRef.Name)
		}
		if st.LatestRun == nil || runByName[st.LatestRun.Name] == nil {
			bad("request %s: latestRun %v does not name an existing Run", d.Name, st.LatestRun)
		} else if r := runByName[st.LatestRun.Name]; r.Labels[v1beta2.LabelRequestGeneration] != strconv.FormatInt(st.ObservedGeneration, 10) {
			bad("request %s: latestRun %s is not of generation %d", d.Name, r.Name, st.ObservedGeneration)
		} else if reason, _, _ := sandboxtest.Completed(r); st.LatestRun.Reason != reason {
			bad("request %s: latestRun reason %q, Run says %q", d.Name, st.LatestRun.Reason, reason)
		}
		for _, ref := range st.RecentRunRefs {
			if runByName[ref.Name] == nil {
				bad("request %s: recentRunRefs names missing Run %s", d.Name, ref.Name)
			}
		}
	}
	// One search Job per Run (and one baseline Job per re-search Run), no orphans, every Run
	// whose Jobs all ended is terminal.
	jobsOfRun := map[types.UID][]*batchv1.Job{}
	baselinesOfRun := map[types.UID][]*batchv1.Job{}
	for i := range s.jobs {
		j := &s.jobs[i]
		owner, ok := controllerOf(j, "DynamoGraphDeploymentRun")
		if !ok || runByUID[owner] == nil {
			bad("Job %s has no existing owner Run", j.Name)
			continue
		}
		if j.Labels[runctl.LabelComponent] == "baseline" {
			baselinesOfRun[owner] = append(baselinesOfRun[owner], j)
		} else {
			jobsOfRun[owner] = append(jobsOfRun[owner], j)
		}
	}
	for uid, js := range jobsOfRun {
		if len(js) > 1 {
			bad("Run %s has %d search Jobs", runByUID[uid].Name, len(js))
		}
		ended := jobEnded(js[0])
		for _, b := range baselinesOfRun[uid] {
			ended = ended && jobEnded(b)
		}
		if _, _, done := sandboxtest.Completed(runByUID[uid]); ended && !done {
			bad("the Jobs of Run %s ended but it is not terminal", runByUID[uid].Name)
		}
	}
	for uid, js := range baselinesOfRun {
		if len(js) > 1 {
			bad("Run %s has %d baseline Jobs", runByUID[uid].Name, len(js))
		}
	}
	for i := range s.runs {
		r := &s.runs[i]
		if reason, _, _ := sandboxtest.Completed(r); reason == v1beta2.ReasonSucceeded {
			js := jobsOfRun[r.UID]
			if len(js) != 1 || r.Status.JobRef == nil || r.Status.JobRef.UID != js[0].UID {
				bad("succeeded Run %s: %d Jobs, jobRef %v", r.Name, len(js), r.Status.JobRef)
			}
		}
	}
	for _, c := range s.configMaps {
		if owner, ok := controllerOf(&c, "DynamoGraphDeploymentRun"); !ok || runByUID[owner] == nil {
			bad("ConfigMap %s has no existing owner Run", c.Name)
		}
	}
	// Candidates: owned by an existing Run, no duplicates, matching the Run's refs.
	candsOfRun := map[types.UID][]v1beta2.DynamoGraphDeploymentCandidate{}
	for _, c := range s.candidates {
		owner, ok := controllerOf(&c, "DynamoGraphDeploymentRun")
		if !ok || runByUID[owner] == nil {
			bad("Candidate %s has no existing owner Run", c.Name)
			continue
		}
		candsOfRun[owner] = append(candsOfRun[owner], c)
	}
	for uid, cs := range candsOfRun {
		r := runByUID[uid]
		ranks := map[string]bool{}
		for _, c := range cs {
			rank, labelled := c.Labels[v1beta2.LabelCandidateRank]
			if !labelled {
				// Provisional Candidates carry no rank label; one that was never
				// evaluated is the create of a round cut short.
				if meta.IsStatusConditionTrue(c.Status.Conditions, v1beta2.ConditionEvaluated) && !c.Status.Provisional {
					bad("Candidate %s: evaluated and final without a rank label", c.Name)
				}
				continue
			}
			if ranks[rank] {
				bad("Run %s: two Candidates of rank %s", r.Name, rank)
			}
			ranks[rank] = true
		}
		if reason, _, _ := sandboxtest.Completed(r); reason == v1beta2.ReasonSucceeded && len(cs) != len(r.Status.CandidateRefs) {
			bad("Run %s: %d Candidates, %d candidateRefs", r.Name, len(cs), len(r.Status.CandidateRefs))
		}
	}
	return out, reasons
}

func jobEnded(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// requireInvariants snapshots the namespaces, fails on every violation and returns the
// terminal reasons of all Runs.
func requireInvariants(t *testing.T, namespaces ...string) map[string]int {
	t.Helper()
	total := map[string]int{}
	var all []string
	for _, ns := range namespaces {
		s, err := takeSnapshot(context.Background(), ns)
		if err != nil {
			t.Fatalf("listing %s: %v", ns, err)
		}
		v, reasons := s.violations()
		all = append(all, v...)
		for k, n := range reasons {
			total[k] += n
		}
		t.Logf("%s: %d requests, %d Runs, %d Jobs, %d ConfigMaps, %d Candidates", ns, len(s.dgdrs), len(s.runs), len(s.jobs), len(s.configMaps), len(s.candidates))
	}
	if len(all) > 0 {
		if len(all) > 50 {
			all = append(all[:50], fmt.Sprintf("... and %d more", len(all)-50))
		}
		t.Fatalf("%d invariant violations:\n%s", len(all), strings.Join(all, "\n"))
	}
	return total
}

// waitQuiet waits until every namespace is quiet.
func waitQuiet(t *testing.T, timeout time.Duration, namespaces ...string) {
	t.Helper()
	if err := waitForErr(timeout, 2*time.Second, func(ctx context.Context) (bool, string, error) {
		var descs []string
		ok := true
		for _, ns := range namespaces {
			s, err := takeSnapshot(ctx, ns)
			if err != nil {
				return false, "", err
			}
			q, d := s.quiet()
			if !q {
				ok = false
				descs = append(descs, d)
			}
		}
		return ok, strings.Join(descs, "; "), nil
	}); err != nil {
		t.Fatalf("waiting for the namespaces to be quiet: %v", err)
	}
}
