"""Writes the bundled JSON Schema of the `aisimulate recommend` input from the real model.

Run with the upstream venv's Python (make generate does): the schema is the JSON Schema that
Pydantic generates for aisimulate.config.cli.CoreRecommendationConfig, the model the CLI validates
a recommend document with, in validation mode. Three things are added, none of which changes what
the model accepts:

  x-strict-integer  on every integer schema Pydantic validates strictly (a strict field, or an
                    integer or integer literal of a model whose config is strict): Pydantic's
                    strict int refuses 8.0, JSON Schema's integer accepts it. The operator's
                    validator implements the keyword (internal/aisimulate/inputcheck.go).
  $defs names       Pydantic names the definitions of generic models after their full type
                    (Choices[Annotated[int, FieldInfo(...)]]); they are renamed after what they
                    hold (Choices_int_gt0_le8), so that the file reads and diffs well.
  $id, title, description, and the versions of aisimulate and pydantic it was generated with.

Everything the model checks in Python (model validators, cross-field rules) is not in the
schema; internal/aisimulate/rules_*.go implement those, each naming the validator it mirrors.
Usage: gen_input_schema.py OUTPUT
"""

from __future__ import annotations

import json
import re
import sys
from importlib.metadata import version

from pydantic.json_schema import GenerateJsonSchema

from aisimulate.config.cli import CoreRecommendationConfig

SCHEMA_ID = "https://dgdr-operator.nvidia.com/schemas/aisimulate/recommend-input/v1"


class WithStrictIntegers(GenerateJsonSchema):
    """Marks strict integers: a field's own strict=True, or any integer field of a model whose
    config is strict (ConfigDict(strict=True), as aisimulate_core's FPM profile models are)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._strict_models: list[bool] = []

    def model_schema(self, schema):
        self._strict_models.append(bool(schema.get("config", {}).get("strict")))
        try:
            return super().model_schema(schema)
        finally:
            self._strict_models.pop()

    def _strict(self, schema) -> bool:
        strict = schema.get("strict")
        if strict is None and self._strict_models:
            strict = self._strict_models[-1]
        return bool(strict)

    def int_schema(self, schema):
        out = super().int_schema(schema)
        if self._strict(schema):
            out["x-strict-integer"] = True
        return out

    def literal_schema(self, schema):
        # A strict model's integer literal (FpmDeploymentProfile.pp: Literal[1]) refuses 1.0 too.
        out = super().literal_schema(schema)
        expected = schema.get("expected", [])
        if self._strict(schema) and expected and all(type(v) is int for v in expected):
            out["x-strict-integer"] = True
        return out


def describe(schema: dict, defs: dict) -> str:
    """A short, stable name for what a schema accepts: int_gt0_le8, number_gt0, enum_vllm_sglang."""
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    if "enum" in schema:
        return "enum_" + "_".join(re.sub(r"[^A-Za-z0-9]", "", str(v)) for v in schema["enum"])
    if "const" in schema:
        return "const_" + re.sub(r"[^A-Za-z0-9]", "", str(schema["const"]))
    if "anyOf" in schema:
        return "_or_".join(describe(s, defs) for s in schema["anyOf"])
    kind = {"integer": "int"}.get(schema.get("type"), schema.get("type", "any"))
    parts = [kind]
    for key, short in (("exclusiveMinimum", "gt"), ("minimum", "ge"), ("exclusiveMaximum", "lt"), ("maximum", "le")):
        if key in schema:
            parts.append(short + re.sub(r"[^0-9]", "p", str(schema[key])))
    return "_".join(parts)


def rename_generic_defs(schema: dict) -> dict:
    defs = schema.get("$defs", {})
    renames = {}
    for name, body in defs.items():
        if not re.fullmatch(r"[A-Za-z0-9]+", name) and name.startswith("Choices_"):
            items = body.get("properties", {}).get("choices", {}).get("items", {})
            new = "Choices_" + describe(items, defs)
            if new in renames.values() or (new in defs and new != name):
                raise SystemExit(f"two definitions would be named {new}")
            renames[name] = new
        elif not re.fullmatch(r"[A-Za-z0-9_]+", name):
            raise SystemExit(f"unexpected definition name {name!r}: teach rename_generic_defs about it")
    text = json.dumps(schema)
    for old, new in renames.items():
        text = text.replace(f'"#/$defs/{old}"', f'"#/$defs/{new}"')
    out = json.loads(text)
    out["$defs"] = {renames.get(k, k): v for k, v in out.get("$defs", {}).items()}
    for body in out["$defs"].values():
        if "title" in body and body["title"].startswith("Choices["):
            body["title"] = "Choices"
    return out


def main() -> None:
    generated = CoreRecommendationConfig.model_json_schema(mode="validation", schema_generator=WithStrictIntegers)
    generated = rename_generic_defs(generated)
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "AISimulate recommend input",
        "description": (
            f"Generated by hack/upstream/gen_input_schema.py from aisimulate {version('aisimulate')}'s "
            f"aisimulate.config.cli.CoreRecommendationConfig with pydantic {version('pydantic')} "
            "(make generate). Do not edit. x-strict-integer marks Pydantic's strict integers, which "
            "refuse 8.0. Cross-field rules the model checks in Python are in internal/aisimulate/rules.go."
        ),
    }
    schema.update({k: v for k, v in generated.items() if k not in ("title", "description")})
    with open(sys.argv[1], "w", encoding="utf-8") as f:
        json.dump(schema, f, indent=2, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
