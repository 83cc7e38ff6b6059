package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/resultsview"
)

func newStatusCommand() *cobra.Command {
	var kf kubeFlags
	var watch bool
	var interval time.Duration
	var output string
	cmd := &cobra.Command{
		Use:   "status DGDR",
		Short: "Show a request's runs, search progress and ranked candidates",
		Long: `status prints the runs of a DynamoGraphDeploymentRequest (newest first) with their state and
progress, then the ranked candidates of the newest run with their predicted metrics; what
autoApply deployed (the DynamoGraphDeployment, the candidate, and the best candidate it was chosen
over within spec.deployment.selection.tolerance) with the Deployed condition; when
the request verifies its deployed candidate, the measurement beside the prediction: each metric
predicted, observed, and whether it held within its band; and, when the request schedules
re-searches, their schedule and history with the ImprovementAvailable condition. --watch refreshes the view, with a
progress bar, until the newest run is complete.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := kf.connect()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			switch output {
			case "table":
			case "yaml", "json":
				if watch {
					return fmt.Errorf("--watch works only with -o table")
				}
				return writeStatusDocument(cmd.Context(), c, args[0], out, output)
			default:
				return fmt.Errorf("-o must be table, yaml or json")
			}
			if !watch {
				_, err := writeStatus(cmd.Context(), c, args[0], out, false)
				return err
			}
			return watchStatus(cmd.Context(), c, args[0], out, interval)
		},
	}
	kf.add(cmd)
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "refresh until the newest run is complete")
	cmd.Flags().DurationVar(&interval, "interval", 2*time.Second, "refresh interval of --watch")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table, yaml or json")
	return cmd
}

// StatusDocument is the machine-readable form of `dgdrctl status`: the request, its runs (newest
// first) and the ranked candidates of the newest run.
type StatusDocument struct {
	Request    v1beta2.DynamoGraphDeploymentRequest     `json:"request"`
	Runs       []v1beta2.DynamoGraphDeploymentRun       `json:"runs"`
	Candidates []v1beta2.DynamoGraphDeploymentCandidate `json:"candidates"`
}

func writeStatusDocument(ctx context.Context, c *clients, name string, out io.Writer, format string) error {
	doc := StatusDocument{Runs: []v1beta2.DynamoGraphDeploymentRun{}, Candidates: []v1beta2.DynamoGraphDeploymentCandidate{}}
	if err := c.ctrl.Get(ctx, types.NamespacedName{Namespace: c.namespace, Name: name}, &doc.Request); err != nil {
		return fmt.Errorf("getting DynamoGraphDeploymentRequest %s: %w", name, err)
	}
	runs, err := resultsview.RequestRuns(ctx, c.ctrl, &doc.Request)
	if err != nil {
		return err
	}
	doc.Runs = append(doc.Runs, runs...)
	if len(runs) > 0 {
		cands, err := resultsview.RunCandidates(ctx, c.ctrl, &runs[0])
		if err != nil {
			return err
		}
		doc.Candidates = append(doc.Candidates, cands...)
	}
	for i := range doc.Runs {
		doc.Runs[i].ManagedFields = nil
	}
	for i := range doc.Candidates {
		doc.Candidates[i].ManagedFields = nil
	}
	doc.Request.ManagedFields = nil
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	if format == "yaml" {
		if data, err = yaml.JSONToYAML(data); err != nil {
			return err
		}
		_, err = out.Write(data)
		return err
	}
	_, err = fmt.Fprintf(out, "%s\n", data)
	return err
}

func watchStatus(ctx context.Context, c *clients, name string, out io.Writer, interval time.Duration) error {
	for {
		var buf bytes.Buffer
		done, err := writeStatus(ctx, c, name, &buf, true)
		if err != nil {
			return err
		}
		fmt.Fprint(out, "\x1b[H\x1b[2J")
		if _, err := out.Write(buf.Bytes()); err != nil {
			return err
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

// writeStatus prints the status and reports whether the newest run is complete.
func writeStatus(ctx context.Context, c *clients, name string, out io.Writer, bar bool) (bool, error) {
	var req v1beta2.DynamoGraphDeploymentRequest
	if err := c.ctrl.Get(ctx, types.NamespacedName{Namespace: c.namespace, Name: name}, &req); err != nil {
		return false, fmt.Errorf("getting DynamoGraphDeploymentRequest %s: %w", name, err)
	}
	if req.IsV1Beta1Native() {
		return true, writeV1Beta1Status(out, &req)
	}
	done, err := writeSearch(ctx, c, &req, out, bar)
	if err != nil {
		return done, err
	}
	now := time.Now()
	writeDeployment(out, &req)
	writeVerification(out, &req, now)
	writeResearch(out, &req, now)
	return done, nil
}

// writeSearch prints the request's runs and the candidates of the newest, and reports whether
// the newest run is complete.
func writeSearch(ctx context.Context, c *clients, req *v1beta2.DynamoGraphDeploymentRequest, out io.Writer, bar bool) (bool, error) {
	runs, err := resultsview.RequestRuns(ctx, c.ctrl, req)
	if err != nil {
		return false, err
	}
	fmt.Fprintf(out, "Request %s/%s  model %s  generation %d\n", req.Namespace, req.Name, req.Spec.Model.Name, req.Generation)
	if len(runs) == 0 {
		fmt.Fprintln(out, "\nNo runs yet.")
		return false, nil
	}
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tSTATE\tREASON\tPROGRESS\tFEASIBLE\tCANDIDATES\tAGE")
	for _, r := range runs {
		p := resultsview.RunProgress(&r)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\n", r.Name, orDash(string(r.Status.Phase)), orDash(completedReason(&r)),
			p.Text(), p.Feasible, p.Published, age(r.CreationTimestamp))
	}
	_ = tw.Flush()

	latest := &runs[0]
	done := isComplete(latest)
	if bar && !done {
		fmt.Fprintf(out, "\n%s %s\n", latest.Name, progressBar(resultsview.RunProgress(latest), 40))
	}
	if latest.Status.Recommendation != nil && len(latest.Status.Recommendation.InfeasibleReasons) > 0 {
		fmt.Fprintln(out)
		writeReasons(out, latest)
	}
	cands, err := resultsview.RunCandidates(ctx, c.ctrl, latest)
	if err != nil {
		return done, err
	}
	fmt.Fprintf(out, "\nCandidates of %s%s:\n", latest.Name, provisionalNote(latest))
	if len(cands) == 0 {
		fmt.Fprintln(out, "  none published")
		return done, nil
	}
	writeCandidateTable(out, cands)
	return done, nil
}

// writeCandidateTable prints candidates, best first, one row each.
func writeCandidateTable(out io.Writer, cands []v1beta2.DynamoGraphDeploymentCandidate) {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	// The cost columns appear when the Run recorded a price (the operator configuration's pricing).
	costed := slices.ContainsFunc(cands, func(cd v1beta2.DynamoGraphDeploymentCandidate) bool {
		return cd.Status.Metrics != nil && cd.Status.Metrics.Cost != nil
	})
	header := "RANK\tNAME\tBACKEND\tMODE\tGPUS\tSCORE\tTTFT(ms)\tITL(ms)\tE2E(ms)\tTOK/S\tTOK/S/GPU\tTOK/S/USER"
	if costed {
		header += "\tCOST/H\tCOST/1M OUT TOK"
	}
	fmt.Fprintln(tw, header)
	for _, cd := range cands {
		m := cd.Status.Metrics
		if m == nil {
			m = &v1beta2.CandidateMetrics{}
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s", cd.Status.Rank, cd.Name, cd.Spec.Backend, cd.Spec.Mode, cd.Spec.GPUs,
			num(m.Score), withBand(m.TTFTMs, resultsview.TTFTBand(m)), withBand(m.ITLMs, resultsview.ITLBand(m)), num(m.E2EMs), num(m.Throughput), num(m.ThroughputPerGPU), num(m.ThroughputPerUser))
		if costed {
			fmt.Fprintf(tw, "\t%s\t%s", money(m.Cost, func(c *v1beta2.CandidateCost) string { return c.PerHour }),
				money(m.Cost, func(c *v1beta2.CandidateCost) string { return c.PerMillionOutputTokens }))
		}
		fmt.Fprintln(tw)
	}
	_ = tw.Flush()
	for _, cd := range cands {
		if m := cd.Status.Metrics; m != nil && m.ErrorBand != nil {
			b := m.ErrorBand
			note := "±: median error of the estimate against measured serving runs (" + b.Basis + ")"
			if b.Extrapolated {
				note += "; extrapolated, so a floor rather than an estimate"
			}
			fmt.Fprintln(out, note)
			break
		}
	}
	writeParetoRoles(out, cands)
	writeTails(out, cands)
	writeCandidateNotes(out, cands)
}

// writeCandidateNotes prints a line for each candidate that is not deployable (its Deployable
// condition False) or whose prediction rests on another engine version than its runtime image
// runs (VersionSkew True); candidates of one skew share a line.
func writeCandidateNotes(out io.Writer, cands []v1beta2.DynamoGraphDeploymentCandidate) {
	skews := map[string][]string{}
	var order []string
	for _, cd := range cands {
		if c := meta.FindStatusCondition(cd.Status.Conditions, v1beta2.ConditionDeployable); c != nil && c.Status == metav1.ConditionFalse {
			fmt.Fprintf(out, "#%d %s is not deployable (%s): %s\n", cd.Status.Rank, cd.Name, c.Reason, c.Message)
		}
		if c := meta.FindStatusCondition(cd.Status.Conditions, v1beta2.ConditionVersionSkew); c != nil && c.Status == metav1.ConditionTrue {
			if _, seen := skews[c.Message]; !seen {
				order = append(order, c.Message)
			}
			skews[c.Message] = append(skews[c.Message], fmt.Sprintf("#%d", cd.Status.Rank))
		}
	}
	for _, msg := range order {
		fmt.Fprintf(out, "Version skew (%s): %s\n", strings.Join(skews[msg], ", "), msg)
	}
}

// writeTails prints the predicted p50/p90/p99 of each candidate's latencies and its power per
// GPU, one row per candidate, when the search reported any (AISimulate and aisim report
// percentiles; AISimulate reports power when its energy data covers the forward passes).
func writeTails(out io.Writer, cands []v1beta2.DynamoGraphDeploymentCandidate) {
	if !slices.ContainsFunc(cands, func(cd v1beta2.DynamoGraphDeploymentCandidate) bool {
		m := cd.Status.Metrics
		return m != nil && (m.Percentiles != nil || m.PowerW != nil)
	}) {
		return
	}
	fmt.Fprintln(out, "\nPredicted latency percentiles (p50/p90/p99, ms) and power:")
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RANK\tNAME\tTTFT\tITL\tE2E\tPOWER/GPU")
	for _, cd := range cands {
		m := cd.Status.Metrics
		if m == nil {
			m = &v1beta2.CandidateMetrics{}
		}
		p := m.Percentiles
		if p == nil {
			p = &v1beta2.CandidatePercentiles{}
		}
		power := "-"
		if m.PowerW != nil {
			power = fmt.Sprintf("%.0f W", *m.PowerW)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", cd.Status.Rank, cd.Name, quantiles(p.TTFTMs), quantiles(p.ITLMs), quantiles(p.E2EMs), power)
	}
	_ = tw.Flush()
	fmt.Fprintln(out, "The request's SLA bounds the means only; verification compares p90 and p99 with the measured ones.")
}

// quantiles prints p50/p90/p99, e.g. "90.0/150/300" ("-" for each one missing).
func quantiles(l *v1beta2.LatencyPercentiles) string {
	if l == nil {
		return "-"
	}
	return num(l.P50) + "/" + num(l.P90) + "/" + num(l.P99)
}

// writeParetoRoles says why each candidate of a Pareto front was published, by rank; nothing for
// other targets.
func writeParetoRoles(out io.Writer, cands []v1beta2.DynamoGraphDeploymentCandidate) {
	var roles []string
	for _, cd := range cands {
		if r := cd.Status.ParetoRole; r != "" {
			roles = append(roles, fmt.Sprintf("#%d %s", cd.Status.Rank, r))
		}
	}
	if len(roles) > 0 {
		fmt.Fprintln(out, "Chosen along the Pareto front: "+strings.Join(roles, ", "))
	}
}

// money prints an amount of a cost with its currency, e.g. "28.00 USD" ("-": none).
func money(c *v1beta2.CandidateCost, amount func(*v1beta2.CandidateCost) string) string {
	if c == nil || amount(c) == "" {
		return "-"
	}
	return amount(c) + " " + c.Currency
}

// withBand prints a metric with its expected error, e.g. "154 ±22%" (no band: the metric alone).
func withBand(v *float64, b *resultsview.Band) string {
	if v == nil || b == nil {
		return num(v)
	}
	return fmt.Sprintf("%s ±%.0f%%", num(v), b.MedianPct)
}

func completedReason(r *v1beta2.DynamoGraphDeploymentRun) string {
	if c := meta.FindStatusCondition(r.Status.Conditions, v1beta2.ConditionCompleted); c != nil {
		return c.Reason
	}
	return ""
}

func isComplete(r *v1beta2.DynamoGraphDeploymentRun) bool {
	return meta.IsStatusConditionTrue(r.Status.Conditions, v1beta2.ConditionCompleted)
}

// progressBar renders "[#####-----] 12/40 (30%) settled, 10 feasible, ...".
func progressBar(p resultsview.Progress, width int) string {
	filled := p.Percent * width / 100
	return fmt.Sprintf("[%s%s] %s settled, %d feasible, %d infeasible, %d failed", strings.Repeat("#", filled),
		strings.Repeat("-", width-filled), p.Text(), p.Feasible, p.Infeasible, p.Failed+p.TimedOut)
}

func num(p *float64) string {
	if p == nil {
		return "-"
	}
	v := *p
	switch {
	case v >= 1000 || v <= -1000:
		return fmt.Sprintf("%.0f", v)
	case v >= 10 || v <= -10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func age(t metav1.Time) string {
	if t.IsZero() {
		return "-"
	}
	return duration.HumanDuration(time.Since(t.Time))
}

// writeV1Beta1Status shows a request created through nvidia.com/v1beta1: the Dynamo operator
// owns it (docs/operate/coexistence.md), so it has no Runs; its spec and status are read from the
// conversion envelopes.
func writeV1Beta1Status(out io.Writer, req *v1beta2.DynamoGraphDeploymentRequest) error {
	var spec v1beta1.DynamoGraphDeploymentRequestSpec
	if err := json.Unmarshal(req.Spec.V1Beta1.Raw, &spec); err != nil {
		return fmt.Errorf("reading spec.v1beta1 of %s: %w", req.Name, err)
	}
	var status v1beta1.DynamoGraphDeploymentRequestStatus
	if req.Status.V1Beta1 != nil {
		if err := json.Unmarshal(req.Status.V1Beta1.Raw, &status); err != nil {
			return fmt.Errorf("reading status.v1beta1 of %s: %w", req.Name, err)
		}
	}
	fmt.Fprintf(out, "Request %s/%s  model %s  generation %d\n", req.Namespace, req.Name, spec.Model, req.Generation)
	fmt.Fprintln(out, "\nA nvidia.com/v1beta1 request, owned by the Dynamo operator: dgdr-operator does not search it.")
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BACKEND\tPHASE\tPROFILING\tDGD\tAGE")
	fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", orDash(string(spec.Backend)), orDash(string(status.Phase)), orDash(string(status.ProfilingPhase)),
		orDash(status.DGDName), age(req.CreationTimestamp))
	return tw.Flush()
}
