package trace

import (
	"slices"
	"testing"
)

// GenerateSessions: turn k's prompt is the conversation so far plus the new input, its complete
// blocks keep their ids from turn to turn, a trailing partial block is never reused, and the
// first turn's shared blocks are the group's.
func TestGenerateSessions(t *testing.T) {
	o := SessionOptions{Sessions: 3, Turns: 3, NewInput: 40, Output: 10, SharedPrefixRatio: 0.5, PrefixGroups: 2,
		InterTurnDelayMs: 5, BlockSize: 8, FirstArrivalsMs: []float64{0, 500, 1000}}
	tr, err := GenerateSessions(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Requests) != 9 {
		t.Fatalf("%d requests, want 9", len(tr.Requests))
	}
	for s := 0; s < 3; s++ {
		turns := tr.Requests[3*s : 3*s+3]
		for k, r := range turns {
			if want := k*50 + 40; r.Input != want || r.Output != 10 {
				t.Errorf("session %d turn %d: %d+%d tokens, want %d+10", s, k, r.Input, r.Output, want)
			}
			if r.Session != turns[0].Session || (k == 0) != r.HasTimestamp || (k > 0) != (r.DelayMs == 5) {
				t.Errorf("session %d turn %d: session %q, timestamp %v, delay %v", s, k, r.Session, r.HasTimestamp, r.DelayMs)
			}
			if want := (r.Input + 7) / 8; len(r.HashIDs) != want {
				t.Errorf("session %d turn %d: %d hash ids, want %d", s, k, len(r.HashIDs), want)
			}
			if k > 0 {
				prev := turns[k-1]
				full := prev.Input / 8 // the previous prompt's complete blocks
				if !slices.Equal(r.HashIDs[:full], prev.HashIDs[:full]) {
					t.Errorf("session %d turn %d does not extend the previous prompt's blocks", s, k)
				}
			}
		}
	}
	// 0.5 × 40 = 20 tokens: 2 whole blocks shared by sessions 0 and 2 (group 0), not by session 1.
	a, b, c := tr.Requests[0].HashIDs, tr.Requests[3].HashIDs, tr.Requests[6].HashIDs
	if !slices.Equal(a[:2], c[:2]) || a[2] == c[2] || a[0] == b[0] {
		t.Errorf("shared prefix ids: %v / %v / %v", a, b, c)
	}
	// Partial blocks (turn 0: 40 tokens = 5 whole blocks; turn 1: 90 = 11 blocks + 2 tokens) are unique.
	seen := map[int64]int{}
	for _, r := range tr.Requests {
		for _, id := range r.HashIDs {
			seen[id]++
		}
	}
	last := tr.Requests[1].HashIDs[len(tr.Requests[1].HashIDs)-1]
	if seen[last] != 1 {
		t.Errorf("partial block id %d used %d times", last, seen[last])
	}
	for _, bad := range []SessionOptions{{Sessions: 0, Turns: 2, NewInput: 1, Output: 1, BlockSize: 1},
		{Sessions: 1, Turns: 2, NewInput: 1, Output: 1, BlockSize: 1, SharedPrefixRatio: 0.5}} {
		if _, err := GenerateSessions(bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}
