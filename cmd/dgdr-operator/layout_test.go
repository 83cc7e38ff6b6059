package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
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

// TestControllersUseTheKit: both controllers reconcile with the controller kit
// (internal/controller/status) and write their object's status only through its Writer, so a
// fix to the stale-cache guard, the no-op skip or the event queue is made once.
func TestControllersUseTheKit(t *testing.T) {
	kit := module + "/internal/controller/status"
	for _, dir := range []string{"../../internal/controller/request", "../../internal/controller/run"} {
		out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}\n{{.Dir}}\n{{join .GoFiles \" \"}}\n{{join .Imports \" \"}}", dir).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", dir, err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) != 4 {
			t.Fatalf("go list %s: unexpected output %q", dir, out)
		}
		pkg, pkgDir, files, imports := lines[0], lines[1], strings.Fields(lines[2]), strings.Fields(lines[3])
		if !slices.Contains(imports, kit) {
			t.Errorf("%s does not import the controller kit %s", pkg, kit)
		}
		for _, f := range files {
			src, err := os.ReadFile(filepath.Join(pkgDir, f))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(src), ".Status().Patch(") || strings.Contains(string(src), ".Status().Update(") {
				t.Errorf("%s/%s writes a status itself; use status.Writer", pkg, f)
			}
		}
	}
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
