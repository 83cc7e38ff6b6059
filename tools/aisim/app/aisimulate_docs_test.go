package app

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
)

// AISimulate's documented examples (testdata/aisimulate-docs, see its README.md): how many of
// them aisim runs. Raise these floors when aisim accepts more; a regression fails the test.
const (
	minRecommendRuns       = 18
	minPredictNonTraceRuns = 16
)

// docOutcome is one stored document's result through the same entry points as
// `aisim recommend` / `aisim predict`.
type docOutcome struct {
	kind, name string
	trace      bool
	code       int
	class      string // "runs", "refused: <field>", or "other: ..."
}

// fieldPath matches the field path at the start of an exit-2 message after "<file>: ".
var fieldPath = regexp.MustCompile(`^([a-z_][a-z0-9_]*(\.[a-z0-9_<>\[\]-]+)*): `)

func runDocument(t *testing.T, kind, path string) docOutcome {
	t.Helper()
	name := filepath.Base(path)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	o := docOutcome{kind: kind, name: name, trace: strings.Contains(string(raw), "type: trace")}
	// Relative model paths in the documents are relative to AISimulate's repository root (the
	// e2e configs) or to the document's own directory (the dynamo-planner example); fixtures/
	// holds stand-ins at those places.
	wd, err := filepath.Abs(filepath.Join("testdata", "aisimulate-docs", "fixtures"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(name, "docs__cli__examples__dynamo-planner__") {
		wd = filepath.Join(wd, "docs", "cli", "examples", "dynamo-planner")
	}
	t.Chdir(wd)
	out := filepath.Join(t.TempDir(), "out")
	var stdout, stderr bytes.Buffer
	opts := Options{ConfigPath: path, OutputDir: out, Format: "json", Stdout: &stdout, Stderr: &stderr}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if kind == "recommend" {
		o.code = Recommend(ctx, opts)
	} else {
		o.code = Predict(ctx, opts)
	}
	result := "prediction.json"
	if kind == "recommend" {
		result = "recommendation.json"
	}
	_, statErr := os.Stat(filepath.Join(out, result))
	msg := strings.TrimSpace(stderr.String())
	switch {
	case o.code == aisimulate.ExitOK && statErr == nil:
		o.class = "runs"
	case o.code == aisimulate.ExitInvalidInput:
		rest, ok := strings.CutPrefix(lastLine(msg), path+": ")
		m := fieldPath.FindStringSubmatch(rest)
		if !ok || m == nil {
			o.class = fmt.Sprintf("other: exit 2 without a field: %q", msg)
		} else {
			o.class = "refused: " + m[1]
		}
	default:
		o.class = fmt.Sprintf("other: exit %d: %q", o.code, msg)
	}
	return o
}

func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// TestAISimulateDocumentedExamples runs every stored AISimulate example document (its
// examples/cli, its e2e test configs and the complete documents of its docs) and classifies
// it: runs, refused (exit 2 naming a field), or other. Only the first two are allowed, and
// at least minRecommendRuns / minPredictNonTraceRuns must run.
func TestAISimulateDocumentedExamples(t *testing.T) {
	t.Setenv(EnvFixedTime, "2026-01-02T03:04:05Z")
	var outcomes []docOutcome
	for _, kind := range []string{"recommend", "predict"} {
		files, err := filepath.Glob(filepath.Join("testdata", "aisimulate-docs", kind, "*.yaml"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no %s documents: %v", kind, err)
		}
		for _, f := range files {
			abs, err := filepath.Abs(f)
			if err != nil {
				t.Fatal(err)
			}
			t.Run(kind+"/"+filepath.Base(f), func(t *testing.T) {
				o := runDocument(t, kind, abs)
				outcomes = append(outcomes, o)
				if strings.HasPrefix(o.class, "other") {
					t.Errorf("%s", o.class)
				}
			})
		}
	}
	var table strings.Builder
	count := map[string]int{}
	fields := map[string]int{}
	for _, o := range outcomes {
		src := "synthetic"
		if o.trace {
			src = "trace"
		}
		fmt.Fprintf(&table, "%-9s %-9s %-70s %s\n", o.kind, src, o.name, o.class)
		key := o.kind
		if o.kind == "predict" && !o.trace {
			key = "predict-nontrace"
		}
		count[key+"/total"]++
		if o.class == "runs" {
			count[key+"/runs"]++
		} else {
			fields[o.class]++
		}
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&table, "%3d × %s\n", fields[k], k)
	}
	t.Logf("AISimulate's documented examples through aisim:\n%s"+
		"recommend: %d of %d run; predict without a trace source: %d of %d run; predict with a trace: %d of %d run",
		table.String(), count["recommend/runs"], count["recommend/total"],
		count["predict-nontrace/runs"], count["predict-nontrace/total"], count["predict/runs"], count["predict/total"])
	if got := count["recommend/runs"]; got < minRecommendRuns {
		t.Errorf("%d recommend documents run, want at least %d", got, minRecommendRuns)
	}
	if got := count["predict-nontrace/runs"]; got < minPredictNonTraceRuns {
		t.Errorf("%d predict documents without a trace source run, want at least %d", got, minPredictNonTraceRuns)
	}
}
