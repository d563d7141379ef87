"""The ``aidl:N`` features over the protocol (docs/protocol.md §5.3, §5.5): a driver reached out of process is
judged by the AIDL version it grants, HAL 1.3 when it grants none, and reaches reusable executions with
``aidl:4``; drivers of earlier revisions and bad grants behave as the document says."""

from __future__ import annotations

import json
import os
import sys
import threading

import pytest

from tests.conftest import hand_add_float
from tests.ipc.conftest import ROOT
from vts.families.base import RunOptions
from vts.families.burst import BurstFamily
from vts.families.generated import GeneratedFamily
from vts.families.reusable_execution import ReusableExecutionFamily
from vts.hal.enums import ErrorStatus, HalVersion, MeasureTiming
from vts.hal.errors import DriverError
from vts.hal.interfaces import Burst, PreparedModel
from vts.hal.memory import allocate
from vts.hal.types import ExecutionResult, MemoryToken, Request, Timing
from vts.ipc import protocol as p
from vts.ipc.burst_proxy import AidlFallbackBurst
from vts.ipc.drivers import DriverRef
from vts.ipc.errors import RequestRejected
from vts.ipc.execution_proxy import ProxyExecution
from vts.ipc.process import HostProcess, HostStartError
from vts.model.casemodel import parse_spec, to_hal_model
from vts.results import Verdict
from vts.run.isolated import IsolatedRunner
from vts.run.runner import Runner

GENERATED = os.path.join(ROOT, "generated_tests")
REUSABLE_SPEC = os.path.join(GENERATED, "add_binary.json")
FIRST_REVISION = f"exec:{sys.executable} -m tests.fakes.protocol_v1"
SECOND_REVISION = f"exec:{sys.executable} -m tests.fakes.protocol_v2"
AIDL_MODES = f"exec:{sys.executable} -m tests.fakes.protocol_aidl"


def _host(spec: str, **options: str) -> HostProcess:
    return HostProcess(DriverRef(spec, tuple(options.items())), extra_env={"PYTHONPATH": ROOT})


def _spec(name: str) -> dict:
    with open(os.path.join(GENERATED, name + ".json"), encoding="utf-8") as file:
        return json.load(file)


def _generated(host: HostProcess, document: dict, limit: int = 3) -> list:
    family, runner = GeneratedFamily(), IsolatedRunner(host.device, RunOptions(case_timeout=30.0), host=host)
    cases = [case for model in parse_spec(document) for case in family.model_cases(model, "<inline>")][:limit]
    return [runner.run_case(family, case) for case in cases]


def test_the_reference_out_of_process_speaks_aidl_v4_and_runs_feature_level_6():
    host = _host("reference")
    try:
        device = host.start()
        assert device.hal_version is HalVersion.FL8
        assert {"aidl:4", "batch", "batch_config", "execute_async"} == device.connection.features
        results = _generated(host, _spec("pack_basic")) + _generated(host, _spec("batch_matmul_hand"))
    finally:
        host.stop()
    assert {r.verdict for r in results} == {Verdict.PASSED}, [(r.name, r.reason) for r in results]


def test_with_hal_1_3_the_reference_grants_no_aidl_and_is_judged_as_1_3():
    host = _host("reference", hal="1.3")
    try:
        device = host.start()
        assert device.hal_version is HalVersion.V1_3
        assert device.connection.features == {"batch", "batch_config", "execute_async"}
        pack = _generated(host, _spec("pack_basic"), limit=1)
        added = _generated(host, hand_add_float())
        prepared = device.prepare_model(to_hal_model(parse_spec(hand_add_float())[0]))
        # No aidl:4: the REUSABLE_* kinds are refused by the host, and the proxy never sends them.
        with pytest.raises(RequestRejected, match="needs the aidl:4 feature"):
            device.connection.call(p.Method.REUSABLE_EXECUTE, lambda w: (w.u32(1), w.optional_i64(None)))
        assert not isinstance(prepared.create_reusable_execution(Request([], [], [])), ProxyExecution)
    finally:
        host.stop()
    assert pack[0].verdict is Verdict.SKIPPED
    assert pack[0].reason == "the model needs feature level 6; the driver speaks HAL 1.3"
    assert {r.verdict for r in added} == {Verdict.PASSED}


@pytest.mark.parametrize("spec", [FIRST_REVISION, SECOND_REVISION, f"{AIDL_MODES} no_aidl"],
                         ids=["revision-1", "revision-2", "revision-3-without-aidl"])
def test_drivers_without_the_aidl_feature_still_run_as_hal_1_3(spec):
    host = _host(spec)
    try:
        device = host.start()
        assert device.hal_version is HalVersion.V1_3
        assert not any(f.startswith(p.AIDL_FEATURE_PREFIX) for f in device.connection.features)
        pack = _generated(host, _spec("pack_basic"), limit=1)
        added = _generated(host, hand_add_float())
    finally:
        host.stop()
    assert pack[0].verdict is Verdict.SKIPPED
    assert {r.verdict for r in added} == {Verdict.PASSED}, [(r.name, r.reason) for r in added]


@pytest.mark.parametrize(("mode", "reason"), [
    ("two", r"OPEN granted 2 AIDL versions \(aidl:3, aidl:4\): a driver speaks one"),
    ("five", "OPEN granted features the harness did not ask for: aidl:5"),
])
def test_a_driver_granting_two_aidl_versions_or_one_not_asked_does_not_start(mode, reason):
    host = _host(f"{AIDL_MODES} {mode}")
    with pytest.raises(HostStartError, match=f"did not start: {reason}"):
        host.start()
    host.stop()


def _reusable_verdicts(spec: str) -> dict[str, Verdict]:
    """The reusable_execution cases of add_binary.relu (two examples with different goldens), out of process."""
    with open(REUSABLE_SPEC, encoding="utf-8") as file:
        model = next(m for m in parse_spec(json.load(file)) if m.name == "relu")
    host = _host(spec)
    try:
        host.start()
        family = ReusableExecutionFamily()
        runner = IsolatedRunner(host.device, RunOptions(case_timeout=30.0), host=host)
        verdicts = {case.config["kind"]: runner.run_case(family, case) for case in family.model_cases(model, "x")}
    finally:
        host.stop()
    return {kind: result.verdict for kind, result in verdicts.items()}


def test_an_aidl_driver_without_execute_async_is_run_through_execute_instead():
    """AIDL has no asynchronous execute: a driver granting aidl:4 and not execute_async is never sent
    EXECUTE_ASYNC (its handler is gone: one sent would fail the case), the harness's asynchronous path runs
    EXECUTE for it (docs/protocol.md §6); a HAL 1.3 driver is sent it with or without the feature."""
    host = _host(f"{AIDL_MODES} no_async")
    try:
        device = host.start()
        assert device.connection.features == {"aidl:4", "batch", "batch_config"}
        results = _generated(host, hand_add_float()) + _generated(host, _spec("pack_basic"), limit=1)
    finally:
        host.stop()
    assert {r.verdict for r in results} == {Verdict.PASSED}, [(r.name, r.reason) for r in results]
    host = _host(f"{AIDL_MODES} no_aidl,no_async")
    try:
        host.start()
        (result,) = _generated(host, hand_add_float(), limit=1)
    finally:
        host.stop()
    assert result.verdict is Verdict.FAILED and "unknown request code 13" in result.reason + " ".join(result.details)


def test_reusable_executions_pass_out_of_process_on_the_drivers_own_executions():
    assert _reusable_verdicts("reference") == dict.fromkeys(KINDS, Verdict.PASSED)


KINDS = ("sync", "fenced", "invalid_request", "one_at_a_time", "prepared_with_config")


def test_a_reusable_execution_keeping_its_first_inputs_is_caught_out_of_process():
    verdicts = _reusable_verdicts("tests.fakes.broken_reusable:keeps_first_inputs")
    assert verdicts["sync"] is Verdict.FAILED and verdicts["fenced"] is Verdict.FAILED
    assert verdicts["one_at_a_time"] is Verdict.PASSED


def test_the_fault_in_models_prepared_with_config_is_caught_out_of_process_by_that_case_alone():
    verdicts = _reusable_verdicts("tests.fakes.broken_reusable:keeps_first_inputs_prepared_with_config")
    assert verdicts.pop("prepared_with_config") is Verdict.FAILED
    assert set(verdicts.values()) == {Verdict.PASSED}


def test_a_reusable_execution_running_two_at_once_is_caught_out_of_process():
    verdicts = _reusable_verdicts("tests.fakes.broken_reusable:runs_two_at_once")
    assert verdicts["one_at_a_time"] is Verdict.FAILED
    assert verdicts["sync"] is Verdict.PASSED and verdicts["fenced"] is Verdict.PASSED


def test_no_execution_over_the_protocol_is_the_null_handle_and_fails_as_in_process():
    verdicts = _reusable_verdicts("tests.fakes.broken_reusable:returns_no_execution")
    assert set(verdicts.values()) == {Verdict.FAILED}


def test_the_burst_family_judges_an_aidl_driver_out_of_process_by_aidls_rules():
    host = _host("reference")
    try:
        host.start()
        family = BurstFamily()
        runner = IsolatedRunner(host.device, RunOptions(case_timeout=30.0), host=host)
        (model,) = parse_spec(hand_add_float())
        results = [runner.run_case(family, case) for case in family.model_cases(model, "<inline>")]
    finally:
        host.stop()
    assert results and {r.verdict for r in results} == {Verdict.PASSED}, [(r.name, r.reason) for r in results]


class _Recording(PreparedModel):
    """Records the request each execution gets."""

    def __init__(self) -> None:
        self.requests: list[Request] = []

    def execute(self, request, measure=MeasureTiming.NO, deadline=None, loop_timeout=None) -> ExecutionResult:
        self.requests.append(request)
        return ExecutionResult([], Timing())


def test_the_aidl_fallback_burst_passes_token_minus_1_and_driver_buffers_on_and_keeps_aidls_rules():
    prepared = _Recording()
    burst = AidlFallbackBurst(prepared)
    first, second, token = allocate("ashmem", 8), allocate("ashmem", 8), MemoryToken(3)
    burst.execute(Request([], [], [first, second, token]), [-1, -1, 5])
    assert prepared.requests[-1].pools == [first, second, token]
    assert burst.held_slots() == frozenset()  # nothing with no identity, no driver buffer, is kept
    burst.execute(Request([], [], [first, token]), [1, -1])
    burst.execute(Request([], [], [first, token]), [1, -1])  # token 1 held, its memory given again
    assert prepared.requests[-1].pools == [first, token]
    assert burst.held_slots() == frozenset({1})
    for pools, ids in (([None], [-1]), ([first], [2, 3]), ([first], [-2]), ([second], [1]),
                       ([first, second], [4, 4])):
        with pytest.raises(DriverError) as refused:
            burst.execute(Request([], [], pools), ids)
        assert refused.value.status == ErrorStatus.INVALID_ARGUMENT
    with pytest.raises(DriverError) as refused:
        burst.free_memory(-2)
    assert refused.value.status == ErrorStatus.INVALID_ARGUMENT
    burst.free_memory(1)
    burst.execute(Request([], [], [second]), [1])  # released: the token may name another memory now
    assert prepared.requests[-1].pools == [second]


def _burstless_host(hal: str) -> tuple[object, object]:
    """A reference (``hal``) served from a thread by a host that knows no BURST_* kinds, and the harness's device."""
    from nnvts.drivers.reference import create_device
    from vts.ipc.client import connect
    from vts.ipc.driver_host import DriverHost

    harness, driver = p.socket_pair()
    host = DriverHost(create_device(hal=hal), driver)
    for method in (p.Method.BURST_CONFIGURE, p.Method.BURST_EXECUTE, p.Method.BURST_FREE_MEMORY):
        del host.handlers[method]
    threading.Thread(target=host.serve, daemon=True).start()
    return connect(harness, timeout=5), harness


@pytest.mark.parametrize(("hal", "stand_in"), [("aidl-v4", AidlFallbackBurst), ("1.3", Burst)])
def test_the_harness_stands_in_for_a_driver_without_bursts_by_its_versions_rules(hal, stand_in):
    device, harness = _burstless_host(hal)
    try:
        family, runner = BurstFamily(), Runner(device, RunOptions(case_timeout=30.0))
        (model,) = parse_spec(hand_add_float())
        burst = device.prepare_model(to_hal_model(model)).configure_execution_burst()
        assert type(burst) is stand_in
        results = [runner.run_case(family, case) for case in family.model_cases(model, "<inline>")]
    finally:
        harness.close()
    assert results and {r.verdict for r in results} == {Verdict.PASSED}, [(r.name, r.reason) for r in results]
