package reporter_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dgdr-operator/dgdr-operator/internal/reporter"
)

// TestOutcome: the outcome the reporter writes is what the publication container reads back;
// none written yet is no outcome and no error; a damaged or oversized file is an error, not an
// outcome (the publication container fails rather than report success).
func TestOutcome(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "outcome.json")
	if o, err := reporter.ReadOutcome(path); o != nil || err != nil {
		t.Fatalf("no outcome yet: %+v, %v", o, err)
	}
	want := reporter.Outcome{ExitCode: 3, Message: "report: search output rejected: recommendation.json is a symbolic link"}
	if err := reporter.WriteOutcome(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := reporter.ReadOutcome(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&want, got); diff != "" {
		t.Errorf("outcome (-want +got):\n%s", diff)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the atomic write left %d files", len(entries))
	}
	for name, content := range map[string]string{
		"not JSON":      `{"exitCode": 0,`,
		"unknown field": `{"exitCode": 0, "published": true}`,
		"oversized":     `{"exitCode": 0, "message": "` + strings.Repeat("x", 9000) + `"}`,
	} {
		bad := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		if err := os.WriteFile(bad, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if o, err := reporter.ReadOutcome(bad); err == nil {
			t.Errorf("%s: read as %+v", name, o)
		}
	}
}

// TestAwaitOutcome: the publication container waits until the outcome is written, and stops
// waiting when told to stop.
func TestAwaitOutcome(t *testing.T) {
	path := filepath.Join(t.TempDir(), "outcome.json")
	go func() {
		time.Sleep(100 * time.Millisecond)
		_ = reporter.WriteOutcome(path, reporter.Outcome{Message: "published 2 candidate(s); search exit code 0"})
	}()
	o, err := reporter.AwaitOutcome(context.Background(), path, 10*time.Millisecond)
	if err != nil || o == nil || o.ExitCode != 0 || !strings.Contains(o.Message, "published 2") {
		t.Fatalf("AwaitOutcome = %+v, %v", o, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if o, err := reporter.AwaitOutcome(ctx, filepath.Join(t.TempDir(), "never"), 10*time.Millisecond); err == nil {
		t.Errorf("AwaitOutcome without an outcome = %+v", o)
	}
}
