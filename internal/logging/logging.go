// Package logging gives every binary's controller-runtime logger a sink. controller-runtime logs
// through one process-wide logger (its clients' API warnings, its caches and managers); in a
// binary that never sets it (ctrl.SetLogger) those messages are lost and, once the process has
// run 30 s, controller-runtime prints "log.SetLogger(...) was never called" with a stack trace.
// Only the first logger set in a process counts. Long-running processes set zap
// (sigs.k8s.io/controller-runtime/pkg/log/zap) as the operator does; command-line tools set
// CommandLine.
package logging

import (
	"fmt"
	"io"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

// CommandLine is the logger of a command-line tool: what controller-runtime logs while a command
// runs (an API server's warnings, a client's errors) goes to w, one plain line each, without
// debug messages or stack traces.
func CommandLine(w io.Writer) logr.Logger {
	return funcr.New(func(prefix, args string) {
		if prefix != "" {
			prefix += ": "
		}
		fmt.Fprintln(w, prefix+args)
	}, funcr.Options{})
}
