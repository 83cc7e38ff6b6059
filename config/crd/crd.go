// Package crd embeds the generated CustomResourceDefinitions so that binaries (dgdrctl validate,
// the sandbox) and tests use exactly what `make manifests` produced.
package crd

import "embed"

// Files holds bases/*.yaml, one CRD per file.
//
//go:embed bases/*.yaml
var Files embed.FS
