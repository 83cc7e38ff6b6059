package trace

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func TestPrefixCacheLRU(t *testing.T) {
	c := NewPrefixCache(3)
	c.Insert([]int64{1, 2, 3})
	if n := c.Match([]int64{1, 2, 9}); n != 2 {
		t.Fatalf("match %d, want 2", n)
	}
	// 3 is now the least recently used; inserting 4 evicts it.
	c.Insert([]int64{4})
	if c.Len() != 3 || c.Match([]int64{3}) != 0 || c.Match([]int64{1, 2, 4}) != 3 {
		t.Errorf("after eviction: len %d, 3 cached %v", c.Len(), c.Match([]int64{3}) == 1)
	}
	// A miss in the middle ends the prefix, even if later blocks are cached.
	if n := c.Match([]int64{1, 7, 2}); n != 1 {
		t.Errorf("match %d, want 1", n)
	}
	zero := NewPrefixCache(0)
	zero.Insert([]int64{1})
	if zero.Match([]int64{1}) != 0 {
		t.Error("a zero-capacity cache hit")
	}
}

func TestSummary(t *testing.T) {
	in := `{"timestamp": 0, "input_length": 1024, "output_length": 10, "hash_ids": [1, 2]}
{"timestamp": 1000, "input_length": 1024, "output_length": 30, "hash_ids": [1, 3]}
{"timestamp": 2000, "input_length": 2048, "output_length": 20, "hash_ids": [1, 2, 4, 5]}
`
	tr, err := Parse(strings.NewReader(in), 512)
	if err != nil {
		t.Fatal(err)
	}
	s := Summarize(tr)
	if s.Requests != 3 || s.DurationS != 2 || s.RateRPS != 1 || s.UniqueBlocks != 5 || s.PrefixReuseRatio != 3.0/8 {
		t.Errorf("summary %+v", s)
	}
	if s.ISL.P50 != 1024 || s.ISL.Max != 2048 || s.OSL.Mean != 20 || s.OSL.P90 != 30 {
		t.Errorf("distributions %+v %+v", s.ISL, s.OSL)
	}
	var b bytes.Buffer
	s.Print(&b)
	for _, want := range []string{"requests: 3", "offered rate: 1.000 req/s", "prefix reuse: 37.5%"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

// SampleOptions produced examples/traces/mooncake-sample.jsonl:
//
//	aisim trace generate --seed 1 --requests 400 --rate 4 --prefix-groups 8 --prefix-tokens 2048 \
//	  --input-tokens 3072 --output-tokens 256 -o examples/traces/mooncake-sample.jsonl
var SampleOptions = GenerateOptions{Seed: 1, Requests: 400, Rate: 4, PrefixGroups: 8, PrefixTokens: 2048,
	InputTokens: 3072, OutputTokens: 256, BlockSize: 512}

// The generator is deterministic, and the checked-in sample is exactly its output.
func TestGenerateIsSeededAndMatchesTheSample(t *testing.T) {
	var a, b bytes.Buffer
	if err := Generate(&a, SampleOptions); err != nil {
		t.Fatal(err)
	}
	if err := Generate(&b, SampleOptions); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("two runs with the same seed differ")
	}
	sample, err := os.ReadFile("../../../examples/traces/mooncake-sample.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), sample) {
		t.Error("examples/traces/mooncake-sample.jsonl is not the generator's output for SampleOptions; regenerate it with the command above")
	}
	tr, err := Parse(&a, 512)
	if err != nil {
		t.Fatal(err)
	}
	s := Summarize(tr)
	if s.Requests != 400 || s.PrefixReuseRatio < 0.4 || s.RateRPS < 3 || s.RateRPS > 5 {
		t.Errorf("sample summary %+v", s)
	}
	var other bytes.Buffer
	o := SampleOptions
	o.Seed = 2
	_ = Generate(&other, o)
	if bytes.Equal(other.Bytes(), sample) {
		t.Error("another seed gave the same trace")
	}
	o.PrefixGroups = 0
	other.Reset()
	_ = Generate(&other, o)
	tr, _ = Parse(&other, 512)
	if s := Summarize(tr); s.PrefixReuseRatio != 0 {
		t.Errorf("no prefix groups: reuse %.3f", s.PrefixReuseRatio)
	}
}
