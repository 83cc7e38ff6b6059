#!/usr/bin/env bash
# Builds k8s.io/kubernetes/cmd/* binaries from the Go module proxy only.
# Usage: hack/build-kube.sh <version, e.g. v1.37.2> <output dir> [cmd ...]  (default: kube-apiserver)
set -euo pipefail
K=${1:?kubernetes version}; OUT=${2:?output dir}; shift 2
CMDS=("$@"); [ ${#CMDS[@]} -gt 0 ] || CMDS=(kube-apiserver)
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
S=v0.${K#v1.}                       # v1.37.2 -> v0.37.2 (staging module version)
MINOR=$(echo "$K" | cut -d. -f2)
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT; cd "$W"
MOD=$(go mod download -json "k8s.io/kubernetes@$K" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
{
  echo "module local/kubebuild"; echo; echo "go 1.26.0"; echo
  echo "require k8s.io/kubernetes $K"; echo; echo "replace ("
  # kubernetes maps its staging modules to ./staging/...; use the same-numbered releases instead.
  grep -E '=> ./staging/' "$MOD" | awk '{print $1}' | grep -v '^k8s.io/sample-' | while read -r m; do
    echo "	$m => $m $S"; done
  echo ")"
} > go.mod
{ printf '//go:build tools\n\npackage tools\n\nimport (\n'
  for c in "${CMDS[@]}"; do printf '\t_ "k8s.io/kubernetes/cmd/%s"\n' "$c"; done; printf ')\n'; } > tools.go
GOFLAGS=-mod=mod go mod tidy
V=k8s.io/component-base/version; C=k8s.io/client-go/pkg/version
LD="-s -w -X $V.gitVersion=$K -X $V.gitMajor=1 -X $V.gitMinor=$MINOR -X $V.gitTreeState=clean"
LD="$LD -X $C.gitVersion=$K -X $C.gitMajor=1 -X $C.gitMinor=$MINOR -X $C.gitTreeState=clean"
for c in "${CMDS[@]}"; do
  t0=$(date +%s)
  CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "$LD" -o "$OUT/$c" "k8s.io/kubernetes/cmd/$c"
  echo "built $c in $(( $(date +%s) - t0 ))s"
done
