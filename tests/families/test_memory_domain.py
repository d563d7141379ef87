"""Memory domains and pool kinds: the reference passes every memory_domain case, and a driver
broken in each memory-related way is caught by the family that should catch it."""

from __future__ import annotations

import gc
import os

import numpy as np
import pytest

from nnvts.drivers.reference import ReferenceDevice, create_device
from tests.conftest import CORPUS, hand_add_float, hand_add_quant8
from tests.fakes import broken_burst_tokens, broken_memory
from vts.families.base import RunOptions
from vts.families.memory_domain.family import MemoryDomainFamily
from vts.families.registry import families
from vts.hal import memory as hal_memory
from vts.hal.enums import ErrorStatus
from vts.hal.errors import DriverError
from vts.hal.types import BufferDesc, BufferRole, DataLocation, MemoryToken, Request, RequestArgument
from vts.model.casemodel import REQUEST_ARGUMENT_ALIGNMENT, build_request, close_model, parse_spec, to_hal_model
from vts.results import Verdict
from vts.run.runner import Runner

#: Corpus specs that exercise unknown dims, zero-sized outputs, several inputs and constants by reference.
CORPUS_SAMPLES = ("V1_2/add_v1_2.json.gz", "V1_0/conv_float.json.gz", "V1_2/box_with_nms_limit_hard.json.gz",
                  "V1_2/bbox_graph.json.gz")


def device_results(device, options: RunOptions | None = None) -> dict:
    """Every device case's result, but those of the other interface's execution path (skipped, named)."""
    family = MemoryDomainFamily()
    runner = Runner(device, options or RunOptions(case_timeout=60))
    results = {case.name: runner.run_case(family, case) for case in family.device_cases()}
    return {name: r for name, r in results.items()
            if not (r.verdict is Verdict.SKIPPED and r.reason.startswith("not a path of"))}


def model_results(family_name: str, device, documents, options: RunOptions | None = None) -> dict:
    family = families()[family_name]()
    runner = Runner(device, options or RunOptions(case_timeout=60))
    results = {}
    for document in documents:
        for model in parse_spec(document):
            for case in family.model_cases(model, "<inline>"):
                results[case.name] = runner.run_case(family, case)
    return results


def not_passed(results: dict) -> dict:
    return {name: (r.verdict.name, r.reason) for name, r in results.items() if r.verdict is not Verdict.PASSED}


def corpus_documents() -> list:
    from vts.spec.loader import load_paths

    paths = [os.path.join(CORPUS, p) for p in CORPUS_SAMPLES if os.path.exists(os.path.join(CORPUS, p))]
    return [f.document for f in load_paths(paths)] if paths else []


# -- the reference ------------------------------------------------------------------


def test_device_cases_cover_the_catalogue():
    names = [case.name for case in MemoryDomainFamily().device_cases()]
    assert len(names) == len(set(names))
    allocate = [n for n in names if n.startswith("memory_domain/Allocate.")]
    copy = [n for n in names if n.startswith("memory_domain/Copy.")]
    beyond_the_suite = (".ReleasedToken.", ".StateTransitions.", ".FailedExecutionUninitializes.",
                        ".CopyFrom_FailureUninitializes.")
    copy = [n for n in copy if not any(b in n for b in beyond_the_suite)]
    execution = [n for n in names if n.startswith("memory_domain/Execution.") and not any(b in n for b in
                                                                                         beyond_the_suite)]
    assert len(allocate) == 13 * 4 + 2 * 2  # ConflictScale/ZeroPoint only for the quantized types
    assert len(copy) == 7 * 4
    assert len(execution) == (6 * 4 + 3) * 4  # async (HIDL), sync, fenced, burst (AIDL); InvalidDimensions not fenced
    assert "memory_domain/Execution.InvalidDimensions.TENSOR_FLOAT16.fenced" not in names


def test_reference_passes_every_device_case():
    results = device_results(create_device())
    assert results and not not_passed(results)


def test_each_interface_runs_its_own_vts_execution_paths():
    """AIDL VTS's MemoryDomainExecutionTest runs sync, burst (driver buffers at -1) and fenced; HIDL 1.3's async,
    sync and fenced: the other interface's path is skipped, named, and the reference passes its own."""
    family = MemoryDomainFamily()
    for device, ran, left in ((create_device(), ".burst", ".async"), (create_device(hal="1.3"), ".async", ".burst")):
        runner = Runner(device, RunOptions(case_timeout=60))
        cases = [c for c in family.device_cases() if c.name.startswith("memory_domain/Execution.InvalidToken.")]
        results = {c.name: runner.run_case(family, c) for c in cases}
        assert {r.verdict for n, r in results.items() if n.endswith(ran)} == {Verdict.PASSED}
        skipped = [r for n, r in results.items() if n.endswith(left)]
        assert skipped and all(r.verdict is Verdict.SKIPPED and r.reason.startswith("not a path of") for r in skipped)


def test_an_aidl_burst_refusing_driver_buffers_fails_the_burst_execution_tests():
    results = device_results(broken_burst_tokens.hidl_rules())
    failed = {n for n, r in results.items() if r.verdict is Verdict.FAILED}
    assert failed and all(n.endswith(".burst") for n in failed)


def test_reference_passes_model_cases():
    documents = [hand_add_float(), hand_add_quant8(), *corpus_documents()]
    results = model_results("memory_domain", create_device(), documents)
    assert results and not not_passed(results)
    assert not any("skipped" in r.reason for r in results.values())  # the device configuration really ran


def test_driver_without_memory_domains_skips_buffer_tests_only():
    results = device_results(broken_memory.no_memory_domains())
    assert not [n for n, r in results.items() if r.verdict is Verdict.FAILED]
    assert all(r.verdict is Verdict.PASSED for n, r in results.items() if ".Allocate." in n or "/Allocate." in n)
    assert all(r.verdict is Verdict.SKIPPED for n, r in results.items() if "/Copy." in n)
    models = model_results("memory_domain", broken_memory.no_memory_domains(), [hand_add_float()])
    assert all(r.verdict is Verdict.PASSED and "no buffer could be allocated" in r.reason for r in models.values())


# -- broken drivers ---------------------------------------------------------------


def failed_tests(results: dict) -> set[str]:
    """``Suite.Test`` of every failed device case."""
    return {".".join(name.split("/")[1].split(".")[:2]) for name, r in results.items() if r.verdict is Verdict.FAILED}


def test_role_accepted_twice_is_caught():
    assert failed_tests(device_results(broken_memory.role_twice())) == {"Allocate.SameRoleSpecifiedTwice"}


def test_copy_to_of_uninitialised_buffer_is_caught():
    # The nnvts state-transition tests check copy_to of uninitialised buffers too.
    assert failed_tests(device_results(broken_memory.uninitialised_copy_to())) == {
        "Copy.CopyTo_UninitializedMemory", "Copy.CopyFrom_FailureUninitializes", "Execution.StateTransitions",
        "Execution.FailedExecutionUninitializes"}


def test_tokens_of_other_prepared_models_are_caught():
    assert failed_tests(device_results(broken_memory.foreign_tokens())) == {"Execution.InvalidPreparedModel"}


def test_broken_driver_really_serves_another_devices_token():
    """What the family catches through InvalidPreparedModel is the cross-client leak itself."""
    first, second = broken_memory.foreign_tokens(), broken_memory.foreign_tokens()
    buffer, token = first.allocate(BufferDesc([]), [_conv(first)], [BufferRole(0, 0, 1.0)], [])
    source = hal_memory.allocate("ashmem", 4 * 4 * 8 * 4)
    buffer.copy_from(source, [1, 4, 4, 8])
    request = Request([RequestArgument(False, DataLocation(1, 0, 0), [1, 4, 4, 8])],
                      [RequestArgument(False, DataLocation(0, 0, source.size), [1, 4, 4, 8])],
                      [source, MemoryToken(token)])
    assert _conv(second).execute(request).output_shapes


def test_stale_request_pools_are_caught_by_memory_domain():
    results = model_results("memory_domain", broken_memory.stale_pools(), [hand_add_float()])
    (result,) = results.values()
    assert result.verdict is Verdict.FAILED and "hardware_buffer_blob" in result.reason


def test_reads_past_a_pool_are_caught_by_validation():
    results = model_results("validation", broken_memory.out_of_bounds(), [hand_add_float()])
    caught = {name for name, r in results.items() if r.verdict is Verdict.FAILED}
    assert caught and all("past_pool" in name for name in caught)
    assert any("input_length_past_pool" in name for name in caught)
    assert any("output_offset_past_pool" in name for name in caught)


def test_refused_blob_pools_fail_the_blob_configuration():
    """VTS runs MemoryDomainTest FULLY_SPECIFIED: GENERAL_FAILURE fails (only dynamic modes may skip)."""
    results = model_results("memory_domain", broken_memory.no_blob_pools(), [hand_add_float()])
    (result,) = results.values()
    assert result.verdict is Verdict.FAILED
    assert "hardware_buffer_blob pools returned GENERAL_FAILURE" in result.reason
    assert not not_passed(device_results(broken_memory.no_blob_pools()))


# -- the reference driver's memory rules -------------------------------------------------


def _conv(device: ReferenceDevice):
    from vts.hal.enums import OperandType
    from vts.model.builtin.memory_models import OperandSpec, conv_model
    from vts.model.casemodel import ConstantPolicy

    spec = OperandSpec(OperandType.TENSOR_FLOAT32, dims=(0, 4, 4, 8))
    hal_model = to_hal_model(conv_model(spec), ConstantPolicy(mode="as_written"))
    try:
        return device.prepare_model(hal_model)
    finally:
        close_model(hal_model)


def test_tokens_are_unique_never_reused_and_die_with_their_buffer():
    device = create_device()
    prepared = _conv(device)
    tokens = []
    for _ in range(50):
        buffer, token = device.allocate(BufferDesc([]), [prepared], [BufferRole(0, 0, 1.0)], [])
        tokens.append(token)
        del buffer
    gc.collect()
    assert len(set(tokens)) == 50 and all(0 < t < 1 << 32 for t in tokens)
    assert len(device.memory.buffers) == 0
    pool = hal_memory.allocate("ashmem", 4 * 4 * 8 * 4)
    request = Request([RequestArgument(False, DataLocation(1, 0, 0), [1, 4, 4, 8])],
                      [RequestArgument(False, DataLocation(0, 0, pool.size), [1, 4, 4, 8])],
                      [pool, MemoryToken(tokens[-1])])
    with pytest.raises(DriverError) as error:
        prepared.execute(request)
    assert error.value.status is ErrorStatus.INVALID_ARGUMENT


def test_a_token_of_another_device_is_refused():
    first, second = create_device(), create_device()
    buffer, token = first.allocate(BufferDesc([]), [_conv(first)], [BufferRole(0, 0, 1.0)], [])
    source = hal_memory.allocate("ashmem", 4 * 4 * 8 * 4)
    buffer.copy_from(source, [1, 4, 4, 8])
    request = Request([RequestArgument(False, DataLocation(1, 0, 0), [1, 4, 4, 8])],
                      [RequestArgument(False, DataLocation(0, 0, source.size), [1, 4, 4, 8])],
                      [source, MemoryToken(token)])
    with pytest.raises(DriverError) as error:
        _conv(second).execute(request)
    assert error.value.status is ErrorStatus.INVALID_ARGUMENT


def test_dynamic_buffer_takes_the_shape_of_the_execution_that_writes_it():
    device = create_device()
    prepared = _conv(device)
    buffer, token = device.allocate(BufferDesc([]), [prepared], [], [BufferRole(0, 0, 1.0)])
    assert buffer.size_of(buffer.dimensions) is None
    source = hal_memory.allocate("ashmem", 2 * 4 * 4 * 8 * 4)
    request = Request([RequestArgument(False, DataLocation(0, 0, source.size), [2, 4, 4, 8])],
                      [RequestArgument(False, DataLocation(1, 0, 0), [])], [source, MemoryToken(token)])
    (shape,) = prepared.execute(request).output_shapes
    assert shape.dimensions == (2, 4, 4, 8) and buffer.dimensions == (2, 4, 4, 8)
    target = hal_memory.allocate("ashmem", source.size)
    buffer.copy_to(target)
    np.testing.assert_array_equal(target.array(0, "<f4", 256), np.zeros(256, np.float32))


def test_unsupported_pool_kind_is_general_failure_at_prepare_and_execute():
    from vts.hal.enums import OperandType
    from vts.model.builtin.memory_models import OperandSpec, conv_model
    from vts.model.casemodel import ConstantPolicy

    device = ReferenceDevice(pool_kinds=("ashmem",))
    model = parse_spec(hand_add_float())[0]
    prepared = device.prepare_model(to_hal_model(model))
    for kind in ("mmap_fd", "hardware_buffer_blob"):
        built = build_request(model, model.examples[0], kind)
        try:
            with pytest.raises(DriverError) as error:
                prepared.execute(built.request)
            assert error.value.status is ErrorStatus.GENERAL_FAILURE
        finally:
            built.close()
        # The conv filter (2304 bytes) travels as CONSTANT_REFERENCE in a pool of that kind.
        conv = to_hal_model(conv_model(OperandSpec(OperandType.TENSOR_FLOAT32)), ConstantPolicy(pool_kind=kind))
        try:
            assert conv.pools and conv.pools[0].name == kind
            with pytest.raises(DriverError) as error:
                device.prepare_model(conv)
            assert error.value.status is ErrorStatus.GENERAL_FAILURE
        finally:
            close_model(conv)
    with pytest.raises(ValueError):
        ReferenceDevice(pool_kinds=("hardware_buffer",))


def test_request_arguments_are_aligned_like_the_android_runtime():
    model = parse_spec(hand_add_float())[0]
    built = build_request(model, model.examples[0])
    try:
        offsets = [a.location.offset for a in built.request.inputs]
        assert offsets == [0, REQUEST_ARGUMENT_ALIGNMENT]
        assert built.input_pool.size == 2 * REQUEST_ARGUMENT_ALIGNMENT
    finally:
        built.close()


def test_failed_copy_from_that_keeps_the_buffer_initialised_is_caught():
    from tests.fakes import broken_verdicts

    results = device_results(broken_verdicts.failed_copy_from_keeps_initialised())
    assert failed_tests(results) == {"Copy.CopyFrom_FailureUninitializes", "Execution.StateTransitions"}
    (reason,) = {r.reason for n, r in results.items() if "StateTransitions.TENSOR_FLOAT32.sync" in n}
    assert "whose last copy_from failed (uninitialised), as input returned NONE, expected GENERAL_FAILURE" in reason
