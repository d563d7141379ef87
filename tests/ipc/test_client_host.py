"""Client proxies against a driver host in a thread: every HAL call, shared pools, errors, loss of the peer."""

from __future__ import annotations

import contextlib
import gc
import itertools
import socket
import threading
import time

import numpy as np
import pytest

from nnvts.drivers.reference import create_device
from tests.conftest import hand_add_float
from tests.fakes.misbehaving import raising_device
from tests.ipc.conftest import hand_mul_float
from vts.families._kit.executions import Executor, execute
from vts.hal.config import PrepareModelConfig
from vts.hal.enums import ErrorStatus, MeasureTiming
from vts.hal.errors import DriverError
from vts.hal.interfaces import SyncFence
from vts.hal.memory import allocate
from vts.hal.types import BufferDesc, BufferRole
from vts.ipc import protocol as p
from vts.ipc.client import Connection, ProxyDevice, connect
from vts.ipc.errors import DriverCrashed, DriverTimeout, RequestRejected
from vts.ipc.host import DriverHost
from vts.model.casemodel import build_request, parse_spec, to_hal_model


class HostThread:
    """A driver host serving ``device`` on one end of a socketpair, in a thread of this process."""

    def __init__(self, device) -> None:
        client_end, host_end = p.socket_pair()
        self.host = DriverHost(device, host_end, threads=2)
        self.thread = threading.Thread(target=self.host.serve, daemon=True)
        self.thread.start()
        self.device = connect(client_end)
        self.host_end = host_end

    def stop(self) -> None:
        self.device.connection.close()
        self.thread.join(5)
        self.host_end.close()


@pytest.fixture
def served():
    started: list[HostThread] = []

    def serve(device=None) -> ProxyDevice:
        host = HostThread(device or create_device())
        started.append(host)
        return host.device

    serve.hosts = started  # type: ignore[attr-defined]
    yield serve
    for host in started:
        host.stop()


def _add_model():
    (model,) = parse_spec(hand_add_float())
    return model


def test_queries_match_the_local_device(served):
    local = create_device()
    remote = served(local)
    assert remote.name == local.name
    assert remote.get_type() == local.get_type()
    assert remote.get_version_string() == local.get_version_string()
    assert remote.get_capabilities() == local.get_capabilities()
    assert remote.get_supported_extensions() == local.get_supported_extensions()
    assert remote.get_number_of_cache_files_needed() == local.get_number_of_cache_files_needed()
    assert remote.priority_scheduling is True  # an nnvts device flag carried by HELLO


@pytest.mark.parametrize("executor", list(Executor))
def test_every_execution_path_writes_the_shared_output_pool(served, executor):
    device = served()
    model = _add_model()
    hal_model = to_hal_model(model)
    prepared = device.prepare_model(hal_model)
    built = build_request(model, model.examples[0])
    answer = execute(prepared, built.request, executor, MeasureTiming.YES)
    assert answer.status == ErrorStatus.NONE, answer.message
    # The driver wrote into the harness's own pool: nothing was copied back through the socket.
    assert built.read_output(0, np.dtype("<f4"), 4).tolist() == [1.75, 2.0, 0.25, 0.5]
    if executor is not Executor.FENCED:
        assert answer.timing.measured
    built.close()


def test_errors_keep_status_message_and_shapes(served):
    device = served()
    model = _add_model()
    prepared = device.prepare_model(to_hal_model(model))
    built = build_request(model, model.examples[0], shrink_output=0)
    with pytest.raises(DriverError) as raised:
        prepared.execute(built.request)
    assert raised.value.status == ErrorStatus.OUTPUT_INSUFFICIENT_SIZE
    assert [s.is_sufficient for s in raised.value.output_shapes] == [False]
    assert list(raised.value.output_shapes[0].dimensions) == [2, 2]
    with pytest.raises(DriverError) as raised:
        device.prepare_model(to_hal_model(model), priority=7)
    assert raised.value.status == ErrorStatus.INVALID_ARGUMENT and "priority" in raised.value.message


def test_driver_exceptions_keep_their_type_name_and_traceback(served):
    device = served(raising_device())
    (model,) = parse_spec(hand_mul_float())
    prepared = device.prepare_model(to_hal_model(model))
    built = build_request(model, model.examples[0])
    with pytest.raises(Exception) as raised:
        prepared.execute(built.request)
    assert type(raised.value).__name__ == "RuntimeError"
    assert "unexpected state in MUL kernel" in str(raised.value)
    assert "misbehaving.py" in raised.value.remote_traceback  # type: ignore[attr-defined]


def test_pools_are_declared_once_and_released_when_the_harness_drops_them(served):
    device = served()
    host = served.hosts[0].host  # type: ignore[attr-defined]
    model = _add_model()
    prepared = device.prepare_model(to_hal_model(model))
    gc.collect()
    device.get_type()
    baseline = len(host.pools)
    built = build_request(model, model.examples[0])
    for _ in range(3):
        prepared.execute(built.request)
    assert len(host.pools) == baseline + 2  # input and output pools, declared by the first execution only
    built.close()
    del built
    gc.collect()
    device.get_type()  # releases travel with the next call
    assert len(host.pools) == baseline


def test_fenced_execution_waits_for_a_fence_signalled_later(served):
    device = served()
    model = _add_model()
    prepared = device.prepare_model(to_hal_model(model))
    built = build_request(model, model.examples[0])
    fence = SyncFence()
    threading.Timer(0.1, fence.signal).start()
    started = time.monotonic()
    returned, callback = prepared.execute_fenced(built.request, [fence], MeasureTiming.YES)
    assert time.monotonic() - started >= 0.09
    if returned is not None:
        assert returned.wait(5)
    status, launched, _fenced = callback.get_execution_info()
    assert status == ErrorStatus.NONE and launched.measured
    assert built.read_output(0, np.dtype("<f4"), 4).tolist() == [1.75, 2.0, 0.25, 0.5]
    failed = SyncFence.signalled_fence(ok=False)
    with pytest.raises(DriverError) as raised:
        prepared.execute_fenced(built.request, [failed])
    assert raised.value.status == ErrorStatus.GENERAL_FAILURE
    with pytest.raises(DriverError) as raised:
        prepared.execute_fenced(built.request, [None])
    assert raised.value.status == ErrorStatus.INVALID_ARGUMENT


def test_memory_domain_buffers_and_tokens(served):
    device = served()
    model = _add_model()
    prepared = device.prepare_model(to_hal_model(model))
    buffer, token = device.allocate(BufferDesc([]), [prepared], [], [BufferRole(0, 0, 1.0)])
    assert token > 0
    source = build_request(model, model.examples[0]).input_pool
    from vts.hal import memory

    data = memory.allocate(memory.ASHMEM, 16)
    data.write(0, np.arange(4, dtype="<f4").tobytes())
    buffer.copy_from(data, [2, 2])
    back = memory.allocate(memory.ASHMEM, 16)
    buffer.copy_to(back)
    assert back.read(0, 16) == data.read(0, 16)
    with pytest.raises(DriverError) as raised:
        device.allocate(BufferDesc([]), [create_device().prepare_model(to_hal_model(model))], [],
                        [BufferRole(0, 0, 1.0)])
    assert raised.value.status == ErrorStatus.INVALID_ARGUMENT  # a prepared model of another driver
    for pool in (source, data, back):
        pool.close()


def test_a_dead_peer_raises_driver_crashed():
    client_end, host_end = p.socket_pair()
    connection = Connection(client_end, lambda: DriverCrashed("killed by SIGSEGV"))
    host_end.close()
    with pytest.raises(DriverCrashed, match="killed by SIGSEGV"):
        connection.call(p.Method.GET_TYPE)
    with pytest.raises(DriverCrashed):  # and stays dead
        connection.call(p.Method.GET_TYPE)


def test_a_silent_peer_raises_driver_timeout():
    client_end, host_end = p.socket_pair()
    connection = Connection(client_end)
    connection.call_timeout = 0.2
    started = time.monotonic()
    with pytest.raises(DriverTimeout):
        connection.call(p.Method.GET_TYPE)
    assert time.monotonic() - started < 2
    host_end.close()


def test_a_crash_during_an_async_execution_fails_its_future(served):
    device = served()
    model = _add_model()
    prepared = device.prepare_model(to_hal_model(model))
    built = build_request(model, model.examples[0])
    future = prepared.execute_async(built.request)
    future.result(5)
    connection = device.connection
    connection.abort(DriverCrashed("killed by SIGKILL"))
    with pytest.raises(DriverCrashed):
        prepared.execute_async(built.request)
    assert isinstance(connection.failure, DriverCrashed)


def test_protocol_errors_from_the_host_are_reported(served):
    device = served()
    with pytest.raises(RequestRejected, match="could not decode the execute request"):
        device.connection.call(p.Method.EXECUTE, lambda w: w.u32(12345))


def test_socket_type_is_seqpacket():
    a, b = p.socket_pair()
    assert a.type == socket.SOCK_SEQPACKET
    a.close()
    b.close()


def test_nnvts_serve_listens_on_a_path(tmp_path):
    import subprocess

    from tests.ipc.conftest import ROOT, nnvts_command, nnvts_env

    path = tmp_path / "driver.sock"
    server = subprocess.Popen(nnvts_command("serve", "--driver", "reference", "--socket", str(path)), cwd=ROOT,
                              env=nnvts_env(), stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while not path.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        for _ in range(2):  # one connection after another, served by the same device
            sock = socket.socket(socket.AF_UNIX, p.SOCKET_TYPE)
            sock.connect(str(path))
            device = connect(sock)
            assert device.name == "nnvts-reference" and device.get_version_string()
            device.connection.close()
    finally:
        server.terminate()
        assert server.wait(10) == 0
    assert not path.exists()


class _RecordingDevice:
    """The reference driver, remembering every model object the host hands it."""

    def __init__(self) -> None:
        self.inner = create_device()
        self.models: list[object] = []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def get_supported_operations(self, model):
        self.models.append(model)
        return self.inner.get_supported_operations(model)

    def prepare_model(self, model, *args):
        self.models.append(model)
        return self.inner.prepare_model(model, *args)

    def prepare_model_with_config(self, model, config):
        self.models.append(model)
        return self.inner.prepare_model_with_config(model, config)


def test_a_model_sent_again_is_decoded_once_until_the_pools_change(served, monkeypatch):
    decoded = []
    original = p.read_model
    monkeypatch.setattr(p, "read_model", lambda r, memory: decoded.append(1) or original(r, memory))
    recording = _RecordingDevice()
    device = served(recording)
    model = _add_model()
    hal_model = to_hal_model(model)
    assert device.get_supported_operations(hal_model) == [True]
    prepared = device.prepare_model(hal_model)
    assert device.prepare_model_with_config(hal_model, PrepareModelConfig()) is not None  # AIDL v4's third send
    assert len(decoded) == 1 and recording.models[0] is recording.models[1] is recording.models[2]
    other = hal_model.copy()
    other.main.operands[0].dimensions = [4]  # a different model: decoded, and not taken for the first
    device.get_supported_operations(other)
    assert len(decoded) == 2 and recording.models[3].main.operands[0].dimensions == [4]
    built = build_request(model, model.examples[0])
    execute(prepared, built.request, Executor.SYNC, MeasureTiming.NO)  # declares pools: the memo goes
    device.get_supported_operations(other)
    assert len(decoded) == 3 and recording.models[4] is not recording.models[3]
    built.close()


def test_a_model_sent_unchanged_is_encoded_once_in_its_block(served, monkeypatch):
    encoded = []
    original = p.write_model
    monkeypatch.setattr(p, "write_model", lambda w, model, memory_id, *like: encoded.append(model) or original(
        w, model, memory_id, *like))
    recording = _RecordingDevice()
    device = served(recording)
    hal_model = to_hal_model(_add_model())
    other = hal_model.copy()
    other.main.operands[0].dimensions = [4]
    with device.model_sent_unchanged(hal_model):
        assert device.get_supported_operations(hal_model) == [True]
        device.get_supported_operations(other)  # another model in the block: encoded as usual
        device.prepare_model(hal_model)
    assert encoded == [hal_model, other]
    assert [m.main.operands[0].dimensions for m in recording.models] == [[2, 2], [4], [2, 2]]
    device.get_supported_operations(hal_model)  # after the block: encoded again
    assert encoded == [hal_model, other, hal_model]


def test_a_mutation_sent_with_the_model_it_was_made_from_arrives_as_itself(served):
    """``made_from``: the entries a mutation shares with its model are copied from that model's bytes,
    those it changed or added are its own, and a later model named ``made_from`` is encoded afresh."""
    from vts.families.validation.mutations import apply_mutation, enumerate_mutations

    recording = _RecordingDevice()
    device = served(recording)
    base = to_hal_model(_add_model())
    mutations = {m.kind: m for m in enumerate_mutations(base)}
    for kind in ("operand_rank", "add_operation_input", "remove_operand", "operation_type"):
        mutated = apply_mutation(base, mutations[kind])
        with device.model_sent_unchanged(mutated, base), contextlib.suppress(DriverError):
            device.get_supported_operations(mutated)
        assert recording.models[-1].main == mutated.main, kind
    changed = base.copy()
    changed.main.operands[1].dimensions = [7]
    with device.model_sent_unchanged(changed, changed):
        device.get_supported_operations(changed)
    assert recording.models[-1].main.operands[1].dimensions == [7]


def test_host_tracemalloc_snapshots_on_sigusr1_and_at_exit(tmp_path):
    """NNVTS_HOST_TRACEMALLOC (issue 23): a snapshot on demand and one when the harness hangs up."""
    import signal
    import subprocess
    import sys
    import tracemalloc

    from tests.ipc.conftest import ROOT, nnvts_env
    from vts.ipc.host import TRACEMALLOC_ENV

    ours, theirs = p.socket_pair()
    command = [sys.executable, "-m", "vts.ipc.host", "--driver", "reference", "--fd", str(theirs.fileno())]
    host = subprocess.Popen(command, cwd=ROOT, env=nnvts_env(**{TRACEMALLOC_ENV: str(tmp_path / "host")}),
                            pass_fds=[theirs.fileno()])
    theirs.close()
    try:
        device = connect(ours)
        assert device.get_version_string()  # served: the handler is installed
        host.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + 60
        while not list(tmp_path.glob("host.*.1.snap")) and time.monotonic() < deadline:
            time.sleep(0.05)
        device.get_version_string()
        device.connection.close()
        assert host.wait(60) == 0
    finally:
        if host.poll() is None:
            host.kill()
            host.wait()
    snapshots = sorted(tmp_path.glob("host.*.snap"))
    assert [path.name.split(".")[-2] for path in snapshots] == ["1", "2"]
    for path in snapshots:
        assert tracemalloc.Snapshot.load(str(path)).traces


def test_calls_sent_ahead_are_answered_in_order_whenever_their_answers_are_read(served):
    recording = _RecordingDevice()
    device = served(recording)
    valid = to_hal_model(_add_model())
    invalid = valid.copy()
    invalid.main.operands[0].type = 9999
    first = device.get_supported_operations_ahead(valid)
    second = device.prepare_model_ahead(invalid, 1, 1)
    third = device.get_supported_operations_ahead(valid)
    assert first is not None and second is not None and third is not None
    assert third.result() == [True]  # read last sent first: the earlier answers wait in their slots
    with pytest.raises(DriverError) as refused:
        second.result()
    assert refused.value.status is ErrorStatus.INVALID_ARGUMENT
    assert first.result() == [True]
    assert [m.main.operands[0].type for m in recording.models] == [valid.main.operands[0].type, 9999,
                                                                   valid.main.operands[0].type]


def test_nothing_that_needs_a_preamble_is_sent_ahead(served):
    device = served()
    model = to_hal_model(_add_model())
    pooled = model.copy()
    pooled.pools = [allocate("ashmem", 64)]
    assert device.get_supported_operations_ahead(pooled) is None  # its pool is not declared yet
    device.get_supported_operations(pooled)  # an ordinary call declares it
    assert device.get_supported_operations_ahead(pooled) is not None
    device.connection.release_handle(12345)  # a release waits for the next ordinary call
    assert device.get_supported_operations_ahead(model) is None
    device.get_supported_operations(model)
    assert device.get_supported_operations_ahead(model) is not None


def test_sending_ahead_to_a_dead_peer_leaves_the_loss_to_the_next_ordinary_call():
    client_end, host_end = p.socket_pair()
    device = ProxyDevice(Connection(client_end, lambda: DriverCrashed("killed by SIGSEGV")))
    host_end.close()
    assert device.get_supported_operations_ahead(to_hal_model(_add_model())) is None
    assert device.connection.failure is None  # the case sending ahead is not charged with it
    with pytest.raises(DriverCrashed, match="killed by SIGSEGV"):
        device.get_type()


def test_callers_on_many_threads_each_get_their_own_answers(served):
    """One connection, eight threads calling at once, synchronous calls and asynchronous executions mixed:
    the reader wakes only the caller a message answers and hands the socket on when its own answer is in,
    so a lost hand-off would leave a caller waiting for ever (the join below would fail)."""
    from vts.ipc.clients import set_concurrency

    device = served()
    set_concurrency(device, 4)
    model = _add_model()
    hal_model = to_hal_model(model)
    prepared = device.prepare_model(hal_model)
    expected_flags = device.get_supported_operations(hal_model)
    problems: list[str] = []

    def caller(number: int) -> None:
        try:
            for turn in range(40):
                if (number + turn) % 3 == 0:
                    built = build_request(model, model.examples[0])
                    try:
                        answer = execute(prepared, built.request, Executor.ASYNC, MeasureTiming.NO)
                        if answer.status != ErrorStatus.NONE:
                            problems.append(f"thread {number}: execute_async answered {answer.status}")
                        elif built.read_output(0, np.dtype("<f4"), 4).tolist() != [1.75, 2.0, 0.25, 0.5]:
                            problems.append(f"thread {number}: another request's output, or none")
                    finally:
                        built.close()
                elif device.get_supported_operations(hal_model) != expected_flags:
                    problems.append(f"thread {number}: wrong support flags")
        except Exception as error:  # reported below, with the thread that saw it
            problems.append(f"thread {number}: {type(error).__name__}: {error}")

    threads = [threading.Thread(target=caller, args=(n,), daemon=True) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not [t for t in threads if t.is_alive()], "a caller never got its answer"
    assert not problems, problems[:3]


class _SlowSupportDevice(_RecordingDevice):
    """The reference driver, answering its n-th support query after ``delays[n]`` seconds."""

    def __init__(self, delays: list[float]) -> None:
        super().__init__()
        self.delays = delays
        self.count = itertools.count()

    def get_supported_operations(self, model):
        number = next(self.count)
        time.sleep(self.delays[number] if number < len(self.delays) else 0.0)
        return self.inner.get_supported_operations(model)


def test_a_reader_whose_answer_is_in_hands_the_socket_to_a_caller_still_waiting(served):
    """A calls first and reads; B calls while A reads and waits; A's answer comes first and A leaves.
    Nobody else calls: unless A hands the socket to B, B's answer is never read."""
    from vts.ipc.clients import set_concurrency

    device = served(_SlowSupportDevice([0.3, 0.8]))
    set_concurrency(device, 2)
    hal_model = to_hal_model(_add_model())
    answers: dict[str, object] = {}

    def call(name: str) -> None:
        answers[name] = device.get_supported_operations(hal_model)

    first = threading.Thread(target=call, args=("A",), daemon=True)
    first.start()
    time.sleep(0.1)
    second = threading.Thread(target=call, args=("B",), daemon=True)
    second.start()
    first.join(30)
    second.join(30)
    assert answers == {"A": [True], "B": [True]}
