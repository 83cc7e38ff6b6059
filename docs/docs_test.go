// Package docs_test keeps the documentation honest: every YAML snippet in docs/*.md is a file the
// tests exercise.
package docs_test

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dgdr-operator/dgdr-operator/internal/config"
)

type snippet struct {
	doc, marker, content string
	line                 int
}

func snippets(t *testing.T) []snippet {
	t.Helper()
	files, _ := filepath.Glob("*.md")
	var out []snippet
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		var prev string
		var cur *snippet
		n := 0
		for sc.Scan() {
			n++
			line := sc.Text()
			switch {
			case cur == nil && strings.HasPrefix(line, "```yaml"):
				cur = &snippet{doc: f, line: n}
				if strings.HasPrefix(prev, "<!-- example: ") {
					cur.marker = strings.TrimSuffix(strings.TrimPrefix(prev, "<!-- example: "), " -->")
				}
			case cur != nil && line == "```":
				out = append(out, *cur)
				cur = nil
			case cur != nil:
				cur.content += line + "\n"
			}
			prev = line
		}
		fh.Close()
	}
	return out
}

// TestYAMLSnippetsAreExampleFiles: every ```yaml block in docs/ is preceded by
// <!-- example: PATH --> and equals that file byte for byte. The example DGDRs are admitted and
// lowered by the lowering goldens (internal/aisimulate) and dgdrctl tests; configuration examples
// are decoded below.
func TestYAMLSnippetsAreExampleFiles(t *testing.T) {
	all := snippets(t)
	if len(all) < 10 {
		t.Fatalf("found only %d YAML snippets; the scanner is broken", len(all))
	}
	for _, s := range all {
		if s.marker == "" {
			t.Errorf("%s:%d: YAML snippet without <!-- example: PATH --> marker", s.doc, s.line)
			continue
		}
		want, err := os.ReadFile(filepath.Join("..", s.marker))
		if err != nil {
			t.Errorf("%s:%d: %v", s.doc, s.line, err)
			continue
		}
		if diff := cmp.Diff(string(want), s.content); diff != "" {
			t.Errorf("%s:%d differs from %s (-file +doc):\n%s", s.doc, s.line, s.marker, diff)
		}
		if !strings.HasPrefix(s.marker, "examples/") && !strings.HasPrefix(s.marker, "internal/aisimulate/underlay/") {
			t.Errorf("%s:%d: snippet %s is not under examples/", s.doc, s.line, s.marker)
		}
	}
}

// TestConfigurationExamplesDecode: example operator configurations pass the operator's strict
// decoding and validation.
func TestConfigurationExamplesDecode(t *testing.T) {
	files, _ := filepath.Glob("../examples/config/*.yaml")
	if len(files) == 0 {
		t.Fatal("no configuration examples")
	}
	for _, f := range files {
		if _, err := config.Load(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}
