#!/usr/bin/env python3
"""Writes internal/aisimulate/schema/recommend-input.v1.schema.json.

The team authors the bundled JSON Schema of the AISimulate `recommend` input here, in Python,
because the schema repeats itself (domains, strict integers) and a generator keeps it readable.
It is written from the AISimulate Pydantic models and docs of the bundled release (see
docs/effective-input-validation.md). from-wheel.sh compares it with the wheel's own
model_json_schema() where the wheel is installable (not offline on our build machines).
Usage: hack/aisimulate-schema/authored.py [OUTPUT]
"""
import json
import sys


def ref(n):
    return {"$ref": "#/$defs/" + n}


def obj(props, required=None, **kw):
    o = {"type": "object", "additionalProperties": False, "properties": props}
    if required:
        o["required"] = required
    o.update(kw)
    return o


def enum(*v):
    return {"enum": list(v)}


def nullable(s):
    return {"anyOf": [s, {"type": "null"}]}


def choices_of(item):
    return {"$ref": "#/$defs/choices", "properties": {"choices": {"items": item}}}


def sweep(scalar, rng):
    return {"anyOf": [ref(scalar), choices_of(ref(scalar)), ref(rng)]}


def sweep_enum(*v):
    return {"anyOf": [enum(*v), choices_of(enum(*v))]}


def only(section_props, *allowed):
    """Forbids, with a false schema per field, the fields of a union section that its variant does not
    allow. (A false schema reports the field's own location; propertyNames reports the object's.)"""
    return {"properties": {k: False for k in section_props if k not in allowed}}


def rng(bound, step):
    return obj({"range": obj({"min": bound, "max": bound, "step": step, "scale": enum("linear", "log")}, ["min", "max"])}, ["range"])


CAPACITY_PROPS = ["type", "memory_fraction", "blocks", "bytes", "cuda_graph_reserved_bytes"]
KNOBS = ["replicas", "tensor", "pipeline", "attention_data", "moe_tensor", "moe_expert"]

defs = {
    "strictInt": {"type": "integer", "x-strict-integer": True,
                  "description": "an integer written as an integer (AISimulate's integer fields are strict: 8, never 8.0 or \"8\")"},
    "posInt": {"allOf": [ref("strictInt")], "exclusiveMinimum": 0},
    "nonNegInt": {"allOf": [ref("strictInt")], "minimum": 0},
    "posNumber": {"type": "number", "exclusiveMinimum": 0},
    "nonNegNumber": {"type": "number", "minimum": 0},
    "fraction01": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
    "choices": {"type": "object", "additionalProperties": False, "required": ["choices"],
                "properties": {"choices": {"type": "array", "minItems": 1, "uniqueItems": True}},
                "description": "a recommend domain: a non-empty list of unique choices (a bare list is never a domain)"},
    "numRange": rng({"type": "number"}, ref("posNumber")),
    "posRange": dict(rng(ref("posNumber"), ref("posNumber")), description="traffic.load ranges need min > 0"),
    "posIntRange": rng(ref("posInt"), ref("posInt")),
    "sweepPosInt": sweep("posInt", "posIntRange"),
    "sweepLoadNumber": sweep("posNumber", "posRange"),
    "parallelismKnobs": {"type": "object", "additionalProperties": False, "required": KNOBS,
                         "properties": {k: ref("posInt") for k in KNOBS},
                         "description": "a complete custom preset mapping (every knob, no domains)"},
    "parallelism": obj({
        "preset": {"anyOf": [{"const": "default"}, {"const": False}, {"type": "object", "maxProperties": 0},
                             {"type": "array", "minItems": 1, "items": ref("parallelismKnobs")}]},
        **{k: ref("sweepPosInt") for k in KNOBS},
        "prefill_context": ref("posInt"), "decode_context": ref("posInt")}),
    "scheduler": obj({"max_batched_tokens": ref("sweepPosInt"), "max_sequences": ref("sweepPosInt"),
                      "prefill_schedule_interval": ref("posInt"), "prefill_decode_interval": ref("nonNegInt")}),
    "kvCapacity": obj({
        "type": enum("default", "fixed"),
        "memory_fraction": {"anyOf": [ref("fraction01"), choices_of(ref("fraction01")), ref("numRange")]},
        "blocks": ref("posInt"), "bytes": ref("posInt"),
        "cuda_graph_reserved_bytes": {"allOf": [ref("nonNegInt")], "maximum": 9007199254740992}},
        allOf=[{"if": {"properties": {"type": {"const": "fixed"}}, "required": ["type"]},
                "then": dict(only(CAPACITY_PROPS, "type", "blocks", "bytes"), anyOf=[{"required": ["blocks"]}, {"required": ["bytes"]}]),
                "else": only(CAPACITY_PROPS, "type", "memory_fraction", "cuda_graph_reserved_bytes")}]),
    "kvCache": obj({
        "block_size": ref("sweepPosInt"), "prefix_caching": {"type": "boolean"},
        "bytes_per_token": {"anyOf": [ref("posInt"), {"const": "auto"}]}, "capacity": ref("kvCapacity"),
        # Newest upstream (docs/replay/engine/kv-cache.md): bandwidths are >= 0 (0 = unlimited), plus scope,
        # latency_to_first_byte_ms and the shared pool bandwidths.
        "host_offload": obj({"num_host_blocks": ref("posInt"), "scope": enum("dp_rank_local", "cluster_shared"),
                             "d2h_bandwidth_gbps": ref("nonNegNumber"), "h2d_bandwidth_gbps": ref("nonNegNumber"),
                             "latency_to_first_byte_ms": ref("nonNegNumber"),
                             "shared_d2h_bandwidth_gbps": ref("nonNegNumber"),
                             "shared_h2d_bandwidth_gbps": ref("nonNegNumber")}, ["num_host_blocks"]),
        "g3_offload": obj({"scope": enum("worker_local", "cluster_shared"), "num_g3_blocks": ref("posInt"),
                           "latency_to_first_byte_ms": ref("nonNegNumber"), "read_bandwidth_gbps": ref("posNumber"),
                           "write_bandwidth_gbps": ref("posNumber"), "shared_read_bandwidth_gbps": ref("posNumber"),
                           "shared_write_bandwidth_gbps": ref("posNumber")}),
        "state_cache": obj({"bytes_per_request": ref("posInt")}),
        # KV cache element type. No stored upstream model spells its values out; any non-empty
        # string is accepted and AISimulate decides (docs/effective-input-validation.md).
        "dtype": {"type": ["string", "null"], "minLength": 1}}),
}

ESTIMATOR = {
    "estimation_mode": enum("auto", "op_level", "fpm_interpolation", "fpm_regression"),
    "fallback_policy": enum("deny", "allow"), "database_mode": enum("SILICON", "HYBRID", "EMPIRICAL", "SOL"),
    "estimator_config": {"type": ["object", "null"]},
    "systems_paths": {"type": ["array", "null"], "items": {"type": "string"}},
    "transfer_policy": {"type": ["string", "object", "null"]},
}
defs["timing"] = obj({
    "type": enum("default", "fixed", "polynomial"), "prefill_ms": nullable(ref("nonNegNumber")),
    "decode_ms": nullable(ref("nonNegNumber")), "forward_model": enum("op_level", "fpm"),
    "fpm_parquet_path": {"type": ["string", "null"]}, **ESTIMATOR},
    allOf=[{"if": {"properties": {"type": {"const": "fixed"}}, "required": ["type"]},
            "then": {"required": ["prefill_ms", "decode_ms"]}}])
# Native SGLang VL path (newest upstream, docs/replay/engine/sglang-vl-host-loop.md): a measured host
# cost table and the vision tower settings of the worker hosting the image encoder.
defs["hostProfile"] = obj({"path": {"type": "string", "minLength": 1}, "frontend": enum("python", "rust")}, ["path"])
defs["vision"] = obj({"cache_mib": ref("nonNegNumber"), "encoder_parallel": enum("tp", "dp")})
defs["worker"] = obj({
    "hardware": {"type": "string", "minLength": 1, "not": {"const": "auto"}}, "startup_seconds": ref("nonNegNumber"),
    "context_length": {"anyOf": [ref("posInt"), {"const": "max"}]}, "parallelism": ref("parallelism"),
    "scheduler": ref("scheduler"), "kv_cache": ref("kvCache"), "timing": ref("timing"),
    "host_profile": ref("hostProfile"), "vision": ref("vision")})
small_batch = {"allOf": [ref("posInt")], "maximum": 8}
defs["encoder"] = obj({
    "hardware": {"type": "string", "minLength": 1}, "backend_version": {"type": "string"},
    "tensor": {"anyOf": [ref("posInt"), choices_of(ref("posInt"))]},
    "replicas": {"anyOf": [ref("posInt"), choices_of(ref("posInt"))]},
    "batch_size": {"anyOf": [small_batch, choices_of(small_batch)]},
    "latency_correction": ref("posNumber"), "rate_degradation": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
    # Newest upstream: analytical (default) or native (event-level) encoder pools.
    "mode": enum("analytical", "native"), "host_profile": ref("hostProfile"),
    "transfer": obj({"bandwidth_gb_per_second": ref("posNumber")})})
AFD_EP = {"anyOf": [ref("posInt"), enum("n_f_nodes", "ffn_tp")]}
# engine.afd for recommend (AFDSearchRecommendationConfig); a_batch_size is required (a Go check names it).
defs["afd"] = obj({
    "phase": enum("prefill", "decode", "both"), "combined_with_pd": {"type": "boolean"},
    "a_batch_size": ref("sweepPosInt"), "tp_a": ref("sweepPosInt"),
    "f_moe_ep_size": {"anyOf": [AFD_EP, choices_of(AFD_EP)]}, "num_microbatches": ref("sweepPosInt"),
    "pipeline_model": sweep_enum("optimistic", "conservative", "serial"), "comm_overhead_factor": ref("posNumber"),
    "boundary_on_attn": {"type": "boolean"}, "max_af_ratio": ref("posNumber"), "max_candidates": ref("posInt")},
    ["phase", "combined_with_pd"])


def type_is(t, default=False):
    # Without "required", "properties" holds vacuously when type is absent: the default variant.
    if default:
        return {"properties": {"type": {"const": t}}}
    return {"properties": {"type": {"const": t}}, "required": ["type"]}


SOURCE_PROPS = ["type", "input_tokens", "output_tokens", "images", "cached_prefix_tokens", "new_input_tokens_per_turn",
                "output_tokens_per_turn", "session", "paths", "format", "block_size", "nested_timestamp_basis"]
source = obj({
    "type": enum("synthetic", "synthetic-session", "trace"),
    "input_tokens": ref("posInt"), "output_tokens": ref("posInt"),
    # Newest upstream adds encoding, identity and the processor pixel budget (native VL path).
    "images": obj({"height": ref("posInt"), "width": ref("posInt"), "count": ref("posInt"),
                   "encoding": enum("png", "jpeg"),
                   "identity": {"anyOf": [{"const": "unique"}, obj({"pool": ref("posInt")}, ["pool"])]},
                   "min_pixels": ref("posInt"), "max_pixels": ref("posInt")}, ["height", "width"]),
    # Exact input tokens shared by synthetic requests (<= input_tokens, a Go check).
    "cached_prefix_tokens": ref("nonNegInt"),
    "new_input_tokens_per_turn": ref("posInt"), "output_tokens_per_turn": ref("posInt"),
    "session": obj({"turns": {"allOf": [ref("strictInt")], "minimum": 2},
                    "shared_prefix_ratio": {"type": "number", "minimum": 0, "maximum": 1},
                    "prefix_groups": ref("nonNegInt"), "inter_turn_delay_ms": ref("nonNegNumber")}),
    "paths": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}},
    "format": enum("mooncake", "mooncake-delta", "agentic_mooncake", "applied_compute_agentic", "dynamo", "weka"),
    "block_size": ref("posInt"), "nested_timestamp_basis": enum("auto", "absolute", "relative")},
    allOf=[
        {"if": type_is("trace"), "then": dict(only(SOURCE_PROPS, "type", "paths", "format", "block_size", "nested_timestamp_basis"),
                                              required=["paths"])},
        {"if": type_is("synthetic-session"), "then": dict(only(SOURCE_PROPS, "type", "new_input_tokens_per_turn", "output_tokens_per_turn", "session"),
                                                          required=["session"])},
        {"if": type_is("synthetic", default=True), "then": only(SOURCE_PROPS, "type", "input_tokens", "output_tokens", "images",
                                                                         "cached_prefix_tokens")}],
    description="traffic.source, discriminated by type (default synthetic); fields are legal only for their type")

RATE = {"oneOf": [{"required": ["requests_per_second"]}, {"required": ["sessions_per_second"]}]}
LOAD_PROPS = ["type", "concurrency", "requests_per_second", "sessions_per_second", "seed", "fraction", "speedup",
              "agentic_lanes", "agentic_snapshot", "agentic_warmup", "agentic_profile"]
load = obj({
    "type": enum("concurrency", "poisson", "constant_rate", "kv_capacity_fraction", "trace_timestamps"),
    "concurrency": ref("sweepPosInt"), "requests_per_second": ref("sweepLoadNumber"),
    "sessions_per_second": ref("sweepLoadNumber"), "seed": ref("nonNegInt"), "fraction": ref("sweepLoadNumber"),
    "speedup": ref("sweepLoadNumber"), "agentic_lanes": ref("posInt"),
    "agentic_snapshot": obj({"seed": ref("nonNegInt")}, ["seed"]), "agentic_warmup": {"type": "boolean"},
    "agentic_profile": obj({k: ref("posNumber") for k in ["duration_seconds", "response_grace_seconds",
                                                          "cancel_drain_seconds", "tree_idle_cap_seconds", "global_idle_cap_seconds"]})},
    allOf=[
        {"if": type_is("concurrency", default=True), "then": only(LOAD_PROPS, "type", "concurrency")},
        {"if": type_is("poisson"), "then": dict(RATE, **only(LOAD_PROPS, "type", "requests_per_second", "sessions_per_second", "seed"))},
        {"if": type_is("constant_rate"), "then": dict(RATE, **only(LOAD_PROPS, "type", "requests_per_second", "sessions_per_second"))},
        {"if": type_is("kv_capacity_fraction"), "then": dict(only(LOAD_PROPS, "type", "fraction"), required=["fraction"])},
        {"if": type_is("trace_timestamps"), "then": only(LOAD_PROPS, "type", "speedup", "agentic_lanes", "agentic_snapshot",
                                                         "agentic_warmup", "agentic_profile")}],
    description="traffic.load, discriminated by type (default concurrency); fields are legal only for their type")
stop = obj({"requests": ref("posInt"), "requests_per_load_unit": ref("posNumber"), "sessions": ref("posInt"),
            "sessions_per_load_unit": ref("posNumber"), "max_virtual_time_seconds": ref("posNumber")},
           description="traffic.stop: exactly one count, matching the source (a Go check)")
QUANT = ["attention_backend", "moe_backend", "moe_kernel_source", "gemm_quant_mode", "moe_quant_mode",
         "fmha_quant_mode", "kvcache_quant_mode", "comm_quant_mode"]
engine = obj({
    "mode": {"anyOf": [enum("aggregated", "disaggregated", "afd"), choices_of(enum("aggregated", "disaggregated"))]},
    "model": {"type": "string", "minLength": 1}, "hardware": {"type": "string", "minLength": 1},
    "backend": sweep_enum("vllm", "sglang", "trtllm"),
    "backend_version": {"anyOf": [{"type": "string", "minLength": 1},
                                  {"type": "object", "propertyNames": enum("vllm", "sglang", "trtllm"),
                                   "additionalProperties": {"type": "string", "minLength": 1}}, {"type": "null"}]},
    "context_length": {"anyOf": [ref("posInt"), {"const": "max"}]},
    "workers": obj({"aggregated": ref("worker"), "prefill": ref("worker"), "decode": ref("worker"), "encoder": ref("encoder")}),
    "kv_transfer": nullable(obj({"bytes_per_token": {"anyOf": [ref("posInt"), {"const": "auto"}]},
                                 "bandwidth_gb_per_second": nullable(ref("posNumber")),
                                 "timing_mode": enum("destination_missing", "full_prompt")})),
    "speculation": obj({"kind": {"const": "ngram"}, "num_speculative_tokens": {"allOf": [ref("posInt")], "maximum": 5},
                        "acceptance_rates": {"type": "array", "minItems": 1, "maxItems": 5, "items": {"type": "number", "minimum": 0, "maximum": 1}},
                        "seed": ref("nonNegInt")}, ["kind", "num_speculative_tokens", "acceptance_rates"]),
    "afd": ref("afd"),
    "enable_chunked_prefill": {"type": "boolean"}, "nextn": {"allOf": [ref("nonNegInt")], "maximum": 5},
    "nextn_accepted": nullable(ref("nonNegNumber")), "enable_eplb": {"type": "boolean"},
    "wideep_num_slots": nullable(ref("posInt")),
    **{k: {"type": ["string", "null"]} for k in QUANT},
    **{k: v for k, v in ESTIMATOR.items()},
    "fpm_profile": {"type": ["string", "object", "null"]},
    "decoder_replay": {"type": "boolean"}, "enable_shared_layer": {"type": ["boolean", "null"]},
    "strict_provenance": {"type": ["boolean", "null"]}},
    ["model", "hardware"])

doc = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://dgdr-operator.nvidia.com/schemas/aisimulate/recommend-input/v1",
    "title": "AISimulate recommend input (bundled with dgdr-operator)",
    "description": ("The core sections of the `aisimulate recommend` input for the AISimulate release bundled with this "
                    "operator (aisimulate 0.13, engine stack). Authored by the dgdr-operator team from the AISimulate "
                    "Pydantic models and docs (hack/aisimulate-schema/authored.py; provenance in "
                    "docs/effective-input-validation.md). Cross-field rules JSON Schema cannot express are Go checks "
                    "(internal/aisimulate/rules.go). The keyword x-strict-integer rejects integers written with a "
                    "fraction or exponent (8.0, 8e0)."),
    "type": "object", "additionalProperties": False, "required": ["engine", "optimization"],
    "properties": {
        "traffic": obj({"source": source, "load": load, "stop": stop}),
        "engine": engine,
        "evaluation": obj({"sla": obj({"ttft_ms": nullable(ref("posNumber")), "itl_ms": nullable(ref("posNumber")),
                                       "e2e_ms": nullable(ref("posNumber"))})}),
        "execution": obj({"resources": obj({
            "memory_limit_gb": {"anyOf": [ref("posNumber"), {"const": "auto"}]},
            "cpu_limit": {"anyOf": [ref("posInt"), {"const": "auto"}]},
            "reserve_memory_gb": ref("nonNegNumber"),
            "reserve_memory_fraction": {"type": "number", "minimum": 0, "exclusiveMaximum": 1},
            "available_memory_fraction": ref("fraction01"), "initialization_timeout_seconds": ref("posNumber"),
            "shutdown_timeout_seconds": ref("posNumber")})}),
        "optimization": obj({
            "target": enum("throughput", "throughput_per_gpu", "throughput_per_user", "goodput", "goodput_per_gpu",
                           "ttft", "e2e_latency", "min_gpus", "pareto"),
            "hardware": nullable({"type": "string", "minLength": 1, "not": {"const": "auto"}}),
            "strict_sla": {"type": "boolean"},
            "constraints": obj({"min_candidate_gpus": nullable(ref("posInt")), "max_candidate_gpus": ref("posInt"),
                                "min_goodput_rps": nullable(ref("posNumber"))})}),
        "optimizer": obj({"algorithm": enum("bayesian", "random"), "max_trials": ref("posInt"), "parallelism": ref("posInt"),
                          "candidate_timeout_seconds": ref("posNumber"), "seed": ref("nonNegInt")}),
    },
    "$defs": defs,
}

out = sys.argv[1] if len(sys.argv) > 1 else "internal/aisimulate/schema/recommend-input.v1.schema.json"
with open(out, "w") as f:
    json.dump(doc, f, indent=2)
    f.write("\n")
