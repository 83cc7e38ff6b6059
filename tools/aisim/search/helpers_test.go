package search

import (
	"testing"

	"github.com/dgdr-operator/dgdr-operator/tools/aisim/catalog"
	"github.com/dgdr-operator/dgdr-operator/tools/aisim/input"
)

func mustEnv(tb testing.TB, doc string, sets ...string) *Env {
	tb.Helper()
	d, err := input.Decode(input.Recommend, []byte(doc), sets)
	if err != nil {
		tb.Fatalf("decode: %v", err)
	}
	return envFor(tb, d)
}

func envFor(tb testing.TB, d *input.Document) *Env {
	tb.Helper()
	g, err := catalog.LookupGPU(d.Engine.Hardware)
	if err != nil {
		tb.Fatal(err)
	}
	m, err := catalog.LoadModel(d.Engine.Model)
	if err != nil {
		tb.Fatal(err)
	}
	return &Env{Doc: d, Model: m, GPU: g}
}
