package searchinput

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/internal/requesttrace"
)

// MaxWindowSummaryBytes caps the window summary: the kubelet's cap on a termination message,
// which carries it to the operator.
const MaxWindowSummaryBytes = 4096

// TraceWindow is a window of a capture for the search to replay: the input init container cuts
// it before it writes the input.
type TraceWindow struct {
	// Source is where the capture claim is mounted, and Directory the request's directory of it
	// (its UID): one directory per Frontend pod. Nothing outside Directory is read or deleted.
	Source, Directory string
	Window            requesttrace.Window
	// Limits bound the window (requesttrace's defaults when zero).
	Limits requesttrace.Limits
	// Out is the window file to write.
	Out string
	// MinRequests is the fewest requests a window needs for the search to run.
	MinRequests int
	// Prune deletes, after the cut, the complete segments all of whose requests arrived before
	// Window.StaleBefore (spec.deployment.capture.rotation.maxAgeHours).
	Prune bool
	// SHA256, when set ("sha256:<hex>"), is the hash the window must have: the baseline Job cuts
	// the window again and replays it only when it is the one the search replayed.
	SHA256 string
}

// WindowMismatchError is a window cut again that is not the one the search replayed.
type WindowMismatchError struct {
	// Got and Want are "sha256:<hex>".
	Got, Want string
}

func (e *WindowMismatchError) Error() string {
	return fmt.Sprintf("the trace window cut again hashes to %s, not to %s, the hash of the window the search replayed", e.Got, e.Want)
}

// ExitCode is the input container's exit code for it.
func (e *WindowMismatchError) ExitCode() int { return jobcontract.InputExitWindowMismatch }

// InsufficientTrafficError is a window with fewer requests than the search needs.
type InsufficientTrafficError struct {
	Requests, MinRequests int
}

func (e *InsufficientTrafficError) Error() string {
	return fmt.Sprintf("the trace window holds %d request(s), fewer than the %d required", e.Requests, e.MinRequests)
}

// ExitCode is the input container's exit code for it.
func (e *InsufficientTrafficError) ExitCode() int { return jobcontract.InputExitInsufficientTraffic }

// WindowRejectedError is a window that cannot be cut: over one of its bounds
// (*requesttrace.WindowTooLargeError) or holding a malformed request
// (*requesttrace.MalformedRecordError). Nothing was written.
type WindowRejectedError struct {
	Err error
}

func (e *WindowRejectedError) Error() string { return "the trace window is rejected: " + e.Err.Error() }

func (e *WindowRejectedError) Unwrap() error { return e.Err }

// ExitCode is the input container's exit code for it, which names the cause.
func (e *WindowRejectedError) ExitCode() int {
	var tooLarge *requesttrace.WindowTooLargeError
	if errors.As(e.Err, &tooLarge) {
		return jobcontract.InputExitWindowTooLarge
	}
	return jobcontract.InputExitWindowMalformed
}

// Cut writes the window file (atomically, so the search never reads a partial one) and returns
// its summary. A window that does not hash to SHA256 returns a *WindowMismatchError. With fewer
// than MinRequests requests it still writes both, and returns an *InsufficientTrafficError with
// the summary.
func (tw TraceWindow) Cut() (requesttrace.WindowSummary, error) {
	var sum requesttrace.WindowSummary
	// A missing claim mount is an error; a missing directory of the request's is a claim no
	// Frontend pod of the request wrote to yet: an empty capture.
	if fi, err := os.Stat(tw.Source); err != nil {
		return sum, fmt.Errorf("the capture: %w", err)
	} else if !fi.IsDir() {
		return sum, fmt.Errorf("the capture %s is not a directory", tw.Source)
	}
	capture, err := requesttrace.OpenCapture(tw.Source, tw.Directory)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		capture = nil
	case err != nil:
		return sum, fmt.Errorf("the capture %s: %w", filepath.Join(tw.Source, tw.Directory), err)
	default:
		defer capture.Close()
	}
	err = writeFileAtomic(tw.Out, 0o444, func(w io.Writer) error {
		var err error
		sum, err = requesttrace.CutWindow(capture, tw.Window, tw.Limits, w)
		return err
	})
	var tooLarge *requesttrace.WindowTooLargeError
	var malformed *requesttrace.MalformedRecordError
	if errors.As(err, &tooLarge) || errors.As(err, &malformed) {
		return sum, &WindowRejectedError{Err: err}
	}
	if err != nil {
		return sum, fmt.Errorf("cutting the trace window of the capture %s: %w", filepath.Join(tw.Source, tw.Directory), err)
	}
	if tw.Prune && capture != nil {
		for _, name := range sum.Stale {
			// The segment was read as a regular file of a pod directory of the request's; Remove
			// of os.Root deletes the name, never what a link points to.
			if err := capture.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return sum, fmt.Errorf("deleting the stale segment %s: %w", name, err)
			}
			sum.PrunedSegments++
		}
	}
	if got := "sha256:" + sum.SHA256; tw.SHA256 != "" && got != tw.SHA256 {
		return sum, &WindowMismatchError{Got: got, Want: tw.SHA256}
	}
	if sum.Requests < tw.MinRequests {
		return sum, &InsufficientTrafficError{Requests: sum.Requests, MinRequests: tw.MinRequests}
	}
	return sum, nil
}

// SummaryMessage is the window's summary as the input container's termination message: compact
// JSON, at most MaxWindowSummaryBytes.
func SummaryMessage(sum requesttrace.WindowSummary) ([]byte, error) {
	msg, err := json.Marshal(sum)
	if err != nil {
		return nil, err
	}
	if len(msg) > MaxWindowSummaryBytes {
		return nil, fmt.Errorf("the window summary is %d bytes, over the %d of a termination message", len(msg), MaxWindowSummaryBytes)
	}
	return msg, nil
}
