"""AIDL v4's ``*_WITH_CONFIG`` kinds (docs/protocol.md §5.5): an out-of-process AIDL v4 driver is judged on its own
``*WithConfig`` calls with the hints as sent; a driver not granting ``aidl:4`` never receives them."""

from __future__ import annotations

import json
import os

import pytest

from tests.conftest import hand_add_float
from tests.ipc.conftest import ROOT
from vts.families.base import RunOptions
from vts.families.hints import HintsFamily
from vts.families.with_config import WithConfigFamily
from vts.hal.config import PrepareModelConfig, TokenValuePair
from vts.hal.types import ExtensionNameAndPrefix
from vts.ipc import protocol as p
from vts.ipc.drivers import DriverRef
from vts.ipc.errors import RequestRejected
from vts.ipc.process import HostProcess
from vts.ipc.protocol import Reader, Writer
from vts.model.casemodel import parse_spec, to_hal_model
from vts.results import Verdict
from vts.run.isolated import IsolatedRunner

SPEC = os.path.join(ROOT, "generated_tests", "add_binary.json")


def _host(spec: str, **options: str) -> HostProcess:
    return HostProcess(DriverRef(spec, tuple(options.items())), extra_env={"PYTHONPATH": ROOT})


def _verdicts(spec: str, **options: str) -> dict[str, set[Verdict]]:
    with open(SPEC, encoding="utf-8") as file:
        model = next(m for m in parse_spec(json.load(file)) if m.name == "relu")
    host = _host(spec, **options)
    try:
        host.start()
        runner = IsolatedRunner(host.device, RunOptions(case_timeout=30.0), host=host)
        return {family.name: {runner.run_case(family, case).verdict for case in family.model_cases(model, SPEC)}
                for family in (WithConfigFamily(), HintsFamily())}
    finally:
        host.stop()


def test_the_hints_trailer_round_trips():
    w = Writer()
    hints = (TokenValuePair(0x7ABC0001), TokenValuePair(0x7ABD0002, b"\x00\xff"))
    table = (ExtensionNameAndPrefix("org.example", 0x7ABD),)
    p.write_hints(w, hints, table)
    r = Reader(bytes(w.buf))
    assert p.read_hints(r) == (hints, table)
    r.end()


def test_the_reference_passes_out_of_process_through_its_own_config_calls():
    assert _verdicts("reference") == {"with_config": {Verdict.PASSED}, "hints": {Verdict.PASSED}}


@pytest.mark.parametrize("fake", ["hints_change_results", "refuses_unknown_hints"])
def test_a_driver_mishandling_hints_is_caught_out_of_process_by_hints_only(fake):
    # Each fake acts only on the hints it receives: caught here, they crossed the protocol as sent.
    assert _verdicts(f"tests.fakes.broken_hints:{fake}") == {"with_config": {Verdict.PASSED},
                                                              "hints": {Verdict.FAILED}}


def test_without_aidl_4_the_kinds_are_refused_and_never_sent():
    host = _host("reference", hal="1.3")
    try:
        device = host.start()
        model = to_hal_model(parse_spec(hand_add_float())[0])
        for method in (p.Method.PREPARE_MODEL_WITH_CONFIG, p.Method.EXECUTE_WITH_CONFIG,
                       p.Method.EXECUTE_FENCED_WITH_CONFIG, p.Method.BURST_EXECUTE_WITH_CONFIG):
            with pytest.raises(RequestRejected, match="needs the aidl:4 feature"):
                device.connection.call(method, lambda w: w.u32(1))
        # The proxy falls back to PREPARE_MODEL (a compilation hint it cannot carry is ignored, as the HAL lets it).
        prepared = device.prepare_model_with_config(model, PrepareModelConfig(compilation_hints=(TokenValuePair(5),)))
        assert prepared is not None
    finally:
        host.stop()
    assert _verdicts("reference", hal="1.3") == {"with_config": {Verdict.SKIPPED}, "hints": {Verdict.SKIPPED}}


def test_the_configs_loop_timeout_crosses_the_protocol():
    # Dropped on the way, the reference would abort the loop at its 2 s default: the case would fail.
    with open(os.path.join(ROOT, "generated_tests", "while_infinite_loop.json"), encoding="utf-8") as file:
        model = parse_spec(json.load(file))[0]
    host = _host("reference")
    try:
        host.start()
        family = WithConfigFamily()
        runner = IsolatedRunner(host.device, RunOptions(case_timeout=30.0), host=host)
        results = [runner.run_case(family, case) for case in family.model_cases(model, "x")]
    finally:
        host.stop()
    assert [r.verdict for r in results] == [Verdict.PASSED], [r.reason for r in results]


def test_each_config_call_sends_its_own_kind_with_aidl_4():
    model = parse_spec(hand_add_float())[0]
    host = _host("reference")
    try:
        device = host.start()
        sent: list[int] = []
        call = device.connection.call

        def recording(method, *args, **kwargs):
            sent.append(method)
            return call(method, *args, **kwargs)

        device.connection.call = recording
        family = WithConfigFamily()
        runner = IsolatedRunner(device, RunOptions(case_timeout=30.0), host=host)
        results = [runner.run_case(family, case) for case in family.model_cases(model, "x")]
    finally:
        host.stop()
    assert {r.verdict for r in results} == {Verdict.PASSED}
    assert {p.Method.PREPARE_MODEL_WITH_CONFIG, p.Method.EXECUTE_WITH_CONFIG, p.Method.EXECUTE_FENCED_WITH_CONFIG,
            p.Method.BURST_EXECUTE_WITH_CONFIG} <= set(sent)
    assert not {p.Method.PREPARE_MODEL, p.Method.EXECUTE, p.Method.EXECUTE_FENCED, p.Method.BURST_EXECUTE} & set(sent)


@pytest.mark.parametrize(("fake", "caught_in"), [("declared_shapes_with_config", "/dynamic_output_shape/"),
                                                ("refuses_buffers_with_config", "/memory_domain/")])
def test_config_calls_breaking_a_rerun_are_caught_out_of_process_by_that_rerun(fake, caught_in):
    with open(SPEC, encoding="utf-8") as file:
        model = next(m for m in parse_spec(json.load(file)) if m.name == "relu")
    host = _host(f"tests.fakes.broken_config:{fake}")
    try:
        host.start()
        runner = IsolatedRunner(host.device, RunOptions(case_timeout=30.0), host=host)
        family = WithConfigFamily()
        results = [runner.run_case(family, case) for case in family.model_cases(model, SPEC)]
    finally:
        host.stop()
    failed = {r.name for r in results if r.verdict is Verdict.FAILED}
    assert failed and all(caught_in in name for name in failed)
    assert {r.verdict for r in results if r.name not in failed} == {Verdict.PASSED}
