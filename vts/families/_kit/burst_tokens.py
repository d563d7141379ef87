"""The burst family's checks for AIDL drivers: IBurst.aidl's memory identifier tokens, as AIDL VTS sends them.

An AIDL burst request carries every pool, each with a token: -1 (no
identity) or a token >= 0 under which the driver may keep a mapping until
``releaseMemoryResource``; giving the same memory again with a held token is
the normal path (``vts.hal.aidl_burst`` states the rules).  HIDL's slot
checks (held pools, a memory given for a held slot, identifiers beyond
int32, driver buffers refused) are not AIDL's and are left out by name
(``version_rules.NOT_IN_AIDL``).

* ``golden_sequence``: requests A and B of one model through one burst,
  every token -1 (A, then B with timing), then with tokens 0..3 (A on 0 and
  1, B on 2 and 3 with timing), A again with its memories given again under
  its held tokens, A's input (0) with B's output memory (3: A's answer must
  land there, nothing in A's pool), then steady-state streaming: the client
  rewrites the memory of held token 0 (B's inputs, A's again, random inputs
  judged against the plain execution) and every answer must follow the
  bytes the memory holds now (a driver may cache the mapping by token, never
  the contents); last, token 0 released (which must succeed, as
  GeneratedTestHarness asserts) and given to B's input memory: B's answer in
  A's output pool.
* ``mutations``: AIDL VTS ``validateBurst``: token -2 for each pool in turn
  (the others 0, 1...), one token fewer and one more than pools (all -1),
  and the suite's removed input and output sent through the burst with
  every token -1 (ValidateRequest.cpp ``validate``); each INVALID_ARGUMENT,
  no shapes, no timing, no output byte written.  ``release_problems``:
  ``releaseMemoryResource(-2)`` INVALID_ARGUMENT, and a burst whose tokens
  were released (one twice, one never given) goes on working.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from vts.families._kit.burst_path import (
    BurstMutation,
    Step,
    burst_execute,
    configure,
    fill,
    random_streaming,
    release,
    rewrite_inputs,
    run_steps,
    vts_tokens,
)
from vts.families._kit.executions import Answer
from vts.families._kit.judge import judge_success
from vts.families._kit.request_mutations import RequestMutation, apply_request_mutation
from vts.families.base import CaseFailure, RunOptions
from vts.hal.aidl_burst import NO_IDENTITY
from vts.hal.enums import ErrorStatus, MeasureTiming
from vts.hal.errors import DriverError
from vts.hal.interfaces import Burst, PreparedModel
from vts.hal.types import Request
from vts.model.casemodel import BuiltRequest, CaseExample, CaseModel, build_request

#: The invalid token VTS sends (ValidateRequest.cpp ``invalidSlot``).
INVALID_TOKEN = -2
#: Tokens of the golden sequence: A's input and output, B's input and output.
A_IN, A_OUT, B_IN, B_OUT = 0, 1, 2, 3
#: ``build_request`` places the inputs in pool 0 and the outputs in pool 1.
REQUEST_POOLS = 2



def _with_pools(built: BuiltRequest, input_pool: object, output_pool: object) -> Request:
    return Request(built.request.inputs, built.request.outputs, [input_pool, output_pool])  # type: ignore[list-item]


def golden_sequence(model: CaseModel, a_example: CaseExample, b_example: CaseExample, a: BuiltRequest,
                    b: BuiltRequest, burst: Burst, prepared: PreparedModel, options: RunOptions) -> list[str]:
    """The AIDL golden steps; the first problem ends the sequence (later steps build on earlier ones)."""
    crossed = BuiltRequest(a.request, a.input_pool, b.output_pool, a.output_locations)
    steps: list[Step] = [
        ("A, every token -1", lambda: burst_execute(burst, a.request, [NO_IDENTITY] * 2),
         a, a_example, MeasureTiming.NO, (b,)),
        ("B, every token -1, timing", lambda: burst_execute(burst, b.request, [NO_IDENTITY] * 2, MeasureTiming.YES),
         b, b_example, MeasureTiming.YES, (a,)),
        ("A, tokens 0 and 1", lambda: burst_execute(burst, a.request, [A_IN, A_OUT]), a, a_example, MeasureTiming.NO,
         (b,)),
        ("B, tokens 2 and 3, timing", lambda: burst_execute(burst, b.request, [B_IN, B_OUT], MeasureTiming.YES),
         b, b_example, MeasureTiming.YES, (a,)),
        ("A again, its memories given again under held tokens 0 and 1",
         lambda: burst_execute(burst, a.request, [A_IN, A_OUT]), a, a_example, MeasureTiming.NO, (b,)),
        ("A's input memory (token 0) with B's output memory (token 3)",
         lambda: burst_execute(burst, _with_pools(a, a.input_pool, b.output_pool), [A_IN, B_OUT]),
         crossed, a_example, MeasureTiming.NO, (a,)),
    ]
    problems = run_steps(model, steps, a, b)
    if problems:
        return problems
    problems = _streaming(model, a_example, b_example, a, b, burst, prepared, options)
    if problems:
        return problems
    # Release token 0 and give it again, now to B's input memory: B's answer in A's output pool.
    try:
        release(burst, A_IN, "after streaming")
    except CaseFailure as failure:
        return [failure.reason]
    fill(a)
    answer = burst_execute(burst, _with_pools(b, b.input_pool, a.output_pool), [A_IN, A_OUT])
    view = BuiltRequest(b.request, b.input_pool, a.output_pool, b.output_locations)
    return judge_success(model, b_example, view, answer, MeasureTiming.NO,
                         "burst execution (token 0 released, then given to B's input memory)")


def _streaming(model: CaseModel, a_example: CaseExample, b_example: CaseExample, a: BuiltRequest,
               b: BuiltRequest, burst: Burst, prepared: PreparedModel, options: RunOptions) -> list[str]:
    """Rewrite A's input memory between executions, giving it again under held token 0 each time; each answer
    must follow the memory's bytes now (IBurst.aidl lets a driver cache a mapping per token, not contents)."""
    original = a.input_pool.read(0, a.input_pool.size)

    def again() -> Answer:
        return burst_execute(burst, a.request, [A_IN, A_OUT])

    try:
        if original != b.input_pool.read(0, b.input_pool.size) and rewrite_inputs(a, b):
            for where, example in (("B's inputs written into A's input memory, given again under token 0",
                                    b_example),
                                   ("A's inputs written back into the same memory, token 0 again", a_example)):
                if example is a_example:
                    a.input_pool.write(0, original)
                fill(a)
                problems = judge_success(model, example, a, again(), MeasureTiming.NO, f"burst execution ({where})")
                if problems:
                    return problems
        return random_streaming(model, a_example, a, again, prepared, options,
                                "random inputs written into A's input memory, given again under token 0")
    finally:
        a.input_pool.write(0, original)


# -- validation ------------------------------------------------------------------------------------


def _tokens_with(index: int) -> Callable[[Burst, BuiltRequest], tuple[Request, list[int]]]:
    def build(burst: Burst, built: BuiltRequest) -> tuple[Request, list[int]]:
        tokens = vts_tokens(built.request)
        tokens[index] = INVALID_TOKEN
        return built.request, tokens

    return build


def _all_minus_one(mutation: RequestMutation) -> Callable[[Burst, BuiltRequest], tuple[Request, list[int]]]:
    def build(burst: Burst, built: BuiltRequest) -> tuple[Request, list[int]]:
        request = built.request.copy()
        apply_request_mutation(request, built, mutation)
        return request, [NO_IDENTITY] * len(request.pools)

    return build


def mutations(model: CaseModel) -> list[BurstMutation]:
    """AIDL VTS's malformed burst requests of one model (``validateBurst``, and ``validate``'s burst path)."""
    found = [BurstMutation(f"token_minus_2_pool_{index}", f"memory identifier token -2 for pool {index}",
                           _tokens_with(index)) for index in range(REQUEST_POOLS)]
    found += [
        BurstMutation("fewer_tokens", "one memory identifier token fewer than pools (all -1)",
                      lambda burst, built: (built.request, [NO_IDENTITY] * (len(built.request.pools) - 1))),
        BurstMutation("more_tokens", "one memory identifier token more than pools (all -1)",
                      lambda burst, built: (built.request, [NO_IDENTITY] * (len(built.request.pools) + 1))),
    ]
    for kind, count in (("remove_input", len(model.main.inputs)), ("remove_output", len(model.main.outputs))):
        for index in range(count):
            mutation = RequestMutation(f"{kind}_{index}", f"{kind.replace('_', ' ')} {index}", kind, (index,))
            found.append(BurstMutation(mutation.slug, f"{mutation.description} (through the burst, tokens -1)",
                                       _all_minus_one(mutation)))
    return found


def release_problems(model: CaseModel, prepared: PreparedModel, options: RunOptions) -> list[str]:
    """``releaseMemoryResource(-2)`` must be INVALID_ARGUMENT (validateBurst); releasing a held token must
    succeed, and after it, a token released twice and one never given, the burst must go on working."""
    problems: list[str] = []
    example = model.examples[0]
    built = build_request(model, example, options.pool_kind, extensions=options.extensions)
    try:
        burst = configure(prepared)
        try:
            burst.free_memory(INVALID_TOKEN)
            problems.append("release_minus_2 (releaseMemoryResource(-2)): succeeded, expected INVALID_ARGUMENT")
        except DriverError as error:
            if error.status != ErrorStatus.INVALID_ARGUMENT:
                problems.append(f"release_minus_2 (releaseMemoryResource(-2)): returned {error.status.name}, "
                                "expected INVALID_ARGUMENT")
        burst_execute(burst, built.request, [0, 1])
        try:
            release(burst, 0, "after an execution with tokens 0 and 1")
        except CaseFailure as failure:
            return [*problems, failure.reason]
        for token in (0, 77):  # twice, and never given: the interface says nothing; a refusal is no fault
            with contextlib.suppress(DriverError):
                burst.free_memory(token)
        fill(built)
        answer = burst_execute(burst, built.request, [0, 1])  # token 0 given anew, token 1 still held
        problems += judge_success(model, example, built, answer, MeasureTiming.NO,
                                  "burst execution after releasing token 0 (then 0 again, and 77 never given)")
    finally:
        built.close()
    return problems
