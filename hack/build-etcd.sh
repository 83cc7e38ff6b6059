#!/usr/bin/env bash
# Builds the etcd server from the Go module proxy (no other downloads).
# Usage: hack/build-etcd.sh <version, e.g. v3.7.3> <output dir>
set -euo pipefail
E=${1:?etcd version}; OUT=${2:?output dir}
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT; cd "$W"
printf 'module local/etcdbuild\n\ngo 1.26.0\n' > go.mod
printf '//go:build tools\n\npackage tools\n\nimport _ "go.etcd.io/etcd/server/v3"\n' > tools.go
# server/v3's go.mod carries replace directives, so `go install pkg@version` is refused;
# pin its sibling modules to the same release in a throwaway module instead.
go get go.etcd.io/etcd/server/v3@"$E" go.etcd.io/etcd/api/v3@"$E" go.etcd.io/etcd/client/pkg/v3@"$E" \
       go.etcd.io/etcd/client/v3@"$E" go.etcd.io/etcd/pkg/v3@"$E"
CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$OUT/etcd" go.etcd.io/etcd/server/v3
version=$("$OUT/etcd" --version); echo "${version%%$'\n'*}" # no head -1: SIGPIPE under pipefail
