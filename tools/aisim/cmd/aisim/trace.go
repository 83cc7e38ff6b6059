package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/trace"
)

// traceCommand is `aisim trace`: what a user replays (summary) and synthetic traces (generate).
func traceCommand(code *int, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{Use: "trace", Short: "inspect mooncake and Dynamo request traces, generate mooncake ones"}
	var blockSize int
	var format, traceFormat string
	summary := &cobra.Command{
		Use:   "summary FILE",
		Short: "print a trace's requests, duration, ISL/OSL percentiles, offered rate and prefix reuse",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "table" && format != "json" {
				fmt.Fprintf(stderr, "--format: must be table or json, got %q\n", format)
				*code = aisimulate.ExitInvalidInput
				return nil
			}
			if traceFormat != trace.FormatMooncake && traceFormat != trace.FormatDynamo {
				fmt.Fprintf(stderr, "--trace-format: must be mooncake or dynamo, got %q\n", traceFormat)
				*code = aisimulate.ExitInvalidInput
				return nil
			}
			// A Dynamo trace names its own block size; --block-size then only checks it.
			bs := blockSize
			if traceFormat == trace.FormatDynamo && !cmd.Flags().Changed("block-size") {
				bs = 0
			}
			t, err := trace.Read(args[0], traceFormat, bs)
			if err != nil {
				fmt.Fprintf(stderr, "%s: %v\n", args[0], err)
				*code = aisimulate.ExitInvalidInput
				return nil
			}
			s := trace.Summarize(t)
			if format == "json" {
				data, _ := json.MarshalIndent(s, "", "  ")
				fmt.Fprintf(stdout, "%s\n", data)
				return nil
			}
			s.Print(stdout)
			return nil
		},
	}
	summary.Flags().IntVar(&blockSize, "block-size", trace.DefaultBlockSize, "tokens per hash block (traffic.source.block_size)")
	summary.Flags().StringVar(&format, "format", "table", "stdout format: table or json")
	summary.Flags().StringVar(&traceFormat, "trace-format", trace.FormatMooncake, "the file's format: mooncake or dynamo (traffic.source.format; a .gz dynamo file is read through gzip)")

	o := trace.DefaultGenerateOptions
	var out string
	generate := &cobra.Command{
		Use:   "generate",
		Short: "write a seeded synthetic mooncake trace (Poisson arrivals, shared-prefix groups)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := o.Check(); err != nil {
				fmt.Fprintln(stderr, err)
				*code = aisimulate.ExitInvalidInput
				return nil
			}
			w := stdout
			if out != "" && out != "-" {
				f, err := os.Create(out)
				if err != nil {
					fmt.Fprintln(stderr, err)
					*code = aisimulate.ExitFailure
					return nil
				}
				defer f.Close()
				w = f
			}
			if err := trace.Generate(w, o); err != nil {
				fmt.Fprintln(stderr, err)
				*code = aisimulate.ExitFailure
			}
			return nil
		},
	}
	f := generate.Flags()
	f.Uint64Var(&o.Seed, "seed", o.Seed, "random seed (the same options give the same file)")
	f.IntVar(&o.Requests, "requests", o.Requests, "number of requests")
	f.Float64Var(&o.Rate, "rate", o.Rate, "mean Poisson arrival rate, requests per second")
	f.IntVar(&o.PrefixGroups, "prefix-groups", o.PrefixGroups, "distinct shared prefixes (0: every prompt unique)")
	f.IntVar(&o.PrefixTokens, "prefix-tokens", o.PrefixTokens, "tokens of each shared prefix (whole blocks)")
	f.IntVar(&o.InputTokens, "input-tokens", o.InputTokens, "mean prompt length (uniform within ±50%)")
	f.IntVar(&o.OutputTokens, "output-tokens", o.OutputTokens, "mean response length (uniform within ±50%)")
	f.IntVar(&o.BlockSize, "block-size", o.BlockSize, "tokens per hash block")
	f.StringVarP(&out, "output", "o", "", "output file (default stdout)")
	root.AddCommand(summary, generate)
	return root
}
