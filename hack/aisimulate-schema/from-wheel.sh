#!/usr/bin/env bash
# Cross-checks the bundled AISimulate input schema against the pinned AISimulate wheel's own
# Pydantic models. Needs Python 3.11+ and access to the wheel (PyPI or a local file), which our
# build machines do not have (they reach only the Go module proxy, Debian and npm): run it where
# they are available.
# Usage: hack/aisimulate-schema/from-wheel.sh [WHEEL_OR_REQUIREMENT]   (default: aisimulate==0.13.*)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
REQ=${1:-"aisimulate==0.13.*"}
VENV=$(mktemp -d); trap 'rm -rf "$VENV"' EXIT
python3 -m venv "$VENV"
"$VENV/bin/pip" install --quiet "$REQ"
"$VENV/bin/python" - "$ROOT/internal/aisimulate/schema/recommend-input.v1.schema.json" <<'PY'
import json, sys
from aisimulate.config.cli import CoreRecommendationConfig
wheel = CoreRecommendationConfig.model_json_schema()
bundled = json.load(open(sys.argv[1]))

def fields(schema, defs, prefix=""):
    out = set()
    if "$ref" in schema:
        schema = defs[schema["$ref"].split("/")[-1]]
    for k, v in (schema.get("properties") or {}).items():
        out.add(prefix + k)
        out |= fields(v, defs, prefix + k + ".")
    return out

w = fields(wheel, wheel.get("$defs", {}))
b = fields(bundled, bundled.get("$defs", {}))
print("in the wheel, not bundled:", sorted(w - b))
print("bundled, not in the wheel:", sorted(b - w))
PY
