package main

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/internal/testing/capture"
)

// asInputContainer makes the test binary, started again with it set, the input container's
// process (main with the arguments it is given), so that a test measures that process alone.
const asInputContainer = "DGDR_TEST_AS_INPUT_CONTAINER"

func init() {
	if os.Getenv(asInputContainer) == "1" {
		main()
		os.Exit(0)
	}
}

// The bounds of the hostile-capture attack: the chart's default memory limit of the reporter
// image's containers (values.yaml reporter.resources.limits.memory), which the input container
// runs under, and how long the cut may take.
const (
	inputContainerMemoryLimit = 256 << 20
	hostileCutDeadline        = 4 * time.Minute
)

// TestHostileCaptureEndsWithANamedReason is the attack on a re-search's input container from
// the side of an end user E of the served model (who decides what the Frontend records: long
// prompts make long records) and a tenant T (who may write the capture claim): the request's
// directory of the claim holds about 300 MB of in-window records (uncompressed) from four
// Frontend pods, a FIFO named like a segment, a pod directory that is a symbolic link to another
// request's directory and a malformed line outside the window. The input container, run as its
// own process with the arguments the Run controller gives it, ends within minutes with exit code
// InputExitWindowTooLarge and a termination message naming the bound, and its peak resident
// memory (the kernel's ru_maxrss of the process, from wait4) stays far below the memory limit it
// runs under: no OOM kill. Holding the window took 2.4 times its size; a FIFO blocked the open
// until the Job's deadline; one malformed line failed every cut.
func TestHostileCaptureEndsWithANamedReason(t *testing.T) {
	if testing.Short() {
		t.Skip("writes about 300 MB of records")
	}
	claim := t.TempDir()
	const request, other = "6b1d0c52-0000-4000-8000-0000000000e1", "6b1d0c52-0000-4000-8000-0000000000e2"
	start := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	inWindow := writeLongRecords(t, filepath.Join(claim, request), start, 4, 300<<20)
	t.Logf("the request's directory holds %d MiB of in-window records", inWindow>>20)

	pod := filepath.Join(claim, request, "fe-0")
	if err := syscall.Mkfifo(filepath.Join(pod, "request-trace.000090.jsonl.gz"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeLongRecords(t, filepath.Join(claim, other), start, 1, 1<<20)
	if err := os.Symlink(filepath.Join(claim, other, "fe-0"), filepath.Join(claim, request, "fe-linked")); err != nil {
		t.Fatal(err)
	}
	bad := start.Add(-time.Hour).UnixMilli()
	writeSegment(t, filepath.Join(pod, "request-trace.000091.jsonl.gz"),
		fmt.Sprintf(`{"schema": "dynamo.request.trace.v1", "event_type": "request_end", "event_time_unix_ms": %d, "request": {"request_received_ms": %d, "output_tokens": "many"}}`+"\n", bad+5, bad))

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	termFile, out := filepath.Join(t.TempDir(), "termination-log"), filepath.Join(t.TempDir(), jobcontract.TraceWindowFile)
	ctx, cancel := context.WithTimeout(context.Background(), hostileCutDeadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, append(append([]string(nil), jobcontract.InputArgs...),
		"--run-name", "run", "--namespace", "ns", "--input-dir", t.TempDir(), "--input-hash", "hash", "--termination-log", termFile,
		"--trace-window-source", claim, "--trace-window-directory", request,
		"--trace-window-start", start.Format(time.RFC3339), "--trace-window-end", start.Add(24*time.Hour).Format(time.RFC3339),
		"--trace-window-out", out)...)
	cmd.Env = append(os.Environ(), asInputContainer+"=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	began := time.Now()
	err = cmd.Run()
	took := time.Since(began)
	if ctx.Err() != nil {
		t.Fatalf("the input container did not end within %s (it blocks): %s", hostileCutDeadline, stderr.String())
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != jobcontract.InputExitWindowTooLarge {
		t.Fatalf("the input container exited with %v, want exit code %d (InputExitWindowTooLarge): %s", err, jobcontract.InputExitWindowTooLarge, stderr.String())
	}
	msg, err := os.ReadFile(termFile)
	if err != nil {
		t.Fatal(err)
	}
	if want := "bytes uncompressed, the most a window file may hold"; !strings.Contains(string(msg), want) {
		t.Errorf("termination message %q does not name the bound (%q)", msg, want)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused window was written: %v", err)
	}
	peak := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10 // KiB on Linux
	t.Logf("the input container ended in %s with a peak resident memory of %d MiB", took.Round(time.Second), peak>>20)
	if peak > inputContainerMemoryLimit/2 {
		t.Errorf("the input container's peak resident memory is %d MiB, more than half of its %d MiB limit: it holds the window",
			peak>>20, inputContainerMemoryLimit>>20)
	}
}

// writeLongRecords writes at least total bytes (uncompressed) of request_end records of long
// prompts arriving from start on, into complete segments of pods Frontend pod directories of
// dir, and returns how many bytes it wrote.
func writeLongRecords(t *testing.T, dir string, start time.Time, pods int, total int64) int64 {
	t.Helper()
	ids := capture.SequenceHashes(1000)
	const perSegment = 32 << 20
	var written int64
	for s := 0; written < total; s++ {
		for p := range pods {
			capture.WriteSegment(t, dir, p, s, func(w io.Writer) {
				for n := int64(0); n < perSegment/int64(pods); {
					k, err := capture.RequestEnd(w, start.UnixMilli()+written/1000+int64(p), 16000, ids)
					if err != nil {
						t.Fatal(err)
					}
					n += int64(k)
					written += int64(k)
				}
			})
		}
	}
	return written
}

// writeSegment writes lines as a complete segment at path.
func writeSegment(t *testing.T, path, lines string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	if _, err := zw.Write([]byte(lines)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
