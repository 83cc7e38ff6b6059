package document_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/document"
)

func TestParseErrorsNameThePath(t *testing.T) {
	cases := []struct {
		name     string
		yaml     string
		wantPath []string
		wantLine int
	}{
		{"positive infinity", "engine:\n  workers:\n    decode:\n      kv_cache: {capacity: {memory_fraction: .inf}}\n", []string{"engine", "workers", "decode", "kv_cache", "capacity", "memory_fraction"}, 4},
		{"negative infinity", "evaluation: {sla: {ttft_ms: -.Inf}}\n", []string{"evaluation", "sla", "ttft_ms"}, 1},
		{"not a number", "traffic:\n  load: {type: poisson, requests_per_second: .nan}\n", []string{"traffic", "load", "requests_per_second"}, 2},
		{"inside a list", "engine: {backend: {choices: [vllm, .inf]}}\n", []string{"engine", "backend", "choices", "[1]"}, 1},
		{"duplicate key", "optimizer:\n  seed: 1\n  seed: 2\n", []string{"optimizer", "seed"}, 3},
		{"duplicate top-level key", "engine: {}\nengine: {}\n", []string{"engine"}, 2},
		{"not one mapping", "- a\n- b\n", nil, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := document.ParseMapping([]byte(tc.yaml))
			var derr *document.Error
			if !errors.As(err, &derr) {
				t.Fatalf("error %v is not a *document.Error", err)
			}
			if diff := cmp.Diff(tc.wantPath, derr.Path); diff != "" {
				t.Errorf("path (-want +got):\n%s", diff)
			}
			if derr.Line != tc.wantLine {
				t.Errorf("line %d, want %d", derr.Line, tc.wantLine)
			}
		})
	}
}

func TestNumbersKeepTheirWrittenForm(t *testing.T) {
	v, err := document.ParseMapping([]byte("a: 1024\nb: 1024.0\nc: \"1024\"\nd: 0x10\ne: 1e3\nf: .5\n"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := document.Canonical(v.JSON())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"a":1024,"b":1024.0,"c":"1024","d":16,"e":1e3,"f":0.5}`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("canonical (-want +got):\n%s", diff)
	}
}

func TestApplySetReplacesLeaves(t *testing.T) {
	v, err := document.ParseMapping([]byte("optimizer: {max_trials: 10, seed: 1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"optimizer.max_trials=20", "traffic.load={type: concurrency, concurrency: 4}"} {
		if err := document.ApplySet(v, s); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := document.Canonical(v.JSON())
	want := `{"optimizer":{"max_trials":20,"seed":1},"traffic":{"load":{"concurrency":4,"type":"concurrency"}}}`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, bad := range []string{"optimizer.0=1", "novalue", "optimizer.seed.x=1"} {
		if err := document.ApplySet(v, bad); err == nil {
			t.Errorf("--set %s: no error", bad)
		}
	}
}
