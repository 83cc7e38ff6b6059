package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	ctrl "sigs.k8s.io/controller-runtime"
)

// loggerProbeEnv makes the test binary, run as a child, execute the arguments it holds (split
// on spaces) and then log a probe through controller-runtime's logger.
const loggerProbeEnv = "DGDR_LOGGER_PROBE_ARGS"

// TestCommandsSetTheControllerRuntimeLogger: the manager (the root command) and the reporter
// (`report`) each set controller-runtime's logger as they start, even when they then fail
// (here: a missing configuration file, a --write-input without its input): what
// controller-runtime logs afterwards reaches stderr. Without it controller-runtime drops it and,
// 30 s into the process, prints "log.SetLogger(...) was never called" with a stack trace. Each
// command runs in a child process: only the first logger set in a process counts.
func TestCommandsSetTheControllerRuntimeLogger(t *testing.T) {
	if args := os.Getenv(loggerProbeEnv); args != "" {
		cmd := newRootCommand()
		cmd.SetArgs(strings.Fields(args))
		_ = cmd.Execute()
		ctrl.Log.WithName("probe").Info("controller-runtime logger probe")
		os.Exit(0)
	}
	dir := t.TempDir()
	for name, args := range map[string]string{
		"manager":  "--config " + filepath.Join(dir, "missing.yaml"),
		"reporter": "report --write-input --termination-log " + filepath.Join(dir, "termination-log"),
	} {
		t.Run(name, func(t *testing.T) {
			child := exec.Command(os.Args[0], "-test.run=^TestCommandsSetTheControllerRuntimeLogger$")
			child.Env = append(os.Environ(), loggerProbeEnv+"="+args)
			out, err := child.CombinedOutput()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			if !strings.Contains(string(out), "controller-runtime logger probe") {
				t.Errorf("`dgdr-operator %s` left controller-runtime's logger unset; output:\n%s", args, out)
			}
		})
	}
}
