#!/usr/bin/env bash
# make aiperf: creates (or reuses) the pinned AIPerf venv in bin/aiperf, the load generator of
# the verification Job in the sandbox. It is its own venv, apart from bin/upstream, so neither
# one's dependencies move the other's. The venv is reused while the pin below is unchanged (kept
# in bin/aiperf/.pin).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
VENV=${AIPERF_VENV:-"$ROOT/bin/aiperf"}
PYTHON=${PYTHON:-python3}
PIN="aiperf==0.13.0"
STAMP="$VENV/.pin"

if [ -x "$VENV/bin/aiperf" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$PIN" ]; then
  echo "aiperf: reusing $VENV"
else
  if ! "$PYTHON" -c 'import sys; sys.exit(0 if (3, 10) <= sys.version_info[:2] < (3, 14) else 1)'; then
    echo "aiperf: $PYTHON is $("$PYTHON" --version 2>&1); aiperf needs Python 3.10 to 3.13" >&2
    exit 1
  fi
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
  log="$VENV/install.log"
  start=$(date +%s)
  echo "aiperf: installing $PIN into $VENV (log: $log)"
  if ! "$VENV/bin/python" -m pip --disable-pip-version-check --no-input install "$PIN" >"$log" 2>&1; then
    echo "aiperf: pip failed (see $log):" >&2
    grep -E '^ERROR:' "$log" >&2 || tail -n 5 "$log" >&2
    rm -rf "$VENV"
    exit 1
  fi
  echo "$PIN" >"$STAMP"
  echo "aiperf: installed in $(($(date +%s) - start))s"
fi
"$VENV/bin/python" -c 'from importlib.metadata import version; print("aiperf:", version("aiperf"))'
