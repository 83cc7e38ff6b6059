package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestReporterBoundaries: the reporter is the search Job's publishing loop and only this command
// runs it; whoever needs the search's Candidates or artifacts (dgdrctl, the web view) reads them
// with internal/candidates, which holds no Kubernetes client.
func TestReporterBoundaries(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}: {{join .Imports \" \"}}", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, ": ")
		imported := strings.Fields(imports)
		switch {
		case pkg == module+"/cmd/dgdr-operator", strings.HasPrefix(pkg, module+"/internal/reporter"):
		default:
			for _, imp := range imported {
				if imp == module+"/internal/reporter" {
					t.Errorf("%s imports the reporter", pkg)
				}
			}
		}
		if pkg != module+"/internal/candidates" {
			continue
		}
		for _, imp := range imported {
			if imp == "sigs.k8s.io/controller-runtime/pkg/client" || strings.HasPrefix(imp, "k8s.io/client-go") {
				t.Errorf("internal/candidates imports %s: it holds no client", imp)
			}
		}
	}
}
