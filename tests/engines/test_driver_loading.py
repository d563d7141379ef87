"""Engine drivers without their engines, and the one rule an engine driver is most tempted to break.

These run without any extra installed.
"""

from __future__ import annotations

from unittest import mock

import pytest

from nnvts.drivers.reference import ReferenceDevice
from tests.conftest import hand_add_float
from vts.hal.enums import ErrorStatus
from vts.hal.errors import DriverError
from vts.ipc.drivers import DriverUnavailable, available_drivers, load_device, missing_extra_message
from vts.results import Verdict


def test_missing_extra_names_the_distribution_and_the_extra_to_install():
    requires = ['numpy>=1.26', 'no-such-engine-dist>=2.0; extra == "fastengine"', 'rich; extra == "other"']
    message = missing_extra_message("fast", ["fastengine"], "nnvts", requires)
    assert message == "driver 'fast' needs no-such-engine-dist, not installed: pip install 'nnvts[fastengine]'"
    assert "\n" not in message


def test_installed_extra_is_not_reported():
    assert missing_extra_message("ok", ["x"], "nnvts", ['numpy>=1; extra == "x"']) is None


@pytest.mark.parametrize(("target", "module", "extra"), [
    ("nnvts.drivers.litert:create_device", "ai_edge_litert", "litert"),
    ("nnvts.drivers.onnxruntime:create_device", "onnxruntime", "onnxruntime"),
])
def test_engine_driver_without_its_engine_is_unavailable_in_one_line(target, module, extra):
    with mock.patch("importlib.util.find_spec", return_value=None), pytest.raises(DriverUnavailable) as error:
        load_device(target)
    assert str(error.value).endswith(f"the {module} package is not installed: pip install 'nnvts[{extra}]'")


def test_engine_drivers_are_listed():
    assert {"litert", "onnxruntime", "reference"} <= set(available_drivers())


class ClaimsThenRefuses(ReferenceDevice):
    """Answers every operation supported, then refuses to prepare: what the HAL forbids."""

    def prepare_model(self, model, *args, **kwargs):
        raise DriverError(ErrorStatus.GENERAL_FAILURE, "engine said no")


def test_generated_family_fails_support_claimed_then_prepare_refused(run_generated):
    (result,) = run_generated(hand_add_float(), ClaimsThenRefuses())
    assert result.verdict is Verdict.FAILED
    assert "although every operation was reported supported" in result.reason
