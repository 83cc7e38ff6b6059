"""How the real AISimulate scores replay reports (sweeper/score.py).

Reads one JSON object on standard input: {"reports": [{"metrics": {...}, "used_gpus": n}],
"sla": {"ttft_ms", "itl_ms", "e2e_ms"}} (any SLA bound may be absent). For each report, prints
{"scores": {target: score_report or null}, "objectives": {target: objective_value or null},
"violations": [aggregate_sla_violations]}; a non-finite value is printed as null, and min_gpus
is skipped when used_gpus is not positive.
"""

from __future__ import annotations

import json
import math
import sys

from aisimulate.sweeper.config import OptimizationTarget, SLATarget
from aisimulate.sweeper.score import aggregate_sla_violations, objective_value, score_report


def finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def main() -> None:
    request = json.load(sys.stdin)
    sla = SLATarget(**request["sla"])
    out = []
    for report in request["reports"]:
        metrics, used_gpus = report["metrics"], report.get("used_gpus")
        scores, objectives = {}, {}
        for target in OptimizationTarget:
            if target is OptimizationTarget.PARETO:
                continue
            if target is OptimizationTarget.MIN_GPUS and not used_gpus:
                continue
            scores[target.value] = finite(score_report(metrics, target, used_gpus=used_gpus))
            objectives[target.value] = finite(objective_value(metrics, target, used_gpus=used_gpus))
        out.append({"scores": scores, "objectives": objectives, "violations": list(aggregate_sla_violations(metrics, sla))})
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
