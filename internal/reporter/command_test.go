package reporter_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dgdr-operator/dgdr-operator/internal/reporter"
)

// TestReportCommand runs the `report` command with --search-exit-file against the real API
// server: success prints a summary and writes the termination message; a failure exits non-zero
// with the reason on stderr and in the termination message.
func TestReportCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	if code := recommend(t, searchInput, dir); code != 0 {
		t.Fatalf("aisim exit %d", code)
	}
	ns := newNamespace(t)
	run := newRun(t, ns, "llm-run-8", 2)
	exitFile := filepath.Join(t.TempDir(), "search-exit")
	if err := os.WriteFile(exitFile, []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	term := filepath.Join(t.TempDir(), "termination-log")

	execute := func(images string) (string, string, error) {
		o := &reporter.Options{RESTConfig: env.Config}
		cmd := reporter.NewCommandWithOptions(o)
		var stdout, stderr bytes.Buffer
		cmd.SetOut(&stdout)
		cmd.SetErr(&stderr)
		cmd.SetArgs([]string{"--run-name", run.Name, "--namespace", ns, "--output-dir", dir, "--runtime-images", images,
			"--search-exit-file", exitFile, "--termination-log", term, "--poll-interval", "10ms", "--progress-interval", "10ms"})
		err := cmd.ExecuteContext(context.Background())
		return stdout.String(), stderr.String(), err
	}

	// No image for the chosen backends: publication fails visibly.
	_, stderr, err := execute("trtllm=img:1")
	if err == nil || !strings.Contains(stderr, "no runtime image") {
		t.Fatalf("err = %v, stderr = %q", err, stderr)
	}
	msg, _ := os.ReadFile(term)
	if !strings.Contains(string(msg), "no runtime image") {
		t.Errorf("termination message %q", msg)
	}

	stdout, stderr, err := execute("vllm=v:1.3.1,sglang=s:1.3.1")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "published 2 candidate(s)") {
		t.Errorf("stdout %q", stdout)
	}
	if n := len(listCandidates(t, ns)); n != 2 {
		t.Errorf("%d Candidates, want 2", n)
	}
	msg, _ = os.ReadFile(term)
	if !strings.Contains(string(msg), "published 2") {
		t.Errorf("termination message %q", msg)
	}
}

func TestResolveOutputDir(t *testing.T) {
	for in, want := range map[string]string{
		"/var/run/dgdr/output":        "/var/run/dgdr/output/result",
		"/var/run/dgdr/output/":       "/var/run/dgdr/output/result",
		"/var/run/dgdr/output/result": "/var/run/dgdr/output/result",
		"/tmp/x":                      "/tmp/x",
	} {
		if got := reporter.ResolveOutputDir(in); got != want {
			t.Errorf("ResolveOutputDir(%q) = %q, want %q", in, got, want)
		}
	}
}
