"""How ai-dynamo 1.6.1's vLLM worker reads a rendered worker's arguments.

Reads a JSON array on standard input: [{"name": ..., "args": [arguments after
`python3 -m dynamo.vllm`]}]. Each is parsed as dynamo.vllm.args._parse_cli_args parses a worker's
command line up to the engine: the Dynamo runtime and Dynamo vLLM argument groups
(DynamoRuntimeArgGroup, DynamoVllmArgGroup) with parse_known_args, Config.from_cli_args and its
validate(), then the worker router flags (parse_worker_router_config). What remains are the vLLM
engine's own flags, which dynamo hands to vLLM's parser: vLLM itself is not in the venv (its
parser needs torch), so they are returned for the caller to check.

Prints [{"name", "ok", "error", "disaggregation_mode", "engine_args"}]: engine_args are the
remaining arguments in order; error is the parser's message when the Dynamo side refuses them.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import sys

from dynamo.common.configuration.groups.router_args import parse_worker_router_config
from dynamo.common.configuration.groups.runtime_args import DynamoRuntimeArgGroup, DynamoRuntimeConfig
from dynamo.vllm.backend_args import DynamoVllmArgGroup, DynamoVllmConfig

logging.disable(logging.WARNING)


class _Config(DynamoRuntimeConfig, DynamoVllmConfig):
    """The Dynamo part of dynamo.vllm.args.Config (which also holds the vLLM engine's args)."""

    def validate(self) -> None:
        DynamoRuntimeConfig.validate(self)
        DynamoVllmConfig.validate(self)


class _Refused(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse exits; the judge reports instead
        raise _Refused(message)


def judge(args: list[str]) -> dict:
    parser = _Parser(allow_abbrev=False, add_help=False)
    DynamoRuntimeArgGroup().add_arguments(parser)
    DynamoVllmArgGroup().add_arguments(parser)
    with contextlib.redirect_stderr(io.StringIO()):
        namespace, unknown = parser.parse_known_args(args)
    config = _Config.from_cli_args(namespace)
    # DynamoVllmConfig.validate reads the engine args for its --enable-lora rules; none are set.
    config.engine_args = argparse.Namespace(enable_lora=False)
    config.validate()
    _, engine = parse_worker_router_config(unknown)
    mode = getattr(config, "disaggregation_mode", None)
    return {"disaggregation_mode": getattr(mode, "value", str(mode)), "engine_args": engine}


def main() -> None:
    out = []
    for item in json.load(sys.stdin):
        verdict = {"name": item["name"], "ok": True, "error": ""}
        try:
            verdict.update(judge(item["args"]))
        except (_Refused, ValueError) as err:
            verdict.update(ok=False, error=str(err))
        out.append(verdict)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
