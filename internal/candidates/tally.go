package candidates

import (
	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
)

// Tally accumulates what the events ledger says so far: the budget, the settled candidates by
// status, the best feasible ones (Best) and the others by reason category. A ledger read again
// from its start (Restart) never makes the progress go backwards.
type Tally struct {
	// Best holds the best feasible candidates settled so far (provisional publishing).
	Best BestSoFar
	// budget is requested_config's optimizer.max_trials; settled counts candidate_completed
	// events, counts them by status (the statuses RunProgress has).
	budget  int64
	settled int64
	counts  map[string]int64
	// reasons counts the not-feasible candidates by reason category.
	reasons map[string]int64
	// floor and floorReasons are what an abandoned read of the ledger showed; progress never
	// goes below them.
	floor        v1beta2.RunProgress
	floorReasons map[string]int64
}

// Apply records one ledger event.
func (s *Tally) Apply(e output.Event) {
	switch e.Event {
	case output.EventRequestedConfig:
		if n, ok := e.MaxTrials(); ok {
			s.budget = n
		}
	case output.EventCandidateCompleted:
		c, err := e.Candidate()
		if err != nil || c.CandidateID == "" {
			return // not a record: nothing to count
		}
		s.settled++
		switch c.Status {
		case output.StatusFeasible, output.StatusInfeasible, output.StatusFailed, output.StatusTimedOut, output.StatusUnsupported:
			if s.counts == nil {
				s.counts = map[string]int64{}
			}
			s.counts[c.Status]++
		}
		s.settle(c)
	}
}

// settle records a candidate_completed record: a feasible one is offered to the best so far,
// any other outcome is counted by reason category.
func (s *Tally) settle(c *output.Candidate) {
	if c.Status != output.StatusFeasible {
		if s.reasons == nil {
			s.reasons = map[string]int64{}
		}
		s.reasons[reasonCategory(c.ReasonCategory, s.reasons)]++
		return
	}
	s.Best.offerRecord(c)
}

// Restart forgets what the ledger read so far said, keeping what it showed as the floor (the
// best candidates stay: offering one again changes nothing).
func (s *Tally) Restart() {
	s.floor = s.Progress()
	s.floorReasons = s.ReasonCounts()
	s.budget, s.settled, s.counts, s.reasons = 0, 0, nil, nil
}

// Progress is the RunProgress the ledger implies (Published is the publisher's to fill in).
func (s *Tally) Progress() v1beta2.RunProgress {
	f := s.floor
	return v1beta2.RunProgress{
		Budget:      max(f.Budget, s.budget),
		Settled:     max(f.Settled, s.settled),
		Feasible:    max(f.Feasible, s.counts[output.StatusFeasible]),
		Infeasible:  max(f.Infeasible, s.counts[output.StatusInfeasible]),
		Failed:      max(f.Failed, s.counts[output.StatusFailed]),
		TimedOut:    max(f.TimedOut, s.counts[output.StatusTimedOut]),
		Unsupported: max(f.Unsupported, s.counts[output.StatusUnsupported]),
	}
}

// ReasonCounts is the count of the not-feasible candidates by reason category, never below the
// floor.
func (s *Tally) ReasonCounts() map[string]int64 {
	if len(s.floorReasons) == 0 {
		return s.reasons
	}
	out := make(map[string]int64, len(s.floorReasons)+len(s.reasons))
	for c, n := range s.floorReasons {
		out[c] = n
	}
	for c, n := range s.reasons {
		out[c] = max(out[c], n)
	}
	return out
}

// WithCounts overrides the outcome counts of p with the authoritative counts of
// recommendation.json.
func WithCounts(p v1beta2.RunProgress, c output.Counts) v1beta2.RunProgress {
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
