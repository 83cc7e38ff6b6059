"""Prints the systems of the installed AISimulate as JSON: what the operator's GPU catalogue is
generated from (hack/catalog, make generate) and compared with (internal/aisimulate's upstream
test).

Run with the upstream venv's Python. A system is a YAML file of AISimulate's bundled systems
directory (aisimulate_core/systems, the directory `engine.hardware` names are looked up in) with
a gpu and a node section; the other YAML files there (version slots, lane defaults, manifests)
are not systems. The set must equal aisimulate_core.sdk.common.SupportedSystems, AISimulate's own
list: when the two disagree the script fails, for a person to decide what the operator offers.

For each system it prints what the wheel says: the GPU's memory, memory bandwidth, SM version
(absent for the non-NVIDIA XPU specs), power, the GPUs of one node, and per backend the version
of the performance data a search uses by default (get_latest_database_version: the "current"
version slot). A system without performance data is an estimate-only spec: its search cannot
estimate the KV cache and skips every backend.

Output: {"aisimulate": VERSION, "systems": [{...}, ...]} sorted by id.
Usage: systems.py
"""

from __future__ import annotations

import json
import os
import sys
from importlib import resources
from importlib.metadata import version

import yaml

from aisimulate_core.sdk import common, perf_database


def fail(message: str) -> None:
    print(f"systems.py: {message}", file=sys.stderr)
    sys.exit(1)


def number(spec: dict, section: str, key: str, system: str, kind=int):
    value = spec.get(section, {}).get(key)
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
        fail(f"{system}.yaml: {section}.{key} is {value!r}, want a positive number")
    if kind is int and value != int(value):
        fail(f"{system}.yaml: {section}.{key} is {value!r}, want an integer")
    return kind(value)


def main() -> None:
    root = os.fspath(resources.files("aisimulate_core") / "systems")
    specs = {}
    for entry in sorted(os.listdir(root)):
        if not entry.endswith(".yaml"):
            continue
        with open(os.path.join(root, entry), encoding="utf-8") as f:
            spec = yaml.safe_load(f)
        if isinstance(spec, dict) and isinstance(spec.get("gpu"), dict) and isinstance(spec.get("node"), dict):
            specs[entry[: -len(".yaml")]] = spec
    declared = set(common.SupportedSystems)
    if set(specs) != declared:
        fail(
            f"the system specs of {root} ({', '.join(sorted(specs))}) are not "
            f"aisimulate_core.sdk.common.SupportedSystems ({', '.join(sorted(declared))})"
        )
    backends = sorted(b.value for b in common.BackendName)
    systems = []
    for name, spec in sorted(specs.items()):
        gpu = spec["gpu"]
        perf_data = {}
        for backend in backends:
            v = perf_database.get_latest_database_version(name, backend, systems_paths=[root])
            if v is not None:
                perf_data[backend] = v
        system = {
            "id": name,
            "memoryBytes": number(spec, "gpu", "mem_capacity", name),
            "memoryBandwidth": number(spec, "gpu", "mem_bw", name),
            "powerWatts": number(spec, "gpu", "power", name),
            "gpusPerNode": number(spec, "node", "num_gpus_per_node", name),
            "perfData": perf_data,
        }
        if "sm_version" in gpu:
            system["smVersion"] = number(spec, "gpu", "sm_version", name)
        systems.append(system)
    json.dump({"aisimulate": version("aisimulate"), "systems": systems}, sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
