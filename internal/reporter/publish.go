package reporter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/internal/naming"
	"github.com/dgdr-operator/dgdr-operator/internal/render"
	"github.com/dgdr-operator/dgdr-operator/internal/scheme"
)

// View names of recommendation.json.
const (
	ViewTopN        = "top_n"
	ViewParetoFront = "pareto_front"
)

// Publish publishes the final result of a search that ended with exitCode: the Candidates, then
// the Run's progress, candidateRefs and recommendation summary (refs last). It is idempotent.
func (r *Reporter) Publish(ctx context.Context, run *v1beta2.DynamoGraphDeploymentRun, exitCode int, progress v1beta2.RunProgress) (*Outcome, error) {
	r.defaults()
	out := &Outcome{SearchExitCode: exitCode, Progress: progress}
	// Everything is read and checked (caps, no symbolic links, regular files only, every
	// Candidate rendered) before the first write, so rejected output publishes nothing.
	sweep, err := r.readSweep()
	if err != nil {
		if IsOutputRejected(err) {
			return out, err
		}
		if exitCode == 0 {
			return out, fmt.Errorf("the search exited 0 but its result cannot be read: %w", err)
		}
		// The search failed before writing a result: publish the last progress and leave the
		// failure to the search container's exit code.
		if !errors.Is(err, os.ErrNotExist) {
			r.Log.Error(err, "reading the result of a failed search")
		}
		// Provisional candidates published meanwhile stay, marked provisional, with their
		// candidateRefs and summary; the ledger is kept as the Run's artifacts.
		art, aerr := r.keepArtifacts(ctx, run)
		if aerr != nil {
			return out, aerr
		}
		return out, r.patchFinal(ctx, run, statusPatch{Progress: &progress, Artifacts: art}, out)
	}
	progress = withCounts(progress, sweep.Counts)

	desired, err := r.desiredCandidates(run, sweep)
	if err != nil {
		return out, err
	}
	// A search that did not exit 0 (interrupted, resource-limited) wrote a partial result: its
	// candidates are published marked provisional.
	partial := exitCode != 0
	for i := range desired {
		desired[i].Status.Provisional = partial
	}
	for i := range desired {
		if err := r.ensureCandidate(ctx, run, &desired[i]); err != nil {
			return out, fmt.Errorf("publishing Candidate %s: %w", desired[i].Name, err)
		}
		out.Published = append(out.Published, desired[i].Name)
	}
	if err := r.deleteStale(ctx, run, out.Published); err != nil {
		return out, err
	}
	art, err := r.keepArtifacts(ctx, run)
	if err != nil {
		return out, err
	}

	progress.Published = int32(len(desired))
	out.Progress = progress
	summary := &v1beta2.RecommendationSummary{
		Implementation:        sweep.Provenance.Implementation,
		ImplementationVersion: sweep.Provenance.ImplementationVersion,
		Evaluated:             int64(sweep.Counts.Evaluated),
		Feasible:              int64(sweep.Counts.Feasible),
		Provisional:           partial,
		InfeasibleReasons:     sweepReasons(sweep),
	}
	if len(sweep.Views.ParetoFront) > 0 {
		summary.View = ViewParetoFront
	} else {
		summary.View = ViewTopN
	}
	sp := statusPatch{Progress: &progress, Recommendation: summary, Artifacts: art}
	if len(desired) > 0 {
		summary.BestCandidate = desired[0].Name
		summary.Metrics = desired[0].Status.Metrics.DeepCopy()
		for _, c := range desired {
			sp.CandidateRefs = append(sp.CandidateRefs, v1beta2.CandidateReference{Name: c.Name})
		}
	}
	return out, r.patchFinal(ctx, run, sp, out)
}

// patchFinal writes the final status slice, retrying transient failures.
func (r *Reporter) patchFinal(ctx context.Context, run *v1beta2.DynamoGraphDeploymentRun, sp statusPatch, out *Outcome) error {
	now := metav1.NewTime(r.Now().Truncate(time.Second))
	sp.LastProgressTime = &now
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		if err = r.patchStatus(ctx, run, sp); err == nil {
			r.Log.Info("published", "candidates", len(out.Published), "searchExitCode", out.SearchExitCode)
			return nil
		}
		if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || apierrors.IsInvalid(err) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(attempt+1) * 200 * time.Millisecond):
		}
	}
	return fmt.Errorf("patching the status of Run %s: %w", run.Name, err)
}

// desiredCandidates builds the Candidates to publish, in view order, at most maxCandidates.
func (r *Reporter) desiredCandidates(run *v1beta2.DynamoGraphDeploymentRun, sweep *output.SweepResult) ([]v1beta2.DynamoGraphDeploymentCandidate, error) {
	limit := DefaultMaxCandidates
	if rs := run.Spec.Recommendation; rs != nil && rs.MaxCandidates != nil && *rs.MaxCandidates > 0 {
		limit = int(*rs.MaxCandidates)
	}
	ids := sweep.Views.Selected()
	if len(ids) > limit {
		ids = ids[:limit]
	}
	out := make([]v1beta2.DynamoGraphDeploymentCandidate, 0, len(ids))
	var recs *os.File // the recommendations directory, opened once and read by descriptor
	for i, id := range ids {
		rec, ok := sweep.Candidate(id)
		if !ok {
			return nil, fmt.Errorf("recommendation.json: view entry %s has no candidate record", id)
		}
		path := output.RecommendationPath(r.OutputDir, i)
		if i == 0 {
			var err error
			if recs, err = r.openRecommendations(); err != nil {
				if IsOutputRejected(err) {
					return nil, err
				}
				return nil, fmt.Errorf("reading the configuration of %s: %w", id, err)
			}
			defer recs.Close()
		}
		data, err := readCappedIn(recs, filepath.Base(path), r.rel(path), jobcontract.MaxConfigurationBytes)
		if err != nil {
			if IsOutputRejected(err) {
				return nil, err
			}
			return nil, fmt.Errorf("reading the configuration of %s: %w", id, err)
		}
		var doc map[string]any
		if err := yaml.Unmarshal(data, &doc); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		c, err := r.buildCandidate(run, sweep, rec, doc, i+1)
		if err != nil {
			return nil, fmt.Errorf("%s (%s): %w", id, path, err)
		}
		out = append(out, *c)
	}
	return out, nil
}

func (r *Reporter) buildCandidate(run *v1beta2.DynamoGraphDeploymentRun, sweep *output.SweepResult, rec *output.Candidate, doc map[string]any, rank int) (*v1beta2.DynamoGraphDeploymentCandidate, error) {
	name := naming.CandidateName(run.Name, rec.CandidateID)
	dgd, sum, err := render.Render(doc, render.RunOptions(run, name, r.RuntimeImages, r.GPUsPerNode, r.PlannerImage))
	if err != nil {
		return nil, fmt.Errorf("rendering: %w", err)
	}
	gd, err := json.Marshal(dgd)
	if err != nil {
		return nil, err
	}
	params, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	gpus := rec.UsedGPUs
	if gpus <= 0 {
		gpus = sum.GPUs
	}
	mode := v1beta2.ModeAggregated
	if sum.Mode == render.ModeDisaggregated {
		mode = v1beta2.ModeDisaggregated
	}
	labels := map[string]string{
		v1beta2.LabelRunName:       run.Name,
		v1beta2.LabelRunUID:        string(run.UID),
		v1beta2.LabelCandidateRank: strconv.Itoa(rank),
	}
	for _, k := range []string{v1beta2.LabelRequestName, v1beta2.LabelRequestUID, v1beta2.LabelRequestGeneration} {
		if v, ok := run.Labels[k]; ok {
			labels[k] = v
		}
	}
	c := &v1beta2.DynamoGraphDeploymentCandidate{
		TypeMeta: metav1.TypeMeta{APIVersion: v1beta2.GroupVersion.String(), Kind: "DynamoGraphDeploymentCandidate"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: run.Namespace,
			Labels:    labels,
		},
		Spec: v1beta2.DynamoGraphDeploymentCandidateSpec{
			Backend:         v1beta2.Backend(sum.Backend),
			Mode:            mode,
			GPUs:            int32(gpus),
			GraphDeployment: runtime.RawExtension{Raw: gd},
			Parameters:      runtime.RawExtension{Raw: params},
		},
		Status: v1beta2.DynamoGraphDeploymentCandidateStatus{
			Rank:        int32(rank),
			CandidateID: rec.CandidateID,
			Metrics:     Metrics(rec),
			Conditions: []metav1.Condition{{
				Type:   v1beta2.ConditionEvaluated,
				Status: metav1.ConditionTrue,
				Reason: v1beta2.ReasonFeasible,
				Message: fmt.Sprintf("predicted by %s %s; rank %d of view %s", sweep.Provenance.Implementation,
					sweep.Provenance.ImplementationVersion, rank, viewName(sweep)),
				LastTransitionTime: metav1.NewTime(r.Now().Truncate(time.Second)),
			}},
		},
	}
	if err := controllerutil.SetControllerReference(run, c, scheme.Scheme); err != nil {
		return nil, err
	}
	return c, nil
}

func viewName(s *output.SweepResult) string {
	if len(s.Views.ParetoFront) > 0 {
		return ViewParetoFront
	}
	return ViewTopN
}

// Metrics maps a candidate record's metrics to the API's CandidateMetrics.
func Metrics(rec *output.Candidate) *v1beta2.CandidateMetrics {
	get := func(keys ...string) *float64 {
		for _, k := range keys {
			if v, ok := rec.Metrics[k]; ok {
				v := v
				return &v
			}
		}
		return nil
	}
	m := &v1beta2.CandidateMetrics{
		Score:             copyFloat(rec.Score),
		TTFTMs:            get("mean_ttft_ms"),
		ITLMs:             get("mean_itl_ms", "mean_tpot_ms"),
		E2EMs:             get("mean_e2e_latency_ms"),
		Throughput:        get("output_throughput_tok_s"),
		ThroughputPerGPU:  get("output_throughput_tok_s_per_gpu"),
		ThroughputPerUser: get("mean_output_token_throughput_per_user"),
		RequestsPerSecond: get("request_throughput_rps"),
		GPUs:              int32(rec.UsedGPUs),
	}
	if m.ThroughputPerGPU == nil && m.Throughput != nil && rec.UsedGPUs > 0 {
		v := *m.Throughput / float64(rec.UsedGPUs)
		m.ThroughputPerGPU = &v
	}
	m.ErrorBand = errorBand(rec.ErrorBand)
	return m
}

// errorBand maps the recommender's error band (keyed by metric: ttft_ms, tpot_ms or itl_ms) to
// the API's; nil when the recommender wrote none.
func errorBand(b *output.ErrorBand) *v1beta2.MetricsErrorBand {
	if b == nil {
		return nil
	}
	out := &v1beta2.MetricsErrorBand{Basis: b.Basis, Extrapolated: b.Extrapolated}
	pick := func(keys ...string) (*float64, *float64) {
		for _, k := range keys {
			if r, ok := b.Metrics[k]; ok {
				return &r.MedianAbsPct, &r.P80AbsPct
			}
		}
		return nil, nil
	}
	out.TTFTPct, out.TTFTP80Pct = pick("ttft_ms")
	out.ITLPct, out.ITLP80Pct = pick("itl_ms", "tpot_ms")
	if out.TTFTPct == nil && out.ITLPct == nil {
		return nil
	}
	if len(out.Basis) > 512 {
		out.Basis = out.Basis[:512]
	}
	return out
}

func copyFloat(p *float64) *float64 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// ensureCandidate creates the candidate (AlreadyExists is success once the existing object is
// verified to be the same candidate of the same Run) and sets its status when it is missing.
func (r *Reporter) ensureCandidate(ctx context.Context, run *v1beta2.DynamoGraphDeploymentRun, want *v1beta2.DynamoGraphDeploymentCandidate) error {
	obj := want.DeepCopy()
	obj.Status = v1beta2.DynamoGraphDeploymentCandidateStatus{}
	err := r.Client.Create(ctx, obj)
	switch {
	case err == nil:
		if r.OnCandidateCreated != nil {
			r.OnCandidateCreated(want.Name)
		}
	case apierrors.IsAlreadyExists(err):
		obj = &v1beta2.DynamoGraphDeploymentCandidate{}
		if err := r.Client.Get(ctx, client.ObjectKeyFromObject(want), obj); err != nil {
			return err
		}
		if !metav1.IsControlledBy(obj, run) || obj.Labels[v1beta2.LabelRunUID] != string(run.UID) {
			return fmt.Errorf("a Candidate with this name exists and does not belong to Run %s (uid %s)", run.Name, run.UID)
		}
		if !sameSpec(&obj.Spec, &want.Spec) {
			evaluated := meta.FindStatusCondition(obj.Status.Conditions, v1beta2.ConditionEvaluated) != nil
			if evaluated && !obj.Status.Provisional {
				return fmt.Errorf("a Candidate with this name exists with a different spec")
			}
			// A provisional Candidate (or one whose status was never written) of this Run
			// rendered differently (the ledger's configuration and the final file differ):
			// replaced, since the spec is immutable.
			if err := r.replaceCandidate(ctx, obj, want); err != nil {
				return err
			}
			obj = want.DeepCopy()
			obj.Status = v1beta2.DynamoGraphDeploymentCandidateStatus{}
			if err := r.Client.Get(ctx, client.ObjectKeyFromObject(want), obj); err != nil {
				return err
			}
		}
	default:
		return err
	}
	// A provisional Candidate has no rank label; the final publication sets it.
	if rank := want.Labels[v1beta2.LabelCandidateRank]; obj.Labels[v1beta2.LabelCandidateRank] != rank {
		var value any = rank
		if rank == "" {
			value = nil
		}
		body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{v1beta2.LabelCandidateRank: value}}})
		if err := r.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, body)); err != nil {
			return err
		}
	}
	old := meta.FindStatusCondition(obj.Status.Conditions, v1beta2.ConditionEvaluated)
	if old != nil && old.Status == metav1.ConditionTrue && obj.Status.CandidateID == want.Status.CandidateID &&
		obj.Status.Rank == want.Status.Rank && obj.Status.Provisional == want.Status.Provisional {
		return nil
	}
	status := *want.Status.DeepCopy()
	for i := range status.Conditions {
		status.Conditions[i].ObservedGeneration = obj.Generation
		if old != nil && old.Type == status.Conditions[i].Type && old.Status == status.Conditions[i].Status {
			status.Conditions[i].LastTransitionTime = old.LastTransitionTime
		}
	}
	obj.Status = status
	return r.Client.Status().Update(ctx, obj)
}

// replaceCandidate deletes obj (only that object: a UID precondition) and creates want.
func (r *Reporter) replaceCandidate(ctx context.Context, obj, want *v1beta2.DynamoGraphDeploymentCandidate) error {
	if err := r.Client.Delete(ctx, obj, client.Preconditions{UID: &obj.UID}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("replacing provisional Candidate %s: %w", obj.Name, err)
	}
	fresh := want.DeepCopy()
	fresh.Status = v1beta2.DynamoGraphDeploymentCandidateStatus{}
	if err := r.Client.Create(ctx, fresh); err != nil {
		return fmt.Errorf("replacing provisional Candidate %s: %w", obj.Name, err)
	}
	if r.OnCandidateCreated != nil {
		r.OnCandidateCreated(want.Name)
	}
	return nil
}

func sameSpec(a, b *v1beta2.DynamoGraphDeploymentCandidateSpec) bool {
	if a.Backend != b.Backend || a.Mode != b.Mode || a.GPUs != b.GPUs {
		return false
	}
	return sameJSON(a.GraphDeployment.Raw, b.GraphDeployment.Raw) && sameJSON(a.Parameters.Raw, b.Parameters.Raw)
}

func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// deleteStale deletes Candidates of this Run (by Run UID label) that are not in keep: a
// candidate published by an interrupted earlier attempt that is no longer selected.
func (r *Reporter) deleteStale(ctx context.Context, run *v1beta2.DynamoGraphDeploymentRun, keep []string) error {
	var list v1beta2.DynamoGraphDeploymentCandidateList
	if err := r.Client.List(ctx, &list, client.InNamespace(run.Namespace), client.MatchingLabels{v1beta2.LabelRunUID: string(run.UID)}); err != nil {
		return fmt.Errorf("listing the Run's Candidates: %w", err)
	}
	wanted := map[string]bool{}
	for _, n := range keep {
		wanted[n] = true
	}
	for i := range list.Items {
		c := &list.Items[i]
		if wanted[c.Name] || !metav1.IsControlledBy(c, run) {
			continue
		}
		if err := r.Client.Delete(ctx, c); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting stale Candidate %s: %w", c.Name, err)
		}
	}
	return nil
}

// Candidates returns the Candidates the reporter publishes for run from the search output in
// r.OutputDir, best first, without touching the cluster (dgdrctl recommend runs it offline).
func (r *Reporter) Candidates(run *v1beta2.DynamoGraphDeploymentRun) ([]v1beta2.DynamoGraphDeploymentCandidate, error) {
	r.defaults()
	sweep, err := r.readSweep()
	if err != nil {
		return nil, err
	}
	return r.desiredCandidates(run, sweep)
}

// readSweep reads recommendation.json through the output caps: the output directory must be a
// real directory and the file a regular file (no symbolic links) of at most
// jobcontract.MaxRecommendationBytes.
func (r *Reporter) readSweep() (*output.SweepResult, error) {
	data, err := readCapped(filepath.Join(r.OutputDir, output.RecommendationFile), output.RecommendationFile, jobcontract.MaxRecommendationBytes)
	if err != nil {
		return nil, err
	}
	sweep, err := output.ParseSweepResult(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", output.RecommendationFile, err)
	}
	return sweep, nil
}

// openRecommendations opens the output's recommendations directory by descriptor: the output
// directory, then the recommendations directory in it, neither a symbolic link (openDir), so
// every configuration is read from the directories that were checked.
func (r *Reporter) openRecommendations() (*os.File, error) {
	out, err := openDir(r.OutputDir, filepath.Base(r.OutputDir))
	if err != nil {
		return nil, err
	}
	defer out.Close()
	return openDirIn(out, output.RecommendationsDir, output.RecommendationsDir)
}
