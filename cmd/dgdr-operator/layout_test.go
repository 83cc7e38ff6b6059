package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dgdr-operator/dgdr-operator/internal/controller/request"
)

const module = "github.com/dgdr-operator/dgdr-operator"

// TestOperatorLinksNoTools: the local recommender and the sandbox are tools around the product;
// the operator binary (which also runs inside every search Job as the reporter) links none of
// their packages, and the controllers do not import the reporter.
func TestOperatorLinksNoTools(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, module+"/tools/") {
			t.Errorf("the operator links %s", pkg)
		}
	}
	out, err = exec.Command("go", "list", "-f", "{{.ImportPath}}: {{join .Imports \" \"}}", "../../internal/controller/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.Contains(line, module+"/internal/reporter") {
			t.Errorf("a controller imports the reporter: %s", line)
		}
	}
}

// TestOnlyTheReporterCommandImportsTheReporter: the reporter is the publishing loop of the search
// pod; the operator's command that runs it (and the reporter's own test helpers) import it,
// nothing else: dgdrctl, the web view and the controllers read search output through
// internal/candidates.
func TestOnlyTheReporterCommandImportsTheReporter(t *testing.T) {
	reporter := module + "/internal/reporter"
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}: {{join .Imports \" \"}}", "../../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	importers := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, ": ")
		if !slices.Contains(strings.Fields(imports), reporter) {
			continue
		}
		importers++
		if pkg != module+"/cmd/dgdr-operator" && !strings.HasPrefix(pkg, reporter+"/") {
			t.Errorf("%s imports the reporter", pkg)
		}
	}
	if importers == 0 {
		t.Fatalf("no package imports %s; the listing is broken", reporter)
	}
}

// TestControllersUseTheKit: the controllers reconcile with the controller kit
// (internal/controller/status) and write their object's status only through its Writer, so a
// fix to the stale-cache guard, the no-op skip or the event queue is made once.
func TestControllersUseTheKit(t *testing.T) {
	kit := module + "/internal/controller/status"
	for _, dir := range append(slices.Clone(requestReconcilers), "../../internal/controller/run") {
		pkg, files, imports := goFiles(t, dir)
		if !slices.Contains(imports, kit) {
			t.Errorf("%s does not import the controller kit %s", pkg, kit)
		}
		for name, src := range files {
			if strings.Contains(src, ".Status().Patch(") || strings.Contains(src, ".Status().Update(") {
				t.Errorf("%s/%s writes a status itself; use status.Writer", pkg, name)
			}
		}
	}
}

// requestReconcilers are the packages of the request's reconcilers (request.StatusOwners).
var requestReconcilers = []string{"../../internal/controller/request", "../../internal/controller/deployment", "../../internal/controller/research"}

// TestRequestReconcilersWriteOnlyTheirShare: each of the request's reconcilers writes the
// request's status through the Writer of its own owner in the field-owner table
// (request.StatusOwners), which sends only that owner's fields and condition types and refuses
// a reconcile that changed others' (status.Owner); the controller it registers carries the same
// owner's name, which is the field manager of its writes. No two reconcilers share an owner, and
// none writes with the unrestricted Writer. The envtest packages of the three check the writes
// themselves (controllertest.CheckStatusOwners).
func TestRequestReconcilersWriteOnlyTheirShare(t *testing.T) {
	writer := regexp.MustCompile(`\b(?:request\.)?(\w+Owner)\.NewWriter\(`)
	registered := regexp.MustCompile(`NewControllerManagedBy\(mgr, (?:request\.)?(\w+Owner)\b`)
	byOwner := map[string]string{}
	for _, dir := range requestReconcilers {
		pkg, files, _ := goFiles(t, dir)
		writers, controllers := map[string]bool{}, map[string]bool{}
		for name, src := range files {
			if strings.Contains(src, "status.NewWriter(") {
				t.Errorf("%s/%s writes the request's status with the unrestricted status.NewWriter", pkg, name)
			}
			for _, m := range writer.FindAllStringSubmatch(src, -1) {
				writers[m[1]] = true
			}
			for _, m := range registered.FindAllStringSubmatch(src, -1) {
				controllers[m[1]] = true
			}
		}
		if len(writers) != 1 || len(controllers) != 1 {
			t.Errorf("%s writes as %v and registers its controller as %v; want one owner of request.StatusOwners for both", pkg, writers, controllers)
			continue
		}
		for owner := range writers {
			if !controllers[owner] {
				t.Errorf("%s writes as %s but registers its controller as %v", pkg, owner, controllers)
			}
			if other, ok := byOwner[owner]; ok {
				t.Errorf("%s and %s both write as %s", other, pkg, owner)
			}
			byOwner[owner] = pkg
		}
	}
	if len(byOwner) != len(request.StatusOwners) {
		t.Errorf("the reconcilers write as %v; the field-owner table has %d owners", byOwner, len(request.StatusOwners))
	}
}

// goFiles lists the package in dir: its import path, its Go files (not tests) by name with their
// source, and its imports.
func goFiles(t *testing.T, dir string) (string, map[string]string, []string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}\n{{.Dir}}\n{{join .GoFiles \" \"}}\n{{join .Imports \" \"}}", dir).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", dir, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 4 {
		t.Fatalf("go list %s: unexpected output %q", dir, out)
	}
	files := map[string]string{}
	for _, f := range strings.Fields(lines[2]) {
		src, err := os.ReadFile(filepath.Join(lines[1], f))
		if err != nil {
			t.Fatal(err)
		}
		files[f] = string(src)
	}
	return lines[0], files, strings.Fields(lines[3])
}

// TestConsumersReadTheTypedDocument: the renderer and the web view read a prediction through the
// typed document of internal/aisimulate/output, never through the local recommender's packages,
// so a prediction field is declared in one place.
func TestConsumersReadTheTypedDocument(t *testing.T) {
	doc := module + "/internal/aisimulate/output"
	for _, dir := range []string{"../../internal/render", "../../internal/ui"} {
		out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}\n{{join .Deps \" \"}}\n{{join .Imports \" \"}}", dir).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", dir, err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) != 3 {
			t.Fatalf("go list %s: unexpected output %q", dir, out)
		}
		pkg, deps, imports := lines[0], strings.Fields(lines[1]), strings.Fields(lines[2])
		if !slices.Contains(imports, doc) {
			t.Errorf("%s does not import the typed prediction document %s", pkg, doc)
		}
		for _, d := range deps {
			if strings.HasPrefix(d, module+"/tools/aisim") {
				t.Errorf("%s depends on the local recommender: %s", pkg, d)
			}
		}
	}
}

// maxGoFileLines is the most lines a hand-written Go file may have: past it a file no longer fits
// in a reader's head, and it is split by what its parts are about.
const maxGoFileLines = 1000

// TestNoHandWrittenGoFileOverTheLimit: every hand-written Go file of the module (tests included)
// has at most maxGoFileLines lines; generated files (marked "Code generated ... DO NOT EDIT.")
// are exempt.
func TestNoHandWrittenGoFileOverTheLimit(t *testing.T) {
	long, checked := oversizedGoFiles(t, filepath.Join("..", ".."))
	if checked < 100 {
		t.Fatalf("checked only %d Go files; the walk is broken", checked)
	}
	for _, f := range long {
		t.Errorf("%s: split it by what its parts are about (at most %d lines)", f, maxGoFileLines)
	}
}

// TestOversizedGoFilesFindsTheLongOnes: the walk reports a hand-written file one line over the
// limit, and neither a file at the limit nor a longer generated one.
func TestOversizedGoFilesFindsTheLongOnes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, header string, lines int) {
		t.Helper()
		src := header + "package p\n" + strings.Repeat("\n", lines-strings.Count(header, "\n")-1)
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("at_limit.go", "", maxGoFileLines)
	write("sub/over_limit.go", "", maxGoFileLines+1)
	write("zz_generated.deepcopy.go", "// Code generated by controller-gen. DO NOT EDIT.\n\n", 2*maxGoFileLines)
	write("testdata/ignored.go", "", maxGoFileLines+1)
	long, checked := oversizedGoFiles(t, dir)
	if diff := cmp.Diff([]string{filepath.Join("sub", "over_limit.go") + ": 1001 lines"}, long); diff != "" {
		t.Errorf("oversized files (-want +got):\n%s", diff)
	}
	if checked != 2 {
		t.Errorf("checked %d hand-written files, want 2 (at_limit.go, sub/over_limit.go)", checked)
	}
}

// oversizedGoFiles walks root (skipping bin/, testdata/ and hidden directories) and returns the
// hand-written Go files over maxGoFileLines, as "path: N lines", and how many it checked.
func oversizedGoFiles(t *testing.T, root string) (long []string, checked int) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (d.Name() == "bin" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, src, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		checked++
		if n := bytes.Count(src, []byte("\n")); n > maxGoFileLines {
			rel, _ := filepath.Rel(root, path)
			long = append(long, fmt.Sprintf("%s: %d lines", rel, n))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return long, checked
}

// TestAdmissionDefaultsWithoutRendering: admission defaults and validates a request from its
// spec alone (defaults from internal/specdefaults); it links none of what turns a search's output
// into Candidates (candidates, render, calibration, the API scheme), so the webhook and dgdrctl
// validate stay small and a rendering change cannot change what admission accepts.
func TestAdmissionDefaultsWithoutRendering(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "../../internal/admission").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, module+"/internal/specdefaults") {
		t.Errorf("admission does not read the spec's defaults from internal/specdefaults")
	}
	for _, pkg := range []string{"candidates", "render", "calibration", "scheme"} {
		if slices.Contains(deps, module+"/internal/"+pkg) {
			t.Errorf("admission depends on internal/%s", pkg)
		}
	}
}

// TestInternalImportsNoTools: the product does not depend on the tools around it (the local
// recommender, the sandbox, the release): no package under internal/, nor any of its tests,
// imports a package under tools/. The tools import the product, never the reverse; a test that
// needs the local recommender's output runs its binary (outputtest.BuildAISim), and the dgdrctl
// command, which runs the local recommender in process, lives under cmd/.
func TestInternalImportsNoTools(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}: {{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}`, "../../internal/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 30 {
		t.Fatalf("go list named %d packages under internal/; the listing is broken", len(lines))
	}
	for _, line := range lines {
		pkg, imports, _ := strings.Cut(line, ": ")
		for _, imp := range strings.Fields(imports) {
			if strings.HasPrefix(imp, module+"/tools/") {
				t.Errorf("%s imports %s", pkg, imp)
			}
		}
	}
}
