package reporter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/candidates"
	"github.com/dgdr-operator/dgdr-operator/internal/searchoutput"
)

// Publish publishes the final result of a search that ended with exitCode: the Candidates, then
// the Run's progress, candidateRefs and recommendation summary (refs last). It is idempotent.
func (r *Reporter) Publish(ctx context.Context, run *v1beta2.DynamoGraphDeploymentRun, exitCode int, progress v1beta2.RunProgress) (*Publication, error) {
	r.defaults()
	out := &Publication{SearchExitCode: exitCode, Progress: progress}
	// Everything is read and checked (caps, no symbolic links, regular files only, every
	// Candidate rendered) before the first write, so rejected output publishes nothing.
	sweep, err := candidates.ReadResult(r.OutputDir)
	if err != nil {
		if searchoutput.IsRejected(err) {
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
	progress = candidates.WithCounts(progress, sweep.Counts)

	desired, err := candidates.FromResult(run, r.OutputDir, sweep, r.renderOptions())
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
		InfeasibleReasons:     candidates.ResultReasons(sweep),
		View:                  candidates.ViewName(sweep),
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

// renderOptions are the reporter's settings for rendering Candidates.
func (r *Reporter) renderOptions() candidates.Options {
	return candidates.Options{RuntimeImages: r.RuntimeImages, GPUsPerNode: r.GPUsPerNode, PlannerImage: r.PlannerImage, Now: r.Now}
}

// patchFinal writes the final status slice. A transient failure is retried by Run, which does
// the whole (idempotent) publication again.
func (r *Reporter) patchFinal(ctx context.Context, run *v1beta2.DynamoGraphDeploymentRun, sp statusPatch, out *Publication) error {
	now := metav1.NewTime(r.Now().Truncate(time.Second))
	sp.LastProgressTime = &now
	if err := r.patchStatus(ctx, run, sp); err != nil {
		return fmt.Errorf("patching the status of Run %s: %w", run.Name, err)
	}
	r.Log.Info("published", "candidates", len(out.Published), "searchExitCode", out.SearchExitCode)
	return nil
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
		obj.Status.Rank == want.Status.Rank && obj.Status.Provisional == want.Status.Provisional && obj.Status.ParetoRole == want.Status.ParetoRole {
		return nil
	}
	status := *want.Status.DeepCopy()
	status.FitsCluster = obj.Status.FitsCluster // the operator's (internal/controller/fit)
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
