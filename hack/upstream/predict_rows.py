"""The real AISimulate's predictions for a batch of `aisimulate predict` documents.

Reads a JSON array of {"id": str, "yaml": str} on standard input and prints a JSON array of
{"id", "ok", "ttft_ms", "tpot_ms", "error"} (mean TTFT and mean time per output token of the
prediction summary). Each document goes the way `aisimulate predict -c FILE` takes it
(aisimulate/main.py `_predict`): split_config_sections, CorePredictionConfig.model_validate, then
aisimulate.predict.run_prediction with the `engine` stack's runner factory. The predictions run
in this one process, one after another, instead of one supervised CLI process per document: the
simulation is the same, the start-up (about three seconds per process) is paid once. make bench
(P7b) uses it.
"""

from __future__ import annotations

import json
import logging
import sys

import yaml

from aisimulate.config.cli import CorePredictionConfig
from aisimulate.config.common import split_config_sections
from aisimulate.predict import run_prediction
from aisimulate.stack import resolve_runner_factory

logging.disable(logging.WARNING)


def predict(text: str, factory) -> dict:
    try:
        core, adapters = split_config_sections(yaml.safe_load(text), command="predict")
        config = CorePredictionConfig.model_validate(core)
        result = run_prediction(config, adapter_configs=adapters, stack="engine", runner_factory=factory)
        summary = result.summary
        if summary.get("prediction_status") == "invalid":
            return {"ok": False, "error": str(summary.get("diagnostic"))}
        return {"ok": True, "ttft_ms": float(summary["mean_ttft_ms"]), "tpot_ms": float(summary["mean_tpot_ms"])}
    except Exception as exc:  # a refused or failed row is a result, not a crash of the batch
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}


def main() -> None:
    factory = resolve_runner_factory("engine")
    out = []
    for item in json.load(sys.stdin):
        out.append({"id": item["id"], **predict(item["yaml"], factory)})
        print(f"predict_rows: {len(out)} {item['id']}: {out[-1]}", file=sys.stderr, flush=True)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
