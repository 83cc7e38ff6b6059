package main

import (
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	crlog "sigs.k8s.io/controller-runtime/pkg/log"
)

// loggerProbeEnv makes the test binary, run as a child, execute `dgdrctl version` and then log a
// probe through controller-runtime's logger.
const loggerProbeEnv = "DGDRCTL_LOGGER_PROBE"

// TestCommandsSetTheControllerRuntimeLogger: a dgdrctl command sets controller-runtime's logger
// to stderr as it starts: what controller-runtime logs (its clients' API warnings) reaches the
// user, and after 30 s controller-runtime prints no "log.SetLogger(...) was never called" stack
// trace. The command runs in a child process: only the first logger set in a process counts.
func TestCommandsSetTheControllerRuntimeLogger(t *testing.T) {
	if os.Getenv(loggerProbeEnv) != "" {
		cmd := newRootCommand("dgdrctl", io.Discard, os.Stderr)
		cmd.SetArgs([]string{"version"})
		_ = cmd.Execute()
		crlog.Log.WithName("probe").Info("controller-runtime logger probe")
		os.Exit(0)
	}
	child := exec.Command(os.Args[0], "-test.run=^TestCommandsSetTheControllerRuntimeLogger$")
	child.Env = append(os.Environ(), loggerProbeEnv+"=1")
	out, err := child.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), `probe: "level"=0 "msg"="controller-runtime logger probe"`) {
		t.Errorf("`dgdrctl version` left controller-runtime's logger unset; output:\n%s", out)
	}
}
