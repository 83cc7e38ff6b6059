// Command aisim is a Go-native, AISimulate-compatible local recommender:
// `aisim recommend` / `aisim predict` accept AISimulate's input document and
// write its output files, using an analytical performance model.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/spf13/cobra"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:])
	// A SIGINT that arrived after the work finished still means "interrupted".
	if ctx.Err() != nil && code == aisimulate.ExitOK {
		code = aisimulate.ExitInterrupted
	}
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string) int {
	code := aisimulate.ExitOK
	root := &cobra.Command{
		Use:           "aisim",
		Short:         "AISimulate-compatible local recommender with an analytical performance model",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       app.Version,
	}
	command := func(name, short string, fn func(context.Context, app.Options) int) *cobra.Command {
		opts := app.Options{Stdout: os.Stdout, Stderr: os.Stderr}
		c := &cobra.Command{
			Use:   name + " -c FILE",
			Short: short,
			Args:  cobra.NoArgs,
			RunE: func(*cobra.Command, []string) error {
				code = fn(ctx, opts)
				return nil
			},
		}
		f := c.Flags()
		f.StringVarP(&opts.ConfigPath, "config", "c", "", "input YAML document (required)")
		f.StringVar(&opts.OutputDir, "output-dir", app.DefaultOutputDir, "output directory (must be empty or absent unless --overwrite)")
		f.BoolVar(&opts.Overwrite, "overwrite", false, "replace aisim's files in a non-empty output directory")
		f.StringVar(&opts.Format, "format", "table", "stdout format: table or json")
		f.StringArrayVar(&opts.Sets, "set", nil, "override a document field: PATH=YAML_VALUE (repeatable, applied in order)")
		_ = c.MarkFlagRequired("config")
		return c
	}
	root.AddCommand(
		command("recommend", "search deployments and write recommendation.json and recommendations/NNNN.yaml", app.Recommend),
		command("predict", "predict one concrete deployment and write prediction.json", app.Predict),
		traceCommand(&code, os.Stdout, os.Stderr),
	)
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		fmt.Fprintf(os.Stderr, "aisim: error: %v\n", err)
		return aisimulate.ExitInvalidInput
	}
	return code
}
