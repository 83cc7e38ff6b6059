// Command rbacdoc writes the table of every right the operator holds, and why, into
// docs/operate/security.md between its markers: the rules of the +kubebuilder:rbac markers under
// internal/ (what controller-gen turns into config/rbac/role.yaml), each with the comment lines
// above it, and the chart's hand-written rules (templates/rbac.yaml as helm renders it, every
// optional role on), each with the comment above it. It fails, naming them, on a marker or rule
// without a comment. `make rbac-doc` runs it; `make verify` fails when the page then differs.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// chartDir is the chart, relative to the repository root.
const chartDir = "charts/dgdr-operator"

// renderArgs render the chart as installed with every role it can grant: the v1beta2 webhooks
// with self-signed certificates (the default), so the webhook-ca role and the certificate
// Secret's rules are there.
var renderArgs = []string{"template", "dgdr-operator", chartDir, "--namespace", "dgdr-system", "--set", "featureGates.DGDRV1Beta2=true"}

func main() {
	root := flag.String("root", ".", "the repository root")
	doc := flag.String("doc", "docs/operate/security.md", "the page whose table is rewritten")
	helm := flag.String("helm", "bin/helm", "the helm binary that renders the chart")
	flag.Parse()
	if err := run(*root, *doc, *helm); err != nil {
		fmt.Fprintln(os.Stderr, "rbacdoc:", err)
		os.Exit(1)
	}
}

func run(root, docPath, helm string) error {
	table, err := generate(root, helm)
	if err != nil {
		return err
	}
	path := filepath.Join(root, docPath)
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	updated, err := splice(string(old), table)
	if err != nil {
		return fmt.Errorf("%s: %w", docPath, err)
	}
	if updated == string(old) {
		return nil
	}
	return os.WriteFile(path, []byte(updated), 0o644)
}

// generate renders the table from the markers under root/internal and the chart rendered by helm
// (a path relative to root, or absolute).
func generate(root, helm string) (string, error) {
	markers, err := markerRights(root, "internal")
	if err != nil {
		return "", err
	}
	if !filepath.IsAbs(helm) {
		if helm, err = filepath.Abs(filepath.Join(root, helm)); err != nil {
			return "", err
		}
	}
	cmd := exec.Command(helm, renderArgs...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	rendered, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("helm %v: %w\n%s", renderArgs, err, stderr.String())
	}
	c, err := chartRights(bytes.NewReader(rendered))
	if err != nil {
		return "", err
	}
	if err := assignRoles(markers, c); err != nil {
		return "", err
	}
	return renderTable(markers, c.own), nil
}
