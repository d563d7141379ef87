"""The XLA driver's device-side semantics: authenticated executable caching, memory domains, threads, async.

Skipped without the xla extra.  No GPU and no timing thresholds: the CPU
backend exercises the same code paths (device arrays, dispatch, blocking).
"""

from __future__ import annotations

import os
import tempfile
import threading

import numpy as np
import pytest

pytest.importorskip("jax")

from nnvts.drivers.xla import cpu
from tests.conftest import hand_add_float
from vts.hal import memory as hal_memory
from vts.hal.enums import ErrorStatus, MeasureTiming
from vts.hal.errors import DriverError
from vts.hal.types import BufferDesc, BufferRole, DataLocation, MemoryToken
from vts.model.casemodel import build_request, close_model, parse_spec, to_hal_model

EXPECTED = [1.75, 2.0, 0.25, 0.5]  # hand_add_float's golden


@pytest.fixture(scope="module")
def device():
    return cpu()


@pytest.fixture
def add_model():
    (model,) = parse_spec(hand_add_float())
    return model


def _prepare(device, model, **kwargs):
    hal = to_hal_model(model)
    try:
        return device.prepare_model(hal, **kwargs)
    finally:
        close_model(hal)


def _run(prepared, model, request_hook=None):
    built = build_request(model, model.examples[0])
    try:
        if request_hook:
            request_hook(built.request)
        result = prepared.execute(built.request, MeasureTiming.YES)
        return result, built.read_output(0, np.dtype("<f4"), 4).copy()
    finally:
        built.close()


# -- caching -----------------------------------------------------------------------


class CacheFiles:
    def __init__(self) -> None:
        self.paths = [tempfile.mkstemp(prefix="nnvts-xla-cache-")[1] for _ in range(2)]
        self.fds = [os.open(p, os.O_RDWR) for p in self.paths]

    @property
    def model(self):
        return [self.fds[0]]

    @property
    def data(self):
        return [self.fds[1]]

    def corrupt(self, which: int, position: int) -> None:
        size = os.fstat(self.fds[which]).st_size
        offset = position % size
        byte = os.pread(self.fds[which], 1, offset)
        os.pwrite(self.fds[which], bytes([byte[0] ^ 0x40]), offset)

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        for path in self.paths:
            os.unlink(path)


@pytest.fixture
def files():
    handle = CacheFiles()
    yield handle
    handle.close()


TOKEN = bytes(range(32))


class LoaderSpy:
    """Records every call of the executable loader and of pickle.loads (both must stay untouched)."""

    def __init__(self, monkeypatch) -> None:
        import pickle

        from jax.experimental import serialize_executable

        self.calls: list[str] = []
        real_load = serialize_executable.deserialize_and_load
        real_pickle = pickle.loads

        def load(*args, **kwargs):
            self.calls.append("deserialize_and_load")
            return real_load(*args, **kwargs)

        def loads(*args, **kwargs):
            self.calls.append("pickle.loads")
            return real_pickle(*args, **kwargs)

        monkeypatch.setattr(serialize_executable, "deserialize_and_load", load)
        monkeypatch.setattr(pickle, "loads", loads)


def test_cache_round_trip_loads_the_executable_without_compiling(device, add_model, files, monkeypatch):
    prepared = _prepare(device, add_model, model_cache=files.model, data_cache=files.data, token=TOKEN)
    assert prepared.cache_note == ""
    spy = LoaderSpy(monkeypatch)
    before = device.translator.compilations
    restored = device.prepare_model_from_cache(None, files.model, files.data, TOKEN)
    assert "deserialize_and_load" in spy.calls
    assert device.translator.compilations == before
    _, values = _run(restored, add_model)
    np.testing.assert_allclose(values, EXPECTED)


@pytest.mark.parametrize("which,position", [(0, 0), (0, 40), (0, -1), (1, 0), (1, -1)],
                         ids=["model-magic", "model-header", "model-tag", "data-first", "data-executable"])
def test_a_corrupted_cache_is_general_failure_and_never_deserialized(device, add_model, files, monkeypatch, which,
                                                                     position):
    _prepare(device, add_model, model_cache=files.model, data_cache=files.data, token=TOKEN)
    files.corrupt(which, position)
    spy = LoaderSpy(monkeypatch)
    with pytest.raises(DriverError) as error:
        device.prepare_model_from_cache(None, files.model, files.data, TOKEN)
    assert error.value.status == ErrorStatus.GENERAL_FAILURE
    assert spy.calls == []


def test_another_token_or_driver_instance_is_general_failure_and_never_deserialized(device, add_model, files,
                                                                                    monkeypatch):
    _prepare(device, add_model, model_cache=files.model, data_cache=files.data, token=TOKEN)
    spy = LoaderSpy(monkeypatch)
    for who, token in ((device, bytes(32)), (cpu(), TOKEN)):  # wrong token; a foreign instance's secret
        with pytest.raises(DriverError) as error:
            who.prepare_model_from_cache(None, files.model, files.data, token)
        assert error.value.status == ErrorStatus.GENERAL_FAILURE
    assert spy.calls == []


def test_a_replaced_cache_is_general_failure(device, add_model, files, monkeypatch):
    """Another model's data cache under this model cache: the authenticated digest no longer matches."""
    _prepare(device, add_model, model_cache=files.model, data_cache=files.data, token=TOKEN)
    other = CacheFiles()
    try:
        document = hand_add_float()
        document["models"][0]["main"]["operands"][0]["dims"] = [4]
        document["models"][0]["main"]["operands"][1]["dims"] = [4]
        document["models"][0]["main"]["operands"][3]["dims"] = [4]
        (model,) = parse_spec(document)
        _prepare(device, model, model_cache=other.model, data_cache=other.data, token=TOKEN)
        spy = LoaderSpy(monkeypatch)
        with pytest.raises(DriverError) as error:
            device.prepare_model_from_cache(None, files.model, other.data, TOKEN)
        assert error.value.status == ErrorStatus.GENERAL_FAILURE
        assert spy.calls == []
    finally:
        other.close()


def test_caching_arguments(device, add_model, files):
    assert device.get_number_of_cache_files_needed() == (1, 1)
    with pytest.raises(DriverError) as error:
        device.prepare_model_from_cache(None, files.model, [], TOKEN)
    assert error.value.status == ErrorStatus.INVALID_ARGUMENT
    prepared = _prepare(device, add_model, model_cache=files.model, data_cache=[], token=TOKEN)
    assert prepared.cache_note  # not cached, still prepared


# -- memory domains ------------------------------------------------------------------


def _memory(data: bytes):
    pool = hal_memory.allocate(hal_memory.ASHMEM, len(data))
    pool.write(0, data)
    return pool


def test_memory_domain_buffers_are_device_arrays(device, add_model):
    import jax

    prepared = _prepare(device, add_model)
    buffer, token = device.allocate(BufferDesc([]), [prepared], [BufferRole(0, 0, 1.0)], [])
    assert token > 0
    built = build_request(add_model, add_model.examples[0])
    try:
        first = built.request.inputs[0].location
        data = built.request.pools[first.pool_index].read(first.offset, first.length)
        with pytest.raises(DriverError) as error:  # uninitialised as input
            uninit = built.request.copy()
            uninit.pools.append(MemoryToken(token))
            uninit.inputs[0].location = DataLocation(len(uninit.pools) - 1, 0, 0)
            prepared.execute(uninit)
        assert error.value.status == ErrorStatus.GENERAL_FAILURE
        source = _memory(data)
        buffer.copy_from(source, [])
        assert isinstance(buffer._array, jax.Array)
        request = built.request.copy()
        request.pools.append(MemoryToken(token))
        request.inputs[0].location = DataLocation(len(request.pools) - 1, 0, 0)
        prepared.execute(request)
        np.testing.assert_allclose(built.read_output(0, np.dtype("<f4"), 4), EXPECTED)
        back = _memory(bytes(len(data)))
        buffer.copy_to(back)
        assert back.read(0, len(data)) == data
    finally:
        built.close()


def test_an_execution_writes_an_output_buffer_on_the_device(device, add_model):
    prepared = _prepare(device, add_model)
    buffer, token = device.allocate(BufferDesc([]), [prepared], [], [BufferRole(0, 0, 1.0)])
    built = build_request(add_model, add_model.examples[0])
    try:
        request = built.request.copy()
        request.pools.append(MemoryToken(token))
        request.outputs[0].location = DataLocation(len(request.pools) - 1, 0, 0)
        prepared.execute(request)
        out = _memory(bytes(16))
        buffer.copy_to(out)
        np.testing.assert_allclose(np.frombuffer(out.read(0, 16), "<f4"), EXPECTED)
    finally:
        built.close()


def test_allocate_rejects_foreign_models_and_bad_roles(device, add_model):
    prepared = _prepare(device, add_model)
    for models, inputs in (([prepared], [BufferRole(0, 5, 1.0)]), ([prepared], [BufferRole(0, 0, 0.0)]),
                           ([object()], [BufferRole(0, 0, 1.0)]), ([], [BufferRole(0, 0, 1.0)])):
        with pytest.raises(DriverError) as error:
            device.allocate(BufferDesc([]), models, inputs, [])
        assert error.value.status == ErrorStatus.INVALID_ARGUMENT


# -- concurrency and asynchronous paths -------------------------------------------


def test_executions_from_several_threads_at_once(device, add_model):
    prepared = _prepare(device, add_model)
    results, errors = [], []

    def work() -> None:
        try:
            for _ in range(10):
                results.append(_run(prepared, add_model)[1])
        except Exception as error:
            errors.append(error)

    threads = [threading.Thread(target=work) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert len(results) == 60
    for values in results:
        np.testing.assert_allclose(values, EXPECTED)


def test_async_and_fenced_executions_signal_when_done(device, add_model):
    prepared = _prepare(device, add_model)
    built = build_request(add_model, add_model.examples[0])
    try:
        result = prepared.execute_async(built.request, MeasureTiming.YES).result(timeout=60)
        assert result.timing.time_on_device <= result.timing.time_in_driver
        np.testing.assert_allclose(built.read_output(0, np.dtype("<f4"), 4), EXPECTED)
        fence, callback = prepared.execute_fenced(built.request, [], MeasureTiming.YES)
        assert fence is not None and fence.wait(60)
        status, _launched, _fenced = callback.get_execution_info()
        assert status == ErrorStatus.NONE
        fence2, callback2 = prepared.execute_fenced(built.request, [fence], MeasureTiming.NO)
        assert fence2.wait(60) and callback2.get_execution_info()[0] == ErrorStatus.NONE
    finally:
        built.close()


def test_timing_measures_device_inside_driver(device, add_model):
    result, values = _run(_prepare(device, add_model), add_model)
    np.testing.assert_allclose(values, EXPECTED)
    assert 0 <= result.timing.time_on_device <= result.timing.time_in_driver
