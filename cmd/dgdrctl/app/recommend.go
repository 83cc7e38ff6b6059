package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/candidates"
	"github.com/dgdr-operator/dgdr-operator/internal/controller/request"
	"github.com/dgdr-operator/dgdr-operator/internal/render"
	aisim "github.com/dgdr-operator/dgdr-operator/tools/aisim/app"
)

// recommendNamespace is the namespace of a request file without one.
const recommendNamespace = "default"

// recommendRequestUID is the UID of a request file without one: the rendering of a capture names
// the request's directory of the claim, which an offline request, never created, does not have.
const recommendRequestUID = "00000000-0000-0000-0000-000000000000"

func newRecommendCommand() *cobra.Command {
	var file, configPath, gpuSKU, output, trace string
	cmd := &cobra.Command{
		Use:   "recommend -f FILE",
		Short: "Run the whole pipeline offline and print the Candidates the operator would publish",
		Long: `recommend runs, without a cluster, what the operator does for a DynamoGraphDeploymentRequest:
admission (defaulting, the CRD schema with its CEL rules, the webhook checks), lowering to the
effective AISimulate input, the search with the local recommender (aisim, an analytical
estimate), and the reporter's rendering of each ranked candidate into a DynamoGraphDeployment.
It prints the Candidates as the operator would publish them: a v1 List of
DynamoGraphDeploymentCandidates (-o yaml|json) or the dgdrctl status table (-o table).

A request that replays a trace (spec.workload.trace) needs a local copy of the trace: --trace
FILE replaces the in-cluster path in the effective input (the ConfigMap or claim is not read).

Exit codes follow the recommender's: 0 candidates found, 1 no feasible candidate, 2 invalid input
(the request does not pass admission, or the recommender rejects its input).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "yaml" && output != "json" && output != "table" {
				return fmt.Errorf("-o must be yaml, json or table")
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
			cands, code, err := recommend(cmd, admitted, cfg)
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

// recommend runs the local recommender on the admitted request's effective input in a
// temporary directory and builds the Candidates from its output as the reporter does
// (internal/candidates). The
// recommender's diagnostics go to stderr; a non-zero exit code comes back with no Candidates.
func recommend(cmd *cobra.Command, a *Admitted, cfg *v1alpha1.OperatorConfiguration) ([]v1beta2.DynamoGraphDeploymentCandidate, int, error) {
	dir, err := os.MkdirTemp("", "dgdrctl-recommend-")
	if err != nil {
		return nil, 0, err
	}
	defer os.RemoveAll(dir)
	inputPath := filepath.Join(dir, "input.json")
	if err := os.WriteFile(inputPath, a.Input.JSON, 0o600); err != nil {
		return nil, 0, err
	}
	outDir := filepath.Join(dir, "output")
	var stdout bytes.Buffer
	code := aisim.Recommend(cmd.Context(), aisim.Options{
		ConfigPath: inputPath, OutputDir: outDir, Format: "json",
		Stdout: &stdout, Stderr: cmd.ErrOrStderr(),
	})
	if code != aisimulate.ExitOK {
		return nil, code, nil
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
