// Command dgdrctl works with DynamoGraphDeploymentRequests: offline (lower, validate,
// check-input, recommend) and on a cluster (status, results, promote, cancel, and ui, a local web
// view). Installed as kubectl-dgdr it is also a kubectl plugin.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/spf13/cobra"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/dgdr-operator/dgdr-operator/cmd/dgdrctl/app"
	"github.com/dgdr-operator/dgdr-operator/internal/logging"
	"github.com/dgdr-operator/dgdr-operator/internal/version"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := newRootCommand(filepath.Base(os.Args[0]), os.Stdout, os.Stderr).ExecuteContext(ctx)
	var exit app.ExitError
	switch {
	case errors.As(err, &exit):
		os.Exit(exit.Code)
	case err != nil:
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// newRootCommand is dgdrctl's command tree with `version`. Every command sends what
// controller-runtime logs (its clients' API warnings and errors) to stderr.
func newRootCommand(executable string, stdout, stderr io.Writer) *cobra.Command {
	root := app.NewRootCommandAs(executable, stdout, stderr)
	root.PersistentPreRun = func(*cobra.Command, []string) { crlog.SetLogger(logging.CommandLine(stderr)) }
	root.AddCommand(newVersionCommand(stdout, version.Get()))
	return root
}

// newVersionCommand prints the build identity: one line, or JSON with -o json.
func newVersionCommand(stdout io.Writer, info version.Info) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print dgdrctl's version, commit and build date",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			switch output {
			case "":
				_, err := fmt.Fprintln(stdout, "dgdrctl "+info.String())
				return err
			case "json":
				enc := json.NewEncoder(stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(info)
			default:
				return fmt.Errorf("--output %q: want json or nothing", output)
			}
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: json (default: one line)")
	return cmd
}
