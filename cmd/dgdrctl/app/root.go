// Package app implements the dgdrctl command line (also installed as the kubectl plugin
// kubectl-dgdr).
package app

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/dgdr-operator/dgdr-operator/api/config/v1alpha1"
	"github.com/dgdr-operator/dgdr-operator/internal/config"
)

// ExitError carries a process exit code; main prints nothing more for it.
type ExitError struct{ Code int }

func (e ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// PluginName is the executable name under which kubectl finds dgdrctl as `kubectl dgdr`.
const PluginName = "kubectl-dgdr"

// NewRootCommand builds the dgdrctl command tree.
func NewRootCommand(stdout, stderr io.Writer) *cobra.Command {
	return NewRootCommandAs("dgdrctl", stdout, stderr)
}

// NewRootCommandAs builds the command tree for the executable name it runs as: as kubectl-dgdr
// (a kubectl plugin), usage and shell completion say "kubectl dgdr".
func NewRootCommandAs(executable string, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "dgdrctl",
		Short:         "Work with DynamoGraphDeploymentRequests: lower, validate, inspect and promote search results",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	if executable == PluginName {
		root.Use = "dgdr"
		root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl dgdr"}
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newLowerCommand(), newValidateCommand(), newCheckInputCommand(), newStatusCommand(), newPromoteCommand(), newCancelCommand(), newRecommendCommand(), newUICommand(), newResultsCommand(), newCalibrationCommand())
	return root
}

func loadConfig(path string) (*v1alpha1.OperatorConfiguration, error) {
	if path == "" {
		return config.Default(), nil
	}
	return config.Load(path)
}

func readInput(path string, stdin io.Reader) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(stdin)
	}
	return os.ReadFile(path)
}
