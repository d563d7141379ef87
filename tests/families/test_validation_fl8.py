"""The validation sweep through AIDL v4's calls, as Android 13's VTS runs it, and only for a driver of AIDL v4.

A model mutation also goes through ``prepareModelWithConfig`` (in the batch of its query and preparation, the
model encoded once); a request mutation's sync case also through the reusable execution,
``executeSynchronouslyWithConfig`` and a burst's, its fenced case through ``executeFencedWithConfig``.  Each
fake of ``tests.fakes.broken_fl8_validation`` skips validation on one of those calls only, so each is caught
here and nowhere on the older calls; a driver of HAL 1.3 gets the same cases, judged as before.
"""

from __future__ import annotations

from collections import Counter

import pytest

from nnvts.drivers.reference import create_device
from tests.conftest import hand_add_float
from tests.fakes import broken_config, broken_fl8_validation
from vts.families.base import RunOptions
from vts.families.validation.family import ValidationFamily
from vts.hal.config import PrepareModelConfig
from vts.hal.enums import ExecutionPreference, Priority
from vts.ipc import opening
from vts.ipc import protocol as p
from vts.ipc.call_batch import CallBatch
from vts.ipc.client import Connection
from vts.ipc.process import HostProcess
from vts.ipc.proxies import ProxyDevice
from vts.model.casemodel import parse_spec
from vts.results import CaseResult, Verdict
from vts.run.isolated import IsolatedRunner
from vts.run.runner import Runner

FAKES = "tests.fakes.broken_fl8_validation"
#: The fake, and the cases it must fail (by the end of their names) with the call named in the reason.
CAUGHT = {
    "prepares_with_config_unchecked": ("model", "[prepareModelWithConfig]"),
    "sync_with_config_unchecked": (".sync", "[executeSynchronouslyWithConfig]"),
    "burst_with_config_unchecked": (".sync", "[burst executeSynchronouslyWithConfig]"),
    "fenced_with_config_unchecked": (".fenced", "[executeFencedWithConfig]"),
    "reusable_unchecked": (".sync", "[reusable executeSynchronously]"),
    "reusable_fenced_run_unchecked": (".sync", "[reusable executeFenced]"),
}
#: The request mutations of the hand ADD model (each a sync, an async and a fenced case).
REQUEST_MUTATIONS = 11


def _cases():
    family = ValidationFamily()
    (model,) = parse_spec(hand_add_float())
    return family, list(family.model_cases(model, "<inline>"))


def _in_process(device) -> dict[str, CaseResult]:
    family, cases = _cases()
    runner = Runner(device, RunOptions(case_timeout=60))
    return {case.name: runner.run_case(family, case) for case in cases}


def _out_of_process(driver: str, send_ahead: bool = True) -> dict[str, CaseResult]:
    family, cases = _cases()
    host = HostProcess(driver)
    runner = IsolatedRunner(host.start(), RunOptions(case_timeout=30, send_ahead=send_ahead), host=host)
    try:
        return {case.name: runner.run_case(family, case) for case in cases}
    finally:
        host.stop()


def _is_model_mutation(name: str) -> bool:
    return not name.endswith((".sync", ".async", ".fenced"))


def _failed(results: dict[str, CaseResult]) -> dict[str, str]:
    return {name: r.reason for name, r in results.items() if r.verdict is not Verdict.PASSED
            and r.verdict is not Verdict.SKIPPED}


def _check_caught(fake: str, results: dict[str, CaseResult]) -> None:
    where, call = CAUGHT[fake]
    failed = _failed(results)
    if where == "model":
        expected = {n for n, r in results.items() if _is_model_mutation(n) and r.verdict is not Verdict.SKIPPED
                    and "fence" not in n}
    else:
        expected = {n for n in results if n.endswith(tuple(where.split()))}
        assert len(expected) == REQUEST_MUTATIONS * len(where.split())
    assert set(failed) == expected, sorted(set(failed) ^ expected)
    assert all(reason.startswith(call) for reason in failed.values()), failed


def test_the_reference_passes_under_aidl_v4_through_every_call():
    results = _in_process(create_device())
    assert _failed(results) == {}
    assert Counter(r.verdict for r in results.values())[Verdict.SKIPPED] == 7  # numberOfConsumers: no AIDL rule


@pytest.mark.parametrize("fake", sorted(CAUGHT))
def test_a_driver_skipping_validation_on_one_aidl_v4_call_fails_validation_in_process(fake):
    _check_caught(fake, _in_process(getattr(broken_fl8_validation, fake)()))


def test_a_reusable_execution_refusing_at_every_run_instead_of_at_creation_passes():
    """IPreparedModel.aidl: an invalid request is refused at creation or on every execution."""
    assert _failed(_in_process(broken_fl8_validation.reusable_checks_at_run())) == {}


def test_config_calls_skipping_the_preference_and_priority_checks_fail_those_mutations():
    failed = _failed(_in_process(broken_config.skips_checks_with_config()))
    assert sorted(name.rsplit(".", 1)[1] for name in failed) == [
        "execution_preference_-1", "execution_preference_3", "execution_priority_-1", "execution_priority_3"]
    assert all(reason.startswith("[prepareModelWithConfig] accepted") for reason in failed.values())


class _Spy:
    """Counts the AIDL v4 calls made on a device and on the prepared models it returns."""

    def __init__(self, device) -> None:
        self.calls: Counter[str] = Counter()
        self.configs: list[PrepareModelConfig] = []
        prepare, prepare_with_config = device.prepare_model, device.prepare_model_with_config

        def spied_prepare(*args, **kwargs):
            return self._wrap(prepare(*args, **kwargs))

        def spied_with_config(model, config):
            self.calls["prepare_model_with_config"] += 1
            self.configs.append(config)
            return self._wrap(prepare_with_config(model, config))

        device.prepare_model, device.prepare_model_with_config = spied_prepare, spied_with_config

    def _wrap(self, prepared):
        for name in ("execute_synchronously_with_config", "execute_fenced_with_config", "create_reusable_execution",
                     "configure_execution_burst"):
            original = getattr(prepared, name)

            def spied(*args, _name=name, _original=original, **kwargs):
                self.calls[_name] += 1
                return _original(*args, **kwargs)

            setattr(prepared, name, spied)
        return prepared


@pytest.mark.parametrize("hal", ["1.3", "aidl-v3"])
def test_a_driver_below_aidl_v4_gets_the_same_cases_and_no_aidl_v4_call(hal):
    device = create_device(hal=hal)
    spy = _Spy(device)
    results = _in_process(device)
    assert set(results) == set(_in_process(create_device()))
    assert not _failed(results)
    assert spy.calls == Counter()


def test_an_aidl_v4_driver_gets_each_call_once_a_mutation_with_the_mutations_preference_and_priority():
    device = create_device()
    spy = _Spy(device)
    results = _in_process(device)
    judged = [n for n, r in results.items() if _is_model_mutation(n) and "fence" not in n
              and r.verdict is Verdict.PASSED]
    assert spy.calls == Counter({
        "prepare_model_with_config": len(judged),
        "create_reusable_execution": REQUEST_MUTATIONS,  # in the sync case
        "execute_synchronously_with_config": REQUEST_MUTATIONS,
        "configure_execution_burst": REQUEST_MUTATIONS,
        "execute_fenced_with_config": REQUEST_MUTATIONS,
    })
    assert {(c.preference, c.priority) for c in spy.configs} == {
        (ExecutionPreference.FAST_SINGLE_ANSWER, Priority.MEDIUM), (-1, Priority.MEDIUM), (3, Priority.MEDIUM),
        (ExecutionPreference.FAST_SINGLE_ANSWER, -1), (ExecutionPreference.FAST_SINGLE_ANSWER, 3)}


# Out of process: the driver grants batch, batch_config and aidl:4 (as nnvts run asks), or only aidl:4 (one call a
# message).


@pytest.fixture(params=["batched", "one_by_one"])
def batched(request, monkeypatch) -> bool:
    batch = (p.BATCH_FEATURE, *p.BATCH_EXTRA_FEATURES)
    wanted = (*batch, *p.AIDL_FEATURES) if request.param == "batched" else tuple(p.AIDL_FEATURES)
    monkeypatch.setattr(opening, "WANTED_FEATURES", wanted)
    return request.param == "batched"


@pytest.mark.parametrize("fake", sorted(CAUGHT))
def test_a_driver_skipping_validation_on_one_aidl_v4_call_fails_validation_out_of_process(fake, batched):
    _check_caught(fake, _out_of_process(f"{FAKES}:{fake}"))


def test_prepare_model_with_config_rides_in_the_batch_of_its_query_and_preparation(batched, monkeypatch):
    """Each mutation's three calls in one message, and ``prepareModelWithConfig`` never encodes the model again
    (``sent_unchanged``: the bytes written for the query are reused)."""
    batches: list[Counter[str]] = []
    alone: list[str] = []
    encoded: list[str] = []
    inside: list[str] = []
    send, call, send_ahead, write_model = CallBatch.send, Connection.call, Connection.send_ahead, p.write_model

    def counting_batch(self, *args, **kwargs):
        went = send(self, *args, **kwargs)
        if went:
            batches.append(Counter(c.slot.method.name for c in self.calls))
        return went

    def counting_call(self, method, *args, **kwargs):
        alone.append(method.name)
        return call(self, method, *args, **kwargs)

    def counting_ahead(self, method, *args, **kwargs):
        alone.append(method.name)
        return send_ahead(self, method, *args, **kwargs)

    def counting_encode(w, model, *args, **kwargs):
        encoded.append(inside[-1] if inside else "")
        return write_model(w, model, *args, **kwargs)

    def marked(name):
        original = getattr(ProxyDevice, name)

        def within(self, *args, **kwargs):
            inside.append(name)
            try:
                return original(self, *args, **kwargs)
            finally:
                inside.pop()

        monkeypatch.setattr(ProxyDevice, name, within)

    monkeypatch.setattr(CallBatch, "send", counting_batch)
    monkeypatch.setattr(Connection, "call", counting_call)
    monkeypatch.setattr(Connection, "send_ahead", counting_ahead)
    monkeypatch.setattr(p, "write_model", counting_encode)
    marked("prepare_model_with_config_ahead")
    marked("prepare_model_with_config")
    results = _out_of_process("reference")
    assert _failed(results) == {}
    mutations = sum(_is_model_mutation(n) and "fence" not in n for n in results)
    with_config = "PREPARE_MODEL_WITH_CONFIG"
    assert sum(b[with_config] for b in batches) + alone.count(with_config) == mutations
    if batched:  # alone only where its query went alone too (the first case, sent before the host is known)
        assert alone.count(with_config) < alone.count("GET_SUPPORTED_OPERATIONS") <= 3, alone
        assert all(b[with_config] == b["PREPARE_MODEL"] for b in batches), batches
    else:
        assert batches == []
    assert len(encoded) >= mutations and set(encoded) == {""}
