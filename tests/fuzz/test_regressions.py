"""Inputs the fuzzer once found breaking the reference driver, replayed on every test run.

Each pair ``NAME.json`` + ``NAME.fuzz`` under ``regressions/`` was saved by
``nnvts fuzz --save-dir`` and is re-sent by the fuzz_replay family exactly as
the fuzzer sent it; the reference must now answer with HAL statuses only.
The replay runs in a driver host limited to 1 GiB of address space, as the
fuzzer's run was limited: ``fuzz_exception_1fb8635103`` (a RESIZE_BILINEAR
whose output size is read from a misplaced constant) ran the driver out of
memory and surfaced as a MemoryError instead of GENERAL_FAILURE.
"""

from __future__ import annotations

import glob
import os

import pytest

from nnvts.drivers.reference import create_device
from vts.families.base import RunOptions
from vts.ipc.process import HostProcess
from vts.results import Verdict
from vts.run.isolated import IsolatedRunner
from vts.run.runner import Selection, iter_cases

HERE = os.path.join(os.path.dirname(__file__), "regressions")
SAVED = sorted(glob.glob(os.path.join(HERE, "*.fuzz")))


def test_there_are_saved_regressions() -> None:
    assert SAVED, "the fuzzer's regression inputs are missing"


@pytest.mark.parametrize("sidecar", SAVED, ids=[os.path.basename(p) for p in SAVED])
def test_reference_answers_saved_fuzz_input_with_hal_statuses(sidecar: str) -> None:
    spec = sidecar[: -len(".fuzz")] + ".json"
    cases = list(iter_cases(Selection([spec], families=["fuzz_replay"])))
    assert len(cases) == 1
    family, case = cases[0]
    host = HostProcess("reference", memory_limit=1 << 30)
    try:
        runner = IsolatedRunner(host.start(), RunOptions(case_timeout=60), None, host=host, rerun_crashes=False)
        result = runner.run_case(family, case)
    finally:
        host.stop()
    assert result.verdict is Verdict.PASSED, (result.reason, result.details)


def test_huge_input_dims_are_refused_not_overflowed() -> None:
    """fuzz_exception_177f07bb71: dims [3, 2**31-1, 2**31-1] overflowed np.prod and crashed the reshape."""
    from vts.families.fuzz_replay.oracle import check_input
    from vts.families.fuzz_replay.saved import build_input, load_sidecar
    from vts.model.casemodel import build_request, close_model, parse_spec, to_hal_model
    from vts.spec.loader import load_file

    model = parse_spec(load_file(os.path.join(HERE, "fuzz_exception_177f07bb71.json")).document)[0]
    case, _ = load_sidecar(os.path.join(HERE, "fuzz_exception_177f07bb71.fuzz"))
    hal_model, built = to_hal_model(model), build_request(model, model.examples[0])
    try:
        fuzz_input = build_input(case, hal_model, built.request)
        check_input(create_device(), fuzz_input)  # raises Finding on a non-HAL exception
        prepared = create_device().prepare_model(fuzz_input.model)
        from vts.hal.enums import ErrorStatus
        from vts.hal.errors import DriverError

        with pytest.raises(DriverError) as refused:
            prepared.execute(fuzz_input.requests[0][1])
        assert refused.value.status == ErrorStatus.INVALID_ARGUMENT
    finally:
        built.close()
        close_model(hal_model)


def test_specs_without_a_fuzz_file_give_no_replay_case() -> None:
    spec = os.path.join(os.path.dirname(HERE), "..", "..", "generated_tests", "abs_elementwise.json")
    assert os.path.exists(spec)
    assert list(iter_cases(Selection([spec], families=["fuzz_replay"]))) == []


def test_sidecar_sits_beside_the_spec_whatever_its_suffix() -> None:
    from vts.families.fuzz_replay.saved import sidecar_path

    assert sidecar_path("d/fuzz_x.json") == "d/fuzz_x.fuzz"
    assert sidecar_path("d/fuzz_x.yaml.gz") == "d/fuzz_x.fuzz"
