"""Burst executions as the families run them: one normalised answer, VTS's tokens, a one-execution burst.

The ``burst`` family drives bursts step by step; ``memory_domain`` runs a
request through a fresh burst the way AIDL VTS's GeneratedTestHarness does
(its BURST executor: a slot 0, 1, 2... for each shared-memory pool, -1
``kIgnoreSlot`` for each driver-buffer token pool, then
``releaseMemoryResource`` of each slot, which must succeed).  Both need the
same mechanics, so they live here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from vts.families._kit.executions import Answer, Executor, answer_outputs, execute
from vts.families._kit.judge import judge_success
from vts.families._kit.random_inputs import plan_inputs, random_example, seed_of
from vts.families.base import CaseFailure, RunOptions
from vts.hal.aidl_burst import NO_IDENTITY
from vts.hal.enums import ErrorStatus, MeasureTiming, OperationType
from vts.hal.errors import DriverError
from vts.hal.interfaces import Burst, PreparedModel
from vts.hal.types import NO_TIMING_INFO, ExecutionResult, MemoryToken, Request
from vts.model.casemodel import BuiltRequest, CaseExample, CaseModel, build_request

#: The byte every output pool is filled with before a burst execution: a pool no execution names must keep it.
SENTINEL = 0xA5


def burst_execute(burst: Burst, request: Request, memory_ids: list[int],
                  measure: MeasureTiming = MeasureTiming.NO) -> Answer:
    """One burst execution normalised to an ``Answer`` (a DriverError is its status)."""
    try:
        result = burst.execute(request, memory_ids, measure)
    except DriverError as error:
        return Answer(error.status, tuple(error.output_shapes), error.timing or NO_TIMING_INFO, error.message)
    if not isinstance(result, ExecutionResult):
        raise CaseFailure(f"the burst's execute returned {type(result).__name__}, not an ExecutionResult")
    return Answer(ErrorStatus.NONE, tuple(result.output_shapes), result.timing)


def configure(prepared: PreparedModel) -> Burst:
    """``configureExecutionBurst`` must succeed with a burst (ValidateBurst.cpp, GeneratedTestHarness.cpp: NONE
    and a non-null burst)."""
    try:
        burst = prepared.configure_execution_burst()
    except DriverError as error:
        raise CaseFailure(f"configure_execution_burst failed with {error.status.name}", (error.message,)) from None
    if not isinstance(burst, Burst):
        raise CaseFailure(f"configure_execution_burst returned {type(burst).__name__}, not a Burst")
    return burst


def vts_tokens(request: Request) -> list[int]:
    """AIDL VTS's memory identifier tokens for ``request``: 0, 1, 2... for the shared-memory pools in order,
    -1 for each driver-buffer (token) pool (GeneratedTestHarness.cpp, ValidateRequest.cpp validateBurst)."""
    tokens: list[int] = []
    slot = 0
    for pool in request.pools:
        if isinstance(pool, MemoryToken):
            tokens.append(NO_IDENTITY)
        else:
            tokens.append(slot)
            slot += 1
    return tokens


def release(burst: Burst, token: int, where: str) -> None:
    """``releaseMemoryResource`` of a token the client used: it must succeed (GeneratedTestHarness.cpp asserts
    it), else CaseFailure."""
    try:
        burst.free_memory(token)
    except DriverError as error:
        raise CaseFailure(f"{where}: releaseMemoryResource({token}) failed with {error.status.name}",
                          (error.message,)) from None


def execute_on_fresh_burst(prepared: PreparedModel, request: Request,
                           measure: MeasureTiming = MeasureTiming.NO) -> Answer:
    """AIDL VTS's BURST executor: a new burst, ``request`` with ``vts_tokens``, then every token it gave
    released (each release must succeed)."""
    burst = configure(prepared)
    tokens = vts_tokens(request)
    answer = burst_execute(burst, request, tokens, measure)
    for token in tokens:
        if token != NO_IDENTITY:
            release(burst, token, "burst execution")
    return answer


def fill(built: BuiltRequest) -> None:
    """Fill the output pool with ``SENTINEL``."""
    built.output_pool.write(0, bytes([SENTINEL]) * built.output_pool.size)


def untouched(built: BuiltRequest) -> bool:
    """Whether the output pool still holds only ``SENTINEL``."""
    return built.output_pool.read(0, built.output_pool.size) == bytes([SENTINEL]) * built.output_pool.size


@dataclass(frozen=True)
class BurstMutation:
    """One malformed burst request: what it breaks, and how to build it on a fresh burst."""

    slug: str
    description: str
    #: (burst, built request) -> (request, memory ids) to send; may run setup executions on the burst.
    build: Callable[[Burst, BuiltRequest], tuple[Request, list[int]]]


def random_streaming(model: CaseModel, example: CaseExample, built: BuiltRequest, run: Callable[[], Answer],
                     prepared: PreparedModel, options: RunOptions, where: str) -> list[str]:
    """Random inputs written into ``built``'s input memory (which the burst has seen), then ``run`` (A's request
    through the burst), judged against the same prepared model's plain execution of those inputs.

    A burst that keeps a copy of a memory's contents answers the old inputs; random inputs catch it even on
    models whose two requests share their inputs.  ``where`` names the step in the failure.
    The caller restores the input memory after.
    """
    plan = plan_inputs(model)
    if not plan.any_varied or int(OperationType.RANDOM_MULTINOMIAL) in model.operation_types():
        return []  # nothing to vary, or samples (two executions legitimately differ)
    rng = np.random.Generator(np.random.PCG64(seed_of(f"burst/{model.case_name()}")))
    drawn = random_example(model, plan, rng, "streamed")
    drawn = CaseExample(drawn.name, drawn.inputs, example.outputs)
    fresh = build_request(model, drawn, options.pool_kind, extensions=options.extensions)
    try:
        if not rewrite_inputs(built, fresh):
            return []
        plain = execute(prepared, fresh.request, Executor.SYNC, timeout=options.case_timeout)
        if not plain.ok:
            return []  # the plain path is judged elsewhere; random inputs may leave a driver's domain
        expected = CaseExample(drawn.name, drawn.inputs, answer_outputs(model, fresh, plain, example))
        fill(built)
        return judge_success(model, expected, built, run(), MeasureTiming.NO,
                             f"burst execution ({where}; expected: the same prepared model's plain execution of "
                             "them)")
    finally:
        fresh.close()


def rewrite_inputs(built: BuiltRequest, source: BuiltRequest) -> bool:
    """Copy ``source``'s input bytes into ``built``'s input memory; False when the layouts differ."""
    size = source.input_pool.size
    if built.input_pool.size != size:
        return False
    built.input_pool.write(0, source.input_pool.read(0, size))
    return True


#: One golden step of a burst sequence: (where, run, the request it reads, its example, timing, pools it must
#: leave untouched).
Step = tuple[str, Callable[[], Answer], BuiltRequest, CaseExample, MeasureTiming, tuple[BuiltRequest, ...]]


def run_steps(model: CaseModel, steps: list[Step], a: BuiltRequest, b: BuiltRequest) -> list[str]:
    """Each golden step of a burst sequence: both output pools filled, the step run and judged, and the pools
    it does not name (``quiet``) untouched; the first step with a problem ends the sequence."""
    for where, run, view, example, measure, quiet in steps:
        fill(a)
        fill(b)
        answer = run()
        problems = judge_success(model, example, view, answer, measure, f"burst execution ({where})")
        problems += [f"burst execution ({where}) wrote to an output pool it does not name" for other in quiet
                     if not untouched(other)]
        if problems:
            return problems
    return []
