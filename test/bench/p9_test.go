package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestOverlap: P9 counts each of aisim's candidates once against the real tool's, a repeated key
// only as often as the real tool has it.
func TestOverlap(t *testing.T) {
	r := func(shapes ...string) []ranked {
		out := make([]ranked, len(shapes))
		for i, s := range shapes {
			out[i] = ranked{shape: s}
		}
		return out
	}
	shape := func(t ranked) string { return t.shape }
	cases := []struct {
		name string
		a, b []ranked
		want int
	}{
		{"same", r("x", "y"), r("y", "x"), 2},
		{"none", r("x"), r("y"), 0},
		{"a repeated key counts as often as the other list has it", r("x", "x", "x"), r("x", "y", "x"), 2},
		{"empty", nil, r("x"), 0},
	}
	for _, tc := range cases {
		if diff := cmp.Diff(tc.want, overlap(tc.a, tc.b, shape)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}
