package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/candidates"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/request"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/internal/render"
	aisim "github.com/dgdr-operator/dgdr-operator/tools/aisim/app"
)

// recommendNamespace is the namespace of a request file without one.
const recommendNamespace = "default"

// recommendRequestUID is the UID of a request file without one: the rendering of a capture names
// the request's directory of the claim, which an offline request, never created, does not have.
const recommendRequestUID = "00000000-0000-0000-0000-000000000000"

// Recommenders of dgdrctl recommend.
const (
	// RecommenderAISim is the local recommender, aisim, run in process.
	RecommenderAISim = "aisim"
	// RecommenderAISimulate is the search command of the operator configuration
	// (planner.command, aisimulate recommend by default), run as a process as the search Job runs it.
	RecommenderAISimulate = "aisimulate"
)

func newRecommendCommand() *cobra.Command {
	var file, configPath, gpuSKU, output, trace, recommender, recommenderCommand string
	cmd := &cobra.Command{
		Use:   "recommend -f FILE",
		Short: "Run the whole pipeline offline and print the Candidates the operator would publish",
		Long: `recommend runs, without a cluster, what the operator does for a DynamoGraphDeploymentRequest:
admission (defaulting, the CRD schema with its CEL rules, the webhook checks), lowering to the
effective AISimulate input, the search, and the reporter's rendering of each ranked candidate into
a DynamoGraphDeployment, with its cost when the configuration (--config) has a price for the GPU.
It prints the Candidates as the operator would publish them: a v1 List of
DynamoGraphDeploymentCandidates (-o yaml|json) or the dgdrctl status table (-o table).

--recommender aisim (the default) searches with the local recommender, aisim, an analytical
estimate that answers in seconds. --recommender aisimulate runs the search as the cluster's search
Job does: the configuration's planner.command (aisimulate recommend by default, found in PATH;
--recommender-command names another executable for its first word, such as a virtualenv's
aisimulate) with the Job's arguments (--config with the effective input as YAML, --output-dir,
--format json, then planner.args), and reads its output directory as the reporter does. The real
AISimulate takes seconds of CPU per candidate; its Hugging Face access follows the environment
(HF_TOKEN, HF_HUB_OFFLINE).

A request that replays a trace (spec.workload.trace) needs a local copy of the trace: --trace
FILE replaces the in-cluster path in the effective input (the ConfigMap or claim is not read).

Exit codes follow the recommender's: 0 candidates found, 1 no feasible candidate, 2 invalid input
(the request does not pass admission, or the recommender rejects its input).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "yaml" && output != "json" && output != "table" {
				return fmt.Errorf("-o must be yaml, json or table")
			}
			if recommenderCommand != "" && !cmd.Flags().Changed("recommender") {
				recommender = RecommenderAISimulate
			}
			switch {
			case recommender != RecommenderAISim && recommender != RecommenderAISimulate:
				return fmt.Errorf("--recommender must be %s or %s", RecommenderAISim, RecommenderAISimulate)
			case recommender == RecommenderAISim && recommenderCommand != "":
				return fmt.Errorf("--recommender-command runs an external recommender: it needs --recommender %s", RecommenderAISimulate)
			}
			admitted, err := admitFile(cmd, file, configPath, gpuSKU, true)
			if err != nil {
				if _, ok := err.(ExitError); ok {
					return ExitError{Code: aisimulate.ExitInvalidInput}
				}
				return err
			}
			cfg, err := loadConfig(configPath)
			if err != nil {
				return err
			}
			if err := localTrace(admitted, trace); err != nil {
				fmt.Fprintln(cmd.ErrOrStderr(), err)
				return ExitError{Code: aisimulate.ExitInvalidInput}
			}
			search := searchInProcess
			if recommender == RecommenderAISimulate {
				if search, err = searchCommand(cfg, recommenderCommand); err != nil {
					return err
				}
			}
			cands, code, err := recommend(cmd, admitted, cfg, search)
			if err != nil {
				return err
			}
			if code != aisimulate.ExitOK {
				return ExitError{Code: code}
			}
			return printCandidates(cmd, cands, output)
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "DynamoGraphDeploymentRequest file (YAML or JSON; - for stdin)")
	cmd.Flags().StringVar(&configPath, "config", "", "operator configuration file (default: the shipped default configuration)")
	addGPUSKUFlag(cmd, &gpuSKU)
	cmd.Flags().StringVarP(&output, "output", "o", "yaml", "output format: yaml, json or table")
	cmd.Flags().StringVar(&trace, "trace", "", "local copy of the trace of a spec.workload.trace request (its spec.workload.trace.format: mooncake JSONL or a Dynamo request trace)")
	cmd.Flags().StringVar(&recommender, "recommender", RecommenderAISim, "the search: aisim (in process) or aisimulate (the configuration's planner.command, as the search Job runs it)")
	cmd.Flags().StringVar(&recommenderCommand, "recommender-command", "", "executable run instead of the first word of planner.command (implies --recommender aisimulate; default: that word, found in PATH)")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

// localTrace points the effective input of a trace request at the local file instead of its
// in-cluster mount path; the input's hash is left as admission computed it (it identifies the
// request's input, not the file).
func localTrace(a *Admitted, file string) error {
	w := a.Request.Spec.Workload
	hasTrace := w != nil && w.Trace != nil
	switch {
	case !hasTrace && file != "":
		return fmt.Errorf("--trace: the request has no spec.workload.trace")
	case hasTrace && file == "":
		return fmt.Errorf("the request replays a trace from the cluster (spec.workload.trace.source); pass --trace FILE with a local copy to run it offline")
	case !hasTrace:
		return nil
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return err
	}
	if st, err := os.Stat(abs); err != nil || !st.Mode().IsRegular() {
		return fmt.Errorf("--trace %s: not a readable file (%v)", file, err)
	}
	traffic, _ := a.Input.Document["traffic"].(map[string]any)
	source, _ := traffic["source"].(map[string]any)
	if source == nil || source["type"] != "trace" {
		return fmt.Errorf("--trace: the effective input has no trace source (inputOverrides replaced it)")
	}
	source["paths"] = []any{abs}
	data, err := json.Marshal(a.Input.Document)
	if err != nil {
		return err
	}
	a.Input.JSON = data
	return nil
}

// searchFunc runs a search of the effective input file input (YAML) into the output directory
// out and returns the recommender's exit code; its diagnostics go to stderr.
type searchFunc func(ctx context.Context, input, out string, stderr io.Writer) (int, error)

// searchInProcess is aisim's recommend, in this process.
func searchInProcess(ctx context.Context, input, out string, stderr io.Writer) (int, error) {
	return aisim.Recommend(ctx, aisim.Options{ConfigPath: input, OutputDir: out, Format: "json", Stdout: io.Discard, Stderr: stderr}), nil
}

// searchCommand runs the search container's command as the search Job does
// (internal/controller/run: the configuration's planner.command, then jobcontract.SearchArgs with
// the local input and output paths in place of the Job's mounts, then planner.args). executable
// replaces the command's first word when set; either is looked up in PATH.
func searchCommand(cfg *v1alpha1.OperatorConfiguration, executable string) (searchFunc, error) {
	command := append([]string(nil), cfg.Planner.Command...)
	if len(command) == 0 {
		return nil, fmt.Errorf("the configuration has no planner.command to run")
	}
	if executable != "" {
		command[0] = executable
	}
	path, err := exec.LookPath(command[0])
	if err != nil {
		return nil, fmt.Errorf("--recommender %s runs %q (planner.command; --recommender-command names another executable): %w", RecommenderAISimulate, command[0], err)
	}
	return func(ctx context.Context, input, out string, stderr io.Writer) (int, error) {
		args := append(append(append([]string(nil), command[1:]...), searchArgs(input, out)...), cfg.Planner.Args...)
		c := exec.CommandContext(ctx, path, args...)
		// The search container has a writable /tmp of its own (jobcontract.TmpDir).
		tmp := filepath.Join(filepath.Dir(out), "tmp")
		if err := os.Mkdir(tmp, 0o700); err != nil {
			return 0, err
		}
		c.Env = append(os.Environ(), "TMPDIR="+tmp)
		c.Stdout, c.Stderr = io.Discard, stderr
		err := c.Run()
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() >= 0 {
			return exit.ExitCode(), nil
		}
		if err != nil {
			return 0, fmt.Errorf("running %s: %w", path, err)
		}
		return aisimulate.ExitOK, nil
	}, nil
}

// searchArgs are jobcontract.SearchArgs with the local effective input and output directory in
// place of the search Job's mounts.
func searchArgs(input, out string) []string {
	args := append([]string(nil), jobcontract.SearchArgs...)
	for i, a := range args {
		switch a {
		case jobcontract.InputDir + "/" + jobcontract.InputFile:
			args[i] = input
		case jobcontract.ResultDir:
			args[i] = out
		}
	}
	return args
}

// recommend runs search on the admitted request's effective input, written as the search Job's
// input container writes it (YAML), in a temporary directory, and builds the Candidates from its
// output as the reporter does (internal/candidates), costed at the configuration's price for the
// request's GPU as the Run controller records it (status.pricing). A non-zero exit code comes
// back with no Candidates.
func recommend(cmd *cobra.Command, a *Admitted, cfg *v1alpha1.OperatorConfiguration, search searchFunc) ([]v1beta2.DynamoGraphDeploymentCandidate, int, error) {
	dir, err := os.MkdirTemp("", "dgdrctl-recommend-")
	if err != nil {
		return nil, 0, err
	}
	defer os.RemoveAll(dir)
	inputPath := filepath.Join(dir, jobcontract.InputFile)
	doc, err := a.Input.YAML()
	if err != nil {
		return nil, 0, err
	}
	if err := os.WriteFile(inputPath, doc, 0o600); err != nil {
		return nil, 0, err
	}
	outDir := filepath.Join(dir, "result")
	code, err := search(cmd.Context(), inputPath, outDir, cmd.ErrOrStderr())
	if err != nil || code != aisimulate.ExitOK {
		return nil, code, err
	}

	req := a.Request.DeepCopy()
	if req.Namespace == "" {
		req.Namespace = recommendNamespace
	}
	if req.Generation == 0 {
		req.Generation = 1
	}
	if req.UID == "" {
		req.UID = recommendRequestUID
	}
	run, err := request.BuildRun(req, a.Input.Hash)
	if err != nil {
		return nil, 0, err
	}
	if h := req.Spec.Hardware; h != nil && h.GPU != nil {
		run.Status.Pricing = aisimulate.OptionsFrom(cfg).Prices.For(h.GPU.SKU)
	}
	cands, err := candidates.FromOutput(run, outDir, candidates.Options{RuntimeImages: cfg.RuntimeImages, GPUsPerNode: render.DefaultGPUsPerNode, PlannerImage: cfg.Planner.Image})
	if err != nil {
		return nil, 0, fmt.Errorf("building the candidates: %w", err)
	}
	return cands, aisimulate.ExitOK, nil
}

// candidateList is a v1 List of Candidates, as kubectl get -o yaml prints one.
type candidateList struct {
	APIVersion string                                   `json:"apiVersion"`
	Kind       string                                   `json:"kind"`
	Items      []v1beta2.DynamoGraphDeploymentCandidate `json:"items"`
}

func printCandidates(cmd *cobra.Command, cands []v1beta2.DynamoGraphDeploymentCandidate, output string) error {
	out := cmd.OutOrStdout()
	if output == "table" {
		writeCandidateTable(out, cands)
		return nil
	}
	list := candidateList{APIVersion: "v1", Kind: "List", Items: cands}
	if list.Items == nil {
		list.Items = []v1beta2.DynamoGraphDeploymentCandidate{}
	}
	data, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return err
	}
	if output == "json" {
		_, err = fmt.Fprintf(out, "%s\n", data)
		return err
	}
	y, err := yaml.JSONToYAML(data)
	if err != nil {
		return err
	}
	_, err = out.Write(y)
	return err
}
