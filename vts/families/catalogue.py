"""The families' names, readable without importing them (``nnvts run --help`` lists them).

Importing every family to name them took ``nnvts run --help`` 0.8 s; the CLI
must answer ``--help`` in under 100 ms (bench/README.md measures it).  The registry stays the
truth: tests/families/test_catalogue.py fails when this table and the
registered families disagree, so a new family cannot be left out of it.
"""

from __future__ import annotations

#: Every family's name, and whether it runs by default (opt-in families run only when named).
FAMILIES: dict[str, bool] = {
    "burst": True,
    "caching": True,
    "capabilities": True,
    "capabilities_bench": False,
    "concurrency": True,
    "deadline": True,
    "differential": True,
    "discovery": True,
    "dynamic_output_shape": True,
    "extensions": True,
    "fenced": True,
    "fuzz_replay": True,
    "generated": True,
    "hints": False,
    "infinite_loop_timeout": True,
    "memory_domain": True,
    "multi_client": True,
    "priority": True,
    "quantization_coupling": True,
    "read_only_inputs": False,
    "request_padding": False,
    "reusable_execution": False,
    "validation": True,
    "with_config": False,
}


def default_families() -> list[str]:
    return sorted(name for name, default in FAMILIES.items() if default)


def opt_in_families() -> list[str]:
    return sorted(name for name, default in FAMILIES.items() if not default)
