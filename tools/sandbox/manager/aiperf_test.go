package manager

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestAIPerfLauncherPointsAtTheNode: the verification image's launcher runs bin/aiperf's python
// with the frontend URL on the node's address (the Service's port kept) and the realizer's
// tokenizer, every other argument unchanged.
func TestAIPerfLauncherPointsAtTheNode(t *testing.T) {
	root, dir := t.TempDir(), t.TempDir()
	if got, err := aiperfLauncher(root, dir); err != nil || got != "" {
		t.Fatalf("without bin/aiperf: %q %v, want no launcher", got, err)
	}
	python := filepath.Join(root, "bin", "aiperf", "bin", "python3")
	if err := os.MkdirAll(filepath.Dir(python), 0o755); err != nil {
		t.Fatal(err)
	}
	// A python that prints its arguments, one a line.
	if err := os.WriteFile(python, []byte("#!/bin/sh\nfor a in \"$@\"; do echo \"$a\"; done\n"), 0o755); err != nil { //nolint:gosec // an executable script
		t.Fatal(err)
	}
	launcher, err := aiperfLauncher(root, dir)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(launcher, "-c", "print('a b')", "--url", "http://llama-frontend.team.svc:31234", "--tokenizer", "org/llama", "--isl", "64").Output()
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{"-c", "print('a b')", "--url", "http://127.0.0.1:31234", "--tokenizer",
		filepath.Join(root, "tools", "sandbox", "dgdrealizer", "testdata", "tiny-llama"), "--isl", "64"}, "\n") + "\n"
	if string(out) != want {
		t.Errorf("arguments:\n%s\nwant:\n%s", out, want)
	}
}
