package app

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

func newLowerCommand() *cobra.Command {
	var file, configPath, gpuSKU, show, output string
	cmd := &cobra.Command{
		Use:   "lower -f FILE",
		Short: "Print the admitted request and/or its effective AISimulate input, offline",
		Long: `lower runs exactly the admission (defaulting and validation) and lowering code of the operator
on a DynamoGraphDeploymentRequest file and prints the admitted request, the effective AISimulate
recommendation input, or both. Without --config it uses the shipped default operator
configuration, which sets no default GPU SKU: a request that names none needs --gpu-sku (offline
there are no Nodes to discover it from). "--show input -o json" prints only the canonical JSON
of the effective input, byte for byte what the operator records and hashes.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if show != "request" && show != "input" && show != "both" {
				return fmt.Errorf("--show must be request, input or both")
			}
			if output != "yaml" && output != "json" {
				return fmt.Errorf("-o must be yaml or json")
			}
			admitted, err := admitFile(cmd, file, configPath, gpuSKU, true)
			if err != nil {
				return err
			}
			return printLowered(cmd, admitted, show, output)
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "DynamoGraphDeploymentRequest file (YAML or JSON; - for stdin)")
	cmd.Flags().StringVar(&configPath, "config", "", "operator configuration file (default: the shipped default configuration)")
	addGPUSKUFlag(cmd, &gpuSKU)
	cmd.Flags().StringVar(&show, "show", "both", "what to print: request, input or both")
	cmd.Flags().StringVarP(&output, "output", "o", "yaml", "output format: yaml or json")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

func printLowered(cmd *cobra.Command, a *Admitted, show, output string) error {
	out := cmd.OutOrStdout()
	reqJSON, err := json.Marshal(a.Request)
	if err != nil {
		return err
	}
	switch {
	case output == "json" && show == "input":
		_, err = fmt.Fprintf(out, "%s\n", a.Input.JSON)
	case output == "json" && show == "request":
		var buf bytes.Buffer
		_ = json.Indent(&buf, reqJSON, "", "  ")
		_, err = fmt.Fprintf(out, "%s\n", buf.Bytes())
	case output == "json":
		var buf bytes.Buffer
		combined := fmt.Sprintf(`{"request":%s,"input":%s,"inputHash":%q}`, reqJSON, a.Input.JSON, a.Input.Hash)
		_ = json.Indent(&buf, []byte(combined), "", "  ")
		_, err = fmt.Fprintf(out, "%s\n", buf.Bytes())
	default:
		if show != "input" {
			reqYAML, yerr := yaml.JSONToYAML(reqJSON)
			if yerr != nil {
				return yerr
			}
			if show == "both" {
				fmt.Fprintln(out, "# admitted DynamoGraphDeploymentRequest")
			}
			fmt.Fprintf(out, "%s", reqYAML)
		}
		if show != "request" {
			inYAML, yerr := a.Input.YAML()
			if yerr != nil {
				return yerr
			}
			if show == "both" {
				fmt.Fprintf(out, "---\n# effective AISimulate recommendation input (%s)\n", a.Input.Hash)
			}
			_, err = fmt.Fprintf(out, "%s", inYAML)
		}
	}
	return err
}
