package app

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
)

func newValidateCommand() *cobra.Command {
	var file, configPath, gpuSKU string
	cmd := &cobra.Command{
		Use:   "validate -f FILE",
		Short: "Check a request as the API server and admission would, offline",
		Long: `validate applies what the API server and the operator's admission webhooks would to a
DynamoGraphDeploymentRequest: unknown fields, the CRD's OpenAPI schema including its CEL rules
(evaluated with the API server's own libraries), defaulting, and the webhook validation (known GPU
SKUs, inputOverrides shape, lowering, the operator's caps on the effective input). It prints every
problem at once, one line each starting with its field path, and exits 1 when there is any: where
the API server stops at the first stage that fails, validate goes on through the others, and a
request without a GPU SKU (offline there are no Nodes to discover one from) is checked for
everything that does not depend on it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := admitFile(cmd, file, configPath, gpuSKU, false); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: valid\n", file)
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "DynamoGraphDeploymentRequest file (YAML or JSON; - for stdin)")
	cmd.Flags().StringVar(&configPath, "config", "", "operator configuration file (default: the shipped default configuration)")
	addGPUSKUFlag(cmd, &gpuSKU)
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

// admitFile runs the admission pipeline on a request file with the given (or shipped)
// configuration. Problems are printed one per line, field path first, and come back as exit 1.
// searchOnly (lower, recommend: commands that compute the search and never deploy) admits
// spec.deployment.autoApply whatever the configuration's autoApply.enabled says; validate
// checks it as the cluster's admission would.
func admitFile(cmd *cobra.Command, file, configPath, gpuSKU string, searchOnly bool) (*Admitted, error) {
	cfg, err := loadConfig(configPath)
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	if searchOnly {
		cfg.AutoApply.Enabled = true
	}
	if gpuSKU != "" {
		if !aisimulate.KnownSKU(gpuSKU) {
			return nil, fmt.Errorf("--gpu-sku: %q is not an AISimulate system id (%s)", gpuSKU, strings.Join(aisimulate.KnownSKUs(), ", "))
		}
		cfg.Defaults.GPUSKU = gpuSKU
	}
	data, err := readInput(file, cmd.InOrStdin())
	if err != nil {
		return nil, err
	}
	admitted, errs, err := Admit(cmd.Context(), data, cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(errs) > 0 {
		printErrors(cmd.ErrOrStderr(), errs)
		for _, e := range errs {
			if e.Type == field.ErrorTypeRequired && e.Field == "spec.hardware.gpu.sku" {
				fmt.Fprintln(cmd.ErrOrStderr(), "(offline there are no Nodes to discover the GPU from: pass --gpu-sku SKU)")
			}
		}
		return nil, ExitError{Code: 1}
	}
	// The webhook returns these as admission warnings (kubectl prints "Warning: ...").
	for _, w := range admitted.Input.Warnings {
		fmt.Fprintln(cmd.ErrOrStderr(), "Warning: "+w)
	}
	return admitted, nil
}

// addGPUSKUFlag adds --gpu-sku: offline, dgdrctl cannot discover the cluster's GPUs, so a
// request that names no SKU takes this one, else the configuration's defaults.gpuSKU.
func addGPUSKUFlag(cmd *cobra.Command, sku *string) {
	cmd.Flags().StringVar(sku, "gpu-sku", "", "GPU SKU (AISimulate system id) for a request that names none, standing in for the cluster's GPU discovery (default: the configuration's defaults.gpuSKU; without either such a request is refused)")
}

// printErrors writes one line per error, starting with its field path.
func printErrors(w io.Writer, errs field.ErrorList) {
	for _, e := range errs {
		fmt.Fprintln(w, e.Error())
	}
}
