package logging_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dgdr-operator/dgdr-operator/internal/logging"
)

// crLog is controller-runtime's logging package, which holds the process-wide logger.
const crLog = "sigs.k8s.io/controller-runtime/pkg/log"

// TestEveryBinarySetsTheControllerRuntimeLogger: every main package of the module that links
// controller-runtime's logging package calls SetLogger (ctrl.SetLogger or log.SetLogger) in its
// own files, so that no binary drops controller-runtime's messages and prints its 30-second
// "log.SetLogger(...) was never called" stack trace. The command tests (cmd/dgdrctl,
// cmd/dgdr-operator) check in a child process that the logger is set by the command itself.
func TestEveryBinarySetsTheControllerRuntimeLogger(t *testing.T) {
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-f", `{{if eq .Name "main"}}{{.ImportPath}}|{{.Dir}}|{{join .GoFiles ","}}|{{join .Deps ","}}{{end}}`, "./...")
	cmd.Dir = strings.TrimSpace(string(root))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	linking := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		parts := strings.Split(line, "|")
		if len(parts) != 4 || !slices.Contains(strings.Split(parts[3], ","), crLog) {
			continue
		}
		linking++
		if !setsLogger(t, parts[1], strings.Split(parts[2], ",")) {
			t.Errorf("%s links %s but never calls SetLogger", parts[0], crLog)
		}
	}
	if linking < 3 {
		t.Fatalf("only %d main packages link %s; the listing is broken", linking, crLog)
	}
}

func setsLogger(t *testing.T, dir string, files []string) bool {
	t.Helper()
	fset := token.NewFileSet()
	found := false
	for _, name := range files {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "SetLogger" {
					found = true
				}
			}
			return !found
		})
	}
	return found
}

// TestCommandLineWritesOneLinePerMessage: a warning and an error each come out as one line with
// the logger's name and the message's values.
func TestCommandLineWritesOneLinePerMessage(t *testing.T) {
	var b strings.Builder
	log := logging.CommandLine(&b).WithName("KubeAPIWarningLogger")
	log.Info("metadata.finalizers: prefer a domain-qualified finalizer name")
	log.Error(nil, "listing pods", "namespace", "team-a")
	want := `KubeAPIWarningLogger: "level"=0 "msg"="metadata.finalizers: prefer a domain-qualified finalizer name"
KubeAPIWarningLogger: "msg"="listing pods" "error"=null "namespace"="team-a"
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
