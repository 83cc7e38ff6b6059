package reporter

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
)

// tail follows execution-events.jsonl incrementally: it remembers how far it has read and keeps
// an incomplete last line (a writer still appending) until its newline arrives.
type tail struct {
	path    string
	offset  int64
	partial []byte
	state   progressState
}

// progressState accumulates what the events say so far.
type progressState struct {
	budget   int64
	settled  int64
	counts   map[string]int64
	finished *output.Counts // counts of search_finished, when seen
}

func newTail(dir string) *tail {
	return &tail{path: filepath.Join(dir, output.EventsFile), state: progressState{counts: map[string]int64{}}}
}

// poll reads whatever was appended since the last call into the progress state.
// A missing file is not an error (the search has not started writing yet); a file that shrank
// (rewritten) is read again from the start.
func (t *tail) poll() error {
	f, err := os.Open(t.path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() < t.offset {
		t.offset, t.partial = 0, nil
		t.state = progressState{counts: map[string]int64{}}
	}
	if _, err := f.Seek(t.offset, io.SeekStart); err != nil {
		return err
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	t.offset += int64(len(data))
	data = append(t.partial, data...)
	cut := bytes.LastIndexByte(data, '\n')
	if cut < 0 {
		t.partial = data
		return nil
	}
	complete := data[:cut+1]
	t.partial = append([]byte(nil), data[cut+1:]...)
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
