"""Upstream's own DGD for a picked configuration (ai-dynamo 1.6.1's profiler, bin/upstream).

Run with the upstream venv's Python (make upstream). Reads a JSON array of candidates on stdin,

    {"name", "backend": "vllm"|"sglang"|"trtllm", "mode": "agg"|"disagg",
     "model": "<Hugging Face id>", "image": "<runtime image>", "system": "<AISimulate system>",
     "gpus_per_node": 8, "isl": 1024, "osl": 128,
     "trust_remote_code": false, "kv_router": false,
     "workers": {"agg" | "prefill" | "decode":
                 {"tp", "pp", "dp", "moe_tp", "moe_ep", "replicas", "max_batch_size"}}}

(dp is attention data parallelism, as AISimulate's attention_data and AI Configurator's dp
column), and prints a JSON array of {"name", "dgd": <the DGD upstream generates>, "warnings":
[<upstream's WARNING records>]}, one per candidate, in order.

How upstream turns a picked configuration into a DGD, and so what this script calls, in the
order run_profile (dynamo.profiler.profile_sla) does for a rapid or thorough search:

1. dynamo.profiler.rapid._generate_dgd_from_pick(dgdr, best_config_df, chosen_exp,
   task_configs, picking_mode): the rank-1 row of the picker becomes the generator parameters
   (aisimulate.generator.module_bridge.task_config_to_generator_config: per-role tp, pp, dp,
   moe_tp, moe_ep, max batch, workers rescaled to the row's total_gpus_needed) and
   aisimulate.generator.api.generate_backend_artifacts(use_dynamo_generator=True) renders each
   role's engine CLI args (AISimulate's versioned cli_args templates and rule plugins) and hands
   them to Dynamo's own config modifier:
   <Backend>ConfigModifier.build_dgd_config (config_modifiers/protocol.py) =
   load_default_config -> dgd_template.load_dgd_template(backend, mode) (the profiler's private
   DGD blueprint), update_image, _apply_disagg_workers / _apply_agg_worker ->
   _apply_worker_config (replicas, sanitize_cli_args, _drop_generated_context_length_args,
   config.setup_worker_component_resources: nvidia.com/gpu per pod and multinode.nodeCount via
   set_multinode_config), then update_model (--model/--model-path, --served-model-name).
   The vLLM modifier's _apply_disagg_workers also runs _finalize_disagg_cli_args
   (--disaggregation-mode, --kv-transfer-config).
   The row is built from the candidate: the columns AI Configurator's picker returns
   ((p)/(d)-prefixed for disaggregated picks) and total_gpus_needed = the candidate's GPUs, so
   the generator's rescaling keeps the candidate's replicas. The Task is built as run_thorough
   and _run_autoscale_sim build theirs (model, system, backend, total GPUs, ISL/OSL); no search
   runs.
2. dynamo.profiler.utils.dgd_generation.assemble_final_config(dgdr, ops, dgd_config,
   resolved_backend=backend): TRT-LLM chunked prefill (config_modifiers.trtllm.
   enable_trtllm_chunked_prefill), enable_kv_router (DYN_ROUTER_MODE=kv on the Frontend) when
   features.kvRouter is enabled, apply_runtime_version_override. No Planner, no mocker.
3. dynamo.profiler.utils.dgd_materialization.materialize_dgd(purpose=FINAL_OUTPUT,
   runtime_backend, model_name_or_path, trust_remote_code): the modifier's
   apply_model_runtime_constraints (vLLM: --max-model-len ceiling, Mamba align floor), then the
   --trust-remote-code injection for vLLM and SGLang (explicit trust, or refusal when the model
   declares auto_map and trust was not given).

Not called: config_modifiers.parallelization_mapping.apply_parallel_mapping_to_config and the
modifiers' set_config_tp_size / set_config_tep_size / set_config_dep_size / convert_config. In
ai-dynamo 1.6.1 no profiler path calls apply_parallel_mapping_to_config (it only exports it),
and convert_config only derives single-role deployments from a build_dgd_config result (the
thorough search's benchmark candidates, aisimulate.generator.enumerate, and the Planner's
interpolation sweep); the final DGD comes from step 1.

Offline: no network, no Kubernetes. The model's config.json, which upstream downloads from
Hugging Face (model_info.model_has_auto_map, get_model_context_length), is served from a
temporary Hugging Face cache filled with AISimulate's bundled copy of that config.json
(aisimulate_core/model_configs), the same file AISimulate itself reads for the model; a model
without a bundled config is an error. The node size is the AISimulate system's
(task_config_to_generator_config reads it from the system's database, as upstream does); a
candidate whose gpus_per_node differs is an error rather than a silent mismatch.
"""

import json
import logging
import os
import shutil
import sys
import tempfile

_ROOT = tempfile.mkdtemp(prefix="dgd-parity-")
_CACHE = os.path.join(_ROOT, "hf")
# Before any import of huggingface_hub: its constants read these once.
os.environ["HF_HUB_CACHE"] = _CACHE
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("DYN_LOG", "warn")

_FAKE_COMMIT = "0" * 40


class _Collect(logging.Handler):
    def __init__(self):
        super().__init__(level=logging.WARNING)
        self.records = []

    def emit(self, record):
        try:
            self.records.append(f"{record.name}: {record.getMessage()}")
        except Exception:  # noqa: BLE001 - a broken record must not break the judge
            self.records.append(f"{record.name}: {record.msg!r}")


def _bundled_config(model: str) -> str:
    import aisimulate_core

    path = os.path.join(
        os.path.dirname(aisimulate_core.__file__),
        "model_configs",
        model.replace("/", "--") + "_config.json",
    )
    if not os.path.isfile(path):
        raise SystemExit(
            f"{model}: AISimulate bundles no config.json for it ({path}); the parity "
            "candidates must use a model upstream can read offline"
        )
    return path


def _cache_model(model: str) -> None:
    """Put the model's config.json where hf_hub_download finds it offline."""
    repo = os.path.join(_CACHE, "models--" + model.replace("/", "--"))
    snapshot = os.path.join(repo, "snapshots", _FAKE_COMMIT)
    if os.path.isdir(snapshot):
        return
    os.makedirs(snapshot)
    os.makedirs(os.path.join(repo, "refs"))
    with open(os.path.join(repo, "refs", "main"), "w") as f:
        f.write(_FAKE_COMMIT)
    shutil.copyfile(_bundled_config(model), os.path.join(snapshot, "config.json"))


def _role(w: dict, prefix: str) -> dict:
    """The picker's columns of one role (AI Configurator's names)."""
    return {
        f"{prefix}workers": int(w.get("replicas", 1)),
        f"{prefix}tp": int(w.get("tp", 1)),
        f"{prefix}pp": int(w.get("pp", 1)),
        f"{prefix}dp": int(w.get("dp", 1)),
        f"{prefix}moe_tp": int(w.get("moe_tp", 1)),
        f"{prefix}moe_ep": int(w.get("moe_ep", 1)),
        f"{prefix}bs": int(w.get("max_batch_size", 1)),
    }


def _gpus(w: dict) -> int:
    return int(w.get("replicas", 1)) * int(w.get("tp", 1)) * int(w.get("pp", 1)) * int(w.get("dp", 1))


def generate(c: dict) -> dict:
    import pandas as pd
    from aisimulate.sdk.perf_database import get_database
    from aisimulate.sdk.task_v2 import Task

    from dynamo.profiler.rapid import _generate_dgd_from_pick
    from dynamo.profiler.utils.dgd_generation import assemble_final_config
    from dynamo.profiler.utils.dgd_materialization import (
        DGDMaterializationPurpose,
        materialize_dgd,
    )
    from dynamo.profiler.utils.dgdr_v1beta1_types import DynamoGraphDeploymentRequestSpec
    from dynamo.profiler.utils.profile_common import (
        ProfilerOperationalConfig,
        resolve_model_path,
    )

    backend, mode, model, system = c["backend"], c["mode"], c["model"], c["system"]
    workers = c["workers"]
    _cache_model(model)

    spec = {"model": model, "backend": backend, "image": c["image"]}
    if c.get("trust_remote_code"):
        spec["overrides"] = {"trustRemoteCode": True}
    if c.get("kv_router"):
        spec["features"] = {"kvRouter": {"enabled": True}}
    dgdr = DynamoGraphDeploymentRequestSpec.model_validate(spec)

    isl, osl = int(c.get("isl", 1024)), int(c.get("osl", 128))
    if mode == "agg":
        row = _role(workers["agg"], "")
        total = _gpus(workers["agg"])
        task = Task(
            serving_mode="agg", model_path=model, system_name=system, backend_name=backend,
            total_gpus=total, isl=isl, osl=osl,
        )
    elif mode == "disagg":
        row = {**_role(workers["prefill"], "(p)"), **_role(workers["decode"], "(d)")}
        total = _gpus(workers["prefill"]) + _gpus(workers["decode"])
        # As run_thorough and _run_autoscale_sim build it (and build_default_tasks for disagg).
        task = Task(
            serving_mode="disagg",
            prefill_model_path=model, decode_model_path=model,
            prefill_system_name=system, decode_system_name=system,
            prefill_backend_name=backend, decode_backend_name=backend,
            total_gpus=total, isl=isl, osl=osl,
        )
    else:
        raise SystemExit(f"{c['name']}: mode {mode!r} is neither agg nor disagg")
    row["total_gpus_needed"] = total

    # The node size task_config_to_generator_config uses (it takes it from the system's
    # database, as upstream does; _generate_dgd_from_pick passes no override).
    db = get_database(system=system, backend=backend, version=task.primary_backend_version)
    node = db.system_spec["node"].get("num_gpus_per_node", 8)
    if int(c.get("gpus_per_node", node)) != node:
        raise SystemExit(
            f"{c['name']}: gpus_per_node {c['gpus_per_node']} but upstream sizes nodes of "
            f"{system} at {node} GPUs"
        )

    # Step 1: rapid._generate_dgd_from_pick -> module_bridge.task_config_to_generator_config,
    # api.generate_backend_artifacts(use_dynamo_generator=True) -> <Backend>ConfigModifier.
    # build_dgd_config (load_dgd_template, update_image, _apply_*_worker(s) ->
    # _apply_worker_config -> setup_worker_component_resources, update_model).
    chosen = "agg" if mode == "agg" else "disagg"
    dgd = _generate_dgd_from_pick(dgdr, pd.DataFrame([row]), chosen, {chosen: task}, "default")
    if dgd is None:
        raise SystemExit(f"{c['name']}: upstream generated no DGD")

    # Step 2: dgd_generation.assemble_final_config (chunked prefill for TRT-LLM, KV router,
    # runtime version override; no Planner, no mocker).
    ops = ProfilerOperationalConfig(output_dir=os.path.join(_ROOT, "out"))
    dgd = assemble_final_config(dgdr, ops, dgd, resolved_backend=backend)

    # Step 3: dgd_materialization.materialize_dgd(FINAL_OUTPUT): the modifier's
    # apply_model_runtime_constraints, then trust-remote-code.
    dgd = materialize_dgd(
        dgd,
        purpose=DGDMaterializationPurpose.FINAL_OUTPUT,
        override=None,
        tolerations=None,
        runtime_backend=backend,
        model_name_or_path=resolve_model_path(dgdr),
        trust_remote_code=bool(c.get("trust_remote_code")),
    )
    return dgd


def main() -> None:
    candidates = json.load(sys.stdin)
    out = sys.stdout
    sys.stdout = sys.stderr  # anything upstream prints goes to standard error
    collect = _Collect()
    logging.getLogger().addHandler(collect)
    results = []
    try:
        for c in candidates:
            collect.records = []
            try:
                dgd = generate(c)
            except SystemExit:
                raise
            except Exception as e:  # noqa: BLE001 - report which candidate failed
                raise SystemExit(f"{c.get('name')}: upstream failed: {type(e).__name__}: {e}") from e
            results.append({"name": c["name"], "dgd": dgd, "warnings": collect.records})
    finally:
        shutil.rmtree(_ROOT, ignore_errors=True)
    json.dump(results, out, indent=1, sort_keys=True)
    out.write("\n")


if __name__ == "__main__":
    main()
