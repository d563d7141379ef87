"""The burst family: burst executions, golden and malformed, by the rules of the driver's interface.

HIDL 1.2/1.3 (VTS GeneratedTestHarness.cpp, ValidateBurst.cpp): a burst
(``PreparedModel.configure_execution_burst``) names its request pools by
identifier (slot) and keeps each slot's memory until the client frees it;
``vts.hal.interfaces.Burst`` states the rules.  AIDL (feature level 5 on,
IBurst.aidl; AIDL VTS's BURST executor and ``validateBurst``): every
request carries all its pools, each with a memory identifier token (-1 for
no identity, >= 0 for a memory the driver may keep a mapping of until
``releaseMemoryResource``); ``vts.hal.aidl_burst`` states those rules and
``vts.families._kit.burst_tokens`` holds the AIDL checks.  Two cases per
model (not ``expect_failure``), whichever the version:

* ``burst/SPEC.MODEL``: the example (and, where there is one, a second
  request with a golden of its own: an identical sibling model's example or
  a rolled elementwise variant, ``vts.families._kit.request_variants``)
  through one burst.  HIDL: timing off and on, then requests that reuse held
  slots: request A again with its slots held, A's input slot with B's output
  slot (A's answer must land in B's output pool, nothing in A's), and A's
  input slot freed and given again with B's input memory.  AIDL: A and B
  with every token -1, then with tokens 0..3, A's memories given again under
  its held tokens, A's input with B's output memory, and token 0 released
  and given to B's input memory.  Every answer is judged like a
  ``generated`` one; an output pool no request wrote to must keep its
  sentinel bytes.  Between those, steady-state streaming: the client
  rewrites the memory of A's input (its held slot, or its held token given
  again) between executions (B's inputs, A's again, then random inputs
  drawn as the ``differential`` family draws them) and every answer must
  follow the bytes the memory holds now.  A burst that keeps a copy of a
  memory's contents taken when it was first given, instead of the memory (or
  its mapping), answers the old inputs; the random inputs catch it on models
  whose A and B share their inputs, their expected answer being the same
  prepared model's plain execution of them.
* ``burst/validation/SPEC.MODEL``: malformed burst requests, each on a
  fresh burst, each to fail with INVALID_ARGUMENT, no shapes, no timing and
  no byte of the output pool written.  HIDL (ValidateBurst.cpp): fewer and
  more identifiers than pools, an identifier twice, negative and
  beyond-int32 identifiers, a held slot never given (INT32_MAX, as VTS), a
  freed slot, a memory given for a slot still held, a driver-buffer token,
  and the suite's removed input and removed output sent through the burst;
  freeing an unknown slot, and a slot twice, must leave the burst working.
  AIDL (``validateBurst``): token -2 for each pool in turn, one token fewer
  and one more than pools, the removed input and output with every token
  -1, and ``releaseMemoryResource(-2)`` refused; releasing a held token must
  succeed and leave the burst working.  The HIDL checks AIDL lacks are left
  out with the rule named in the verdict's reason
  (``version_rules.NOT_IN_AIDL``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from vts.families._kit import burst_tokens
from vts.families._kit.burst_path import (
    BurstMutation,
    Step,
    burst_execute,
    configure,
    fill,
    random_streaming,
    rewrite_inputs,
    run_steps,
    untouched,
)
from vts.families._kit.executions import Answer, PreparedModelCache
from vts.families._kit.judge import judge_success
from vts.families._kit.request_mutations import RequestMutation, apply_request_mutation
from vts.families._kit.request_variants import SiblingExamples, request_variants, with_examples
from vts.families._kit.version_rules import rule_lacking
from vts.families.base import Case, DeviceInfo, Family, Outcome, RunOptions, failed, passed, skipped
from vts.families.registry import register_family
from vts.hal.enums import ErrorStatus, HalVersion, MeasureTiming
from vts.hal.errors import DriverError
from vts.hal.interfaces import MAX_BURST_SLOT, Burst, Device, PreparedModel, spoken_version
from vts.hal.types import NO_TIMING_INFO, MemoryToken, Request
from vts.model.casemodel import BuiltRequest, CaseExample, CaseModel, build_request

#: Slots the HIDL golden sequence uses: A's input and output, B's input and output.
A_IN, A_OUT, B_IN, B_OUT = 11, 12, 21, 22


def held(request: Request, *given: int) -> Request:
    """``request`` with every pool held by the burst except the positions in ``given``."""
    return Request(request.inputs, request.outputs,
                   [pool if index in given else None for index, pool in enumerate(request.pools)])


@dataclass
class _Pair:
    """Requests A and B of one model (different goldens where an identity allows), with their pools."""

    model: CaseModel
    a_example: CaseExample
    b_example: CaseExample
    a: BuiltRequest
    b: BuiltRequest

    def crossed(self) -> BuiltRequest:
        """A view reading A's outputs from B's output pool (the pools are laid out alike)."""
        return BuiltRequest(self.a.request, self.a.input_pool, self.b.output_pool, self.a.output_locations)

    def close(self) -> None:
        self.a.close()
        self.b.close()


def _pair(model: CaseModel, options: RunOptions) -> _Pair:
    variants = request_variants(model, 2)
    a_example, b_example = variants[0], variants[-1]
    a = build_request(model, a_example, options.pool_kind, extensions=options.extensions)
    b = build_request(model, b_example, options.pool_kind, extensions=options.extensions)
    return _Pair(model, a_example, b_example, a, b)


def _golden_sequence(pair: _Pair, burst: Burst, prepared: PreparedModel, options: RunOptions) -> list[str]:
    """The burst golden steps; the first problem ends the sequence (later steps build on earlier ones)."""
    model, a, b = pair.model, pair.a, pair.b
    steps: list[Step]
    steps = [
        ("A, memories given (slots 11, 12)", lambda: burst_execute(burst, a.request, [A_IN, A_OUT]),
         a, pair.a_example, MeasureTiming.NO, ()),
        ("B, memories given (slots 21, 22), timing", lambda: burst_execute(
            burst, b.request, [B_IN, B_OUT], MeasureTiming.YES), b, pair.b_example, MeasureTiming.YES, ()),
        ("A again, both slots held", lambda: burst_execute(burst, held(a.request), [A_IN, A_OUT]),
         a, pair.a_example, MeasureTiming.NO, (b,)),
        ("A's input slot 11 with B's output slot 22, both held", lambda: burst_execute(
            burst, held(a.request), [A_IN, B_OUT]), pair.crossed(), pair.a_example, MeasureTiming.NO, (a,)),
    ]
    problems = run_steps(model, steps, a, b)
    if problems:
        return problems
    problems = _streaming(pair, burst, prepared, options)
    if problems:
        return problems
    # Free A's input slot and give it again, now with B's input memory: B's answer in A's output pool.
    fill(a)
    burst.free_memory(A_IN)
    request = Request(b.request.inputs, b.request.outputs, [b.input_pool, None])
    answer = burst_execute(burst, request, [A_IN, A_OUT])
    view = BuiltRequest(b.request, b.input_pool, a.output_pool, b.output_locations)
    return judge_success(model, pair.b_example, view, answer, MeasureTiming.NO,
                         "burst execution (slot 11 freed, then given again with B's input memory)")


def _streaming(pair: _Pair, burst: Burst, prepared: PreparedModel, options: RunOptions) -> list[str]:
    """Rewrite A's held input memory between executions; each answer must follow the memory's bytes now.

    Steady-state streaming through a burst is this pattern: the slots stay
    held and the client writes the next inputs into the same memory.  The
    HAL's burst caches *memories* (mapped pools), never their contents.
    """
    model, a, b = pair.model, pair.a, pair.b
    original = a.input_pool.read(0, a.input_pool.size)

    def again() -> Answer:
        return burst_execute(burst, held(a.request), [A_IN, A_OUT])

    try:
        differ = original != b.input_pool.read(0, b.input_pool.size)
        if differ and rewrite_inputs(a, b):
            for where, example in (("B's inputs written into A's held input memory", pair.b_example),
                                   ("A's inputs written back into the same memory", pair.a_example)):
                if example is pair.a_example:
                    a.input_pool.write(0, original)
                fill(a)
                problems = judge_success(model, example, a, again(), MeasureTiming.NO, f"burst execution ({where})")
                if problems:
                    return problems
        return random_streaming(model, pair.a_example, a, again, prepared, options,
                                "random inputs written into A's held input memory")
    finally:
        a.input_pool.write(0, original)


# -- validation ------------------------------------------------------------------------------------


def _setup_then(ids: list[int], then: Callable[[Burst, BuiltRequest], tuple[Request, list[int]]]
                ) -> Callable[[Burst, BuiltRequest], tuple[Request, list[int]]]:
    """Give the request's memories under ``ids`` first (a valid execution), then build the malformed one."""

    def build(burst: Burst, built: BuiltRequest) -> tuple[Request, list[int]]:
        burst_execute(burst, built.request, ids)
        return then(burst, built)

    return build


def _freed(burst: Burst, built: BuiltRequest) -> tuple[Request, list[int]]:
    burst.free_memory(1)
    return held(built.request), [1, 2]


def burst_mutations(model: CaseModel) -> list[BurstMutation]:
    """The malformed burst requests of one model (ValidateRequest.cpp's burst path, ValidateBurst.cpp in API form)."""
    mutations = [
        BurstMutation("fewer_ids", "one memory identifier fewer than pools",
                      lambda burst, built: (built.request, [1])),
        BurstMutation("more_ids", "one memory identifier more than pools",
                      lambda burst, built: (built.request, [1, 2, 3])),
        BurstMutation("duplicate_id", "the same memory identifier for both pools",
                      lambda burst, built: (built.request, [1, 1])),
        BurstMutation("negative_id", "memory identifier -1",
                      lambda burst, built: (built.request, [-1, 2])),
        BurstMutation("id_beyond_int32", "memory identifier 2^31",
                      lambda burst, built: (built.request, [MAX_BURST_SLOT + 1, 2])),
        BurstMutation("unknown_id", "a held memory identifier never given (INT32_MAX)",
                      lambda burst, built: (held(built.request, 1), [MAX_BURST_SLOT, 2])),
        BurstMutation("freed_id", "a memory identifier used after free_memory",
                      _setup_then([1, 2], _freed)),
        BurstMutation("given_while_held", "a memory given for an identifier the burst still holds",
                      _setup_then([1, 2], lambda burst, built: (built.request, [1, 2]))),
        BurstMutation("token_pool", "a driver-buffer token as a burst pool (burst requests are HAL 1.0)",
                      lambda burst, built: (Request(built.request.inputs, built.request.outputs,
                                                    [built.request.pools[0], MemoryToken(1)]), [1, 2])),
    ]
    for kind, count in (("remove_input", len(model.main.inputs)), ("remove_output", len(model.main.outputs))):
        for index in range(count):
            mutation = RequestMutation(f"{kind}_{index}", f"{kind.replace('_', ' ')} {index}", kind, (index,))
            mutations.append(BurstMutation(mutation.slug, f"{mutation.description} (through the burst)",
                                           _request_mutation(mutation)))
    return mutations


def _request_mutation(mutation: RequestMutation) -> Callable[[Burst, BuiltRequest], tuple[Request, list[int]]]:
    def build(burst: Burst, built: BuiltRequest) -> tuple[Request, list[int]]:
        request = built.request.copy()
        apply_request_mutation(request, built, mutation)
        return request, [1, 2]

    return build


def refusal_problems(answer: Answer, built: BuiltRequest, where: str) -> list[str]:
    problems = []
    if answer.status != ErrorStatus.INVALID_ARGUMENT:
        problems.append(f"{where}: returned {answer.status.name}, expected INVALID_ARGUMENT")
    if answer.output_shapes:
        problems.append(f"{where}: output shapes returned with an error")
    if answer.timing != NO_TIMING_INFO:
        problems.append(f"{where}: timing returned with an error")
    if not untouched(built):
        problems.append(f"{where}: the output pool was written")
    return problems


def _aidl(device: object) -> bool:
    """Whether ``device`` speaks AIDL (its bursts take IBurst.aidl's memory identifier tokens)."""
    return spoken_version(device).is_aidl


def mutations_for(model: CaseModel, device: object) -> list[BurstMutation]:
    """The malformed burst requests the driver's version forbids: AIDL VTS's (``burst_tokens``) for an AIDL
    driver, HIDL's (``burst_mutations``) otherwise."""
    if _aidl(device):
        return burst_tokens.mutations(model)
    return [m for m in burst_mutations(model) if rule_lacking(f"burst.{m.slug}", device) is None]


def _validation(model: CaseModel, prepared: PreparedModel, options: RunOptions, device: object) -> list[str]:
    """Every burst mutation of the driver's version refused; then the frees (HIDL) or releases (AIDL)."""
    problems: list[str] = []
    example = model.examples[0]
    for mutation in mutations_for(model, device):
        built = build_request(model, example, options.pool_kind, extensions=options.extensions)
        try:
            burst = configure(prepared)
            request, ids = mutation.build(burst, built)
            fill(built)
            answer = burst_execute(burst, request, ids, MeasureTiming.YES)
            problems += refusal_problems(answer, built, f"{mutation.slug} ({mutation.description})")
        finally:
            built.close()
    if _aidl(device):
        return problems + burst_tokens.release_problems(model, prepared, options)
    return problems + _survives_frees(model, prepared, options)


def _survives_frees(model: CaseModel, prepared: PreparedModel, options: RunOptions) -> list[str]:
    """The suite frees the first slot, an unknown slot (0) and the first slot again; the burst must go on."""
    example = model.examples[0]
    built = build_request(model, example, options.pool_kind, extensions=options.extensions)
    try:
        burst = configure(prepared)
        burst_execute(burst, built.request, [1, 2])
        for slot in (1, 0, 1):
            with contextlib.suppress(DriverError):  # freeMemory returns nothing in the HAL: a refusal is harmless
                burst.free_memory(slot)
        fill(built)
        answer = burst_execute(burst, held(built.request, 0), [1, 2])  # slot 1 given anew, slot 2 still held
        return judge_success(model, example, built, answer, MeasureTiming.NO,
                             "burst execution after freeing slot 1, unknown slot 0 and slot 1 again")
    finally:
        built.close()


@register_family
class BurstFamily(Family):
    name = "burst"
    sees_whole_spec = True  # sibling examples (and, for concurrency, pairs) come from the spec's earlier models
    description = ("burst executions (HAL 1.2): goldens through held, crossed and re-given memory slots, and "
                   "malformed burst requests refused")

    def applicable(self, device: DeviceInfo) -> bool:
        return device.hal_version >= HalVersion.V1_2

    def __init__(self) -> None:
        self._siblings = SiblingExamples()
        #: Both cases of a model (golden, then validation) run on one preparation, as deadline's execution
        #: cases do: the second preparation of an identical model cost a model send, the host's model
        #: checks and the driver's preparation (a fifth of a burst case), and checked nothing the first did
        #: not.  A case run alone prepares the model itself.
        self._prepared = PreparedModelCache()

    def model_cases(self, model: CaseModel, spec_path: str) -> Iterator[Case]:
        if model.expect_failure:
            return
        model = with_examples(model, self._siblings.remember(model, spec_path))
        yield Case(f"{self.name}/{model.case_name()}", self.name, model, None, spec_path, {"kind": "golden"})
        yield Case(f"{self.name}/validation/{model.case_name()}", self.name, model, None, spec_path,
                   {"kind": "validation"})

    def run(self, case: Case, device: Device, options: RunOptions) -> Outcome:
        model = case.model
        assert model is not None
        prepared, why = self._prepared.for_case(case.spec_path, model, device, options)
        if prepared is None:
            return skipped(why)
        if case.config["kind"] == "validation":
            problems = _validation(model, prepared, options, device)
        else:
            pair = _pair(model, options)
            try:
                if _aidl(device):
                    problems = burst_tokens.golden_sequence(model, pair.a_example, pair.b_example, pair.a, pair.b,
                                                            configure(prepared), prepared, options)
                else:
                    problems = _golden_sequence(pair, configure(prepared), prepared, options)
            finally:
                pair.close()
        if problems:
            return failed(problems[0], tuple(problems[:20]))
        if case.config["kind"] == "validation":
            left_out = [why for why in (rule_lacking(f"burst.{m.slug}", device) for m in burst_mutations(model)) if why]
            return passed("; ".join(left_out))  # the rules of another version this driver's version lacks
        return passed()
