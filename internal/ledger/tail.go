// Package ledger follows a search's events ledger while the search runs: AISimulate's live
// ledger in the search's tmp, then the copy in the output directory, under the output caps. What
// the ledger says is tallied by candidates.Tally; the reporter publishes it.
package ledger

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/internal/candidates"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/internal/searchoutput"
)

// Where the ledger is (output.Event has the format). The ledger AISimulate documents is
// <output-dir>/execution-events.jsonl, and it is final: AISimulate's supervisor
// (aisimulate/supervision.py, run_process) has the search's worker append the ledger to
// $TMPDIR/aisimulate-monitor-XXXX/events.jsonl, a temporary directory of its own, and copies the
// complete lines of that file into the output directory only after the workers stopped, then
// deletes the temporary directory. While the search runs, the only live ledger is that working
// file of the supervisor: the Job mounts the search container's /tmp read-only into the reporter
// (jobcontract.SearchTmpDir), and the tail follows the monitor's ledger while it exists, then the
// output directory's copy. aisim writes the output directory's copy live and has no monitor.
//
// Both copies hold the same bytes: the copy is line for line, up to the first incomplete line.
// When the monitor's ledger disappears the tail checks that the output copy starts with exactly
// the bytes it applied (a SHA-256 of them) and goes on reading it after them, so no line is
// applied twice and progress never goes backwards. An output copy that does not (a search that
// wrote something else, a ledger rewritten) is read again from its start, with the progress
// already shown kept as a floor: each count is the larger of the floor and what the new copy
// says, so progress still never goes backwards and no candidate is counted twice (the counts of
// one copy are never added to those of another).
//
// Both are untrusted output (docs/operate/security.md): the monitor directory must be a real directory
// and its ledger a regular file, each opened without following a symbolic link (openat with
// O_NOFOLLOW, relative to the opened directory, so nothing can be swapped in between), under the
// same caps as the output copy. A monitor directory named otherwise than AISimulate names it, or
// more than one, is not followed.

// The monitor's ledger.
const (
	// monitorLedger is the ledger's name inside the monitor directory.
	monitorLedger = "events.jsonl"
	// maxTmpEntries bounds the entries of the search's tmp read, per poll, to find the monitor.
	maxTmpEntries = 4096
)

// monitorName matches the name of AISimulate's monitor directory: tempfile.TemporaryDirectory
// with prefix "aisimulate-monitor-" and a random suffix of 8 characters from [a-z0-9_].
var monitorName = regexp.MustCompile(`^aisimulate-monitor-[A-Za-z0-9_]{1,64}$`)

// Tail follows the ledger incrementally: it remembers how far it has read and keeps an
// incomplete last line (a writer still appending) until its newline arrives.
type Tail struct {
	// path is the output directory's ledger; tmpDir is where the search's tmp is mounted ("":
	// no monitor is followed).
	path   string
	tmpDir string

	// monitor is the monitor directory followed ("" before one was found). final is set once
	// the output copy is followed; verify while the output copy has yet to be checked against
	// the bytes applied from the monitor's.
	monitor string
	final   bool
	verify  bool

	// offset is how far the followed copy was read, applied the bytes of its complete lines
	// (offset - len(partial)) and digest their SHA-256.
	offset  int64
	partial []byte
	applied int64
	digest  hash.Hash

	tally candidates.Tally
	// rejected is the searchoutput.RejectedError that stopped reading, if any.
	rejected error
}

// NewTail follows the ledger of the output directory outputDir, and the live one in the search's
// tmp mounted at tmpDir ("": none), keeping the best candidates settled so far as best says.
func NewTail(outputDir, tmpDir string, best candidates.BestSoFar) *Tail {
	return &Tail{path: filepath.Join(outputDir, output.EventsFile), tmpDir: tmpDir, digest: sha256.New(),
		tally: candidates.Tally{Best: best}}
}

// Tally is what the ledger said so far.
func (t *Tail) Tally() *candidates.Tally { return &t.tally }

// Rejected tells whether the ledger broke the output contract (Poll then returns the
// searchoutput.RejectedError again, and reads nothing more).
func (t *Tail) Rejected() bool { return t.rejected != nil }

// Poll reads whatever was appended since the last call into the tally.
// A missing ledger is not an error (the search has not started writing yet); an output copy that
// shrank (rewritten) is read again from the start. The ledger is read in chunks through the
// output caps: a symbolic link or a file that is not a regular file, a ledger larger than
// searchoutput.MaxEventsBytes or a line longer than searchoutput.MaxEventLineBytes is an
// searchoutput.RejectedError, and memory stays bounded by one line and one chunk.
func (t *Tail) Poll() error {
	if t.rejected != nil {
		return t.rejected
	}
	err := t.read()
	if searchoutput.IsRejected(err) {
		t.rejected = err
		t.partial = nil
	}
	return err
}

func (t *Tail) read() error {
	if !t.final {
		if done, err := t.readMonitor(); done || err != nil {
			return err
		}
	}
	return t.readOutput()
}

// readMonitor reads the monitor's ledger while it exists. It returns false when the output copy
// is to be read instead: the monitor followed is gone, or there never was one and the output copy
// exists (aisim, or a reporter that started after the search).
func (t *Tail) readMonitor() (bool, error) {
	if t.tmpDir != "" {
		f, st, name, err := openMonitor(t.tmpDir, t.monitor)
		switch {
		case searchoutput.IsRejected(err):
			return false, err
		case err != nil && t.monitor != "":
			return true, nil // the monitor followed could not be opened now: next poll
		case err == nil && f != nil:
			defer f.Close()
			t.monitor = name
			return true, t.readFile(f, st, monitorFile(name))
		}
		// Any other error reads as no monitor (the live ledger only feeds progress; the output
		// copy is the record).
	}
	if t.monitor != "" {
		// Gone: AISimulate deletes it once its complete lines are in the output copy.
		t.final, t.verify = true, true
		return false, nil
	}
	if _, err := os.Lstat(t.path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return true, nil // nothing written yet
		}
		return false, err
	}
	t.final = true
	return false, nil
}

// readOutput reads the output directory's copy.
func (t *Tail) readOutput() error {
	f, st, err := searchoutput.OpenRegular(t.path, output.EventsFile)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	defer f.Close()
	switch {
	case t.verify:
		t.verify = false
		same, err := t.samePrefix(f, st)
		if err != nil {
			return err
		}
		if !same {
			t.restart()
			break
		}
		// The monitor's incomplete last line, if any, was not copied.
		t.offset, t.partial = t.applied, nil
	case st.Size() < t.offset:
		t.restart()
	}
	return t.readFile(f, st, output.EventsFile)
}

// samePrefix tells whether the output copy starts with the bytes applied from the monitor's.
func (t *Tail) samePrefix(f *os.File, st os.FileInfo) (bool, error) {
	if st.Size() < t.applied {
		return false, nil
	}
	h := sha256.New()
	if _, err := io.CopyN(h, f, t.applied); err != nil {
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		return false, err
	}
	return bytes.Equal(h.Sum(nil), t.digest.Sum(nil)), nil
}

// restart reads the output copy again from its start, keeping the progress shown as a floor.
func (t *Tail) restart() {
	t.tally.Restart()
	t.offset, t.partial, t.applied, t.digest = 0, nil, 0, sha256.New()
}

// readFile reads f (the followed copy, named name in messages) from the offset on.
func (t *Tail) readFile(f *os.File, st os.FileInfo, name string) error {
	if st.Size() > searchoutput.MaxEventsBytes {
		return &searchoutput.RejectedError{File: name, Problem: fmt.Sprintf(
			"is %d bytes, over the reporter's cap of %s", st.Size(), searchoutput.FormatCap(searchoutput.MaxEventsBytes))}
	}
	if st.Size() < t.offset {
		return nil // a monitor's ledger only grows; nothing new
	}
	if _, err := f.Seek(t.offset, io.SeekStart); err != nil {
		return err
	}
	// One byte past the cap tells a ledger that grew over it while it was read.
	in := io.LimitReader(f, searchoutput.MaxEventsBytes+1-t.offset)
	buf := make([]byte, eventsChunk)
	for {
		n, rerr := in.Read(buf)
		if n > 0 {
			t.offset += int64(n)
			if t.offset > searchoutput.MaxEventsBytes {
				return &searchoutput.RejectedError{File: name, Problem: fmt.Sprintf(
					"grew over the reporter's cap of %s", searchoutput.FormatCap(searchoutput.MaxEventsBytes))}
			}
			if err := t.consume(buf[:n], name); err != nil {
				return err
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// eventsChunk is how much of the ledger is read at once.
const eventsChunk = 64 << 10

// consume applies the complete lines of data (after what was left of the previous chunk) and
// keeps an incomplete last line for the next call.
func (t *Tail) consume(data []byte, name string) error {
	tooLong := &searchoutput.RejectedError{File: name, Problem: fmt.Sprintf(
		"has a line longer than the reporter's cap of %s", searchoutput.FormatCap(searchoutput.MaxEventLineBytes))}
	data = append(t.partial, data...)
	cut := bytes.LastIndexByte(data, '\n')
	if cut < 0 {
		if int64(len(data)) > searchoutput.MaxEventLineBytes {
			return tooLong
		}
		t.partial = data
		return nil
	}
	complete := data[:cut+1]
	for line := range bytes.Lines(complete) {
		if int64(len(line)) > searchoutput.MaxEventLineBytes {
			return tooLong
		}
	}
	rest := data[cut+1:]
	if int64(len(rest)) > searchoutput.MaxEventLineBytes {
		return tooLong
	}
	t.partial = append([]byte(nil), rest...)
	events, err := output.ReadEvents(bytes.NewReader(complete))
	if err != nil {
		return err
	}
	t.applied += int64(len(complete))
	t.digest.Write(complete)
	for _, e := range events {
		t.tally.Apply(e)
	}
	return nil
}

// monitorFile names a monitor's ledger in messages, as the search sees it.
func monitorFile(name string) string {
	return path.Join(jobcontract.TmpDir, name, monitorLedger)
}

// openMonitor opens the ledger of the monitor directory want in the search's tmp, or, when want
// is "", of the one directory there named like AISimulate's monitor. It returns a nil file when
// there is none (yet, or any more), or more than one to choose from.
func openMonitor(tmpDir, want string) (*os.File, os.FileInfo, string, error) {
	dir, err := os.Open(tmpDir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil, "", nil
		}
		return nil, nil, "", err
	}
	defer dir.Close()
	name := want
	if name == "" {
		if name, err = findMonitor(dir); err != nil || name == "" {
			return nil, nil, "", err
		}
	}
	f, st, err := searchoutput.OpenRegularAt(dir, name, monitorLedger, monitorFile(name))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil, "", nil
		}
		return nil, nil, "", err
	}
	return f, st, name, nil
}

// findMonitor returns the name of the one entry of dir named like AISimulate's monitor
// directory ("" when there is none, more than one, or dir has more than maxTmpEntries entries).
func findMonitor(dir *os.File) (string, error) {
	var found string
	for seen := 0; seen < maxTmpEntries; {
		names, err := dir.Readdirnames(256)
		for _, n := range names {
			if monitorName.MatchString(n) {
				if found != "" {
					return "", nil
				}
				found = n
			}
		}
		seen += len(names)
		if errors.Is(err, io.EOF) {
			return found, nil
		}
		if err != nil {
			return "", err
		}
	}
	return "", nil
}

// OpenLive opens the monitor's ledger the tail follows (a search stopped before AISimulate
// copied its ledger into the output directory has only that one); os.ErrNotExist when it follows
// none.
func (t *Tail) OpenLive() (*os.File, os.FileInfo, error) {
	if t.final || t.monitor == "" {
		return nil, nil, os.ErrNotExist
	}
	f, st, _, err := openMonitor(t.tmpDir, t.monitor)
	if err == nil && f == nil {
		err = os.ErrNotExist
	}
	return f, st, err
}
