// Package upstreamtest runs the real upstream toolchain, the pinned venv that make upstream
// installs in bin/upstream (hack/upstream/requirements.txt), from tests. Tests that judge what
// the project produces with the real AISimulate, Planner or Dynamo fail when the venv is
// missing: they never fall back to aisim.
package upstreamtest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
)

// Venv is the upstream venv's directory.
func Venv() string { return filepath.Join(testenv.Root(), "bin", "upstream") }

// Script is the path of a judge script in hack/upstream.
func Script(name string) string { return filepath.Join(testenv.Root(), "hack", "upstream", name) }

// Executable is the path of a program of the venv (python, aisimulate), or an error that names
// make upstream when the venv is missing.
func Executable(name string) (string, error) {
	path := filepath.Join(Venv(), "bin", name)
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("the upstream venv has no %s (%s): run make upstream to install the pinned aisimulate and ai-dynamo", name, path)
		}
		return "", err
	}
	return path, nil
}

// MustExecutable is Executable for tests: a missing venv fails the test.
func MustExecutable(t testing.TB, name string) string {
	t.Helper()
	path, err := Executable(name)
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// RunPython runs a judge script of hack/upstream with the venv's Python, args after it and stdin
// on its standard input, and returns its standard output. A non-zero exit is an error carrying
// the script's standard error.
func RunPython(t testing.TB, script string, stdin []byte, args ...string) []byte {
	t.Helper()
	python := MustExecutable(t, "python")
	cmd := exec.Command(python, append([]string{Script(script)}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// The judges run offline: no Hugging Face download, no telemetry.
	cmd.Env = append(os.Environ(), "HF_HUB_OFFLINE=1", "TRANSFORMERS_OFFLINE=1", "PYTHONDONTWRITEBYTECODE=1")
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", python, script, err, stderr.String())
	}
	return stdout.Bytes()
}

// Version is the installed version of a distribution of the venv (aisimulate, ai-dynamo).
func Version(t testing.TB, dist string) string {
	t.Helper()
	python := MustExecutable(t, "python")
	out, err := exec.Command(python, "-c", "import sys; from importlib.metadata import version; print(version(sys.argv[1]))", dist).Output()
	if err != nil {
		t.Fatalf("the version of %s in the upstream venv: %v", dist, err)
	}
	return string(bytes.TrimSpace(out))
}

// RunAISimulate runs the venv's aisimulate offline in dir with args and returns its standard
// output. A non-zero exit fails the test with its standard error.
func RunAISimulate(t testing.TB, dir string, args ...string) []byte {
	t.Helper()
	bin := MustExecutable(t, "aisimulate")
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = append(os.Environ(), "HF_HUB_OFFLINE=1", "TRANSFORMERS_OFFLINE=1", "PYTHONDONTWRITEBYTECODE=1")
	if err := cmd.Run(); err != nil {
		t.Fatalf("aisimulate %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.Bytes()
}
