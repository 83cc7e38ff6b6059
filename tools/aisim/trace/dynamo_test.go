package trace

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	captureJSONL = "testdata/dynamo/frontend-capture.jsonl"
	captureGzip  = "testdata/dynamo/frontend-capture.000000.jsonl.gz"
)

// The file the real frontend wrote (testdata/dynamo/README.md) reads the same through its jsonl
// and its gzip sink, and keeps what the frontend measured.
func TestReadCapturedFrontendTrace(t *testing.T) {
	plain, err := Read(captureJSONL, FormatDynamo, 0)
	if err != nil {
		t.Fatal(err)
	}
	zipped, err := Read(captureGzip, FormatDynamo, 16)
	if err != nil {
		t.Fatal(err)
	}
	if plain.BlockSize != 16 || len(plain.Requests) != 36 {
		t.Fatalf("block size %d, %d requests; want 16 and 36", plain.BlockSize, len(plain.Requests))
	}
	// Both captures sent the same prompts: the same lengths and shared-prefix structure.
	shape := func(tr *Trace) (out [][]int) {
		for _, r := range tr.Requests {
			out = append(out, []int{r.Input, len(r.HashIDs)})
		}
		return out
	}
	if diff := cmp.Diff(shape(plain), shape(zipped)); diff != "" {
		t.Errorf("jsonl and gzip captures differ (-jsonl +gzip):\n%s", diff)
	}
	for i, r := range plain.Requests {
		if i > 0 && r.TimestampMs < plain.Requests[i-1].TimestampMs {
			t.Errorf("request of line %d arrives before the one replayed ahead of it", r.Line)
		}
		if want := (r.Input + 15) / 16; len(r.HashIDs) != want {
			t.Errorf("line %d: %d hashes for %d tokens, want %d (the partial block is hashed too)", r.Line, len(r.HashIDs), r.Input, want)
		}
	}
	// Three system prompts open every request: prefixes are shared.
	if s := Summarize(plain); s.PrefixReuseRatio < 0.5 {
		t.Errorf("prefix reuse %.2f, want at least 0.5", s.PrefixReuseRatio)
	}
}
