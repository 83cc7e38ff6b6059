package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/client/config"

	"github.com/dgdr-operator/dgdr-operator/internal/config"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/internal/render"
	"github.com/dgdr-operator/dgdr-operator/internal/reporter"
	"github.com/dgdr-operator/dgdr-operator/internal/scheme"
	"github.com/dgdr-operator/dgdr-operator/internal/searchinput"
)

// defaultTerminationLog is the container termination message path.
const defaultTerminationLog = "/dev/termination-log"

// reportOptions are the flags of `report`; each defaults to its environment variable.
type reportOptions struct {
	RunName         string
	Namespace       string
	PodName         string
	OutputDir       string
	SearchTmpDir    string
	RuntimeImages   string
	GPUsPerNode     int
	PlannerImage    string
	SearchContainer string
	SearchExitFile  string
	// Baseline selects the baseline Job's reporter: publish the baseline's prediction (in
	// OutputDir) as status.baseline once the baseline container (SearchContainer, default
	// jobcontract.BaselineContainer) ended.
	Baseline bool
	// OutcomeFile makes the reporter a sidecar: it writes how its publication ended there, for
	// the publication container, then waits for SIGTERM (a sidecar that exits is restarted);
	// one that finds the outcome already written publishes nothing again.
	OutcomeFile string
	// AwaitOutcome selects the publication container's mode: wait for the reporter's outcome
	// in this file, and exit with its exit code.
	AwaitOutcome     string
	ProgressInterval time.Duration
	PollInterval     time.Duration
	// PublishInterval spaces provisional publish rounds (0: none); StopTimeout bounds what is
	// published after SIGTERM.
	PublishInterval time.Duration
	StopTimeout     time.Duration
	Kubeconfig      string
	TerminationLog  string
	Verbose         bool
	// WriteInput selects the input init container's mode: write the Run's recorded input to
	// InputDir and exit.
	WriteInput bool
	InputDir   string
	// InputHash is the input hash the operator recorded on the search Job (--input-hash,
	// $DGDR_INPUT_HASH); --write-input refuses an input that does not hash to it.
	InputHash string
	// TraceWindow* make --write-input first cut a window of a capture (searchinput.TraceWindow);
	// the times are RFC 3339.
	TraceWindowSource      string
	TraceWindowDirectory   string
	TraceWindowStart       string
	TraceWindowEnd         string
	TraceWindowOut         string
	TraceWindowMinRequests int
	// TracePruneBefore (RFC 3339), with --trace-window-source, deletes the complete segments of
	// the capture all of whose requests arrived before it, after the cut.
	TracePruneBefore string
	// TraceWindowSHA256 ("sha256:<hex>"), with --trace-window-source, is the hash the window
	// must have (the baseline Job's cut, checked against the search's).
	TraceWindowSHA256 string
	// BaselineInputHash is the baseline input hash the operator recorded on the baseline Job
	// (--baseline-input-hash, $DGDR_BASELINE_INPUT_HASH); set instead of InputHash, --write-input
	// writes the baseline input, refusing one that does not hash to it.
	BaselineInputHash string

	// RESTConfig, when set, is used instead of --kubeconfig / in-cluster credentials (tests).
	RESTConfig *rest.Config
}

// newReportCommand returns the `report` subcommand: the reporter of every search Job (with
// --baseline, of every baseline Job), with --write-input their input init container, and with
// --await-outcome their publication container. o holds preset options (tests inject a REST
// config).
func newReportCommand(o *reportOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Publish a search's progress and result (the reporter container of a search Job)",
		Long: `report runs next to the search container of a Run's Job. It follows the search's output
directory and publishes Run.status.progress; when the search container has terminated (seen by
watching this pod's own status) it publishes the ranked DynamoGraphDeploymentCandidates,
Run.status.candidateRefs and Run.status.recommendation, then exits 0. It exits non-zero, with the
reason on stderr and in the termination message, when the result cannot be published. With
--baseline it publishes a re-search's baseline prediction as Run.status.baseline instead. With
--outcome-file it runs as a sidecar: it writes that exit code and reason into the file, and waits
for SIGTERM.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := newLogger(cmd, o.Verbose)
			// controller-runtime's own messages (its client's API warnings) go where the
			// reporter's go.
			ctrl.SetLogger(log)
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			switch {
			case o.WriteInput:
				return writeInput(ctx, cmd, o, log)
			case o.AwaitOutcome != "":
				return awaitOutcome(ctx, cmd, o)
			case o.OutcomeFile != "":
				return reportAsSidecar(ctx, cmd, o, log)
			}
			msg, err := executeReport(ctx, o, log)
			return reportDone(cmd, o, msg, err)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.RunName, "run-name", os.Getenv(jobcontract.EnvRunName), "name of the Run ($"+jobcontract.EnvRunName+")")
	f.StringVar(&o.Namespace, "namespace", os.Getenv(jobcontract.EnvRunNamespace), "namespace of the Run ($"+jobcontract.EnvRunNamespace+")")
	f.StringVar(&o.PodName, "pod-name", os.Getenv(jobcontract.EnvPodName), "this pod's name, watched to learn when the search ended ($"+jobcontract.EnvPodName+")")
	f.StringVar(&o.OutputDir, "output-dir", envOr(jobcontract.EnvOutputDir, jobcontract.ResultDir), "the search's output directory ($"+jobcontract.EnvOutputDir+")")
	f.StringVar(&o.SearchTmpDir, "search-tmp-dir", envOr(jobcontract.EnvSearchTmpDir, jobcontract.SearchTmpDir), "where the search container's /tmp is mounted, holding AISimulate's live ledger while it runs (\"\": follow only the output directory's ledger) ($"+jobcontract.EnvSearchTmpDir+")")
	f.StringVar(&o.RuntimeImages, "runtime-images", os.Getenv(jobcontract.EnvRuntimeImages), "the runtime images (and their engine versions) used to render DynamoGraphDeployments, a JSON object {backend: {image, engineVersion}} or backend=image,... ($"+jobcontract.EnvRuntimeImages+")")
	f.IntVar(&o.GPUsPerNode, "gpus-per-node", render.DefaultGPUsPerNode, "GPUs per node, for multinode rendering")
	f.StringVar(&o.PlannerImage, "planner-image", os.Getenv(jobcontract.EnvPlannerImage), "the Planner image, for rendering the Planner component ($"+jobcontract.EnvPlannerImage+")")
	f.StringVar(&o.SearchContainer, "search-container", "", "name of the container in this pod whose end is watched (default "+jobcontract.SearchContainer+", with --baseline "+jobcontract.BaselineContainer+")")
	f.StringVar(&o.SearchExitFile, "search-exit-file", "", "instead of watching the pod, wait for this file to hold the search's exit code (local runs and tests)")
	f.BoolVar(&o.Baseline, "baseline", false, "publish the baseline's prediction (prediction.json in --output-dir) as the Run's status.baseline once the baseline container ended (a re-search's baseline Job)")
	f.StringVar(&o.OutcomeFile, "outcome-file", "", "run as a sidecar: write the publication's exit code and message into this file, then wait for SIGTERM")
	f.StringVar(&o.AwaitOutcome, "await-outcome", "", "wait until the reporter has written its outcome into this file and exit with its exit code (the publication container)")
	f.DurationVar(&o.ProgressInterval, "progress-interval", reporter.DefaultProgressInterval, "minimum time between two progress writes")
	f.DurationVar(&o.PollInterval, "poll-interval", reporter.DefaultPollInterval, "how often the output directory is read")
	f.DurationVar(&o.PublishInterval, "publish-interval", reporter.DefaultPublishInterval, "minimum time between two rounds publishing the best candidates so far while the search runs, and before the first (0: publish only when the search ends)")
	f.DurationVar(&o.StopTimeout, "stop-timeout", reporter.DefaultStopTimeout, "how long the reporter still publishes after SIGTERM (keep under the pod's termination grace period)")
	f.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig file (default: in-cluster credentials or $KUBECONFIG)")
	f.StringVar(&o.TerminationLog, "termination-log", defaultTerminationLog, "file receiving the termination message (ignored when not writable)")
	f.BoolVarP(&o.Verbose, "verbose", "v", false, "log every progress write")
	f.BoolVar(&o.WriteInput, "write-input", false, "write the Run's recorded input (status.aisimulate.input, checked against its hash) to --input-dir and exit (the search Job's input init container)")
	f.StringVar(&o.InputHash, "input-hash", os.Getenv(jobcontract.EnvInputHash), "the input hash the operator recorded on the search Job, which --write-input checks the input against ($"+jobcontract.EnvInputHash+")")
	f.StringVar(&o.BaselineInputHash, "baseline-input-hash", os.Getenv(jobcontract.EnvBaselineInputHash), "the baseline input hash the operator recorded on the baseline Job; set instead of --input-hash, --write-input writes "+jobcontract.BaselineInputFile+", checked against it ($"+jobcontract.EnvBaselineInputHash+")")
	f.StringVar(&o.InputDir, "input-dir", envOr(jobcontract.EnvInputDir, jobcontract.InputDir), "where --write-input writes "+jobcontract.InputFile+" ($"+jobcontract.EnvInputDir+")")
	f.StringVar(&o.TraceWindowSource, "trace-window-source", "", "with --write-input, first cut a trace window out of the capture mounted here (one directory per request, of one directory per Frontend pod of request-trace.N.jsonl.gz segments)")
	f.StringVar(&o.TraceWindowDirectory, "trace-window-directory", "", fmt.Sprintf("with --trace-window-source, the request's directory of the capture (its UID), the only one read and pruned; "+
		"a window over its bounds exits %d, one holding a malformed request exits %d, writing nothing", jobcontract.InputExitWindowTooLarge, jobcontract.InputExitWindowMalformed))
	f.StringVar(&o.TraceWindowStart, "trace-window-start", "", "the window's first arrival time, inclusive (RFC 3339)")
	f.StringVar(&o.TraceWindowEnd, "trace-window-end", "", "the window's end, exclusive (RFC 3339)")
	f.StringVar(&o.TraceWindowOut, "trace-window-out", "", "the window file to write (gzip JSONL, ordered by arrival)")
	f.StringVar(&o.TracePruneBefore, "trace-prune-before", "", "with --trace-window-source, delete the capture's complete segments all of whose requests arrived before this time (RFC 3339), after the cut")
	f.StringVar(&o.TraceWindowSHA256, "trace-window-sha256", "", fmt.Sprintf("with --trace-window-source, the hash (sha256:<hex>) the window must have; a window that differs writes no input and exits %d", jobcontract.InputExitWindowMismatch))
	f.IntVar(&o.TraceWindowMinRequests, "trace-window-min-requests", 1, fmt.Sprintf("the fewest requests the window needs; with fewer, --write-input writes no input and exits %d", jobcontract.InputExitInsufficientTraffic))
	return cmd
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func newLogger(cmd *cobra.Command, verbose bool) logr.Logger {
	w := cmd.ErrOrStderr()
	v := 0
	if verbose {
		v = 1
	}
	return funcr.NewJSON(func(obj string) { fmt.Fprintln(w, obj) }, funcr.Options{Verbosity: v})
}

// writeInput runs the --write-input mode and reports like the reporter does. With a trace
// window, the termination message is the window's summary (JSON) once the window is cut, also
// when it holds too few requests, so that the operator can record it.
func writeInput(ctx context.Context, cmd *cobra.Command, o *reportOptions, log logr.Logger) error {
	fail := func(err error) error {
		msg := "report --write-input: " + err.Error()
		fmt.Fprintln(cmd.ErrOrStderr(), msg)
		writeTerminationMessage(o.TerminationLog, msg)
		return err
	}
	if err := checkWriteInput(o); err != nil {
		return fail(err)
	}
	tw, err := traceWindow(o)
	if err != nil {
		return fail(err)
	}
	var summary string
	if tw != nil {
		sum, err := tw.Cut()
		var short *searchinput.InsufficientTrafficError
		if err != nil && !errors.As(err, &short) {
			// A window that is not the search's exits with its own code (the error carries it).
			return fail(err)
		}
		msg, merr := searchinput.SummaryMessage(sum)
		if merr != nil {
			return fail(merr)
		}
		summary = string(msg)
		fmt.Fprintf(cmd.OutOrStdout(), "cut the trace window [%s, %s) to %s: %s\n", o.TraceWindowStart, o.TraceWindowEnd, tw.Out, summary)
		if short != nil {
			fmt.Fprintln(cmd.ErrOrStderr(), "report --write-input: "+short.Error())
			writeTerminationMessage(o.TerminationLog, summary)
			return short
		}
	}
	hash, err := executeWriteInput(ctx, o, log)
	if err != nil {
		return fail(err)
	}
	msg := fmt.Sprintf("wrote the Run's input (%s) to %s", hash, o.InputDir)
	fmt.Fprintln(cmd.OutOrStdout(), msg)
	if summary == "" {
		summary = msg
	}
	writeTerminationMessage(o.TerminationLog, summary)
	return nil
}

// checkWriteInput checks the options --write-input needs.
func checkWriteInput(o *reportOptions) error {
	if err := requireRun(o); err != nil {
		return err
	}
	if o.InputDir == "" {
		return errors.New("the input directory is required (--input-dir or $" + jobcontract.EnvInputDir + ")")
	}
	return nil
}

// traceWindow is the window the --trace-window-* flags ask for, nil without --trace-window-source.
func traceWindow(o *reportOptions) (*searchinput.TraceWindow, error) {
	if o.TraceWindowSource == "" {
		if o.TraceWindowDirectory != "" || o.TraceWindowStart != "" || o.TraceWindowEnd != "" || o.TraceWindowOut != "" || o.TracePruneBefore != "" || o.TraceWindowSHA256 != "" {
			return nil, errors.New("--trace-window-directory, --trace-window-start, --trace-window-end, --trace-window-out, --trace-prune-before and --trace-window-sha256 need --trace-window-source")
		}
		return nil, nil
	}
	if o.TraceWindowDirectory == "" {
		return nil, errors.New("--trace-window-directory is required with --trace-window-source")
	}
	tw := &searchinput.TraceWindow{Source: o.TraceWindowSource, Directory: o.TraceWindowDirectory, Out: o.TraceWindowOut,
		MinRequests: o.TraceWindowMinRequests, SHA256: o.TraceWindowSHA256}
	var err error
	if tw.Window.Start, err = time.Parse(time.RFC3339, o.TraceWindowStart); err != nil {
		return nil, fmt.Errorf("--trace-window-start: %w", err)
	}
	if tw.Window.End, err = time.Parse(time.RFC3339, o.TraceWindowEnd); err != nil {
		return nil, fmt.Errorf("--trace-window-end: %w", err)
	}
	if !tw.Window.Start.Before(tw.Window.End) {
		return nil, fmt.Errorf("--trace-window-start %s is not before --trace-window-end %s", o.TraceWindowStart, o.TraceWindowEnd)
	}
	if tw.Out == "" {
		return nil, errors.New("--trace-window-out is required with --trace-window-source")
	}
	if o.TracePruneBefore != "" {
		if tw.Window.StaleBefore, err = time.Parse(time.RFC3339, o.TracePruneBefore); err != nil {
			return nil, fmt.Errorf("--trace-prune-before: %w", err)
		}
		if tw.Window.StaleBefore.After(tw.Window.Start) {
			return nil, fmt.Errorf("--trace-prune-before %s is after --trace-window-start %s: it would delete the window's own traffic", o.TracePruneBefore, o.TraceWindowStart)
		}
		tw.Prune = true
	}
	if tw.MinRequests < 0 {
		return nil, fmt.Errorf("--trace-window-min-requests must be >= 0, got %d", tw.MinRequests)
	}
	return tw, nil
}

// executeWriteInput builds the client and writes the Run's input.
func executeWriteInput(ctx context.Context, o *reportOptions, log logr.Logger) (string, error) {
	c, err := newClient(o)
	if err != nil {
		return "", err
	}
	w := &searchinput.Writer{Client: c, Namespace: o.Namespace, RunName: o.RunName, Dir: o.InputDir, ExpectedHash: o.InputHash,
		ExpectedBaselineHash: o.BaselineInputHash, PollInterval: o.PollInterval, Log: log}
	return w.Write(ctx)
}

func requireRun(o *reportOptions) error {
	if o.RunName == "" || o.Namespace == "" {
		return errors.New("the Run name and namespace are required (--run-name/--namespace or $" + jobcontract.EnvRunName + "/$" + jobcontract.EnvRunNamespace + ")")
	}
	return nil
}

// newClient builds a direct client from the options' REST config, --kubeconfig or in-cluster
// credentials.
func newClient(o *reportOptions) (client.WithWatch, error) {
	cfg := o.RESTConfig
	if cfg == nil {
		var err error
		if o.Kubeconfig != "" {
			cfg, err = clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
		} else {
			cfg, err = ctrlconfig.GetConfig()
		}
		if err != nil {
			return nil, fmt.Errorf("loading credentials: %w", err)
		}
	}
	return client.NewWithWatch(cfg, client.Options{Scheme: scheme.Scheme})
}

// executeReport validates the options, builds the client and the watcher, and runs the reporter
// (publishing the search's result, or with --baseline the baseline's). It returns the message
// saying what was published.
func executeReport(ctx context.Context, o *reportOptions, log logr.Logger) (string, error) {
	if err := requireRun(o); err != nil {
		return "", err
	}
	if o.SearchExitFile == "" && o.PodName == "" {
		return "", errors.New("the pod name is required to watch the search (--pod-name or $" + jobcontract.EnvPodName + "), or --search-exit-file")
	}
	images, err := config.ParseRuntimeImages(o.RuntimeImages)
	if err != nil {
		return "", err
	}
	c, err := newClient(o)
	if err != nil {
		return "", err
	}
	container := o.SearchContainer
	if container == "" {
		container = jobcontract.SearchContainer
		if o.Baseline {
			container = jobcontract.BaselineContainer
		}
	}
	var w reporter.SearchWatcher = &reporter.PodWatcher{Client: c, Namespace: o.Namespace, PodName: o.PodName, Container: container}
	if o.SearchExitFile != "" {
		w = &reporter.FileWatcher{Path: o.SearchExitFile, Interval: o.PollInterval}
	}
	r := &reporter.Reporter{
		Client:           c,
		Namespace:        o.Namespace,
		RunName:          o.RunName,
		OutputDir:        reporter.ResolveOutputDir(o.OutputDir),
		SearchTmpDir:     o.SearchTmpDir,
		RuntimeImages:    images,
		GPUsPerNode:      o.GPUsPerNode,
		PlannerImage:     o.PlannerImage,
		Watcher:          w,
		ProgressInterval: o.ProgressInterval,
		PollInterval:     o.PollInterval,
		PublishInterval:  o.PublishInterval,
		StopTimeout:      o.StopTimeout,
		Log:              log,
	}
	if o.PublishInterval <= 0 {
		r.PublishInterval = -1 // no provisional publishing
	}
	if o.Baseline {
		r.OutputDir = o.OutputDir
		b, err := r.PublishBaseline(ctx)
		if err != nil {
			return "", err
		}
		if b.Error != "" {
			return "published the baseline's failure: " + b.Error, nil
		}
		return fmt.Sprintf("published the baseline of %s (%d completed requests)", b.Candidate, b.CompletedRequests), nil
	}
	out, err := r.Run(ctx)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("published %d candidate(s); search exit code %d", len(out.Published), out.SearchExitCode), nil
}

// reportDone reports how the publication ended, on stdout or stderr and in the termination
// message, and returns err.
func reportDone(cmd *cobra.Command, o *reportOptions, msg string, err error) error {
	if err != nil {
		msg := "report: " + err.Error()
		fmt.Fprintln(cmd.ErrOrStderr(), msg)
		writeTerminationMessage(o.TerminationLog, msg)
		return err
	}
	fmt.Fprintln(cmd.OutOrStdout(), msg)
	writeTerminationMessage(o.TerminationLog, msg)
	return nil
}

// reportAsSidecar runs the reporter as the pod's sidecar: it publishes, writes the outcome for
// the publication container, then waits for the kubelet's SIGTERM (a sidecar that exits is
// started again). Restarted after it wrote the outcome, it publishes nothing again. Stopped
// before the search ended (the pod is being deleted), it writes no outcome.
func reportAsSidecar(ctx context.Context, cmd *cobra.Command, o *reportOptions, log logr.Logger) error {
	prior, err := reporter.ReadOutcome(o.OutcomeFile)
	if err != nil {
		return reportDone(cmd, o, "", err)
	}
	if prior != nil {
		log.Info("the publication already ended; waiting for the pod to stop", "exitCode", prior.ExitCode)
		<-ctx.Done()
		return nil
	}
	msg, err := executeReport(ctx, o, log)
	_ = reportDone(cmd, o, msg, err)
	if ctx.Err() != nil {
		return err
	}
	outcome := reporter.Outcome{ExitCode: 0, Message: msg}
	if err != nil {
		outcome = reporter.Outcome{ExitCode: exitCode(err), Message: "report: " + err.Error()}
	}
	if werr := reporter.WriteOutcome(o.OutcomeFile, outcome); werr != nil {
		// Exiting makes the kubelet start the reporter again, which publishes again.
		return reportDone(cmd, o, "", werr)
	}
	<-ctx.Done()
	return nil
}

// outcomeError is a publication that did not succeed, carrying the reporter's exit code.
type outcomeError struct{ reporter.Outcome }

func (e *outcomeError) Error() string { return e.Message }

// ExitCode is the reporter's exit code.
func (e *outcomeError) ExitCode() int { return e.Outcome.ExitCode }

// awaitOutcome is the publication container: it waits for the reporter's outcome and ends with
// its exit code and message.
func awaitOutcome(ctx context.Context, cmd *cobra.Command, o *reportOptions) error {
	interval := o.PollInterval
	if interval <= 0 {
		interval = reporter.DefaultPollInterval
	}
	out, err := reporter.AwaitOutcome(ctx, o.AwaitOutcome, interval)
	if err != nil {
		msg := "report --await-outcome: " + err.Error()
		fmt.Fprintln(cmd.ErrOrStderr(), msg)
		writeTerminationMessage(o.TerminationLog, msg)
		return err
	}
	writeTerminationMessage(o.TerminationLog, out.Message)
	if out.ExitCode != 0 {
		fmt.Fprintln(cmd.ErrOrStderr(), out.Message)
		return &outcomeError{*out}
	}
	fmt.Fprintln(cmd.OutOrStdout(), out.Message)
	return nil
}

// writeTerminationMessage writes msg to path (the container's terminationMessagePath) when that
// is writable; errors are ignored because the message is also printed to stderr.
func writeTerminationMessage(path, msg string) {
	if path == "" {
		return
	}
	if len(msg) > 4000 {
		msg = msg[:4000]
	}
	_ = os.WriteFile(path, []byte(msg), 0o644)
}
