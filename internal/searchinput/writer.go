// Package searchinput is the input init container of a search Job (`dgdr-operator report
// --write-input`): it writes the effective input the Run recorded, checked against the hash the
// operator put on the Job, for the search to read, and a re-search's baseline prediction input
// the same way for the baseline container; for a re-search it first cuts the window of a capture
// that the search replays.
package searchinput

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/apiretry"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
)

// DefaultWaitTimeout bounds how long the input init container waits for the Run to record
// its input. The Run controller creates the Job in the reconcile that lowers the input and writes
// status.aisimulate right after, so a pod that starts quickly may read the Run before that write.
const DefaultWaitTimeout = 3 * time.Minute

// DefaultPollInterval spaces the reads of the Run while its input is not recorded yet.
const DefaultPollInterval = time.Second

// errNoInputYet marks a Run whose status.aisimulate.input (or, when the Job expects one,
// status.aisimulate.baseline) is not recorded yet.
var errNoInputYet = errors.New("status.aisimulate.input is not recorded yet")

// errNoBaselineYet marks a Run whose status.aisimulate.baseline is not recorded yet although
// the search Job has a baseline container.
var errNoBaselineYet = fmt.Errorf("%w: status.aisimulate.baseline is not recorded yet", errNoInputYet)

// Writer writes a Run's recorded effective input for the search (the input init container
// of the search Job, `dgdr-operator report --write-input`).
type Writer struct {
	// Client is a direct (uncached) client with the v1beta2 types in its scheme.
	Client    client.Client
	Namespace string
	RunName   string
	// Dir receives jobcontract.InputFile.
	Dir string
	// ExpectedHash is the input hash the operator recorded on the Job when it created it
	// (jobcontract.EnvInputHash). Required: the recorded input must hash to it.
	ExpectedHash string
	// ExpectedBaselineHash is the baseline input hash the operator recorded on the Job
	// (jobcontract.EnvBaselineInputHash), set only when the Job has a baseline container: the
	// Run's status.aisimulate.baseline.input must then hash to it, and is written to
	// Dir/jobcontract.BaselineInputFile. Empty: no baseline is written.
	ExpectedBaselineHash string
	// WaitTimeout bounds the wait for the input to be recorded (default DefaultWaitTimeout);
	// PollInterval spaces the reads meanwhile (default DefaultPollInterval).
	WaitTimeout  time.Duration
	PollInterval time.Duration
	// APIRetryTimeout bounds the retries of reads that fail transiently (default 3 min).
	APIRetryTimeout time.Duration
	Log             logr.Logger
}

// Write reads the Run until its input is recorded, checks the input against
// status.aisimulate.inputHash and writes it as YAML to Dir/jobcontract.InputFile, and the
// baseline input likewise when ExpectedBaselineHash is set. It returns the input's hash.
func (w *Writer) Write(ctx context.Context) (string, error) {
	if w.WaitTimeout <= 0 {
		w.WaitTimeout = DefaultWaitTimeout
	}
	if w.PollInterval <= 0 {
		w.PollInterval = DefaultPollInterval
	}
	if w.APIRetryTimeout <= 0 {
		w.APIRetryTimeout = apiretry.DefaultTimeout
	}
	if w.Log.GetSink() == nil {
		w.Log = logr.Discard()
	}
	if w.ExpectedHash == "" {
		return "", errors.New("the expected input hash is required ($" + jobcontract.EnvInputHash + ", from the search Job's " + v1beta2.AnnotationInputHash + " annotation)")
	}
	deadline := time.Now().Add(w.WaitTimeout)
	for {
		in, baseline, err := w.read(ctx)
		if err == nil {
			// The baseline first: the search's input file is the last one written.
			if baseline != nil {
				if err := w.writeFile(baseline, jobcontract.BaselineInputFile); err != nil {
					return "", err
				}
			}
			return in.Hash, w.writeFile(in, jobcontract.InputFile)
		}
		if !errors.Is(err, errNoInputYet) {
			return "", err
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("the Run %s/%s: %w after %s", w.Namespace, w.RunName, err, w.WaitTimeout)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(w.PollInterval):
		}
	}
}

// read returns the Run's recorded input once it is there and matches its hash, and its
// baseline input when the Job expects one.
func (w *Writer) read(ctx context.Context) (*aisimulate.Input, *aisimulate.Input, error) {
	var run v1beta2.DynamoGraphDeploymentRun
	err := apiretry.Do(ctx, w.APIRetryTimeout, func(err error) {
		w.Log.Info("transient API error; retrying", "what", "getting the Run", "error", err.Error())
	}, func() error {
		return w.Client.Get(ctx, types.NamespacedName{Namespace: w.Namespace, Name: w.RunName}, &run)
	})
	if err != nil {
		return nil, nil, fmt.Errorf("getting Run %s/%s: %w", w.Namespace, w.RunName, err)
	}
	a := run.Status.AISimulate
	if a == nil || a.Input == nil || len(a.Input.Raw) == 0 {
		return nil, nil, errNoInputYet
	}
	in, err := aisimulate.Canonicalize(a.Input.Raw)
	if err != nil {
		return nil, nil, fmt.Errorf("the Run %s/%s: status.aisimulate.input is not a JSON object: %w", w.Namespace, w.RunName, err)
	}
	// The hash the operator wrote on the Job (the pod's annotation) is what the Run promises is
	// searched; a mismatch means the recorded input was altered after the operator wrote it,
	// and the search must not run on it. status.aisimulate.inputHash is in the same status the
	// input is, so it proves nothing by itself.
	if in.Hash != w.ExpectedHash {
		return nil, nil, fmt.Errorf("the Run %s/%s: status.aisimulate.input hashes to %s, but the operator recorded %q on the search Job (%s)",
			w.Namespace, w.RunName, in.Hash, w.ExpectedHash, v1beta2.AnnotationInputHash)
	}
	if in.Hash != a.InputHash {
		return nil, nil, fmt.Errorf("the Run %s/%s: status.aisimulate.input hashes to %s, but status.aisimulate.inputHash is %q",
			w.Namespace, w.RunName, in.Hash, a.InputHash)
	}
	if w.ExpectedBaselineHash == "" {
		return in, nil, nil
	}
	baseline, err := w.checkBaseline(a.Baseline)
	if err != nil {
		return nil, nil, err
	}
	return in, baseline, nil
}

// checkBaseline returns the recorded baseline input once it is there and matches the hash on the
// Job, as read checks the search's input: what the baseline predicts is the operator's.
func (w *Writer) checkBaseline(b *v1beta2.BaselineInputStatus) (*aisimulate.Input, error) {
	if b == nil || b.Input == nil || len(b.Input.Raw) == 0 {
		return nil, errNoBaselineYet
	}
	in, err := aisimulate.Canonicalize(b.Input.Raw)
	if err != nil {
		return nil, fmt.Errorf("the Run %s/%s: status.aisimulate.baseline.input is not a JSON object: %w", w.Namespace, w.RunName, err)
	}
	if in.Hash != w.ExpectedBaselineHash {
		return nil, fmt.Errorf("the Run %s/%s: status.aisimulate.baseline.input hashes to %s, but the operator recorded %q on the search Job (%s)",
			w.Namespace, w.RunName, in.Hash, w.ExpectedBaselineHash, v1beta2.AnnotationBaselineInputHash)
	}
	if in.Hash != b.InputHash {
		return nil, fmt.Errorf("the Run %s/%s: status.aisimulate.baseline.input hashes to %s, but status.aisimulate.baseline.inputHash is %q",
			w.Namespace, w.RunName, in.Hash, b.InputHash)
	}
	return in, nil
}

// writeFile writes the YAML atomically, so the search never sees a partial file.
func (w *Writer) writeFile(in *aisimulate.Input, name string) error {
	doc, err := in.YAML()
	if err != nil {
		return fmt.Errorf("rendering %s as YAML: %w", name, err)
	}
	return writeFileAtomic(filepath.Join(w.Dir, name), 0o444, func(f io.Writer) error {
		_, err := f.Write(doc)
		return err
	})
}

// writeFileAtomic writes a file of mode through write into a temporary file of its directory,
// then renames it into place.
func writeFileAtomic(path string, mode os.FileMode, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // fails harmlessly once renamed
	if err := write(tmp); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
