"""The multi_client family: several clients of one driver instance must not interfere.

"Drivers should ensure that applications can't interfere with each other
even when they use the same accelerator" (driver guide).  Each case opens
two or three clients of the driver under test: out of process further
connections to the same host process (``OPEN_CONNECTION``), in process one
``DriverHost`` per client around the same device object; either way the
clients share one driver instance and each has its own pool ids, handles,
prepared models and buffers.  The model is an ADD whose goldens are written
by hand (``_kit/supported_models``; rolled variants give each request its
own): float32, or the first of float16 and the quantized types the driver
claims (``getSupportedOperations``) when it has no float32 ADD; a driver
with none of them is skipped, never failed for what it does not support.

* ``Results``: clients A and B prepare the model at the same time, then
  run requests concurrently, each its own golden.
* ``Tokens`` (memory domains): A allocates a buffer and fills it; B,
  with its own preparation of the same model, names A's token as an input
  and as an output: both refused with INVALID_ARGUMENT, B's output pool
  untouched and A's buffer unchanged; A's own use of it gives A's golden.
* ``Handles``: a fresh client C names pool ids and a handle (a fenced
  callback) that exist only on A's connection: refused, and A's output
  pool untouched.
* ``HungClient``: A's fenced execution waits on a fence nobody signals; B's
  requests meanwhile must finish right, within ``HUNG_BUDGET`` seconds.
* ``ClosedClient``: A's connection is dropped with executions in flight (its
  process "crashed"); B's later requests are right and the driver still
  answers the run's own connection.

A driver that cannot open further connections (a program without
``OPEN_CONNECTION``) is skipped.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator

from vts.families._kit.concurrent_calls import run_concurrently
from vts.families._kit.executions import Executor, execute, prepare_for_case
from vts.families._kit.jobs import Job, close_jobs, harness_threads, job_task, judge_jobs, make_jobs, run_wave
from vts.families._kit.judge import judge_success
from vts.families._kit.supported_models import add_models, first_supported
from vts.families.base import Case, CaseFailure, Family, Outcome, RunOptions, failed, passed, skipped
from vts.families.registry import register_family
from vts.hal import memory as hal_memory
from vts.hal.enums import ErrorStatus, MeasureTiming
from vts.hal.errors import DriverError
from vts.hal.interfaces import Device, PreparedModel, SyncFence
from vts.hal.types import BufferDesc, BufferRole, DataLocation, MemoryToken, Request
from vts.ipc import protocol as p
from vts.ipc.client import ProxyDevice, RemoteDriverException
from vts.ipc.clients import Unsupported, close_client, declared_pool_id, open_client, set_concurrency
from vts.ipc.errors import DriverLost, ProtocolError, RequestRejected
from vts.model.casemodel import BuiltRequest, CaseModel, build_request, dtype_of

#: Requests each client runs in ``Results``, ``HungClient`` and ``ClosedClient``.
REQUESTS = 6
#: Seconds client B has to finish its requests while client A hangs (a tiny model: milliseconds of work).
HUNG_BUDGET = 10.0
#: Seconds client A's hung call is given to reach the driver before client B starts, when the call does not return.
REACH_S = 0.05
_SENTINEL = 0xA5

TESTS = ("Results", "Tokens", "Handles", "HungClient", "ClosedClient")


class Clients:
    """The clients a case opened; all closed at the end (the driver instance stays open)."""

    def __init__(self, device: Device) -> None:
        self.device = device
        self.opened: list[ProxyDevice] = []

    def open(self) -> ProxyDevice:
        client = open_client(self.device)
        set_concurrency(client, harness_threads() + 1)
        self.opened.append(client)
        return client

    def close(self) -> None:
        for client in self.opened:
            close_client(client)


def _prepare(client: Device, model: CaseModel, options: RunOptions, who: str) -> PreparedModel:
    prepared, why = prepare_for_case(client, model, options)
    if prepared is None:
        raise CaseFailure(f"client {who} could not prepare {model.spec}, an ADD the driver claims to support ({why})")
    return prepared


def _filled(built: BuiltRequest) -> BuiltRequest:
    built.output_pool.write(0, bytes([_SENTINEL]) * built.output_pool.size)
    return built


def _untouched(built: BuiltRequest) -> bool:
    return built.output_pool.read(0, built.output_pool.size) == bytes([_SENTINEL]) * built.output_pool.size


def _interleave(*lists: list[Job]) -> list[Job]:
    return [job for group in zip(*lists, strict=True) for job in group]


def _run_waves(jobs: list[Job], budget: float) -> list[str]:
    try:
        return judge_jobs(jobs, run_wave([job_task(j, budget) for j in jobs], harness_threads(), budget))
    finally:
        close_jobs(jobs)


def _refused(run: Callable[[], object], where: str) -> list[str]:
    """``run`` must fail: a HAL error or a refusal by the host; success is a leak between clients."""
    try:
        run()
    except (DriverError, ProtocolError, RequestRejected, RemoteDriverException):
        return []
    return [f"{where}: accepted (one client reached another's object)"]


# -- the tests ------------------------------------------------------------------------------------


def results_test(clients: Clients, model: CaseModel, options: RunOptions) -> list[str]:
    a, b = clients.open(), clients.open()
    # Two applications compile at the same moment: both preparations run at once.
    budget = options.case_timeout * 0.25
    prepared = run_concurrently([lambda: _prepare(a, model, options, "A"), lambda: _prepare(b, model, options, "B")],
                                2, budget)
    for who, outcome in zip("AB", prepared, strict=True):
        if isinstance(outcome.error, CaseFailure):
            raise outcome.error
        if outcome.error is not None:
            return [f"client {who}'s preparation, concurrent with the other's, raised "
                    f"{type(outcome.error).__name__}: {outcome.error}"]
    prep_a, prep_b = prepared[0].value, prepared[1].value
    jobs = _interleave(make_jobs([("client A", prep_a, model)], REQUESTS, options),
                       make_jobs([("client B", prep_b, model)], REQUESTS, options, start=1))
    return _run_waves(jobs, options.case_timeout * 0.5)


def tokens_test(clients: Clients, model: CaseModel, options: RunOptions) -> list[str]:
    a, b = clients.open(), clients.open()
    prep_a, prep_b = _prepare(a, model, options, "A"), _prepare(b, model, options, "B")
    try:
        buffer, token = a.allocate(BufferDesc([]), [prep_a], [BufferRole(0, 0, 1.0)], [])
    except DriverError as error:
        if error.status == ErrorStatus.GENERAL_FAILURE:
            raise Unsupported(f"the driver has no memory domains (allocate: {error.message})") from None
        raise CaseFailure(f"client A's valid allocate failed with {error.status.name}", (error.message,)) from None
    example = model.examples[0]
    data = example.inputs[0].value.astype(dtype_of(model.main.operands[model.main.inputs[0]].type)).tobytes()
    staging = hal_memory.allocate(options.pool_kind, len(data))
    staging.write(0, data)
    buffer.copy_from(staging, [])
    problems: list[str] = []
    # Control: A's own request with its token as input 0 gives A's golden.
    own = _filled(build_request(model, example, options.pool_kind))
    try:
        answer = execute(prep_a, _with_token(own.request, token, True), Executor.SYNC)
        problems += judge_success(model, example, own, answer, MeasureTiming.NO, "client A with its own token")
    finally:
        own.close()
    for as_input in (True, False):
        where = f"client B naming client A's token as {'input' if as_input else 'output'} 0"
        theirs = _filled(build_request(model, example, options.pool_kind))
        try:
            answer = execute(prep_b, _with_token(theirs.request, token, as_input), Executor.SYNC)
            if answer.status != ErrorStatus.INVALID_ARGUMENT:
                problems.append(f"{where}: returned {answer.status.name}, expected INVALID_ARGUMENT")
            if not _untouched(theirs):
                problems.append(f"{where}: client B's output pool was written")
        finally:
            theirs.close()
    readback = hal_memory.allocate(options.pool_kind, len(data))
    buffer.copy_to(readback)
    if readback.read(0, len(data)) != data:
        problems.append("client A's buffer changed after client B's refused requests")
    for pool in (staging, readback):
        pool.close()
    return problems


def _with_token(request: Request, token: int, as_input: bool) -> Request:
    changed = request.copy()
    changed.pools.append(MemoryToken(token))
    side = changed.inputs if as_input else changed.outputs
    side[0].location = DataLocation(len(changed.pools) - 1, 0, 0)
    return changed


def handles_test(clients: Clients, model: CaseModel, options: RunOptions) -> list[str]:
    a = clients.open()
    prep_a = _prepare(a, model, options, "A")
    built = _filled(build_request(model, model.examples[0], options.pool_kind))
    problems: list[str] = []
    try:
        answer = execute(prep_a, built.request, Executor.SYNC)
        problems += judge_success(model, model.examples[0], built, answer, MeasureTiming.NO, "client A")
        a_ids = {id(pool): declared_pool_id(a.connection, pool) for pool in built.request.pools}
        c = clients.open()
        prep_c = _prepare(c, model, options, "C")
        assert isinstance(prep_c, PreparedModel)
        _filled(built)

        def execute_with_a_pools() -> object:
            def write(w: p.Writer) -> None:
                w.u32(prep_c.handle)  # type: ignore[attr-defined]
                p.write_request(w, built.request, lambda pool: a_ids[id(pool)],
                                p.carries_padding(c.connection.features))
                w.i64(0)
                w.optional_i64(None)
                w.optional_i64(None)

            return c.connection.call(p.Method.EXECUTE, write, decode=lambda r, _taken: p.read_execution_result(r))

        problems += _refused(execute_with_a_pools, "client C naming pool ids only client A declared")
        if not _untouched(built):
            problems.append("client C's request wrote into client A's output pool")
        _fence, callback = prep_a.execute_fenced(built.request, [], MeasureTiming.NO)
        foreign = getattr(callback, "handle", None)
        if foreign is not None and foreign != getattr(prep_c, "handle", None):
            problems += _refused(
                lambda: c.connection.call(p.Method.FENCED_GET_EXECUTION_INFO, lambda w: w.u32(foreign),
                                          decode=lambda r, _taken: (r.i64(), p.read_timing(r), p.read_timing(r))),
                f"client C naming handle {foreign} (client A's fenced callback), which it was never given")
    finally:
        built.close()
    return problems


def hung_client_test(clients: Clients, model: CaseModel, options: RunOptions) -> list[str]:
    a, b = clients.open(), clients.open()
    prep_a, prep_b = _prepare(a, model, options, "A"), _prepare(b, model, options, "B")
    never = SyncFence()
    hung = build_request(model, model.examples[0], options.pool_kind)
    answer: list[object] = []
    returned = threading.Event()

    def wait_forever() -> None:
        try:
            answer.append(prep_a.execute_fenced(hung.request, [never], MeasureTiming.NO))
        except BaseException as error:  # judged below only as "A's call ended"
            answer.append(error)
        returned.set()

    thread = threading.Thread(target=wait_forever, daemon=True, name="nnvts-hung-client")
    thread.start()
    # Let A's request reach the driver first: a driver that answers executeFenced at once (a fence that signals
    # later) has it once the call returned; one that holds the call until its fences signal never returns, and
    # is given REACH_S to get there.
    returned.wait(REACH_S)
    try:
        jobs = make_jobs([("client B", prep_b, model)], REQUESTS, options)
        problems = [f"while client A's request hangs: {problem}"
                    for problem in _run_waves(jobs, min(HUNG_BUDGET, options.case_timeout * 0.4))]
    except CaseFailure as failure:
        problems = [f"while client A's request hangs: {failure.reason}"]
    finally:
        never.signal(ok=False)
        thread.join(min(HUNG_BUDGET, options.case_timeout * 0.2))
        hung.close()
    if isinstance(answer[0] if answer else None, DriverLost):
        raise answer[0]  # type: ignore[misc]
    return problems


def closed_client_test(clients: Clients, model: CaseModel, options: RunOptions) -> list[str]:
    a, b = clients.open(), clients.open()
    prep_a, prep_b = _prepare(a, model, options, "A"), _prepare(b, model, options, "B")
    in_flight = [build_request(model, model.examples[0], options.pool_kind) for _ in range(REQUESTS)]
    try:
        futures = []
        for built in in_flight:
            with contextlib.suppress(DriverError):  # judged elsewhere; here only A's disappearance matters
                futures.append(prep_a.execute_async(built.request))
        close_client(a)  # client A's process is gone, its requests still in the driver
        del futures
        jobs = make_jobs([("client B", prep_b, model)], REQUESTS, options)
        problems = [f"after client A vanished: {p_}" for p_ in _run_waves(jobs, options.case_timeout * 0.4)]
    finally:
        for built in in_flight:
            built.close()
    status = clients.device.get_status()
    if int(status) != 0:
        problems.append(f"the run's own connection reports device status {status} after client A vanished")
    return problems


_TESTS: dict[str, Callable[[Clients, CaseModel, RunOptions], list[str]]] = {
    "Results": results_test,
    "Tokens": tokens_test,
    "Handles": handles_test,
    "HungClient": hung_client_test,
    "ClosedClient": closed_client_test,
}


@register_family
class MultiClientFamily(Family):
    name = "multi_client"
    description = ("two or three clients of one driver instance: concurrent results, tokens, pool ids and handles "
                   "kept apart, a hung or vanished client not disturbing the others")

    def device_cases(self) -> Iterator[Case]:
        for test in TESTS:
            yield Case(f"{self.name}/{test}", self.name, None, None, "", {"test": test})

    def run(self, case: Case, device: Device, options: RunOptions) -> Outcome:
        model, why = first_supported(device, add_models("multi_client_add"), options)
        if model is None:
            return skipped(f"the driver supports none of the ADD models the clients share: {why}")
        clients = Clients(device)
        try:
            problems = _TESTS[case.config["test"]](clients, model, options)
        except Unsupported as why:
            return skipped(str(why))
        except DriverLost as lost:
            # A client's own connection was lost.  If the driver process is gone the run's connection
            # says so too (and the runner reports a crash); otherwise only that client's service broke.
            device.get_status()
            return failed(f"a client's connection to the driver was lost: {lost.reason}")
        finally:
            clients.close()
        if problems:
            return failed(problems[0], tuple(problems[:20]))
        return passed()

