package main

import (
	"os/exec"
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
