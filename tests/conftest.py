"""Shared fixtures: small hand-written models (goldens computed by hand) and a case runner."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

CORPUS = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "corpus")


def hand_add_float() -> dict:
    """ADD of two float32 [2, 2] tensors: goldens are plain sums (the multi_client family's float model, renamed)."""
    from vts.families._kit.supported_models import add_spec

    return {**add_spec("TENSOR_FLOAT32"), "name": "hand_add_float"}


def hand_add_quant8() -> dict:
    """ADD of two QUANT8_ASYMM tensors (scale 0.5, zero point 10) into scale 1.0, zero point 0.

    Real inputs: a = (q - 10) * 0.5, b likewise; out = round(a + b).
    a q=[12, 20, 30, 10] -> [1, 5, 10, 0]; b q=[14, 10, 50, 16] -> [2, 0, 20, 3];
    sums [3, 5, 30, 3] stored as is (scale 1, zero point 0).
    """
    quant = {"scale": 0.5, "zero_point": 10}
    return {
        "nnvts": 1, "name": "hand_add_quant8", "hal_version": "1.0",
        "source": {"kind": "hand", "detail": "quantized sums computed by hand"},
        "models": [{
            "name": "add",
            "main": {
                "operands": [
                    {"name": "a", "type": "TENSOR_QUANT8_ASYMM", "dims": [4], "lifetime": "SUBGRAPH_INPUT", **quant},
                    {"name": "b", "type": "TENSOR_QUANT8_ASYMM", "dims": [4], "lifetime": "SUBGRAPH_INPUT", **quant},
                    {"name": "act", "type": "INT32", "lifetime": "CONSTANT_COPY", "value": 0},
                    {"name": "out", "type": "TENSOR_QUANT8_ASYMM", "dims": [4], "lifetime": "SUBGRAPH_OUTPUT",
                     "scale": 1.0, "zero_point": 0},
                ],
                "operations": [{"type": "ADD", "inputs": [0, 1, 2], "outputs": [3]}],
                "inputs": [0, 1], "outputs": [3],
            },
            "examples": [{"inputs": {"a": [12, 20, 30, 10], "b": [14, 10, 50, 16]},
                          "outputs": {"out": [3, 5, 30, 3]}}],
        }],
    }


@pytest.fixture
def run_generated() -> Callable:
    """Run every generated-family case of a spec document on a device; returns the results."""
    from vts.families.base import RunOptions
    from vts.families.generated import GeneratedFamily
    from vts.model.casemodel import parse_spec
    from vts.run.runner import Runner

    def run(document: dict, device):
        family = GeneratedFamily()
        runner = Runner(device, RunOptions(case_timeout=30))
        results = []
        for model in parse_spec(document):
            for case in family.model_cases(model, "<inline>"):
                results.append(runner.run_case(family, case))
        return results

    return run


#: Test folders whose every test carries a marker, so a run can pick them (``-m hostile``) or leave them out.
_FOLDER_MARKERS = {"hostile": "hostile", "scale": "scale"}


class CollectingSink:
    """A result sink that keeps every result, for tests that drive ``Runner.run`` themselves."""

    def __init__(self) -> None:
        self.results: list = []

    def add(self, result) -> None:
        self.results.append(result)

    def finish(self, interrupted: bool) -> None:
        pass


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the hostile and scale suites by folder (tests mirror the packages; these two are concerns)."""
    for item in items:
        folder = item.path.parent.name
        if folder in _FOLDER_MARKERS:
            item.add_marker(_FOLDER_MARKERS[folder])
