"""The real AISimulate's verdict on `aisimulate recommend` input documents.

Reads a JSON array of {"name": str, "yaml": str} on standard input and prints a JSON array
of {"name", "ok", "stage", "errors": [{"loc": [...], "message": str}]} in the same order. Each
document goes through the steps `aisimulate recommend -c FILE` takes before it runs anything, in
the CLI's order (aisimulate/main.py `_recommend`, aisimulate/recommend.py `_run_recommendation`),
calling the same functions:

  yaml      yaml.safe_load, one mapping (aisimulate.cli_args._load_mapping)
  sections  aisimulate.config.common.split_config_sections: core and adapter sections
  model     aisimulate.config.cli.CoreRecommendationConfig.model_validate (the Pydantic model)
  adapters  aisimulate.main._resolve_section_adapters (the stack's config adapters)
  compile   the stack checks of recommend._run_recommendation and
            aisimulate.recommend.recommendation_to_sweeper (the lowering to the Sweeper's
            SmartSearchConfig, which validates again)

Every failure of these steps is an exit 2 of the CLI (main.main maps ValidationError and
ValueError to argparse's error). stage names the step that refused ("" when all passed).

The judge is offline: recommendation_to_sweeper resolves `context_length: max` from the model's
Hugging Face config, which a model outside the wheel's bundled configs would download. That look-up
is replaced by a constant; the document's validity does not depend on its value, and a model the
search cannot resolve fails at run time (exit 1), not as an input error.

The stack is AISimulate's default, `engine`, as the operator's search runs `aisimulate recommend`
(without --stack): adapter sections (router, planner) are refused there, as AISimulate refuses
them when the operator runs it, even in documents AISimulate documents with `--stack dynamo`.
"""

from __future__ import annotations

import json
import logging
import sys

from pydantic import ValidationError

import yaml

import aisimulate.recommend as recommend
from aisimulate.config.cli import CoreRecommendationConfig
from aisimulate.config.common import split_config_sections
from aisimulate.main import _resolve_section_adapters

recommend.resolve_model_context_length = lambda model: 131072
logging.disable(logging.WARNING)


def errors_of(exc: BaseException, stage: str) -> list[dict]:
    """The errors of a refusal; loc is a path in the input document, or empty.

    A ValidationError of the compile step comes from the Sweeper's own models (SmartSearchConfig:
    search_space, workload, goal, sweep), so its locations are not paths of the document: they go
    into the message and loc stays empty, like a ValueError's.
    """
    if isinstance(exc, ValidationError):
        errors = [([str(part) for part in e["loc"]], e["msg"]) for e in exc.errors()]
        if stage == "compile":
            return [{"loc": [], "message": f"{'.'.join(loc)}: {msg}" if loc else msg} for loc, msg in errors]
        return [{"loc": loc, "message": msg} for loc, msg in errors]
    return [{"loc": [], "message": f"{type(exc).__name__}: {exc}"}]


def judge(text: str) -> dict:
    stage = "yaml"
    try:
        # As aisimulate.cli_args._load_mapping reads the -c file.
        document = yaml.safe_load(text)
        if not isinstance(document, dict):
            raise ValueError("the configuration must contain one YAML mapping")
        stage = "sections"
        core, adapter_raw = split_config_sections(document, command="recommend")
        stage = "model"
        config = CoreRecommendationConfig.model_validate(core)
        stack = "engine"
        stage = "adapters"
        _resolve_section_adapters(adapter_raw, stack)
        stage = "compile"
        if config.engine.workers.encoder is not None and (stack != "engine" or adapter_raw):
            raise ValueError("analytical EPD requires --stack engine without adapters")
        if config.engine.speculation is not None and (stack != "engine" or adapter_raw):
            raise ValueError("ngram speculation requires --stack engine without adapters")
        recommend.recommendation_to_sweeper(config, adapter_configs=adapter_raw, stack=stack)
    except Exception as exc:  # every refusal is a verdict, whatever its type
        return {"ok": False, "stage": stage, "errors": errors_of(exc, stage)}
    return {"ok": True, "stage": "", "errors": []}


def main() -> None:
    items = json.load(sys.stdin)
    out = [{"name": item["name"], **judge(item["yaml"])} for item in items]
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
