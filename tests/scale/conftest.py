"""Fixtures for the CI-at-scale tests: the CLI in a subprocess, results files, a flaky driver."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable

import pytest

from tests.ipc.conftest import ROOT, nnvts_command, nnvts_env

#: A small slice of the bundled cases (float and quantized ADD/MUL/ReLU): 60-odd cases, seconds to run.
SLICE = ("--family", "generated", "-k", "add_binary or mul_binary or relu_clamp")
#: Fails every quantized 8-bit case of SLICE and passes the float ones.
QUANT_BROKEN = "tests.fakes.broken:quant_off_by_2"
FLAKY = "tests.fakes.flaky:create_device"


@pytest.fixture
def nnvts() -> Callable[..., subprocess.CompletedProcess]:
    def run(*args: str, timeout: float = 300, **env: str) -> subprocess.CompletedProcess:
        return subprocess.run(nnvts_command(*args), cwd=ROOT, env=nnvts_env(**env), capture_output=True,
                              text=True, timeout=timeout)

    return run


def verdicts(path) -> dict[str, str]:
    """Case name -> verdict of a results stream (.jsonl) or JSON report."""
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    if text.startswith('{"nnvts_results"'):
        cases = [json.loads(line)["case"] for line in text.splitlines() if line.startswith('{"case"')]
    else:
        cases = json.loads(text)["cases"]
    out: dict[str, str] = {}
    for case in cases:
        assert case["name"] not in out, f"{case['name']} twice in {path}"
        out[case["name"]] = case["verdict"]
    return out


def cases_of(path) -> dict[str, dict]:
    with open(path, encoding="utf-8") as handle:
        records = [json.loads(line)["case"] for line in handle if line.startswith('{"case"')]
    return {case["name"]: case for case in records}
