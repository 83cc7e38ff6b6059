package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/candidates"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/internal/resultsview"
)

func newResultsCommand() *cobra.Command {
	var kf kubeFlags
	var raw, events bool
	cmd := &cobra.Command{
		Use:   "results RUN",
		Short: "Show a Run's result: its summary and ranked candidates, or the search's raw output",
		Long: `results prints a DynamoGraphDeploymentRun's result summary, the candidates that were not
feasible by reason category, and its ranked candidates (marked when provisional: published while
the search ran, and kept as such when the Run was cancelled or hit its deadline). RUN may also name
a request: its newest Run is shown.

--raw prints the search's recommendation.json as the Run keeps it (status.artifacts: a ConfigMap
owned by the Run, gzip-compressed, cut with a "` + candidates.TruncatedMarker + `" line when it did
not fit); --raw --events prints the kept events ledger (execution-events.jsonl) instead.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := kf.connect()
			if err != nil {
				return err
			}
			if events && !raw {
				return fmt.Errorf("--events works only with --raw")
			}
			run, err := resolveRun(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if raw {
				key := jobcontract.ArtifactRecommendationKey
				if events {
					key = jobcontract.ArtifactEventsKey
				}
				return writeRaw(cmd.Context(), c, run, key, out, cmd.ErrOrStderr())
			}
			return writeResults(cmd.Context(), c, run, out)
		},
	}
	kf.add(cmd)
	cmd.Flags().BoolVar(&raw, "raw", false, "print the search's kept recommendation.json")
	cmd.Flags().BoolVar(&events, "events", false, "with --raw: print the kept events ledger instead")
	return cmd
}

// resolveRun gets the Run named name, or the newest Run of the request named name.
func resolveRun(ctx context.Context, c *clients, name string) (*v1beta2.DynamoGraphDeploymentRun, error) {
	var run v1beta2.DynamoGraphDeploymentRun
	err := c.ctrl.Get(ctx, types.NamespacedName{Namespace: c.namespace, Name: name}, &run)
	if err == nil {
		return &run, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("getting DynamoGraphDeploymentRun %s: %w", name, err)
	}
	var req v1beta2.DynamoGraphDeploymentRequest
	if rerr := c.ctrl.Get(ctx, types.NamespacedName{Namespace: c.namespace, Name: name}, &req); rerr != nil {
		return nil, fmt.Errorf("no DynamoGraphDeploymentRun or DynamoGraphDeploymentRequest %s in namespace %s", name, c.namespace)
	}
	runs, err := resultsview.RequestRuns(ctx, c.ctrl, &req)
	if err != nil {
		return nil, err
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("request %s has no runs yet", name)
	}
	return &runs[0], nil
}

// writeRaw prints one kept file of the Run's artifacts, decompressed.
func writeRaw(ctx context.Context, c *clients, run *v1beta2.DynamoGraphDeploymentRun, key string, out, errOut io.Writer) error {
	a := run.Status.Artifacts
	if a == nil || a.ConfigMapName == "" {
		return fmt.Errorf("run %s has no kept artifacts yet (status.artifacts is written when the search ends or is stopped)", run.Name)
	}
	var cm corev1.ConfigMap
	if err := c.ctrl.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: a.ConfigMapName}, &cm); err != nil {
		return fmt.Errorf("getting the artifacts ConfigMap %s of run %s: %w", a.ConfigMapName, run.Name, err)
	}
	art, err := candidates.ReadArtifacts(run, &cm)
	if err != nil {
		return err
	}
	file := strings.TrimSuffix(key, ".gz")
	data, err := art.File(key)
	if errors.Is(err, candidates.ErrNotKept) {
		return fmt.Errorf("run %s kept no %s (the search did not write it)", run.Name, file)
	}
	if err != nil {
		return fmt.Errorf("%s of ConfigMap %s: %w", key, a.ConfigMapName, err)
	}
	if _, err := out.Write(data); err != nil {
		return err
	}
	if art.Truncated(file) {
		fmt.Fprintf(errOut, "note: %s was cut to fit the Run's artifacts ConfigMap; its last line says how much was kept\n", file)
	}
	return nil
}

// writeResults prints the Run's summary, reasons and candidates.
func writeResults(ctx context.Context, c *clients, run *v1beta2.DynamoGraphDeploymentRun, out io.Writer) error {
	fmt.Fprintf(out, "Run %s/%s  state %s  reason %s\n", run.Namespace, run.Name, orDash(string(run.Status.Phase)), orDash(completedReason(run)))
	if run.Status.Progress != nil {
		p := resultsview.RunProgress(run)
		fmt.Fprintf(out, "Progress %s  feasible %d  published %d\n", p.Text(), p.Feasible, p.Published)
	}
	if s := run.Status.Recommendation; s != nil {
		fmt.Fprintf(out, "Recommender %s %s  view %s  evaluated %d  feasible %d  best %s\n", orDash(s.Implementation),
			s.ImplementationVersion, orDash(s.View), s.Evaluated, s.Feasible, orDash(s.BestCandidate))
	}
	writeReasons(out, run)
	if a := run.Status.Artifacts; a != nil {
		cut := ""
		if a.Truncated {
			cut = " (cut to fit)"
		}
		fmt.Fprintf(out, "Raw output: ConfigMap %s%s; print it with dgdrctl results %s --raw\n", a.ConfigMapName, cut, run.Name)
	}
	cands, err := resultsview.RunCandidates(ctx, c.ctrl, run)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nCandidates%s:\n", provisionalNote(run))
	if len(cands) == 0 {
		fmt.Fprintln(out, "  none published")
		return nil
	}
	writeCandidateTable(out, cands)
	return nil
}

// writeReasons prints the not-feasible candidates by reason category, most frequent first.
func writeReasons(out io.Writer, run *v1beta2.DynamoGraphDeploymentRun) {
	s := run.Status.Recommendation
	if s == nil || len(s.InfeasibleReasons) == 0 {
		return
	}
	parts := make([]string, 0, len(s.InfeasibleReasons))
	var total int64
	for _, rc := range s.InfeasibleReasons {
		parts = append(parts, fmt.Sprintf("%s %d", rc.Category, rc.Count))
		total += rc.Count
	}
	fmt.Fprintf(out, "Not feasible (%d) by reason: %s\n", total, strings.Join(parts, ", "))
}

// provisionalNote marks a Run whose published candidates are provisional.
func provisionalNote(run *v1beta2.DynamoGraphDeploymentRun) string {
	if s := run.Status.Recommendation; s != nil && s.Provisional {
		if isComplete(run) {
			return " (provisional: the best settled before the search stopped)"
		}
		return " (provisional: the best so far; the search is still running)"
	}
	return ""
}
