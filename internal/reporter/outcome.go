package reporter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// maxOutcomeBytes caps the outcome file: an exit code and a termination message (at most 4 KiB).
const maxOutcomeBytes = 8 << 10

// Outcome is how the reporter's publication ended: the exit code of jobcontract's reporter exit
// codes (0: published) and a message. The reporter, a sidecar the kubelet restarts but never
// lets decide the pod's phase, writes it to jobcontract.OutcomeFile; the publication container
// exits with it, so the pod, the Job and the Run's Classify see it.
type Outcome struct {
	ExitCode int    `json:"exitCode"`
	Message  string `json:"message"`
}

// WriteOutcome writes o to path atomically (a reader never sees a partial file).
func WriteOutcome(path string, o Outcome) error {
	data, err := json.Marshal(o)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("writing the outcome: %w", err)
	}
	defer os.Remove(tmp.Name()) // fails harmlessly once renamed
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("writing the outcome: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing the outcome: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing the outcome: %w", err)
	}
	return nil
}

// ReadOutcome reads the outcome at path; nil without error when none was written yet.
func ReadOutcome(path string) (*Outcome, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(f, maxOutcomeBytes+1)); err != nil {
		return nil, fmt.Errorf("reading the outcome %s: %w", path, err)
	}
	if buf.Len() > maxOutcomeBytes {
		return nil, fmt.Errorf("the outcome %s is over %d bytes", path, maxOutcomeBytes)
	}
	var o Outcome
	dec := json.NewDecoder(&buf)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		return nil, fmt.Errorf("the outcome %s: %w", path, err)
	}
	return &o, nil
}

// AwaitOutcome reads path every interval until an outcome is there, or ctx ends.
func AwaitOutcome(ctx context.Context, path string, interval time.Duration) (*Outcome, error) {
	for {
		o, err := ReadOutcome(path)
		if err != nil || o != nil {
			return o, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(interval):
		}
	}
}
