"""Fixtures for the out-of-process tests: small hand-computed specs and a CLI runner."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import pytest

from tests.conftest import hand_add_float

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def hand_mul_float(models: int = 1) -> dict:
    """MUL of two float32 [2, 2] tensors: 1.5 * 2 = 3; -2 * 0.5 = -1; 0.25 * 4 = 1; 10 * -0.1 = -1 (float32)."""
    model = {
        "main": {
            "operands": [
                {"name": "a", "type": "TENSOR_FLOAT32", "dims": [2, 2], "lifetime": "SUBGRAPH_INPUT"},
                {"name": "b", "type": "TENSOR_FLOAT32", "dims": [2, 2], "lifetime": "SUBGRAPH_INPUT"},
                {"name": "act", "type": "INT32", "lifetime": "CONSTANT_COPY", "value": 0},
                {"name": "out", "type": "TENSOR_FLOAT32", "dims": [2, 2], "lifetime": "SUBGRAPH_OUTPUT"},
            ],
            "operations": [{"type": "MUL", "inputs": ["a", "b", "act"], "outputs": ["out"]}],
            "inputs": ["a", "b"], "outputs": ["out"],
        },
        "examples": [{"inputs": {"a": [1.5, -2.0, 0.25, 10.0], "b": [2.0, 0.5, 4.0, -0.1]},
                      "outputs": {"out": [3.0, -1.0, 1.0, -1.0]}}],
    }
    return {
        "nnvts": 1, "name": "hand_mul_float", "hal_version": "1.0",
        "source": {"kind": "hand", "detail": "products computed by hand"},
        "models": [{"name": f"mul{i}" if models > 1 else "mul", **model} for i in range(models)],
    }


def hand_sub_float() -> dict:
    """SUB (HAL 1.1): 5 - 2 = 3 and so on; the C sample driver does not support it."""
    document = hand_add_float()
    document["name"] = "hand_sub_float"
    document["hal_version"] = "1.1"
    model = document["models"][0]
    model["name"] = "sub"
    model["main"]["operations"][0]["type"] = "SUB"
    model["examples"] = [{"inputs": {"a": [5.0, 1.0, 0.5, 0.0], "b": [2.0, 1.0, 0.25, -1.0]},
                          "outputs": {"out": [3.0, 0.0, 0.25, 1.0]}}]
    return document


def write_spec(directory, document: dict) -> str:
    path = directory / f"{document['name']}.json"
    path.write_text(json.dumps(document))
    return str(path)


@pytest.fixture
def add_mul_specs(tmp_path) -> list[str]:
    """An ADD spec and a MUL spec: the misbehaving drivers fault on MUL only."""
    return [write_spec(tmp_path, hand_add_float()), write_spec(tmp_path, hand_mul_float())]


def slot_names(spec_paths: list[str], families: list[str], jobs: int) -> list[list[str]]:
    """The case names each ``-j`` slot runs (``WorkerSlot`` decides units, so names alone cannot tell)."""
    from vts.run.runner import Selection, iter_cases
    from vts.run.selection import WorkerSlot

    return [[case.name for _, case in iter_cases(Selection(spec_paths, families, partition=WorkerSlot(slot, jobs)))]
            for slot in range(jobs)]


def nnvts_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "cli", *args]


def nnvts_env(**extra: str) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=ROOT, COLUMNS="200", **extra)


@pytest.fixture
def nnvts() -> Callable[..., subprocess.CompletedProcess]:
    def run(*args: str, timeout: float = 300, **env: str) -> subprocess.CompletedProcess:
        return subprocess.run(nnvts_command(*args), cwd=ROOT, env=nnvts_env(**env), capture_output=True,
                              text=True, timeout=timeout)

    return run


@contextlib.contextmanager
def serving(tmp_path, driver: str = "reference", *options: str) -> Iterator[tuple[subprocess.Popen, str]]:
    """``nnvts serve --socket`` in ``tmp_path`` (with ``options``), listening; stopped by SIGTERM on the way out.

    A service that does not end on SIGTERM fails the test with every thread's stack (SIGABRT: the host's
    faulthandler writes them to its log) and is killed: no process is left behind either way.
    """
    path = str(tmp_path / "drv.sock")
    log_path = tmp_path / "serve.log"
    with open(log_path, "wb") as log:
        server = subprocess.Popen([sys.executable, "-c", "import sys; sys.argv = ['nnvts', 'serve', '--driver', "
                                   f"{driver!r}, '--socket', {path!r}, *{list(options)!r}]; "
                                   "from vts.cli.main import main; main()"],
                                  cwd=ROOT, env=nnvts_env(), stdout=subprocess.DEVNULL, stderr=log)
    try:
        deadline = time.monotonic() + 60
        while not os.path.exists(path) and time.monotonic() < deadline and server.poll() is None:
            time.sleep(0.02)
        assert os.path.exists(path), "nnvts serve did not listen:\n" + log_path.read_text()[-2000:]
        yield server, path
        server.terminate()
        try:
            server.wait(30)  # as long as the soak tests always gave it
        except subprocess.TimeoutExpired:
            server.send_signal(signal.SIGABRT)
            server.wait(20)
            raise AssertionError("nnvts serve did not end on SIGTERM:\n" + log_path.read_text()[-4000:]) from None
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
