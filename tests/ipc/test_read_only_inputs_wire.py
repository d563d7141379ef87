"""AIDL input memory read-only out of process: the descriptor the harness sends is opened O_RDONLY, the host (and
the C sample) map it read-only, a driver writing into its input is caught and the next case still runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from tests.conftest import hand_add_float
from tests.ipc.conftest import ROOT
from vts.families.base import RunOptions
from vts.families.generated import GeneratedFamily
from vts.families.read_only_inputs import ReadOnlyInputsFamily
from vts.ipc.drivers import DriverRef
from vts.ipc.process import HostProcess
from vts.model.casemodel import parse_spec
from vts.results import Verdict
from vts.run.isolated import IsolatedRunner

SPEC = os.path.join(ROOT, "generated_tests", "add_binary.json")


def _results(spec: str, document: dict | None = None, **options: str) -> list:
    """read_only_inputs, then generated, on one model: the second shows the run goes on after the first."""
    if document is None:
        with open(SPEC, encoding="utf-8") as file:
            document = json.load(file)
    model = next(m for m in parse_spec(document) if m.name in ("relu", "add"))
    host = HostProcess(DriverRef(spec, tuple(options.items())), extra_env={"PYTHONPATH": ROOT})
    try:
        host.start()
        runner = IsolatedRunner(host.device, RunOptions(case_timeout=30.0), host=host)
        return [runner.run_case(family, case) for family in (ReadOnlyInputsFamily(), GeneratedFamily())
                for case in list(family.model_cases(model, "x"))[:1]]
    finally:
        host.stop()


def test_the_reference_reads_read_only_inputs_and_its_hal_1_3_self_skips():
    assert [r.verdict for r in _results("reference")] == [Verdict.PASSED, Verdict.PASSED]
    skipped, generated = _results("reference", hal="1.3")
    assert skipped.verdict is Verdict.SKIPPED and "input memory is read-only from AIDL" in skipped.reason
    assert generated.verdict is Verdict.PASSED


def test_a_driver_writing_its_input_is_caught_and_the_run_goes_on():
    caught, generated = _results("tests.fakes.broken_inputs:writes_its_input")
    # The host maps the read-only descriptor read-only: the driver's write raises there, reported as its failure.
    assert caught.verdict is Verdict.FAILED and "cannot modify read-only memory" in caught.reason
    assert generated.verdict is Verdict.PASSED


def test_the_c_sample_maps_read_only_inputs_and_passes():
    if shutil.which("make") is None or shutil.which(os.environ.get("CC", "cc")) is None:
        pytest.skip("no C toolchain")
    sample = os.path.join(ROOT, "nnvts", "drivers", "sample_c")
    made = subprocess.run(["make", "-C", sample], capture_output=True, text=True)
    assert made.returncode == 0, made.stdout + made.stderr
    results = _results(f"exec:{os.path.join(sample, 'sample_driver')}", hand_add_float())
    assert [r.verdict for r in results] == [Verdict.PASSED, Verdict.PASSED], [r.reason for r in results]
