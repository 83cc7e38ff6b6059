// Package docs_test keeps the documentation honest: every YAML snippet in docs/ is a file the
// tests exercise.
package docs_test

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/google/go-cmp/cmp"

	"github.com/dgdr-operator/dgdr-operator/internal/config"
)

type snippet struct {
	doc, marker, content string
	line                 int
}

func snippets(t *testing.T) []snippet {
	t.Helper()
	var out []snippet
	for _, f := range markdownFiles(t) {
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

// markdownFiles lists every Markdown page under docs/, in every folder, as paths relative to it.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
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

// linkPattern matches a Markdown link or image target: ](target) with an optional #anchor.
var linkPattern = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// docPathPattern matches a repository path of a page under docs/, as code comments, Makefile
// help and configuration files cite them.
var docPathPattern = regexp.MustCompile(`(?:^|[^\w/.-])(docs/[\w./-]+\.md)`)

// headingAnchors returns the anchors GitHub gives the headings of a Markdown page (lower case,
// punctuation dropped, spaces as hyphens, -N for repeats), ignoring lines inside code fences.
func headingAnchors(page string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	inFence := false
	for _, line := range strings.Split(page, "\n") {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
			continue
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		anchor := b.String()
		if n := seen[anchor]; n > 0 {
			anchors[anchor+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[anchor] = true
		}
		seen[anchor]++
	}
	return anchors
}

// TestLinksResolve: every relative link of the documentation (docs/, the README, the chart's
// README) names a file that exists, and an #anchor names a heading of its page, so that moving
// or renaming a page or a section cannot leave a dead link behind.
func TestLinksResolve(t *testing.T) {
	var pages []string
	for _, page := range markdownFiles(t) {
		// The generated API reference links its own anchors, spelled by crd-ref-docs.
		if page != filepath.Join("reference", "api.md") {
			pages = append(pages, page)
		}
	}
	pages = append(pages, filepath.Join("..", "README.md"), filepath.Join("..", "charts", "dgdr-operator", "README.md"))
	checked := 0
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range linkPattern.FindAllStringSubmatch(string(data), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), file)
			}
			checked++
			linked, err := os.ReadFile(path)
			if err != nil {
				t.Errorf("%s: link %s: %v", page, target, err)
				continue
			}
			if anchor != "" && strings.HasSuffix(path, ".md") && !headingAnchors(string(linked))[anchor] {
				t.Errorf("%s: link %s: %s has no heading with the anchor #%s", page, target, path, anchor)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("checked only %d links; the scanner is broken", checked)
	}
}

// ownDocPath tells a path of this repository's docs/ (a page at its top or in one of its
// folders) from a page of another project's docs/ that a comment or a copied upstream file cites.
func ownDocPath(root, path string) bool {
	rest := strings.TrimPrefix(path, "docs/")
	folder, _, nested := strings.Cut(rest, "/")
	if !nested {
		return true
	}
	info, err := os.Stat(filepath.Join(root, "docs", folder))
	return err == nil && info.IsDir()
}

// TestCitedDocPathsExist: every docs/….md path that the repository's code, configuration,
// scripts and pages cite exists. Test data (upstream's own pages, pinned outputs) is not
// followed.
func TestCitedDocPathsExist(t *testing.T) {
	root := ".."
	cited := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch d.Name() {
			case ".git", "bin", "testdata", "node_modules", ".sandbox", ".test-output":
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".md", ".yaml", ".yml", ".sh", ".txt", ".gotmpl", ".py":
		default:
			if d.Name() != "Makefile" && d.Name() != "Dockerfile" && d.Name() != "run" {
				return nil
			}
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range docPathPattern.FindAllStringSubmatch(string(data), -1) {
			if !ownDocPath(root, m[1]) {
				continue
			}
			cited++
			if _, err := os.Stat(filepath.Join(root, m[1])); err != nil {
				t.Errorf("%s cites %s, which does not exist", rel, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if cited < 50 {
		t.Fatalf("found only %d cited docs/ paths; the scanner is broken", cited)
	}
}
