// Command dgdrctl works with DynamoGraphDeploymentRequests: offline (lower, validate,
// check-input, recommend) and on a cluster (status, results, promote, cancel, and ui, a local web
// view). Installed as kubectl-dgdr it is also a kubectl plugin.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/dgdr-operator/dgdr-operator/internal/dgdrctl"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := dgdrctl.NewRootCommandAs(filepath.Base(os.Args[0]), os.Stdout, os.Stderr).ExecuteContext(ctx)
	var exit dgdrctl.ExitError
	switch {
	case errors.As(err, &exit):
		os.Exit(exit.Code)
	case err != nil:
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
