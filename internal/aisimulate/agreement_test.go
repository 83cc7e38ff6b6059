package aisimulate_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate"
	"github.com/dgdr-operator/dgdr-operator/internal/research"
	testenv "github.com/dgdr-operator/dgdr-operator/internal/testing/env"
	"github.com/dgdr-operator/dgdr-operator/internal/upstreamtest"
)

// What a document of the agreement corpus is.
const (
	produced   = "produced"   // an effective input lowering produces (examples/, testdata/requests)
	valid      = "valid"      // the contract corpus' valid documents
	invalid    = "invalid"    // the contract corpus' invalid documents
	documented = "documented" // AISimulate's own documented recommend examples
)

type agreementDoc struct {
	Name string `json:"name"`
	YAML string `json:"yaml"`
	kind string
}

type realVerdict struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Stage  string `json:"stage"`
	Errors []struct {
		Loc     []string `json:"loc"`
		Message string   `json:"message"`
	} `json:"errors"`
}

// stricterRule is an entry of testdata/agreement/stricter.yaml: a document the project refuses
// although the real AISimulate's parse and compile steps accept it, and where AISimulate enforces
// the rule instead.
type stricterRule struct {
	Document string `json:"document"`
	Path     string `json:"path"`
	Source   string `json:"source"`
}

// TestAgreementWithTheRealModel judges every document of the corpus with the project's check
// (CheckInput: the bundled schema and rules.go) and with the real AISimulate of the upstream venv
// (hack/upstream/input_judge.py: its Pydantic model and the CLI's compile step), writes the
// agreement table to .test-output/agreement.md, and holds the contract:
//   - the real AISimulate accepts every effective input lowering produces, and so do we;
//   - every document the real AISimulate refuses, we refuse with a field path in the same section;
//   - where we refuse more, the rule is listed in testdata/agreement/stricter.yaml with the place
//     AISimulate enforces it;
//   - the contract corpus' labels are the real verdicts: valid documents pass, invalid ones fail.
func TestAgreementWithTheRealModel(t *testing.T) {
	docs := agreementCorpus(t)
	payload, err := json.Marshal(docs)
	if err != nil {
		t.Fatal(err)
	}
	var verdicts []realVerdict
	if err := json.Unmarshal(upstreamtest.RunPython(t, "input_judge.py", payload), &verdicts); err != nil {
		t.Fatal(err)
	}
	if len(verdicts) != len(docs) {
		t.Fatalf("the judge answered %d of %d documents", len(verdicts), len(docs))
	}
	stricter := map[string]stricterRule{}
	for _, r := range readStricter(t) {
		stricter[r.Document] = r
	}
	used := map[string]bool{}

	var table strings.Builder
	table.WriteString("| document | kind | real AISimulate | dgdr-operator | agree |\n|---|---|---|---|---|\n")
	counts := map[string]int{}
	for i, doc := range docs {
		real := verdicts[i]
		if real.Name != doc.Name {
			t.Fatalf("verdict %d is for %s, want %s", i, real.Name, doc.Name)
		}
		ours := checkYAML(t, doc)
		agree := "yes"
		fail := func(format string, args ...any) {
			agree = "NO"
			t.Errorf("%s (%s): %s\n  real: %s\n  ours: %s", doc.Name, doc.kind, fmt.Sprintf(format, args...), describeReal(real), describeOurs(ours))
		}
		switch {
		case real.OK && len(ours) == 0:
		case !real.OK && len(ours) > 0:
			if !slices.ContainsFunc(ours, func(p aisimulate.Problem) bool { return len(p.Path) > 0 }) {
				fail("we refuse it without a field path")
			} else if sections := realSections(real); len(sections) > 0 && !slices.ContainsFunc(ours, func(p aisimulate.Problem) bool {
				return len(p.Path) > 0 && slices.Contains(sections, p.Path[0])
			}) {
				fail("we refuse it in another section than AISimulate (%v)", sections)
			}
		case !real.OK:
			fail("AISimulate refuses it (stage %s) and we accept it", real.Stage)
		default:
			rule, listed := stricter[doc.Name]
			used[doc.Name] = listed
			switch {
			case !listed:
				fail("we refuse what AISimulate's parse and compile steps accept, and testdata/agreement/stricter.yaml does not list it")
			case !slices.ContainsFunc(ours, func(p aisimulate.Problem) bool { return p.PathString() == rule.Path }):
				fail("stricter.yaml lists it at %s, but we refuse it elsewhere", rule.Path)
			default:
				agree = "stricter: " + rule.Source
			}
		}
		switch {
		case doc.kind == produced && !real.OK:
			fail("an effective input that lowering produces is refused by AISimulate")
		case doc.kind == valid && !real.OK:
			fail("the corpus calls it valid, AISimulate refuses it")
		case doc.kind == invalid && real.OK && !used[doc.Name]:
			fail("the corpus calls it invalid, AISimulate accepts it")
		}
		counts[doc.kind+"/"+agree]++
		fmt.Fprintf(&table, "| %s | %s | %s | %s | %s |\n", doc.Name, doc.kind, cell(describeReal(real)), cell(describeOurs(ours)), agree)
	}
	for name := range stricter {
		if _, seen := used[name]; !seen {
			t.Errorf("testdata/agreement/stricter.yaml lists %s, which is no longer a document we refuse alone", name)
		}
	}
	writeAgreementTable(t, table.String(), counts)
}

func agreementCorpus(t *testing.T) []agreementDoc {
	t.Helper()
	var docs []agreementDoc
	var requests []string
	for _, pattern := range []string{"../../examples/*.yaml", "../../examples/*/*.yaml", "../../examples/*/*/*.yaml", "testdata/requests/*.yaml"} {
		files, _ := filepath.Glob(pattern)
		requests = append(requests, files...)
	}
	for _, path := range requests {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var meta struct{ Kind string }
		if err := yaml.Unmarshal(data, &meta); err != nil || meta.Kind != "DynamoGraphDeploymentRequest" {
			continue
		}
		in := lower(t, admit(t, readRequest(t, path)))
		y, err := in.YAML()
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, agreementDoc{Name: strings.TrimPrefix(path, "../../"), YAML: string(y), kind: produced})
		// A request that schedules re-searches also produces their input: the same spec over
		// the captured window.
		if req := admit(t, readRequest(t, path)); research.On(&req.Spec) {
			rin, errs := aisimulate.Lower(research.SearchSpec(&req.Spec), aisimulate.Options{Prices: goldenPrices})
			if len(errs) > 0 {
				t.Fatalf("%s: lowering its re-search: %v", path, errs)
			}
			ry, err := rin.YAML()
			if err != nil {
				t.Fatal(err)
			}
			docs = append(docs, agreementDoc{Name: strings.TrimPrefix(path, "../../") + " (re-search)", YAML: string(ry), kind: produced})
		}
	}
	if len(docs) < 25 {
		t.Fatalf("only %d requests lowered", len(docs))
	}
	add := func(pattern, kind string, atLeast int) {
		files, _ := filepath.Glob(pattern)
		if len(files) < atLeast {
			t.Fatalf("%s: %d documents, want at least %d", pattern, len(files), atLeast)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			docs = append(docs, agreementDoc{Name: strings.TrimPrefix(strings.TrimPrefix(f, "../../"), "testdata/"), YAML: string(data), kind: kind})
		}
	}
	add("testdata/inputs/valid/*.yaml", valid, 20)
	add("testdata/inputs/invalid/*.yaml", invalid, 70)
	add("../../tools/aisim/app/testdata/aisimulate-docs/recommend/*.yaml", documented, 20)
	return docs
}

func checkYAML(t *testing.T, doc agreementDoc) []aisimulate.Problem {
	t.Helper()
	parsed, err := aisimulate.DecodeDocument([]byte(doc.YAML))
	if err != nil {
		return []aisimulate.Problem{{Message: "not a YAML mapping: " + err.Error()}}
	}
	return aisimulate.CheckInput(parsed)
}

// realSections are the top-level sections AISimulate's errors point at (the model's locations;
// errors of the compile step carry none).
func realSections(v realVerdict) []string {
	var out []string
	for _, e := range v.Errors {
		if len(e.Loc) > 0 && !slices.Contains(out, e.Loc[0]) {
			out = append(out, e.Loc[0])
		}
	}
	return out
}

func describeReal(v realVerdict) string {
	if v.OK {
		return "accepts"
	}
	var parts []string
	for _, e := range v.Errors {
		parts = append(parts, strings.Join(e.Loc, ".")+": "+e.Message)
	}
	return "refuses (" + v.Stage + ") " + strings.Join(parts, "; ")
}

func describeOurs(ps []aisimulate.Problem) string {
	if len(ps) == 0 {
		return "accepts"
	}
	var parts []string
	for _, p := range ps {
		parts = append(parts, p.String())
	}
	return "refuses " + strings.Join(parts, "; ")
}

func cell(s string) string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

func readStricter(t *testing.T) []stricterRule {
	t.Helper()
	data, err := os.ReadFile("testdata/agreement/stricter.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var rules []stricterRule
	if err := yaml.UnmarshalStrict(data, &rules); err != nil {
		t.Fatalf("testdata/agreement/stricter.yaml: %v", err)
	}
	for _, r := range rules {
		if r.Document == "" || r.Path == "" || r.Source == "" {
			t.Fatalf("testdata/agreement/stricter.yaml: every entry needs document, path and source: %+v", r)
		}
	}
	return rules
}

func writeAgreementTable(t *testing.T, table string, counts map[string]int) {
	t.Helper()
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var summary strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&summary, "- %s: %d\n", k, counts[k])
	}
	out := "# Agreement with the real AISimulate\n\n" + summary.String() + "\n" + table
	dir := filepath.Join(testenv.Root(), ".test-output")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "agreement.md"), []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("agreement (%s):\n%s", filepath.Join(dir, "agreement.md"), summary.String())
}
