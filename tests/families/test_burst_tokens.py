"""AIDL bursts (IBurst.aidl): the base Burst's token rules, the burst family's AIDL cases, memory_domain's
burst path, and the drivers breaking one token rule each caught, in and out of process."""

from __future__ import annotations

import pytest

from nnvts.drivers.reference import create_device
from tests.conftest import hand_add_float, hand_add_quant8
from tests.fakes import broken_burst_tokens
from tests.families.test_burst import run_cases
from tests.families.test_concurrency import corpus_documents, isolated, not_passed
from tests.ipc.conftest import hand_mul_float
from vts.families._kit.burst_path import execute_on_fresh_burst, vts_tokens
from vts.families._kit.burst_tokens import mutations
from vts.families._kit.device_memory_runs import AIDL_EXECUTORS, BURST, HIDL_EXECUTORS, executors_for
from vts.families._kit.executions import Executor, prepare_for_case
from vts.families.base import RunOptions
from vts.families.memory_domain.family import MemoryDomainFamily
from vts.hal import memory as hal_memory
from vts.hal.enums import ErrorStatus, HalVersion, MeasureTiming
from vts.hal.errors import DriverError
from vts.hal.interfaces import Burst, PreparedModel
from vts.hal.types import ExecutionResult, MemoryToken, Request, Timing
from vts.ipc.drivers import DriverRef
from vts.ipc.process import HostProcess
from vts.model.casemodel import build_request, parse_spec
from vts.results import Verdict
from vts.run.isolated import IsolatedRunner
from vts.run.runner import Runner


class _Recording(PreparedModel):
    """Records the pools each execution gets."""

    def __init__(self) -> None:
        self.pools: list[list[object]] = []

    def execute(self, request, measure=MeasureTiming.NO, deadline=None, loop_timeout=None) -> ExecutionResult:
        self.pools.append(list(request.pools))
        return ExecutionResult([], Timing())


def _refused(call) -> None:
    with pytest.raises(DriverError) as refused:
        call()
    assert refused.value.status == ErrorStatus.INVALID_ARGUMENT


# -- the base Burst under AIDL -------------------------------------------------------------------------


def test_the_base_burst_follows_the_version_of_its_prepared_model():
    prepared = _Recording()
    assert Burst(prepared).hal_version == HalVersion.V1_3  # a prepared model says nothing: HAL 1.3
    prepared.hal_version = HalVersion.FL8
    assert Burst(prepared).aidl_rules
    assert not Burst(prepared, HalVersion.V1_2).aidl_rules


def test_the_checked_base_gives_its_prepared_models_the_devices_version():
    model = parse_spec(hand_add_float())[0]
    for hal, version in (("aidl-v4", HalVersion.FL8), ("aidl-v1", HalVersion.FL5), ("1.3", HalVersion.V1_3)):
        prepared, _ = prepare_for_case(create_device(hal=hal), model, RunOptions())
        assert prepared.hal_version == version
        assert prepared.configure_execution_burst().hal_version == version


def test_aidl_tokens_minus_1_and_driver_buffers_pass_and_held_tokens_take_their_memory_again():
    prepared = _Recording()
    burst = Burst(prepared, HalVersion.FL8)
    first, second, buffer = hal_memory.allocate("ashmem", 8), hal_memory.allocate("ashmem", 8), MemoryToken(7)
    burst.execute(Request([], [], [first, second, buffer]), [-1, -1, -1])
    assert prepared.pools[-1] == [first, second, buffer] and burst.held_slots() == frozenset()
    for _ in range(2):  # tokens 0 and 1 kept, then the same memories given again: the normal AIDL path
        burst.execute(Request([], [], [first, second, buffer]), [0, 1, -1])
    assert burst.held_slots() == {0, 1}
    burst.execute(Request([], [], [first, first]), [0, 0])  # one memory behind two pools, one token
    burst.free_memory(0)
    burst.free_memory(0)  # twice, and one never given: nothing to forget
    burst.free_memory(99)
    burst.execute(Request([], [], [second]), [0])  # released: the token may name another memory
    assert burst.held_slots() == {0, 1} and prepared.pools[-1] == [second]


@pytest.mark.parametrize(("pools", "tokens"), [
    (2, [-2, 0]), (2, [0, -(1 << 40)]), (2, [0]), (2, [-1, -1, -1]), (1, [1 << 63]), (1, ["0"]), (1, [True]),
])
def test_aidl_malformed_tokens_are_refused_and_nothing_is_kept(pools, tokens):
    prepared = _Recording()
    burst = Burst(prepared, HalVersion.FL8)
    request = Request([], [], [hal_memory.allocate("ashmem", 8) for _ in range(pools)])
    _refused(lambda: burst.execute(request, tokens))
    assert prepared.pools == [] and burst.held_slots() == frozenset()


def test_aidl_refuses_a_missing_pool_another_memory_under_a_held_token_and_release_below_minus_1():
    burst = Burst(_Recording(), HalVersion.FL8)
    first, second = hal_memory.allocate("ashmem", 8), hal_memory.allocate("ashmem", 8)
    _refused(lambda: burst.execute(Request([], [], [None]), [-1]))  # AIDL has no held pool
    burst.execute(Request([], [], [first]), [3])
    _refused(lambda: burst.execute(Request([], [], [second]), [3]))  # a token names one memory until released
    _refused(lambda: burst.execute(Request([], [], [first, second]), [5, 5]))
    _refused(lambda: burst.free_memory(-2))
    burst.free_memory(-1)  # no identity: nothing held under it
    assert burst.held_slots() == {3}


def test_hidl_bursts_keep_their_slot_rules():
    burst = Burst(_Recording(), HalVersion.V1_3)
    memory = hal_memory.allocate("ashmem", 8)
    _refused(lambda: burst.execute(Request([], [], [memory]), [-1]))
    _refused(lambda: burst.execute(Request([], [], [MemoryToken(1)]), [0]))
    burst.free_memory(-2)  # HIDL's freeMemory returns nothing
    burst.execute(Request([], [], [memory]), [0])
    _refused(lambda: burst.execute(Request([], [], [memory]), [0]))  # given while held
    burst.execute(Request([], [], [None]), [0])


def test_vts_tokens_number_shared_pools_and_give_driver_buffers_minus_1():
    memory = hal_memory.allocate("ashmem", 8)
    assert vts_tokens(Request([], [], [memory, MemoryToken(4), memory, MemoryToken(9)])) == [0, -1, 1, -1]


def test_the_aidl_mutations_are_vts_validate_bursts():
    model = parse_spec(hand_add_float())[0]
    slugs = [m.slug for m in mutations(model)]
    assert slugs == ["token_minus_2_pool_0", "token_minus_2_pool_1", "fewer_tokens", "more_tokens",
                     "remove_input_0", "remove_input_1", "remove_output_0"]


# -- the family on the reference -----------------------------------------------------------------------


def test_the_reference_passes_the_aidl_cases_in_process_naming_the_hidl_rules_left_out():
    documents = [hand_add_float(), hand_add_quant8(), hand_mul_float(), *corpus_documents()]
    results = run_cases(Runner(create_device(), RunOptions(case_timeout=60)), documents)
    assert results and not not_passed(results)
    validation = results["burst/validation/hand_add_float.add"]
    for rule in ("token -1", "driver-managed buffers", "int64", "held pool", "given every memory"):
        assert rule in validation.reason, validation.reason


@pytest.mark.parametrize("hal", ["aidl-v4", "1.3"])
def test_the_reference_passes_out_of_process_under_both(hal):
    host = HostProcess(DriverRef("reference", (("hal", hal),)))
    runner = IsolatedRunner(host.start(), RunOptions(case_timeout=30), host=host)
    try:
        results = run_cases(runner, [hand_add_float(), hand_add_quant8()])
        burst = runner.device.prepare_model(_hal_model()).configure_execution_burst()
        answer = _release_minus_2(burst)
    finally:
        host.stop()
    assert len(results) == 4 and not not_passed(results)
    # releaseMemoryResource(-2) comes back over the protocol: INVALID_ARGUMENT under AIDL, nothing under HIDL.
    assert answer == (ErrorStatus.INVALID_ARGUMENT if hal == "aidl-v4" else ErrorStatus.NONE)


def _hal_model():
    from vts.model.casemodel import to_hal_model

    return to_hal_model(parse_spec(hand_add_float())[0])


def _release_minus_2(burst: Burst) -> ErrorStatus:
    try:
        burst.free_memory(-2)
    except DriverError as error:
        return error.status
    return ErrorStatus.NONE


# -- broken drivers ----------------------------------------------------------------------------------


def _verdicts(results: dict) -> dict[str, Verdict]:
    return {"validation" if "/validation/" in name else "golden": r.verdict for name, r in results.items()}


FAKES = {
    # fake: (golden verdict, validation verdict, the reason's start of the failing case)
    "hidl_rules": (Verdict.FAILED, Verdict.FAILED, "burst execution (A, every token -1) returned INVALID_ARGUMENT"),
    "accepts_token_minus_2": (Verdict.PASSED, Verdict.FAILED, "token_minus_2_pool_0"),
    "caches_contents_by_token": (Verdict.FAILED, Verdict.PASSED, "burst execution (B's inputs written into A's "
                                                                 "input memory, given again under token 0)"),
}


@pytest.mark.parametrize("fake", sorted(FAKES))
def test_each_token_fault_is_caught_in_process(fake):
    golden, validation, reason = FAKES[fake]
    device = getattr(broken_burst_tokens, fake)()
    results = run_cases(Runner(device, RunOptions(case_timeout=60)), [hand_add_float()])
    assert _verdicts(results) == {"golden": golden, "validation": validation}, not_passed(results)
    assert any(r.reason.startswith(reason) for r in results.values()), not_passed(results)


@pytest.mark.parametrize("fake", sorted(FAKES))
def test_each_token_fault_is_caught_out_of_process(fake):
    golden, validation, reason = FAKES[fake]
    runner = isolated(f"tests.fakes.broken_burst_tokens:{fake}")
    try:
        results = run_cases(runner, [hand_add_float()])
    finally:
        assert runner.host is not None
        runner.host.stop()
    assert _verdicts(results) == {"golden": golden, "validation": validation}, not_passed(results)
    assert any(r.reason.startswith(reason) for r in results.values()), not_passed(results)


def test_a_burst_ignoring_release_minus_2_is_caught():
    results = run_cases(Runner(broken_burst_tokens.hidl_rules(), RunOptions(case_timeout=60)), [hand_add_float()],
                        kind="validation")
    (result,) = results.values()
    assert any("release_minus_2" in detail for detail in result.details), result.details


def test_the_contents_cache_is_caught_on_every_model():
    results = run_cases(Runner(broken_burst_tokens.caches_contents_by_token(), RunOptions(case_timeout=60)),
                        [hand_add_quant8(), hand_mul_float()], kind="golden")
    assert results and all(r.verdict is Verdict.FAILED for r in results.values()), not_passed(results)
    assert all("given again under token 0" in r.reason for r in results.values()), not_passed(results)


# -- memory_domain's burst path ------------------------------------------------------------------------


def test_memory_domain_takes_each_interfaces_vts_paths():
    assert executors_for(create_device()) == AIDL_EXECUTORS == (Executor.SYNC, BURST, Executor.FENCED)
    assert executors_for(create_device(hal="1.3")) == HIDL_EXECUTORS == (Executor.ASYNC, Executor.SYNC,
                                                                        Executor.FENCED)


def test_the_burst_path_gives_a_driver_buffer_to_the_reference_and_releases_its_tokens():
    device = create_device()
    model = parse_spec(hand_add_float())[0]
    prepared, _ = prepare_for_case(device, model, RunOptions())
    built = build_request(model, model.examples[0])
    try:
        from vts.hal.types import BufferDesc, BufferRole, DataLocation, RequestArgument

        buffer, token = device.allocate(BufferDesc([]), [prepared], [], [BufferRole(0, 0, 1.0)])
        request = built.request
        request.pools.append(MemoryToken(token))
        request.outputs[0] = RequestArgument(False, DataLocation(2, 0, 0), [])
        answer = execute_on_fresh_burst(prepared, request)
        assert answer.ok, answer
        staging = hal_memory.allocate("ashmem", 16)
        buffer.copy_to(staging)
        assert staging.array(0, "<f4", 4).tolist() == [1.75, 2.0, 0.25, 0.5]  # the hand-computed sums
    finally:
        built.close()


def _memory_domain_model_results(runner) -> dict:
    family = MemoryDomainFamily()
    model = parse_spec(hand_add_float())[0]
    return {case.name: runner.run_case(family, case) for case in family.model_cases(model, "<inline>")}


def test_an_aidl_burst_refusing_driver_buffers_is_caught_by_memory_domain():
    results = _memory_domain_model_results(Runner(broken_burst_tokens.hidl_rules(), RunOptions(case_timeout=60)))
    assert results and all(r.verdict is Verdict.FAILED for r in results.values()), not_passed(results)
    assert all(r.reason.startswith("burst execution with device memory returned INVALID_ARGUMENT")
               for r in results.values()), not_passed(results)


def test_an_aidl_burst_refusing_driver_buffers_is_caught_by_memory_domain_out_of_process():
    runner = isolated("tests.fakes.broken_burst_tokens:hidl_rules")
    try:
        results = _memory_domain_model_results(runner)
    finally:
        assert runner.host is not None
        runner.host.stop()
    assert results and all(r.verdict is Verdict.FAILED for r in results.values()), not_passed(results)
    assert all("burst execution with device memory" in r.reason for r in results.values()), not_passed(results)


def test_random_inputs_catch_a_contents_cache_where_a_and_b_share_their_inputs():
    """With A and B alike only the random inputs streamed through held token 0 tell the copy from the memory."""
    from vts.families._kit.burst_tokens import golden_sequence

    model = parse_spec(hand_add_float())[0]
    example = model.examples[0]
    for device, caught in ((broken_burst_tokens.caches_contents_by_token(), True), (create_device(), False)):
        prepared, _ = prepare_for_case(device, model, RunOptions())
        a, b = build_request(model, example), build_request(model, example)
        try:
            problems = golden_sequence(model, example, example, a, b, prepared.configure_execution_burst(), prepared,
                                       RunOptions())
        finally:
            a.close()
            b.close()
        assert bool(problems) is caught, problems
        assert not problems or problems[0].startswith("burst execution (random inputs written into A's input memory")
