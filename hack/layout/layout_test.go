package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRenderTable(t *testing.T) {
	tests := []struct {
		name    string
		pkgs    []pkg
		want    string
		wantErr string
	}{
		{
			name: "sorted by directory, pipes escaped",
			pkgs: []pkg{
				{Dir: "tools/x", Synopsis: "Package x reads a|b."},
				{Dir: "cmd/y", Synopsis: "Command y runs."},
			},
			want: "| package | what |\n|---|---|\n" +
				"| `cmd/y` | Command y runs. |\n" +
				"| `tools/x` | Package x reads a\\|b. |\n",
		},
		{
			name: "every package without a doc comment is named",
			pkgs: []pkg{
				{Dir: "internal/b"},
				{Dir: "internal/a", Synopsis: "Package a is documented."},
				{Dir: "internal/c", Synopsis: "  "},
			},
			wantErr: "packages without a doc comment (add one, e.g. in a doc.go): internal/b, internal/c",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := renderTable(tt.pkgs)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("table (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSplice(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		want    string
		wantErr bool
	}{
		{
			name: "replaces what lies between the markers, keeps the rest",
			doc:  "intro\n" + layoutBegin + "\nold table\n" + layoutEnd + "\nafter\n",
			want: "intro\n" + layoutBegin + "\nnew table\n" + layoutEnd + "\nafter\n",
		},
		{
			name: "fills empty markers",
			doc:  layoutBegin + "\n" + layoutEnd + "\n",
			want: layoutBegin + "\nnew table\n" + layoutEnd + "\n",
		},
		{name: "no markers", doc: "intro\n", wantErr: true},
		{name: "markers out of order", doc: layoutEnd + "\n" + layoutBegin + "\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := splice(tt.doc, "new table\n")
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, want error: %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("document (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLoadPackagesFindsTaggedPackagesOnly: a package whose files all carry a build tag is found
// (the sandbox suites are such packages); test data, hidden directories, nested modules and
// directories without Go files are not.
func TestLoadPackagesFindsTaggedPackagesOnly(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"go.mod":                   "module example.com/m\n",
		"a/a.go":                   "// Package a is plain.\npackage a\n",
		"suite/s_test.go":          "//go:build suite\n\npackage suite\n",
		"suite/doc.go":             "// Package suite is tagged.\npackage suite\n",
		"onlytests/x_test.go":      "package onlytests_test\n",
		"a/testdata/t/t.go":        "package t\n",
		".hidden/h.go":             "package h\n",
		"nested/go.mod":            "module example.com/n\n",
		"nested/n.go":              "package n\n",
		"notes/page.md":            "# not Go\n",
		"cmd/tool/main.go":         "// Command tool runs.\npackage main\n",
		"cmd/tool/main_linux.go":   "package main\n",
		"cmd/tool/testdata/x.json": "{}\n",
		"a/internal/deep/deep.go":  "// Package deep is deep.\npackage deep\n",
	}
	for name, content := range files {
		path := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := loadPackages(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []pkg{
		{Dir: "a", Synopsis: "Package a is plain."},
		{Dir: "a/internal/deep", Synopsis: "Package deep is deep."},
		{Dir: "cmd/tool", Synopsis: "Command tool runs."},
		{Dir: "onlytests"},
		{Dir: "suite", Synopsis: "Package suite is tagged."},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("packages (-want +got):\n%s", diff)
	}
}

// TestREADMEIsCurrent: the table in the repository's README.md is what the generator writes now,
// so a package added, removed or redocumented without `make layout` fails here too.
func TestREADMEIsCurrent(t *testing.T) {
	root := filepath.Join("..", "..")
	pkgs, err := loadPackages(root)
	if err != nil {
		t.Fatal(err)
	}
	table, err := renderTable(pkgs)
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := splice(string(readme), table)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, string(readme)); diff != "" {
		t.Errorf("README.md's package table is stale; run make layout (-want +got):\n%s", diff)
	}
	if !strings.Contains(table, "`hack/layout`") {
		t.Errorf("the table does not name hack/layout itself:\n%s", table)
	}
}
