#!/usr/bin/env bash
# make upstream: creates (or reuses) the pinned upstream venv in bin/upstream from
# hack/upstream/requirements.txt and prints the installed versions. The venv is reused while
# the requirements file is unchanged (its sha256 is kept in bin/upstream/.requirements.sha256).
# A package that cannot be installed fails the target with its name and pip's reason.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
REQ=${UPSTREAM_REQUIREMENTS:-"$ROOT/hack/upstream/requirements.txt"}
VENV=${UPSTREAM_VENV:-"$ROOT/bin/upstream"}
STAMP="$VENV/.requirements.sha256"
PYTHON=${PYTHON:-python3}

want=$(sha256sum "$REQ" | cut -d' ' -f1)
if [ -x "$VENV/bin/python" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$want" ]; then
  echo "upstream: reusing $VENV"
else
  if ! "$PYTHON" -c 'import sys; sys.exit(0 if (3, 11) <= sys.version_info[:2] < (3, 14) else 1)'; then
    echo "upstream: $PYTHON is $("$PYTHON" --version 2>&1); aisimulate needs Python 3.11 to 3.13" >&2
    exit 1
  fi
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
  pip=("$VENV/bin/python" -m pip --disable-pip-version-check --no-input)
  log="$VENV/install.log"
  echo "upstream: installing $(grep -cvE '^\s*(#|$)' "$REQ") pinned packages into $VENV (log: $log)"
  # --no-deps: the file is the whole closure; ai-dynamo's own aisimulate==0.13.0 requirement
  # cannot be met from PyPI (see the file's header) and is the one mismatch pip check reports.
  if ! "${pip[@]}" install --no-deps --only-binary=:all: -r "$REQ" >"$log" 2>&1; then
    # Find the package pip could not install, one requirement at a time, and give its reason.
    while read -r req; do
      case "$req" in '' | '#'*) continue ;; esac
      if ! out=$("${pip[@]}" install --no-deps --only-binary=:all: "$req" 2>&1); then
        reason=$(grep -E '^ERROR:' <<<"$out" | head -n 3 | sed 's/^ERROR: //')
        echo "upstream: cannot install ${req}: ${reason:-$(tail -n 1 <<<"$out")}" >&2
        rm -rf "$VENV"
        exit 1
      fi
    done < <(sed -e 's/[[:space:]]*#.*//' "$REQ")
    echo "upstream: pip failed (see $log):" >&2
    grep -E '^ERROR:' "$log" >&2 || tail -n 5 "$log" >&2
    rm -rf "$VENV"
    exit 1
  fi
  # Every requirement of every installed package must hold, but for the documented one.
  check=$("${pip[@]}" check 2>&1 || true)
  bad=$(grep -v -E '^ai-dynamo 1\.6\.1 has requirement aisimulate==0\.13\.0.*but you have aisimulate 0\.13\.0\.dev' <<<"$check" | grep -v '^No broken requirements' || true)
  if [ -n "$bad" ]; then
    echo "upstream: pip check found broken requirements:" >&2
    echo "$bad" >&2
    rm -rf "$VENV"
    exit 1
  fi
  echo "$want" >"$STAMP"
fi
"$VENV/bin/python" - <<'PY'
from importlib.metadata import version
import sys
print("upstream: python", sys.version.split()[0])
for dist in ("aisimulate", "ai-dynamo", "ai-dynamo-runtime", "pydantic"):
    print(f"upstream: {dist} {version(dist)}")
PY
