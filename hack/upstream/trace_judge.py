"""How the real AISimulate reads a trace that an effective input names.

Reads one JSON object on standard input: {"input": <effective recommend input>, "paths": [local
trace files], "block_size": <KV block size of the replayed worker>}. The input's
traffic.source.paths (the search container's mount path) is replaced by the local paths, then:

  1. the recommend input is validated by aisimulate.config.cli.CoreRecommendationConfig, the model
     `aisimulate recommend` validates;
  2. aisimulate.resources scans the trace the way admission of a search does
     (workload_bounds, then the finite-trace scan of its format): the requests it counts;
  3. the input's traffic section is replayed by `aisimulate predict`'s path (run_prediction, the
     engine stack) on one fixed aggregated vLLM worker of Qwen/Qwen3-8B (a model config AISimulate
     bundles, so the judge runs offline) whose KV block size is block_size.

Prints {"scan_requests", "num_requests", "completed_requests", "total_input_tokens",
"total_output_tokens", "prefix_cache_reused_ratio"}; any refusal exits non-zero with its message.
"""

from __future__ import annotations

import copy
import json
import logging
import sys

from aisimulate import resources
from aisimulate.config.cli import CorePredictionConfig, CoreRecommendationConfig
from aisimulate.config.common import split_config_sections
from aisimulate.predict import run_prediction
from aisimulate.stack import resolve_runner_factory

logging.disable(logging.WARNING)


def main() -> None:
    request = json.load(sys.stdin)
    doc = copy.deepcopy(request["input"])
    doc["traffic"]["source"]["paths"] = request["paths"]

    core, _ = split_config_sections(doc, command="recommend")
    config = CoreRecommendationConfig.model_validate(core)
    bounds = resources.workload_bounds(config)
    estimate = resources._estimate_trace(bounds, stack="engine")
    if estimate.request_count is None:
        sys.exit(f"aisimulate.resources could not scan the trace: {estimate.reason}")

    predict = {
        "engine": {
            "model": "Qwen/Qwen3-8B",
            "hardware": doc["engine"]["hardware"],
            "backend": "vllm",
            "mode": "aggregated",
            "workers": {"aggregated": {"kv_cache": {"block_size": request["block_size"]}}},
        },
        "traffic": doc["traffic"],
    }
    core, adapters = split_config_sections(predict, command="predict")
    result = run_prediction(
        CorePredictionConfig.model_validate(core),
        adapter_configs=adapters,
        stack="engine",
        runner_factory=resolve_runner_factory("engine"),
    )
    summary = result.summary
    if summary.get("prediction_status") == "invalid":
        sys.exit(f"aisimulate predict refused the trace: {summary.get('diagnostic')}")
    json.dump(
        {
            "scan_requests": estimate.request_count,
            **{
                key: summary[key]
                for key in (
                    "num_requests",
                    "completed_requests",
                    "total_input_tokens",
                    "total_output_tokens",
                    "prefix_cache_reused_ratio",
                )
            },
        },
        sys.stdout,
    )


if __name__ == "__main__":
    main()
