// Package searchinput is the input init container of a search Job and of a re-search's baseline
// Job (`dgdr-operator report --write-input`): it writes the effective input the Run recorded,
// checked against the hash the operator put on the Job, for the search to read, or the baseline
// prediction input the same way for the baseline container; for a re-search it first cuts the
// window of a capture that the search replays, and the baseline Job cuts it again, checked
// against the hash of the search's cut.
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

// errNoInputYet marks a Run whose status.aisimulate.input (or, for the baseline Job,
// status.aisimulate.baseline) is not recorded yet.
var errNoInputYet = errors.New("status.aisimulate.input is not recorded yet")

// errNoBaselineYet marks a Run whose status.aisimulate.baseline is not recorded yet.
var errNoBaselineYet = fmt.Errorf("%w: status.aisimulate.baseline is not recorded yet", errNoInputYet)

// Writer writes a Run's recorded effective input for the search, or its baseline input for
// the baseline (the input init container, `dgdr-operator report --write-input`).
type Writer struct {
	// Client is a direct (uncached) client with the v1beta2 types in its scheme.
	Client    client.Client
	Namespace string
	RunName   string
	// Dir receives jobcontract.InputFile or jobcontract.BaselineInputFile.
	Dir string
	// ExpectedHash is the input hash the operator recorded on the search Job when it created
	// it (jobcontract.EnvInputHash): the recorded input must hash to it, and is written to
	// Dir/jobcontract.InputFile.
	ExpectedHash string
	// ExpectedBaselineHash is the baseline input hash the operator recorded on the baseline Job
	// (jobcontract.EnvBaselineInputHash): the Run's status.aisimulate.baseline.input must hash
	// to it, and is written to Dir/jobcontract.BaselineInputFile. Exactly one of the two hashes
	// is set: a pod runs either the search or the baseline.
	ExpectedBaselineHash string
	// WaitTimeout bounds the wait for the input to be recorded (default DefaultWaitTimeout);
	// PollInterval spaces the reads meanwhile (default DefaultPollInterval).
	WaitTimeout  time.Duration
	PollInterval time.Duration
	// APIRetryTimeout bounds the retries of reads that fail transiently (default 3 min).
	APIRetryTimeout time.Duration
	Log             logr.Logger
}

// Write reads the Run until the input its hash names is recorded, checks it against that hash
// and the one recorded beside it, and writes it as YAML (the search's input or the baseline's).
// It returns the input's hash.
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
	switch {
	case w.ExpectedHash == "" && w.ExpectedBaselineHash == "":
		return "", errors.New("the expected input hash is required ($" + jobcontract.EnvInputHash + ", from the search Job's " + v1beta2.AnnotationInputHash +
			" annotation, or $" + jobcontract.EnvBaselineInputHash + ", from the baseline Job's " + v1beta2.AnnotationBaselineInputHash + " annotation)")
	case w.ExpectedHash != "" && w.ExpectedBaselineHash != "":
		return "", errors.New("$" + jobcontract.EnvInputHash + " and $" + jobcontract.EnvBaselineInputHash + " are both set: a pod runs the search or the baseline, not both")
	}
	name := jobcontract.InputFile
	if w.ExpectedBaselineHash != "" {
		name = jobcontract.BaselineInputFile
	}
	deadline := time.Now().Add(w.WaitTimeout)
	for {
		in, err := w.read(ctx)
		if err == nil {
			return in.Hash, w.writeFile(in, name)
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

// read returns the Run's recorded input (or baseline input) once it is there and matches its
// hashes.
func (w *Writer) read(ctx context.Context) (*aisimulate.Input, error) {
	var run v1beta2.DynamoGraphDeploymentRun
	err := apiretry.Do(ctx, w.APIRetryTimeout, func(err error) {
		w.Log.Info("transient API error; retrying", "what", "getting the Run", "error", err.Error())
	}, func() error {
		return w.Client.Get(ctx, types.NamespacedName{Namespace: w.Namespace, Name: w.RunName}, &run)
	})
	if err != nil {
		return nil, fmt.Errorf("getting Run %s/%s: %w", w.Namespace, w.RunName, err)
	}
	a := run.Status.AISimulate
	if w.ExpectedBaselineHash != "" {
		if a == nil {
			return nil, errNoBaselineYet
		}
		return w.checkBaseline(a.Baseline)
	}
	if a == nil || a.Input == nil || len(a.Input.Raw) == 0 {
		return nil, errNoInputYet
	}
	in, err := aisimulate.Canonicalize(a.Input.Raw)
	if err != nil {
		return nil, fmt.Errorf("the Run %s/%s: status.aisimulate.input is not a JSON object: %w", w.Namespace, w.RunName, err)
	}
	// The hash the operator wrote on the Job (the pod's annotation) is what the Run promises is
	// searched; a mismatch means the recorded input was altered after the operator wrote it,
	// and the search must not run on it. status.aisimulate.inputHash is in the same status the
	// input is, so it proves nothing by itself.
	if in.Hash != w.ExpectedHash {
		return nil, fmt.Errorf("the Run %s/%s: status.aisimulate.input hashes to %s, but the operator recorded %q on the search Job (%s)",
			w.Namespace, w.RunName, in.Hash, w.ExpectedHash, v1beta2.AnnotationInputHash)
	}
	if in.Hash != a.InputHash {
		return nil, fmt.Errorf("the Run %s/%s: status.aisimulate.input hashes to %s, but status.aisimulate.inputHash is %q",
			w.Namespace, w.RunName, in.Hash, a.InputHash)
	}
	return in, nil
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
		return nil, fmt.Errorf("the Run %s/%s: status.aisimulate.baseline.input hashes to %s, but the operator recorded %q on the baseline Job (%s)",
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
