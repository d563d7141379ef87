"""The validation sweep with model mutations sent ahead: the same verdicts, each charged to its own case.

``RunOptions.send_ahead`` (what ``nnvts run`` promises) lets the family send
the next model mutations to the driver host before their cases run.  These
run the sweep out of process, as ``nnvts run`` does, and check that the
window is really used, that nothing changes in what a broken driver is told,
and that a death or a hang on a mutation sent ahead lands on that mutation.
Each runs twice: with ``BATCH`` messages (protocol revision 3, several
mutations in one message) and one call a message (the harness asks for no
feature, as with a revision-2 driver).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from tests.conftest import hand_add_float
from vts.families.base import RunOptions
from vts.families.validation import ahead
from vts.families.validation.family import ValidationFamily
from vts.families.validation.mutator_base import Mutation
from vts.ipc import opening
from vts.ipc.call_batch import CallBatch
from vts.ipc.client import Connection
from vts.ipc.process import HostProcess
from vts.ipc.protocol import BATCH_FEATURE
from vts.model.casemodel import parse_spec
from vts.results import CaseResult, Verdict
from vts.run.isolated import IsolatedRunner


def _sweep(driver: str, send_ahead: bool, timeout: float = 30.0) -> dict[str, tuple[Verdict, str]]:
    """Every validation case of the hand ADD model, out of process: name to (verdict, reason)."""
    return {result.name: (result.verdict, result.reason) for result in _sweep_results(driver, send_ahead, timeout)}


def _sweep_results(driver: str, send_ahead: bool, timeout: float = 30.0,
                   pause_before: Callable[[str], bool] = lambda name: False) -> list[CaseResult]:
    """The sweep's results; ``pause_before(name)``: the harness dawdles before that case starts, until the
    driver host has died (of a call sent ahead) or 30 s have passed: a fixed pause was too short on a busy
    machine."""
    family = ValidationFamily()
    host = HostProcess(driver)
    runner = IsolatedRunner(host.start(), RunOptions(case_timeout=timeout, send_ahead=send_ahead), host=host)
    results = []
    try:
        (model,) = parse_spec(hand_add_float())
        for case in family.model_cases(model, "<inline>"):
            if pause_before(case.name):
                until = time.monotonic() + 30.0
                while host.alive() and time.monotonic() < until:
                    time.sleep(0.01)
            results.append(runner.run_case(family, case))
    finally:
        host.stop()
    return results


def _model_mutation(name: str) -> bool:
    return not any(word in name for word in ("remove_input", "remove_output", "pool", "input_dims", "fence"))


@pytest.fixture(autouse=True, params=["batched", "one_by_one"])
def batched(request, monkeypatch) -> bool:
    """Every test runs with batches (the harness asks for ``batch``) and without (it asks for nothing); never for
    ``aidl:N``, so the reference is judged by HAL 1.3's rules both ways (every mutation a rule of its version)."""
    monkeypatch.setattr(opening, "WANTED_FEATURES", (BATCH_FEATURE,) if request.param == "batched" else ())
    return request.param == "batched"


@pytest.fixture
def batches(monkeypatch) -> list[int]:
    """The number of calls of each BATCH sent during the test."""
    sizes: list[int] = []
    original = CallBatch.send

    def counting(self, *args, **kwargs):
        went = original(self, *args, **kwargs)
        if went:
            sizes.append(len(self))
        return went

    monkeypatch.setattr(CallBatch, "send", counting)
    return sizes


@pytest.fixture
def sent(monkeypatch, batches) -> list[str]:
    """The calls sent ahead for later cases (by method) during the test, in batches of several mutations or one
    by one (not a case's own two calls sent together)."""
    calls: list[str] = []
    original = Connection.send_ahead
    original_send = CallBatch.send

    def counting(self, method, *args, **kwargs):
        pending = original(self, method, *args, **kwargs)
        if pending is not None:
            calls.append(method.name)
        return pending

    def counting_batch(self, *args, **kwargs):
        went = original_send(self, *args, **kwargs)
        if went and (kwargs.get("shared") or any(args)):
            calls.extend(call.slot.method.name for call in self.calls)
        return went

    monkeypatch.setattr(Connection, "send_ahead", counting)
    monkeypatch.setattr(CallBatch, "send", counting_batch)
    return calls


@pytest.fixture
def taken(monkeypatch) -> list[bool]:
    """For each model mutation judged: whether its calls had been sent ahead."""
    seen: list[bool] = []
    original = ahead.SentAhead.take

    def recording(self, *args):
        in_flight = original(self, *args)
        seen.append(in_flight is not None)
        return in_flight

    monkeypatch.setattr(ahead.SentAhead, "take", recording)
    return seen


def test_the_reference_passes_with_nearly_every_model_mutation_judged_from_calls_sent_ahead(sent, taken, batched,
                                                                                          batches):
    results = _sweep("reference", send_ahead=True)
    assert {verdict for verdict, _ in results.values()} == {Verdict.PASSED}, results
    model_mutations = [name for name in results if _model_mutation(name)]
    assert len(taken) == len(model_mutations) == 126
    assert sum(taken) >= len(taken) - 2 * ahead.BATCH  # all but the first few (and any a pool change held back)
    assert "GET_SUPPORTED_OPERATIONS" in sent and "PREPARE_MODEL" in sent
    if batched:  # mutations go a batch at a time: several calls a message, far fewer messages than calls
        assert max(batches) >= 2 * ahead.BATCH - 1 and len(batches) * 3 < len(sent), batches
    else:
        assert batches == []


def test_nothing_is_sent_ahead_unless_the_runner_runs_every_case_it_is_given(sent, taken, batched, batches):
    results = _sweep("reference", send_ahead=False)
    assert {verdict for verdict, _ in results.values()} == {Verdict.PASSED}
    assert sent == [] and taken == []
    assert set(batches) == ({1, 2} if batched else set())  # only a case's own query and preparation together


def test_a_driver_accepting_invalid_models_is_told_the_same_sent_ahead_or_not(sent):
    driver = "tests.fakes.broken:accepts_bad_operand_type"
    one_by_one = _sweep(driver, send_ahead=False)
    assert sent == []
    sent_ahead = _sweep(driver, send_ahead=True)
    assert sent
    assert sent_ahead == one_by_one
    assert sum(verdict is Verdict.FAILED for verdict, _ in sent_ahead.values()) >= 16


def _fatal(name: str) -> bool:
    return ".operand_type_" in name and name.endswith("_to_9999")


def test_a_driver_dying_on_a_mutation_sent_ahead_crashes_that_case_and_no_neighbour(taken):
    every = _sweep_results("tests.fakes.validation_faults:exits_on_one_mutation", send_ahead=True)
    results = {result.name: (result.verdict, result.reason) for result in every}
    fatal = {name for name in results if _fatal(name)}
    assert len(fatal) == 4
    for name, (verdict, reason) in results.items():
        if name in fatal:
            assert verdict is Verdict.CRASH and "exited with status 70" in reason, (name, reason)
        else:
            assert verdict is Verdict.PASSED, (name, reason)
    assert sum(taken) > 100  # the window came back after each restart


def test_a_host_dead_of_a_mutation_sent_ahead_before_its_case_starts_is_not_blamed_on_the_case_before(batched):
    """The harness is slow to start the fatal case: the host has died of its calls sent ahead by then.

    In batches the fatal mutation is answered with those before it in its batch, so the host dies while
    the first of those waits; that case is re-run alone and passes (the host never dies between cases).
    """
    first = []

    def pause(name: str) -> bool:
        if _fatal(name) and not first:
            first.append(name)
            return True
        return False

    every = _sweep_results("tests.fakes.validation_faults:exits_on_one_mutation", send_ahead=True,
                           pause_before=pause)
    by_name = {result.name: result for result in every}
    fatal = by_name[first[0]]
    assert fatal.verdict is Verdict.CRASH, fatal
    for result in every:
        assert result.verdict is (Verdict.CRASH if _fatal(result.name) else Verdict.PASSED), result
    if batched:
        assert any("waited for a batch" in d for result in every for d in result.details)
        return
    notes = [d for d in fatal.details if "died after the previous case" in d]
    assert notes and all("sent ahead for the cases after it" in note for note in notes), fatal.details
    assert not any("had died after the previous case" in d for result in every for d in result.details)


def test_a_driver_hanging_on_a_mutation_sent_ahead_times_out_that_case_and_no_neighbour():
    results = _sweep("tests.fakes.validation_faults:hangs_on_one_mutation", send_ahead=True, timeout=1.0)
    for name, (verdict, reason) in results.items():
        expected = Verdict.TIMEOUT if _fatal(name) else Verdict.PASSED
        assert verdict is expected, (name, reason)



class _OrderedHost:
    """A device taking calls ahead as a driver host does, which answers in the order calls arrive: records
    that order.  ``full_at``: the mutations whose preparation finds the socket full when sent ahead."""

    def __init__(self, full_at: set[int]) -> None:
        self.full_at = full_at
        self.arrived: list[tuple[str, int]] = []

    def get_supported_operations_ahead(self, model: int) -> object:
        self.arrived.append(("query", model))
        return object()

    def prepare_model_ahead(self, model: int, preference: object, priority: object) -> object | None:
        if model in self.full_at:
            self.full_at.discard(model)
            return None
        self.arrived.append(("prepare", model))
        return object()


def test_a_preparation_that_could_not_go_ahead_is_not_overtaken_by_later_mutations():
    """The socket was full when a mutation's preparation was to go ahead (its query went): its case sends the
    preparation itself, later, and nothing after it may go first.  Otherwise a driver dying of a later
    mutation dies before answering it, and that case is charged (failed once on a loaded CI machine)."""
    items = [Mutation("operand_type", (i,), f"m{i}", f"mutation {i}") for i in range(40)]
    mutations = ahead.Mutations(items)
    host = _OrderedHost(full_at={12, 13, 30})
    window = ahead.SentAhead()
    for position in range(len(items)):
        in_flight = window.take(mutations, position, host)  # type: ignore[arg-type]
        if in_flight is None:
            host.arrived += [("query", position), ("prepare", position)]  # judged alone
        elif in_flight.preparation is None:
            host.arrived.append(("prepare", position))  # the case sends its held-back preparation now
        window.top_up(position, lambda mutation: items.index(mutation))
    order = [model for _, model in host.arrived]
    assert order == sorted(order), host.arrived
    assert len(host.arrived) == 2 * len(items)
