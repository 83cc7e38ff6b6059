// Package app implements the aisim commands (recommend, predict): reading
// the input, running the search or a single prediction, writing the output
// directory and mapping outcomes to AISimulate's exit codes. The CLI in
// tools/aisim/cmd/aisim only parses flags and calls into this package.
package app

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/document"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/catalog"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/input"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/search"
)

// Version is reported in provenance; set with -ldflags at build time.
var Version = "0.1.0"

// Environment variables that pin run metadata so outputs are reproducible
// (golden tests, CI): AISIM_FIXED_TIME is an RFC 3339 timestamp used as
// created_at; AISIM_RUN_ID overrides the derived run id.
const (
	EnvFixedTime = "AISIM_FIXED_TIME"
	EnvRunID     = "AISIM_RUN_ID"
)

// Options are the shared command options.
type Options struct {
	ConfigPath string
	OutputDir  string
	Overwrite  bool
	Format     string // table | json
	Sets       []string
	Stdout     io.Writer
	Stderr     io.Writer
}

// DefaultOutputDir is AISimulate's default --output-dir.
const DefaultOutputDir = "./aisimulate-output"

// Note is written into provenance so consumers know the numbers are estimates.
const Note = "aisim is an analytical estimator (roofline step model + continuous-batching simulation); " +
	"numbers are first estimates, not AISimulate's silicon-calibrated predictions"

type loaded struct {
	doc *input.Document
	env *search.Env
	// Filled by start: the input fingerprint, the run's identity and the enumerated space.
	fingerprint, runID, createdAt string
	space                         map[string][]search.Point
}

// start loads the document for cmd, checks the flags, derives the run's identity and enumerates
// the space, so that a command fails (exit 2) before it touches the output directory when
// nothing can run. On failure it prints the reason and returns the exit code.
func start(cmd input.Command, opts Options) (*loaded, int) {
	l, err := load(cmd, opts)
	if err != nil {
		fmt.Fprintln(opts.Stderr, err)
		return nil, aisimulate.ExitInvalidInput
	}
	if opts.Format != "table" && opts.Format != "json" {
		fmt.Fprintf(opts.Stderr, "--format: must be table or json, got %q\n", opts.Format)
		return nil, aisimulate.ExitInvalidInput
	}
	for _, sec := range l.doc.Ignored {
		why := "aisim routes requests round-robin and never scales its pools"
		if sec == "execution" {
			why = "aisim runs in process, with no supervisor whose memory, CPUs and timeouts it budgets"
		}
		fmt.Fprintf(opts.Stderr, "aisim: %s: accepted and ignored (%s)\n", sec, why)
	}
	l.fingerprint = fingerprint(l.doc)
	if l.runID, l.createdAt, err = runMeta(l.fingerprint); err != nil {
		fmt.Fprintln(opts.Stderr, err)
		return nil, aisimulate.ExitInvalidInput
	}
	if l.space, err = l.env.Enumerate(); err != nil {
		fmt.Fprintf(opts.Stderr, "%s: engine: %v\n", opts.ConfigPath, err)
		return nil, aisimulate.ExitInvalidInput
	}
	return l, aisimulate.ExitOK
}

// usageError is an exit-2 failure; msg is printed verbatim.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func load(cmd input.Command, opts Options) (*loaded, error) {
	file := opts.ConfigPath
	if file == "" {
		return nil, &usageError{"-c/--config is required"}
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, &usageError{fmt.Sprintf("%s: cannot read config: %v", file, err)}
	}
	doc, err := input.Decode(cmd, data, opts.Sets)
	if err != nil {
		return nil, &usageError{file + ": " + err.Error()}
	}
	hwPath := "engine.hardware"
	if doc.Optimization.Hardware != "" && doc.Engine.Hardware == doc.Optimization.Hardware {
		hwPath = "optimization.hardware"
	}
	gpu, err := catalog.LookupGPU(doc.Engine.Hardware)
	if err != nil {
		return nil, &usageError{fmt.Sprintf("%s: %s: %v", file, hwPath, err)}
	}
	model, err := catalog.LoadModel(doc.Engine.Model)
	if err != nil {
		return nil, &usageError{fmt.Sprintf("%s: engine.model: %v", file, err)}
	}
	if pr := doc.Engine.Precision; pr.Any() {
		if model, err = model.WithPrecision(pr.GEMM, pr.MoE, pr.FMHA, pr.KVCache); err != nil {
			return nil, &usageError{fmt.Sprintf("%s: engine.gemm_quant_mode: %v", file, err)}
		}
	}
	t := doc.Traffic
	if cl := doc.Engine.ContextLength; cl > model.MaxContext {
		return nil, &usageError{fmt.Sprintf("%s: engine.context_length: %d exceeds the model maximum %d", file, cl, model.MaxContext)}
	}
	if se := t.Session; se != nil {
		// The last turn carries the whole conversation.
		limit := model.MaxContext
		if cl := doc.Engine.ContextLength; cl > 0 {
			limit = min(limit, cl)
		}
		if n := se.Turns * (t.InputTokens + t.OutputTokens); n > limit {
			return nil, &usageError{fmt.Sprintf("%s: traffic.source.session.turns: the last turn's prompt plus response (%d tokens) exceeds the context length %d",
				file, n, limit)}
		}
	}
	if t.InputTokens+t.OutputTokens > model.MaxContext {
		return nil, &usageError{fmt.Sprintf("%s: traffic.source: input_tokens + output_tokens (%d) exceeds the model context length %d",
			file, t.InputTokens+t.OutputTokens, model.MaxContext)}
	}
	roleGPU, err := search.RoleGPUs(doc)
	if err != nil {
		return nil, &usageError{file + ": " + err.Error()}
	}
	env := &search.Env{Doc: doc, Model: model, GPU: gpu, RoleGPU: roleGPU}
	if err := env.LoadTrace(); err != nil {
		return nil, &usageError{fmt.Sprintf("%s: traffic.source.paths[0]: %s: %v", file, doc.Traffic.Trace.Path, err)}
	}
	return &loaded{doc: doc, env: env}, nil
}

// prepareOutputDir enforces "empty or absent unless --overwrite"; with
// --overwrite only files aisim owns are removed.
func prepareOutputDir(dir string, overwrite bool) error {
	if dir == "" {
		dir = DefaultOutputDir
	}
	st, err := os.Stat(dir)
	switch {
	case os.IsNotExist(err):
		return os.MkdirAll(dir, 0o755)
	case err != nil:
		return err
	case !st.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	}
	var existing []string
	err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || path == dir || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		existing = append(existing, rel)
		return nil
	})
	if err != nil {
		return err
	}
	if len(existing) == 0 {
		return nil
	}
	if !overwrite {
		return fmt.Errorf("%s is not empty (use --overwrite to replace aisim's files)", dir)
	}
	for _, rel := range existing {
		if output.KnownFile(rel) {
			if err := os.Remove(filepath.Join(dir, rel)); err != nil {
				return err
			}
		}
	}
	return nil
}

func runMeta(fingerprint string) (runID, createdAt string, err error) {
	now := time.Now().UTC()
	if v := os.Getenv(EnvFixedTime); v != "" {
		if now, err = time.Parse(time.RFC3339, v); err != nil {
			return "", "", fmt.Errorf("%s: %v", EnvFixedTime, err)
		}
	}
	createdAt = now.UTC().Format(time.RFC3339)
	sum := sha256.Sum256([]byte(fingerprint + createdAt))
	runID = "aisim-" + hex.EncodeToString(sum[:6])
	if v := os.Getenv(EnvRunID); v != "" {
		runID = v
	}
	return runID, createdAt, nil
}

func fingerprint(doc *input.Document) string {
	sum := sha256.Sum256(mustCanonical(doc.Raw.JSON()))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func rawConfig(doc *input.Document) map[string]any {
	m, _ := doc.Raw.JSON().(map[string]any)
	return m
}

// requestedConfig is the value of the ledger's requested_config line: the input document (after
// --set) with its optimizer section as aisim applied it, every field with its default filled in.
// AISimulate's is its whole validated input with every default (config.model_dump); aisim fills
// in only the optimizer, where readers take the trial budget from.
func requestedConfig(doc *input.Document) map[string]any {
	m := maps.Clone(rawConfig(doc))
	if m == nil {
		m = map[string]any{}
	}
	o := doc.Optimizer
	m["optimizer"] = map[string]any{
		"algorithm": o.Algorithm, "max_trials": o.MaxTrials, "parallelism": o.Parallelism,
		"candidate_timeout_seconds": o.CandidateTimeoutSeconds, "seed": o.Seed,
	}
	return m
}

// Recommend runs `aisim recommend` and returns the exit code.
func Recommend(ctx context.Context, opts Options) int {
	l, code := start(input.Recommend, opts)
	if l == nil {
		return code
	}
	dir := opts.OutputDir
	if dir == "" {
		dir = DefaultOutputDir
	}
	if err := prepareOutputDir(dir, opts.Overwrite); err != nil {
		fmt.Fprintf(opts.Stderr, "--output-dir: %v\n", err)
		return aisimulate.ExitInvalidInput
	}
	began := time.Now()
	run, code := searchWithLedger(ctx, opts, l, dir)
	if run == nil {
		return code
	}
	recPath := filepath.Join(dir, output.RecommendationFile)
	// recommendation.json (megabytes of canonical JSON at large budgets) is encoded and written
	// while the per-rank files are, on the other core: the files are independent.
	recErr := make(chan error, 1)
	go func() { recErr <- output.WriteJSONFile(recPath, sweepResult(l, run)) }()
	ranked, rankErr := writeRecommendations(dir, run)
	if err := cmp.Or(<-recErr, rankErr); err != nil {
		fmt.Fprintf(opts.Stderr, "aisim recommend failed: %v\n", err)
		return aisimulate.ExitFailure
	}
	if run.Interrupted {
		fmt.Fprintf(opts.Stderr, "aisim recommend interrupted after %d candidates; saved partial result to: %s\n", len(run.Candidates), recPath)
		return aisimulate.ExitInterrupted
	}
	if opts.Format == "json" {
		rows := ranked.rows
		if rows == nil {
			rows = []output.Row{}
		}
		data, _ := output.MarshalCanonical(rows)
		_, _ = opts.Stdout.Write(data)
	} else {
		ranked.print(opts.Stdout)
		fmt.Fprintf(opts.Stdout, "Saved full result to: %s\n", recPath)
		fmt.Fprintf(opts.Stderr, "evaluated %d candidates (%d feasible) in %s\n", run.Counts.Evaluated, run.Counts.Feasible,
			time.Since(began).Round(time.Millisecond))
	}
	if len(ranked.rows) == 0 {
		fmt.Fprintf(opts.Stderr, "no feasible candidate found; saved full result to: %s\n", recPath)
		return aisimulate.ExitFailure
	}
	return aisimulate.ExitOK
}

// searchWithLedger runs the search and writes its ledger live, in AISimulate's format
// (output.Event): requested_config, then one candidate_completed per candidate record that is
// not a cache hit. AISimulate's other kinds record its memory admission (wave_admitted,
// wave_interrupted) and its optimizer giving up (optimizer_stopped), which aisim does not have.
// It returns nil and the exit code when the search or the ledger failed.
func searchWithLedger(ctx context.Context, opts Options, l *loaded, dir string) (*search.Result, int) {
	events, err := output.CreateEventWriter(dir)
	if err != nil {
		fmt.Fprintf(opts.Stderr, "aisim recommend failed: %v\n", err)
		return nil, aisimulate.ExitFailure
	}
	defer events.Close()
	// A ledger that cannot be written stops the search, as AISimulate's checkpoint does.
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	var writeErr error
	checkpoint := func(kind string, v any) {
		if writeErr != nil {
			return
		}
		if writeErr = events.Checkpoint(kind, v); writeErr != nil {
			stop()
		}
	}
	checkpoint(output.EventRequestedConfig, requestedConfig(l.doc))
	// The space is handed to the search, which would otherwise enumerate it a second time.
	run, err := l.env.Recommend(sctx, search.Options{Space: l.space, OnSettled: func(c output.Candidate, _, _ int) {
		// AISimulate writes no record, and so no line, for a cache hit.
		if c.Provenance["cache_hit"] != true {
			checkpoint(output.EventCandidateCompleted, c)
		}
	}})
	if writeErr != nil {
		fmt.Fprintf(opts.Stderr, "aisim recommend failed: writing %s: %v\n", output.EventsFile, writeErr)
		if errors.Is(writeErr, output.ErrEventBudget) {
			return nil, aisimulate.ExitResourceLimited
		}
		return nil, aisimulate.ExitFailure
	}
	if err != nil {
		fmt.Fprintf(opts.Stderr, "aisim recommend failed: %v\n", err)
		return nil, aisimulate.ExitFailure
	}
	return run, aisimulate.ExitOK
}

// sweepResult is recommendation.json of a finished search: every candidate record, and the
// selected ones as the top-N or, for a pareto target, the Pareto-front view.
func sweepResult(l *loaded, run *search.Result) *output.SweepResult {
	strategy := "exhaustive"
	if !run.Exhaustive {
		strategy = "random"
	}
	sweep := &output.SweepResult{
		SchemaVersion:      output.SchemaVersion,
		CandidateRetention: "all",
		Counts:             run.Counts,
		Candidates:         run.Candidates,
		Provenance: output.Provenance{
			Implementation: "aisim", ImplementationVersion: Version, Estimator: "analytical",
			SearchStrategy: strategy, RunID: l.runID, CreatedAt: l.createdAt, InputFingerprint: l.fingerprint,
			Config: rawConfig(l.doc), Note: Note,
		},
	}
	if sweep.Candidates == nil {
		sweep.Candidates = []output.Candidate{}
	}
	var ids []string
	for _, i := range run.Selected {
		ids = append(ids, run.Candidates[i].CandidateID)
	}
	if l.doc.Optimization.Target == output.TargetPareto {
		sweep.Views.ParetoFront = ids
	} else {
		sweep.Views.TopN = ids
	}
	return sweep
}

// rankedRows are the selected candidates as the command prints them.
type rankedRows struct {
	rows      []output.Row
	latencies []string // each row's mean TTFT and TPOT with their expected error
	bandNote  string
}

// writeRecommendations writes recommendations/NNNN.yaml of each selected candidate, in rank
// order, and returns their rows.
func writeRecommendations(dir string, run *search.Result) (rankedRows, error) {
	var r rankedRows
	for rank, i := range run.Selected {
		c := run.Candidates[i]
		r.latencies = append(r.latencies, "ttft="+c.ErrorBand.Format(output.DistTTFT, c.Metrics[output.KeyMeanTTFT], "ms")+
			" tpot="+c.ErrorBand.Format(output.DistTPOT, c.Metrics[output.KeyMeanTPOT], "ms"))
		if c.ErrorBand != nil && r.bandNote == "" {
			r.bandNote = "±: median abs. error of aisim on measured runs (" + c.ErrorBand.Basis + ")"
		}
		if err := output.WriteRecommendation(dir, rank, c.PredictionConfig); err != nil {
			return r, err
		}
		r.rows = append(r.rows, output.Row{Rank: rank + 1, Score: c.Score, Objectives: c.Objectives, UsedGPUs: c.UsedGPUs,
			ConfigPath: output.RecommendationPath(dir, rank)})
	}
	return r, nil
}

// print writes the table format's rows.
func (r rankedRows) print(w io.Writer) {
	fmt.Fprintln(w, "aisim recommendations (analytical estimate)")
	for k, row := range r.rows {
		fmt.Fprintf(w, "%d: score=%.4g used_gpus=%d %s config=%s\n", row.Rank, *row.Score, row.UsedGPUs, r.latencies[k], row.ConfigPath)
	}
	if r.bandNote != "" {
		fmt.Fprintln(w, r.bandNote)
	}
}

// Predict runs `aisim predict` and returns the exit code.
func Predict(ctx context.Context, opts Options) int {
	l, code := start(input.Predict, opts)
	if l == nil {
		return code
	}
	dir := opts.OutputDir
	if dir == "" {
		dir = DefaultOutputDir
	}
	if err := prepareOutputDir(dir, opts.Overwrite); err != nil {
		fmt.Fprintf(opts.Stderr, "--output-dir: %v\n", err)
		return aisimulate.ExitInvalidInput
	}
	p, code := predict(ctx, l, opts)
	if p == nil {
		return code
	}
	path := filepath.Join(dir, output.PredictionFile)
	if err := output.WriteJSONFile(path, p.report); err != nil {
		fmt.Fprintf(opts.Stderr, "aisim predict failed: %v\n", err)
		return aisimulate.ExitFailure
	}
	// No ledger: AISimulate's predict writes one resource_plan line, its supervisor's
	// host-memory admission plan (main.py _predict), which aisim does not make.
	if opts.Format == "json" {
		data, _ := output.MarshalCanonical(p.report.Summary())
		_, _ = opts.Stdout.Write(data)
	} else {
		printPrediction(opts.Stdout, p)
		fmt.Fprintf(opts.Stdout, "Saved full report to: %s\n", path)
	}
	if p.report.Status == output.PredictionInvalid {
		fmt.Fprintf(opts.Stderr, "ERROR: %s Saved full report to: %s\n", p.report.Diagnostic, path)
		return aisimulate.ExitFailure
	}
	return aisimulate.ExitOK
}

// predicted is one prediction: AISimulate's report, and what aisim knows beside it and prints
// in the table (the report has no place for them).
type predicted struct {
	report *output.Prediction
	// kvTokens is the KV-cache capacity in tokens per role, all replicas and ranks.
	kvTokens map[string]int
	band     *output.ErrorBand
	gpus     int
	// config is the replayable configuration of the deployment.
	config *output.PredictionConfig
}

// predict simulates the document's one concrete deployment; on failure it prints the reason and
// returns the exit code.
func predict(ctx context.Context, l *loaded, opts Options) (*predicted, int) {
	points, _ := l.env.Select(l.space)
	if len(points) != 1 {
		fmt.Fprintf(opts.Stderr, "aisim predict failed: expected one concrete deployment, found %d\n", len(points))
		return nil, aisimulate.ExitFailure
	}
	pr := l.env.Prepare(points[0])
	if pr.Status == output.StatusUnsupported {
		fmt.Fprintf(opts.Stderr, "%s: engine.workers: %s\n", opts.ConfigPath, pr.Reason)
		return nil, aisimulate.ExitInvalidInput
	}
	if pr.Status != "" {
		fmt.Fprintf(opts.Stderr, "aisim predict failed: %s: %s\n", pr.ReasonCategory, pr.Reason)
		return nil, aisimulate.ExitFailure
	}
	began := time.Now()
	rep, err := l.env.Simulate(ctx, pr, time.Time{})
	if ctx.Err() != nil {
		fmt.Fprintln(opts.Stderr, "aisim predict interrupted")
		return nil, aisimulate.ExitInterrupted
	}
	if err != nil {
		fmt.Fprintf(opts.Stderr, "aisim predict failed: %v\n", err)
		return nil, aisimulate.ExitFailure
	}
	kv := map[string]int{}
	for _, role := range pr.Point.Roles {
		kv[role.Role] = pr.Memory[role.Role].TokensPerRank * role.Worker.Shape.AttentionData * role.Worker.Shape.Replicas
	}
	return &predicted{
		report:   predictionReport(pr, rep, l.doc.Evaluation.SLA.Any(), kvPrecision(l.doc, l.env.Model), time.Since(began)),
		kvTokens: kv, band: l.env.ErrorBand(pr.Point), gpus: pr.Point.UsedGPUs(), config: l.env.PredictionConfig(pr),
	}, aisimulate.ExitOK
}

func printPrediction(w io.Writer, p *predicted) {
	m := p.report.Metrics
	val := func(key string) float64 {
		if v := m[key]; v != nil {
			return *v
		}
		return math.NaN()
	}
	if p.report.Status == output.PredictionInvalid {
		fmt.Fprintf(w, "INVALID prediction (%s): %s\n", p.report.StopReason, p.report.Diagnostic)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "metric\tmean\tp50\tp90\tp99")
	for _, row := range []struct{ name, dist string }{
		{"TTFT (ms)", output.DistTTFT}, {"TPOT (ms)", output.DistTPOT}, {"ITL (ms)", output.DistITL}, {"E2E latency (ms)", output.DistE2ELatency},
	} {
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\t%.2f\n", row.name, val(output.StatKey(output.StatMean, row.dist)), val(output.StatKey(output.StatMedian, row.dist)),
			val(output.StatKey(output.StatP90, row.dist)), val(output.StatKey(output.StatP99, row.dist)))
	}
	tw.Flush()
	fmt.Fprintf(w, "output throughput: %.1f tok/s   request throughput: %.3f req/s   per-user: %.1f tok/s\n",
		val(output.KeyOutputThroughput), val(output.KeyRequestThroughput), val(output.KeyThroughputPerUser))
	var roles []string
	for r, n := range p.kvTokens {
		roles = append(roles, fmt.Sprintf("%s=%d", r, n))
	}
	fmt.Fprintf(w, "KV-cache capacity (tokens): %s   requests: %.0f   GPUs: %d\n", strings.Join(slices.Sorted(slices.Values(roles)), " "), val(output.KeyCompletedRequests), p.gpus)
	// The headline latencies with their expected error, e.g.
	// "expected error: TTFT 154 ms ±25%, TPOT 12.3 ms ±11% (...)".
	if b := p.band; b != nil && p.report.Status != output.PredictionInvalid {
		note := "median abs. error on measured H100 runs"
		if b.Extrapolated {
			note += "; extrapolated to this deployment"
		}
		fmt.Fprintf(w, "expected error: TTFT %s, TPOT %s (%s)\n",
			b.Format(output.DistTTFT, val(output.KeyMeanTTFT), "ms"), b.Format(output.DistTPOT, val(output.KeyMeanTPOT), "ms"), note)
	}
}

// mustCanonical encodes a decoded document canonically; a decoded document always encodes.
func mustCanonical(v any) []byte {
	b, err := document.Canonical(v)
	if err != nil {
		panic(err)
	}
	return b
}
