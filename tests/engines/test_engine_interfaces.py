"""The engine drivers say the interface they speak (AIDL v4), `nnvts info` names it, and a reusable execution
of a request the engine plumbing cannot run is refused at creation, as IPreparedModel.aidl asks."""

from __future__ import annotations

import importlib
import json

import pytest
from click.testing import CliRunner

from tests.conftest import hand_add_float
from vts.cli.main import main
from vts.hal.enums import ErrorStatus, HalVersion, MeasureTiming
from vts.hal.errors import DriverError
from vts.hal.types import DataLocation, MemoryToken, Request, RequestArgument
from vts.model.casemodel import build_request, close_model, parse_spec, to_hal_model

DEVICES = [("nnvts.drivers.engine.device", "EngineDevice"), ("nnvts.drivers.litert.device", "LiteRtDevice"),
           ("nnvts.drivers.onnxruntime.device", "OnnxRuntimeDevice"), ("nnvts.drivers.xla.device", "XlaDevice")]


@pytest.mark.parametrize(("module", "name"), DEVICES)
def test_every_engine_device_declares_its_interface_where_it_is_defined(module, name):
    cls = getattr(importlib.import_module(module), name)
    assert vars(cls).get("hal_version") is HalVersion.FL8


def test_nnvts_info_names_the_interface_of_an_engine_driver():
    pytest.importorskip("ai_edge_litert")
    result = CliRunner().invoke(main, ["info", "--driver", "litert", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["interface"] == "AIDL v4, feature level 8"


def test_a_reusable_execution_naming_a_buffer_the_engine_never_allocated_is_refused_at_creation():
    pytest.importorskip("ai_edge_litert")
    from nnvts.drivers.litert import create_device

    (case_model,) = parse_spec(hand_add_float())
    model = to_hal_model(case_model)
    built = build_request(case_model, case_model.examples[0])
    try:
        prepared = create_device().prepare_model(model)
        execution = prepared.create_reusable_execution(built.request, MeasureTiming.YES)
        assert execution.execute().output_shapes
        request = built.request.copy()  # output 0 in a driver buffer (token 7), as memory domains name one
        request.outputs[0] = RequestArgument(False, DataLocation(len(request.pools), 0, 0), [])
        token = Request(request.inputs, request.outputs, [*request.pools, MemoryToken(7)])
        with pytest.raises(DriverError) as refused:
            prepared.create_reusable_execution(token)
        assert refused.value.status == ErrorStatus.INVALID_ARGUMENT
    finally:
        built.close()
        close_model(model)
