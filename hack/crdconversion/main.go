// Command crdconversion adds the conversion webhook to the generated DynamoGraphDeploymentRequest
// CRD (controller-gen has no marker for it), the way kubebuilder's kustomize patch does: strategy
// Webhook, served at /convert by the operator's webhook Service. Installers (the chart, the
// sandbox, the operator's CRD apply) point the Service at their own and inject the CA bundle.
// It runs in `make manifests`, after controller-gen, and is idempotent.
package main

import (
	"bytes"
	"fmt"
	"os"
)

const file = "config/crd/bases/nvidia.com_dynamographdeploymentrequests.yaml"

const conversion = `  conversion:
    strategy: Webhook
    webhook:
      clientConfig:
        service:
          name: webhook-service
          namespace: system
          path: /convert
      conversionReviewVersions:
      - v1
`

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "crdconversion:", err)
		os.Exit(1)
	}
}

func run() error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	if bytes.Contains(b, []byte("\n  conversion:\n")) {
		return nil
	}
	anchor := []byte("\nspec:\n")
	i := bytes.Index(b, anchor)
	if i < 0 {
		return fmt.Errorf("%s: no top-level spec", file)
	}
	at := i + len(anchor)
	out := append(append(append([]byte{}, b[:at]...), conversion...), b[at:]...)
	return os.WriteFile(file, out, 0o644)
}
