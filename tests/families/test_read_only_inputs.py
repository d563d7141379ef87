"""The read_only_inputs family and the read-only view under it: the reference (AIDL v4) reads read-only inputs and
passes; a driver writing into its input fails there (and nowhere else); a HAL 1.3 driver is skipped, the rule named."""

from __future__ import annotations

import os

import pytest

from nnvts.drivers.reference import create_device
from tests.fakes import broken_inputs
from tests.families.test_request_padding import SPEC, _model
from vts.families.base import RunOptions
from vts.families.generated import GeneratedFamily
from vts.families.read_only_inputs import ReadOnlyInputsFamily
from vts.hal import memory
from vts.results import Verdict
from vts.run.runner import Runner


def _results(device, family) -> list:
    runner = Runner(device, RunOptions())
    return [runner.run_case(family, case) for case in family.model_cases(_model(), SPEC)]


def test_the_reference_passes():
    assert [r.verdict for r in _results(create_device(), ReadOnlyInputsFamily())] == [Verdict.PASSED]


def test_a_driver_writing_its_input_fails_here_and_passes_generated():
    (caught,) = _results(broken_inputs.writes_its_input(), ReadOnlyInputsFamily())
    assert caught.verdict is Verdict.FAILED
    assert "raised TypeError (cannot modify read-only memory)" in caught.reason
    assert {r.verdict for r in _results(broken_inputs.writes_its_input(), GeneratedFamily())} == {Verdict.PASSED}


def test_a_hal_1_3_driver_is_skipped_naming_the_rule():
    (result,) = _results(create_device(hal="1.3"), ReadOnlyInputsFamily())
    assert result.verdict is Verdict.SKIPPED and "read-only from AIDL v1" in result.reason


@pytest.mark.parametrize("kind", memory.POOL_KINDS)
def test_a_read_only_view_sees_the_harness_writes_and_refuses_its_own(kind):
    pool = memory.allocate(kind, 64)
    view = memory.read_only_view(pool)
    try:
        assert view.read_only and not pool.read_only
        pool.write(0, b"abc")
        assert view.read(0, 3) == b"abc" and bytes(view.buffer[:3]) == b"abc"
        with pytest.raises(TypeError):
            view.buffer[0:1] = b"x"
        with pytest.raises(PermissionError):
            view.write(0, b"x")
        received = memory.from_fd(kind, 64, os.dup(view.fd))  # what the host maps: read-only, asked of the fd
        assert received.read_only and received.read(0, 3) == b"abc"
        received.close()
        assert pool.read(0, 3) == b"abc"
    finally:
        view.close()
        pool.close()
