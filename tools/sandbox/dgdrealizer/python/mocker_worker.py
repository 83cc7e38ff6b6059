"""Starts one Dynamo mocker worker whose steps are timed from AISimulate's performance model.

The installed ai-dynamo wheel cannot time steps with --ais-perf-config: its engine rejects the
EngineSpec schema the installed aisimulate writes. Its Python estimator works, so this program
  1. resolves the mocker's own configuration with --ais-perf-config, which estimates the KV
     blocks from the model, the GPU system and the memory fraction (num_gpu_blocks);
  2. tabulates TTFT against input length and ITL against (active KV tokens, context length)
     from the same estimator into a mocker-format profile (--planner-profile-data NPZ);
  3. replaces itself with `python -m dynamo.mocker` given the original flags without
     --ais-perf-config, plus --num-gpu-blocks-override and --planner-profile-data.

Usage: python mocker_worker.py --profile-out FILE.npz <dynamo.mocker flags, with --ais-perf-config>
"""

import json
import os
import sys

import numpy as np

PREFILL_POINTS = 64
DECODE_POINTS = 32


def split_profile_out(argv: list[str]) -> tuple[str, list[str]]:
    if "--profile-out" not in argv:
        sys.exit("mocker_worker: --profile-out is required")
    i = argv.index("--profile-out")
    return argv[i + 1], argv[:i] + argv[i + 2 :]


def without_flag(argv: list[str], flag: str) -> list[str]:
    i = argv.index(flag)
    return argv[:i] + argv[i + 2 :]


def resolve(argv: list[str]) -> dict:
    from dynamo.mocker.args import parse_args
    from dynamo.mocker.config import load_mocker_engine_args
    from dynamo.mocker.utils.kv_cache import compute_kv_bytes_per_token

    sys.argv = ["dynamo.mocker", *argv]
    args = parse_args()
    args.kv_bytes_per_token = compute_kv_bytes_per_token(args.model_path, args.kv_cache_dtype)
    return load_mocker_engine_args(args)


def max_context(model_path: str) -> int:
    with open(os.path.join(model_path, "config.json")) as f:
        return int(json.load(f).get("max_position_embeddings", 8192))


def write_profile(cfg: dict, context: int, out: str) -> None:
    from dynamo._internal.ais import create_session

    engine = cfg["engine"]
    session = create_session(engine["timing_model"]["config"])
    isl = np.linspace(16, context, PREFILL_POINTS)
    ttft = np.array([session.predict_prefill(1, int(n), 0) for n in isl])
    capacity = engine["num_gpu_blocks"] * engine["block_size"]
    kv = np.linspace(engine["block_size"], min(capacity, engine["max_num_seqs"] * context), DECODE_POINTS)
    ctx = np.linspace(1, context, DECODE_POINTS)
    itl = np.zeros((DECODE_POINTS, DECODE_POINTS))
    for i, tokens in enumerate(kv):
        for j, length in enumerate(ctx):
            batch = max(1, min(engine["max_num_seqs"], int(round(tokens / length))))
            itl[i, j] = session._estimate(
                {"num_decode_requests": batch, "sum_decode_kv_tokens": max(int(tokens), batch)}
            )
    np.savez(out, prefill_isl=isl, prefill_ttft_ms=ttft, decode_active_kv_tokens=kv,
             decode_context_length=ctx, decode_itl=itl)


def main() -> None:
    out, argv = split_profile_out(sys.argv[1:])
    cfg = resolve(argv)
    model_path = argv[argv.index("--model-path") + 1]
    write_profile(cfg, max_context(model_path), out)
    blocks = cfg["engine"]["num_gpu_blocks"]
    mocker = without_flag(argv, "--ais-perf-config")
    mocker += ["--num-gpu-blocks-override", str(blocks), "--planner-profile-data", out]
    print(f"mocker_worker: {blocks} KV blocks; profile {out}; starting dynamo.mocker {' '.join(mocker)}", flush=True)
    os.execv(sys.executable, [sys.executable, "-m", "dynamo.mocker", *mocker])


if __name__ == "__main__":
    main()
