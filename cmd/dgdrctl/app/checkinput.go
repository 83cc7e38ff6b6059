package app

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
)

func newCheckInputCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "check-input FILE",
		Short: "Check a raw AISimulate recommend document against the bundled schema, offline",
		Long: `check-input validates an AISimulate recommend input document (YAML or JSON; - for stdin) against
the JSON Schema bundled with this operator and the cross-field rules AISimulate enforces. It exits 0
when the document is valid and 1 with one "path: reason" line per problem otherwise. Integers
must be written as integers (1024, not 1024.0), as AISimulate requires.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := readInput(args[0], cmd.InOrStdin())
			if err != nil {
				return err
			}
			doc, err := aisimulate.DecodeDocument(data)
			if err != nil {
				fmt.Fprintln(cmd.ErrOrStderr(), err) // "path: line N: reason"
				return ExitError{Code: 1}
			}
			problems := aisimulate.CheckInput(doc)
			for _, p := range problems {
				fmt.Fprintln(cmd.ErrOrStderr(), p.String())
			}
			if len(problems) > 0 {
				return ExitError{Code: 1}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: valid (AISimulate input schema %s)\n", args[0], aisimulate.SchemaVersion)
			return nil
		},
	}
}
