package reporter

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
)

// tail follows execution-events.jsonl incrementally: it remembers how far it has read and keeps
// an incomplete last line (a writer still appending) until its newline arrives.
type tail struct {
	path    string
	offset  int64
	partial []byte
	state   progressState
	// rejected is the OutputRejectedError that stopped reading, if any.
	rejected error
}

// progressState accumulates what the events say so far.
type progressState struct {
	budget   int64
	settled  int64
	counts   map[string]int64
	finished *output.Counts // counts of search_finished, when seen
	// best holds the best feasible candidates settled so far (provisional publishing) and
	// reasons counts the others by reason category.
	best    bestSoFar
	reasons map[string]int64
}

func newTail(dir string) *tail {
	return &tail{path: filepath.Join(dir, output.EventsFile), state: progressState{counts: map[string]int64{}}}
}

// poll reads whatever was appended since the last call into the progress state.
// A missing file is not an error (the search has not started writing yet); a file that shrank
// (rewritten) is read again from the start. The ledger is read in chunks through the output
// caps: a symbolic link or a file that is not a regular file, a ledger larger than
// jobcontract.MaxEventsBytes or a line longer than jobcontract.MaxEventLineBytes is an
// OutputRejectedError, and memory stays bounded by one line and one chunk.
func (t *tail) poll() error {
	if t.rejected != nil {
		return t.rejected
	}
	err := t.read()
	if IsOutputRejected(err) {
		t.rejected = err
		t.partial = nil
	}
	return err
}

func (t *tail) read() error {
	f, st, err := openRegular(t.path, output.EventsFile)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	defer f.Close()
	if st.Size() < t.offset {
		t.offset, t.partial = 0, nil
		t.state = progressState{counts: map[string]int64{}, best: bestSoFar{limit: t.state.best.limit}}
	}
	if st.Size() > jobcontract.MaxEventsBytes {
		return &OutputRejectedError{File: output.EventsFile, Problem: fmt.Sprintf(
			"is %d bytes, over the reporter's cap of %s", st.Size(), mib(jobcontract.MaxEventsBytes))}
	}
	if _, err := f.Seek(t.offset, io.SeekStart); err != nil {
		return err
	}
	// One byte past the cap tells a ledger that grew over it while it was read.
	in := io.LimitReader(f, jobcontract.MaxEventsBytes+1-t.offset)
	buf := make([]byte, eventsChunk)
	for {
		n, rerr := in.Read(buf)
		if n > 0 {
			t.offset += int64(n)
			if t.offset > jobcontract.MaxEventsBytes {
				return &OutputRejectedError{File: output.EventsFile, Problem: fmt.Sprintf(
					"grew over the reporter's cap of %s", mib(jobcontract.MaxEventsBytes))}
			}
			if err := t.consume(buf[:n]); err != nil {
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
func (t *tail) consume(data []byte) error {
	data = append(t.partial, data...)
	cut := bytes.LastIndexByte(data, '\n')
	if cut < 0 {
		if int64(len(data)) > jobcontract.MaxEventLineBytes {
			return &OutputRejectedError{File: output.EventsFile, Problem: fmt.Sprintf(
				"has a line longer than the reporter's cap of %s", mib(jobcontract.MaxEventLineBytes))}
		}
		t.partial = data
		return nil
	}
	complete := data[:cut+1]
	for line := range bytes.Lines(complete) {
		if int64(len(line)) > jobcontract.MaxEventLineBytes {
			return &OutputRejectedError{File: output.EventsFile, Problem: fmt.Sprintf(
				"has a line longer than the reporter's cap of %s", mib(jobcontract.MaxEventLineBytes))}
		}
	}
	rest := data[cut+1:]
	if int64(len(rest)) > jobcontract.MaxEventLineBytes {
		return &OutputRejectedError{File: output.EventsFile, Problem: fmt.Sprintf(
			"has a line longer than the reporter's cap of %s", mib(jobcontract.MaxEventLineBytes))}
	}
	t.partial = append([]byte(nil), rest...)
	events, err := output.ReadEvents(bytes.NewReader(complete))
	if err != nil {
		return err
	}
	for _, e := range events {
		t.state.apply(e)
	}
	return nil
}

func (s *progressState) apply(e output.Event) {
	if e.Budget > 0 {
		s.budget = int64(e.Budget)
	}
	switch e.Event {
	case "candidate_settled":
		if int64(e.Settled) > s.settled {
			s.settled = int64(e.Settled)
		}
		s.counts[e.Status]++
		s.settle(e)
	case "search_finished":
		if e.Counts != nil {
			c := *e.Counts
			s.finished = &c
		}
		if int64(e.Settled) > s.settled {
			s.settled = int64(e.Settled)
		}
	}
}

// progress is the RunProgress the events imply (published is filled in by the publisher).
func (s *progressState) progress() v1beta2.RunProgress {
	p := v1beta2.RunProgress{
		Budget:      s.budget,
		Settled:     s.settled,
		Feasible:    s.counts[output.StatusFeasible],
		Infeasible:  s.counts[output.StatusInfeasible],
		Failed:      s.counts[output.StatusFailed],
		TimedOut:    s.counts[output.StatusTimedOut],
		Unsupported: s.counts[output.StatusUnsupported],
	}
	if s.finished != nil {
		p = withCounts(p, *s.finished)
	}
	return p
}

// withCounts overrides the outcome counts with the authoritative counts of the output.
func withCounts(p v1beta2.RunProgress, c output.Counts) v1beta2.RunProgress {
	p.Feasible = int64(c.Feasible)
	p.Infeasible = int64(c.Infeasible)
	p.Failed = int64(c.Failed)
	p.TimedOut = int64(c.TimedOut)
	p.Unsupported = int64(c.Unsupported)
	if settled := int64(c.Evaluated + c.Unsupported + c.ResourceLimited); settled > p.Settled {
		p.Settled = settled
	}
	return p
}
