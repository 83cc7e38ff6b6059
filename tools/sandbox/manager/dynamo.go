package manager

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/controlplane"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/dgdrealizer"
	"github.com/dgdr-operator/dgdr-operator/tools/sandbox/nodeagent"
)

// DGDRealizer is the component that stands in for the Dynamo operator (tools/sandbox/dgdrealizer).
const DGDRealizer = "dgd-realizer"

// aisSystems maps the sandbox Node's GPU product to the AISimulate system that times the
// mocker's steps.
var aisSystems = map[string]string{GPUProduct: "h200_sxm"}

// dynamoPython writes dir/dynamo-python3, which runs the upstream venv's python by its own
// path: the node agent starts a container's command through a symlink on the pod's PATH, and
// a venv's python reached through a symlink elsewhere does not find its packages. It returns
// "" when the venv is absent (make upstream creates it): then no Dynamo component runs.
func dynamoPython(root, dir string) (string, error) {
	python := filepath.Join(root, "bin", "upstream", "bin", "python3")
	if _, err := os.Stat(python); err != nil {
		return "", nil //nolint:nilerr // no venv: the sandbox runs without Dynamo components
	}
	wrapper := filepath.Join(dir, "dynamo-python3")
	script := fmt.Sprintf("#!/bin/sh\nexec %q \"$@\"\n", python)
	return wrapper, os.WriteFile(wrapper, []byte(script), 0o755) //nolint:gosec // an executable script
}

// aiperfLauncher writes dir/aiperf-python3, which plays the verification image: it runs the
// python of bin/aiperf (make aiperf) by its own path, with the launcher's frontend URL pointed
// at the node's address (a pod reaches the frontend pod's port on the node; the sandbox has no
// Service routing or cluster DNS), its tokenizer at the realizer's model (the sandbox fetches
// nothing from a hub) and TMPDIR at a short directory of its own. It returns "" when bin/aiperf
// is absent: the image is then not mapped.
func aiperfLauncher(root, dir string) (string, error) {
	python := filepath.Join(root, "bin", "aiperf", "bin", "python3")
	if _, err := os.Stat(python); err != nil {
		return "", nil //nolint:nilerr // no venv: verification Jobs cannot start in this sandbox
	}
	model := filepath.Join(root, "tools", "sandbox", "dgdrealizer", "testdata", "tiny-llama")
	wrapper := filepath.Join(dir, "aiperf-python3")
	script := fmt.Sprintf(`#!/usr/bin/env bash
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --url) args+=("$1" "http://127.0.0.1:${2##*:}"); shift 2 ;;
    --tokenizer) args+=("$1" %q); shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
# AIPerf's ZeroMQ IPC sockets live in TMPDIR, and a pod's /tmp here is a long path: a socket
# path is at most 107 bytes.
tmp=$(mktemp -d /tmp/dgdr-aiperf.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
TMPDIR="$tmp" %q "${args[@]}"
`, model, python)
	return wrapper, os.WriteFile(wrapper, []byte(script), 0o755) //nolint:gosec // an executable script
}

// dynamoRuntimeImages maps the Dynamo runtime images the operator renders deployments with
// (its configuration's runtimeImages) to the venv's python, as `python3`.
func dynamoRuntimeImages(python string) map[string]nodeagent.Image {
	images := map[string]nodeagent.Image{}
	for _, ref := range operatorConfigFor(OperatorPorts{}, "", nil, "").RuntimeImages {
		images[ref] = nodeagent.Image{Binary: python, Entrypoint: []string{"python3"}}
	}
	return images
}

// realizerConfig is the DGD realizer's configuration: the tokenizer and worker launcher
// committed under tools/sandbox/dgdrealizer, one discovery directory per deployment under
// .sandbox/dgd/.
func realizerConfig(root, dir, kubeconfig string) *dgdrealizer.Config {
	src := filepath.Join(root, "tools", "sandbox", "dgdrealizer")
	return &dgdrealizer.Config{
		Kubeconfig:  kubeconfig,
		StateDir:    filepath.Join(dir, "dgd"),
		ModelDir:    filepath.Join(src, "testdata", "tiny-llama"),
		LauncherDir: filepath.Join(src, "python"),
		AISSystem:   aisSystems[GPUProduct],
	}
}

// realizerProcess is the realizer's process.
func realizerProcess(self, cfg string) controlplane.Process {
	return controlplane.Process{Name: DGDRealizer, Path: self, Args: []string{"dgd-realizer", "--config", cfg}}
}
