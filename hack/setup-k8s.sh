#!/usr/bin/env bash
# Builds (or reuses) the local Kubernetes tool set under bin/ from the Go module proxy.
# Idempotent: a binary already present at the pinned version is skipped.
# Env: K8S, ETCD, CT (controller-gen), WITH_CLUSTER=1 (controller-manager, scheduler, kubectl),
#      WITH_HELM=1, WITH_DOCS=1
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${BIN_DIR:-$ROOT/bin}; mkdir -p "$OUT"
K8S=${K8S:-v1.37.2}; ETCD=${ETCD:-v3.7.3}; CT=${CT:-v0.23.0}; HELM=${HELM:-v3.22.0}; CRDREF=${CRDREF:-v0.3.0}
export CGO_ENABLED=0
# Version checks pipe into grep without -q: with pipefail, grep -q exiting at the first match
# can kill the writer with SIGPIPE (status 141) and fail the check, or the script.
if ! "$OUT/etcd" --version 2>/dev/null | grep "etcd Version: ${ETCD#v}$" >/dev/null; then
  "$ROOT/hack/build-etcd.sh" "$ETCD" "$OUT"
fi
# kube-apiserver for envtest and kubectl for the tests that drive it as a user would;
# kube-controller-manager and kube-scheduler for the sandbox.
CMDS=(kube-apiserver); [ "${WITH_CLUSTER:-0}" = 1 ] && CMDS+=(kube-controller-manager kube-scheduler)
NEED=()
for c in "${CMDS[@]}"; do "$OUT/$c" --version 2>/dev/null | grep "$K8S\$" >/dev/null || NEED+=("$c"); done
"$OUT/kubectl" version --client 2>/dev/null | grep "$K8S\$" >/dev/null || NEED+=(kubectl)
[ ${#NEED[@]} -eq 0 ] || "$ROOT/hack/build-kube.sh" "$K8S" "$OUT" "${NEED[@]}"
gi() { GOBIN="$OUT" go install -trimpath -ldflags='-s -w' "$1"; }
{ [ -x "$OUT/controller-gen" ] && "$OUT/controller-gen" --version | grep "$CT$" >/dev/null; } || gi sigs.k8s.io/controller-tools/cmd/controller-gen@"$CT"
if [ "${WITH_HELM:-0}" = 1 ] && ! [ -x "$OUT/helm" ]; then
  # without these -X flags a go-installed helm assumes Kubernetes v1.20 for Capabilities and lint
  H=helm.sh/helm/v3
  GOBIN="$OUT" go install -trimpath -ldflags="-s -w -X $H/internal/version.version=$HELM -X $H/internal/version.gitTreeState=clean \
    -X $H/pkg/chartutil.k8sVersionMajor=1 -X $H/pkg/chartutil.k8sVersionMinor=37 \
    -X $H/pkg/lint/rules.k8sVersionMajor=1 -X $H/pkg/lint/rules.k8sVersionMinor=37" $H/cmd/helm@"$HELM"
fi
if [ "${WITH_DOCS:-0}" = 1 ] && ! [ -x "$OUT/crd-ref-docs" ]; then gi github.com/elastic/crd-ref-docs@"$CRDREF"; fi
if [ "${WITH_LINT:-0}" = 1 ] && ! [ -x "$OUT/golangci-lint-kube-api-linter" ]; then
  # golangci-lint with kube-api-linter compiled in (the module's own command), pinned.
  gi sigs.k8s.io/kube-api-linter/cmd/golangci-lint-kube-api-linter@"${KAL:-v0.0.0-20260716143926-092fe0c72997}"
fi
if [ "${WITH_DOCS:-0}" = 1 ] && ! [ -x "$OUT/helm-docs" ]; then gi github.com/norwoodj/helm-docs/cmd/helm-docs@"${HELMDOCS:-v1.14.2}"; fi
