package trace

import (
	"fmt"
	"math"
)

// SessionOptions shape the multi-turn sessions of a synthetic-session traffic source
// (AISimulate contract §3.1): every session has Turns turns; turn k's prompt is the whole
// conversation so far (every earlier turn's new input and response) followed by NewInput new
// tokens, and its response is Output tokens long.
type SessionOptions struct {
	Sessions, Turns  int
	NewInput, Output int
	// SharedPrefixRatio of the first turn's new input is shared by every session of the same
	// prefix group (sessions are assigned to the PrefixGroups groups in turn); only whole
	// blocks are shared.
	SharedPrefixRatio float64
	PrefixGroups      int
	// InterTurnDelayMs is the pause between a turn's response and the session's next turn.
	InterTurnDelayMs float64
	// BlockSize is the hash-block size of the generated prompts.
	BlockSize int
	// FirstArrivalsMs are the sessions' first-turn arrival times (open loop), or nil for
	// closed-loop replay, where sessions start as earlier ones end.
	FirstArrivalsMs []float64
}

// Check validates the options.
func (o SessionOptions) Check() error {
	switch {
	case o.Sessions < 1:
		return fmt.Errorf("sessions must be >= 1")
	case o.Turns < 1:
		return fmt.Errorf("turns must be >= 1")
	case o.NewInput < 1 || o.Output < 1:
		return fmt.Errorf("new input and output tokens per turn must be >= 1")
	case o.SharedPrefixRatio < 0 || o.SharedPrefixRatio > 1 || math.IsNaN(o.SharedPrefixRatio):
		return fmt.Errorf("shared prefix ratio must be in [0, 1]")
	case o.PrefixGroups < 0 || (o.SharedPrefixRatio > 0 && o.PrefixGroups == 0):
		return fmt.Errorf("a shared prefix needs prefix groups > 0")
	case o.InterTurnDelayMs < 0 || math.IsNaN(o.InterTurnDelayMs) || math.IsInf(o.InterTurnDelayMs, 0):
		return fmt.Errorf("inter-turn delay must be >= 0")
	case o.BlockSize < 1:
		return fmt.Errorf("block size must be >= 1")
	case o.FirstArrivalsMs != nil && len(o.FirstArrivalsMs) != o.Sessions:
		return fmt.Errorf("%d first arrivals for %d sessions", len(o.FirstArrivalsMs), o.Sessions)
	}
	return nil
}

// GenerateSessions builds the sessions as a trace: one request per turn, a session's turns
// consecutive and in order, later turns carrying the inter-turn delay. Hash ids follow the
// conversation: block j of a session's token stream has the same id in every turn whose prompt
// covers it completely, so a worker that served the previous turn finds the history in its
// prefix cache; a prompt's trailing partial block gets an id of its own (a partial block is
// never reused). The same options always give the same trace.
func GenerateSessions(o SessionOptions) (*Trace, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	t := &Trace{Path: "synthetic-session", BlockSize: o.BlockSize, Requests: make([]Request, 0, o.Sessions*o.Turns)}
	sharedBlocks := 0
	if o.PrefixGroups > 0 {
		sharedBlocks = int(o.SharedPrefixRatio*float64(o.NewInput)) / o.BlockSize
	}
	// Ids: group g's shared blocks are g*sharedBlocks .. (g+1)*sharedBlocks-1; every other block
	// (and every partial one) is numbered after them.
	next := int64(o.PrefixGroups * sharedBlocks)
	var stream []int64 // ids of the session's complete blocks so far
	for s := 0; s < o.Sessions; s++ {
		g := 0
		if o.PrefixGroups > 0 {
			g = s % o.PrefixGroups
		}
		stream = stream[:0]
		length := 0 // tokens in the session's stream
		for k := 0; k < o.Turns; k++ {
			input := length + o.NewInput
			// Extend the stream's complete blocks to cover the prompt.
			for len(stream) < input/o.BlockSize {
				j := len(stream)
				if k == 0 && j < sharedBlocks {
					stream = append(stream, int64(g*sharedBlocks+j))
				} else {
					stream = append(stream, next)
					next++
				}
			}
			ids := make([]int64, len(stream), len(stream)+1)
			copy(ids, stream)
			if input%o.BlockSize != 0 {
				ids = append(ids, next)
				next++
			}
			r := Request{Line: len(t.Requests) + 1, Input: input, Output: o.Output, HashIDs: ids,
				Session: fmt.Sprintf("s%d", s)}
			if k == 0 && o.FirstArrivalsMs != nil {
				r.TimestampMs, r.HasTimestamp = o.FirstArrivalsMs[s], true
			}
			if k > 0 {
				r.DelayMs = o.InterTurnDelayMs
			}
			t.Requests = append(t.Requests, r)
			// The response fills the prompt's partial block and beyond; the next turn numbers
			// those blocks once its prompt covers them.
			length = input + o.Output
		}
	}
	return t, nil
}
