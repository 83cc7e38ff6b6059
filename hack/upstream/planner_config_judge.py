"""Judge Planner --config strings with the real Dynamo Planner (ai-dynamo, bin/upstream).

Run with the upstream venv's Python (make upstream). With --defaults it prints the upstream
defaults the renderer copies (SLAPlannerDefaults' adjustment intervals and isl/osl, the
profiler's interpolation granularities) as a JSON object and reads nothing. Otherwise it reads
a JSON array of {"name": ..., "config": "<the --config string>"} on stdin and prints a JSON
array of

    {"name", "ok": bool, "error": "<the Planner's message>", "warnings": [...],
     "ignored": [...], "aliases": [...]}

one per input, in order.

How a config is judged: exactly the parse path of `python3 -m dynamo.planner --config <c>`.
The entrypoint's main() is `config = _parse_config(); asyncio.run(worker(config))`; worker
(@dynamo_worker) first creates a DistributedRuntime (etcd/NATS or Kubernetes discovery), then
construct_planner builds the Kubernetes connector, both network services this judge must not
start. So the judge calls the internal dynamo.planner.__main__._parse_config() itself, with
sys.argv set to ["dynamo.planner", "--config", <c>]: the entrypoint's own argparse parser, then
PlannerConfig.from_config_arg (file-or-inline-JSON detection, json.loads,
PlannerConfig.model_validate with every field and model validator). That is everything the
entrypoint does with --config before it needs the network.

- ok/error: whether _parse_config() returned a PlannerConfig; error is the Planner's own
  message (the pydantic ValidationError or ValueError text, or argparse's exit).
- warnings: every log record of level WARNING or above emitted while the config is parsed and
  validated (any logger; the validator logs through dynamo.planner.config.planner_config), and
  Python warnings (routed to logging by logging.captureWarnings), as "<logger>: <message>".
  The judge lowers any logger whose level would hide a WARNING record, so DYN_LOG or
  configure_dynamo_logging cannot hide one.
- ignored: keys PlannerConfig (and its nested models that do not forbid extra fields) accepts
  and silently drops, as dotted paths. The Planner does not reject unknown keys (its models
  use pydantic's default extra="ignore"), so a misspelt key would otherwise pass unnoticed.
- aliases: keys that reached a field through a validation alias instead of the field's name
  (e.g. "ttft" for ttft_ms), as "path -> field".

The judge's own output is written to the original standard output after everything else;
anything the Planner or the Dynamo runtime print goes to standard error.
"""

import importlib
import json
import logging
import os
import sys
import types
import typing

def defaults() -> dict:
    """The upstream defaults the renderer copies (--defaults)."""
    from dynamo.planner.config.defaults import SLAPlannerDefaults
    from dynamo.profiler.utils import profile_common as common

    return {
        "throughput_adjustment_interval_seconds": SLAPlannerDefaults.throughput_adjustment_interval_seconds,
        "load_adjustment_interval_seconds": SLAPlannerDefaults.load_adjustment_interval_seconds,
        "isl": SLAPlannerDefaults.isl,
        "osl": SLAPlannerDefaults.osl,
        "prefill_interpolation_granularity": common.DEFAULT_PREFILL_INTERPOLATION_GRANULARITY,
        "decode_interpolation_granularity": common.DEFAULT_DECODE_INTERPOLATION_GRANULARITY,
    }


def main() -> int:
    # Keep fd 1 for the verdicts; send everything else printed to stdout to stderr.
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    entry = importlib.import_module("dynamo.planner.__main__")  # what `python3 -m dynamo.planner` runs
    if sys.argv[1:] == ["--defaults"]:
        json.dump(defaults(), out, indent=1)
        out.write("\n")
        out.flush()
        return 0

    items = json.load(sys.stdin)

    from pydantic import AliasChoices, AliasPath, BaseModel

    from dynamo.planner.config.planner_config import PlannerConfig

    records: list[logging.LogRecord] = []

    class Capture(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    capture = Capture(level=logging.WARNING)
    logging.captureWarnings(True)

    def arm() -> None:
        # Imports (and the Planner's own configure_dynamo_logging) may reset the root's
        # handlers and levels: re-arm before every config.
        root = logging.getLogger()
        if capture not in root.handlers:
            root.addHandler(capture)
        if root.level > logging.WARNING or root.level == logging.NOTSET:
            root.setLevel(logging.WARNING)
        for lg in list(logging.Logger.manager.loggerDict.values()):
            if not isinstance(lg, logging.Logger):
                continue
            if lg.level > logging.WARNING:
                lg.setLevel(logging.WARNING)
            if lg.disabled:
                lg.disabled = False
            if not lg.propagate and capture not in lg.handlers:
                lg.addHandler(capture)
        logging.disable(logging.NOTSET)

    results = []
    for item in items:
        name, config = item.get("name"), item.get("config")
        res = {"name": name, "ok": False, "error": "", "warnings": [], "ignored": [], "aliases": []}
        if not isinstance(config, str):
            res["error"] = "judge: config must be a string (the --config argument)"
            results.append(res)
            continue
        arm()
        records.clear()
        argv = sys.argv
        sys.argv = ["dynamo.planner", "--config", config]
        try:
            entry._parse_config()
            res["ok"] = True
        except SystemExit as e:  # argparse
            res["error"] = f"argparse exited {e.code}"
        except Exception as e:  # pydantic.ValidationError, ValueError, ...
            res["error"] = f"{type(e).__name__}: {e}"
        finally:
            sys.argv = argv
        res["warnings"] = [f"{r.name}: {r.getMessage()}" for r in records if r.levelno >= logging.WARNING]
        try:
            data = json.loads(config)
        except ValueError:
            data = None
        if isinstance(data, dict):
            walk(PlannerConfig, data, "", res["ignored"], res["aliases"], BaseModel, AliasChoices, AliasPath)
        results.append(res)

    json.dump(results, out, indent=1)
    out.write("\n")
    out.flush()
    return 0


def accepted_keys(name, field, AliasChoices, AliasPath):
    """The input keys pydantic accepts for a field: its validation aliases, or its alias, or
    its name."""
    va = field.validation_alias
    if va is not None:
        keys = []
        choices = va.choices if isinstance(va, AliasChoices) else [va]
        for c in choices:
            if isinstance(c, str):
                keys.append(c)
            elif isinstance(c, AliasPath) and c.path and isinstance(c.path[0], str):
                keys.append(c.path[0])
        return keys
    if field.alias is not None:
        return [field.alias]
    return [name]


def model_types(annotation, BaseModel):
    """The pydantic models a field's annotation may hold directly (Optional/Union unwrapped),
    with how their values nest: "" (a model), "[]" (a list of them), "{}" (a dict of them)."""
    found = []
    origin = typing.get_origin(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        found.append((annotation, ""))
    elif origin in (typing.Union, types.UnionType):
        for a in typing.get_args(annotation):
            found.extend(model_types(a, BaseModel))
    elif origin in (list, tuple, set, frozenset):
        for a in typing.get_args(annotation):
            found.extend((m, "[]") for m, _ in model_types(a, BaseModel))
    elif origin is dict:
        args = typing.get_args(annotation)
        if len(args) == 2:
            found.extend((m, "{}") for m, _ in model_types(args[1], BaseModel))
    elif origin is typing.Annotated:
        found.extend(model_types(typing.get_args(annotation)[0], BaseModel))
    return found


def walk(model, data, path, ignored, aliases, BaseModel, AliasChoices, AliasPath):
    by_key = {}
    by_name = model.model_config.get("populate_by_name") or model.model_config.get("validate_by_name")
    for name, field in model.model_fields.items():
        keys = accepted_keys(name, field, AliasChoices, AliasPath)
        if by_name:
            keys.append(name)
        for key in keys:
            by_key.setdefault(key, (name, field))
    extra = model.model_config.get("extra") or "ignore"
    for key, value in data.items():
        where = f"{path}{key}"
        if key not in by_key:
            if extra == "ignore":
                ignored.append(where)
            continue  # forbid: pydantic rejected it; allow: kept
        name, field = by_key[key]
        if key != name:
            aliases.append(f"{where} -> {name}")
        for sub, shape in model_types(field.annotation, BaseModel):
            if shape == "" and isinstance(value, dict):
                walk(sub, value, where + ".", ignored, aliases, BaseModel, AliasChoices, AliasPath)
            elif shape == "[]" and isinstance(value, list):
                for i, v in enumerate(value):
                    if isinstance(v, dict):
                        walk(sub, v, f"{where}[{i}].", ignored, aliases, BaseModel, AliasChoices, AliasPath)
            elif shape == "{}" and isinstance(value, dict):
                for k, v in value.items():
                    if isinstance(v, dict):
                        walk(sub, v, f"{where}.{k}.", ignored, aliases, BaseModel, AliasChoices, AliasPath)
            break


if __name__ == "__main__":
    sys.exit(main())
