"""AIDL request padding (``DataLocation.padding``, feature level 5+): given, kept out of, and refused when wrong.

Every AIDL version's ``RequestArgument.location`` carries ``padding``: extra bytes after ``length`` that
the device may use to access memory in chunks, "but must not be used to hold any output data"
(DataLocation.aidl); ``offset + length + padding`` must not exceed the pool.  Android's AIDL VTS gives
every argument of every generated test 64-byte alignment and padding (GeneratedTestHarness.cpp
``createRequest``) and, for an output one byte too small, moves that byte into the padding
(``makeOutputInsufficientSize``: ``length -= 1; padding += 1``) to "test that the padding is not used
for output data".  Five cases per model:

* ``padded``: every argument given with its padding up to the next multiple of 64, the input and output
  padding filled with a sentinel; the execution must succeed with the outputs right and every padding
  byte as it was.  nnvts reads "must not hold output data" strictly: a byte of padding that changed is a
  failure (the harness cannot tell a chunked write's bytes from misplaced output data, and the output
  guard out of process already holds a driver to its outputs' ``length``).
* ``insufficient``: the first output of more than one byte given one byte short with that byte added to
  its padding: the driver must not succeed (OUTPUT_INSUFFICIENT_SIZE; INVALID_ARGUMENT too where the
  output's dimensions are fully specified, whose length must equal its size).
* ``input_past_pool`` and ``output_past_pool``: the first input's (output's) padding one byte longer than
  its pool has room for: INVALID_ARGUMENT.
* ``negative_padding``: the first input's padding -1 (AIDL's field is an int64; the canonical conversion
  refuses a negative size): INVALID_ARGUMENT.

HAL 1.3 has no padding: a driver speaking it skips every case, the rule named.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator

from vts.families._kit.executions import Answer, Executor, PreparedModelCache, execute
from vts.families._kit.judge import judge_success
from vts.families.base import Case, Family, Outcome, RunOptions, failed, passed, skipped
from vts.families.registry import register_family
from vts.hal.enums import ErrorStatus, HalVersion, MeasureTiming
from vts.hal.interfaces import Device, PreparedModel
from vts.hal.types import DataLocation, RequestArgument
from vts.model.casemodel import BuiltRequest, CaseModel, build_request

KINDS = ("padded", "insufficient", "input_past_pool", "output_past_pool", "negative_padding")
#: Clients pad each argument to this many bytes (DataLocation.aidl; Android's kDefaultRequestMemoryPadding).
PADDING_MULTIPLE = 64
#: The byte every padding and output byte holds before a run: a driver that writes one is seen.
SENTINEL = 0x5A


def _padded(argument: RequestArgument, pool_size: int) -> RequestArgument:
    """``argument`` with the padding up to the next multiple of 64 that its pool has room for."""
    loc = argument.location
    if argument.has_no_value:
        return argument
    end = loc.offset + loc.length
    room = min(-(-end // PADDING_MULTIPLE) * PADDING_MULTIPLE, pool_size) - end
    return RequestArgument(False, DataLocation(loc.pool_index, loc.offset, loc.length, max(room, 0)),
                           list(argument.dimensions))


def pad_request(built: BuiltRequest) -> None:
    """Give every argument of ``built`` its padding (the gap ``build_request`` leaves up to 64) and fill the
    input and output pools' padding, and every output byte, with the sentinel."""
    request = built.request
    sizes = [getattr(pool, "size", 0) for pool in request.pools]
    request.inputs = [_padded(a, sizes[a.location.pool_index]) for a in request.inputs]
    request.outputs = [_padded(a, sizes[a.location.pool_index]) for a in request.outputs]
    built.output_pool.write(0, bytes([SENTINEL]) * built.output_pool.size)
    for argument in request.inputs:
        loc = argument.location
        if not argument.has_no_value and loc.padding:
            built.input_pool.write(loc.offset + loc.length, bytes([SENTINEL]) * loc.padding)


def padding_problems(built: BuiltRequest) -> list[str]:
    """Each argument whose padding no longer holds only the sentinel."""
    problems = []
    for side, arguments, pool in (("input", built.request.inputs, built.input_pool),
                                  ("output", built.request.outputs, built.output_pool)):
        for position, argument in enumerate(arguments):
            loc = argument.location
            if argument.has_no_value or not loc.padding:
                continue
            after = pool.read(loc.offset + loc.length, loc.padding)
            changed = [i for i, byte in enumerate(after) if byte != SENTINEL]
            if changed:
                problems.append(
                    f"{side} {position}: {len(changed)} of its {loc.padding} padding byte(s) changed (bytes "
                    f"{changed[0]}..{changed[-1]} after its {loc.length}-byte data); the padding must not hold "
                    "output data (DataLocation.aidl) and input memory is the client's")
    return problems


def _first_output_over_one_byte(built: BuiltRequest) -> int | None:
    return next((i for i, a in enumerate(built.request.outputs) if not a.has_no_value and a.location.length > 1),
                None)


def _wrong_padding(built: BuiltRequest, kind: str) -> str | None:
    """The first input's (output's) padding made wrong as ``kind`` says; what was done, None if no such argument."""
    side = kind.split("_")[0] if kind.endswith("past_pool") else "input"
    arguments = built.request.inputs if side == "input" else built.request.outputs
    position = next((i for i, a in enumerate(arguments) if not a.has_no_value), None)
    if position is None:
        return None
    pool = built.input_pool if side == "input" else built.output_pool
    loc = arguments[position].location
    if kind == "negative_padding":
        padding, why = -1, "padding -1 (AIDL's int64 field; DataLocation's padding is a size)"
    else:
        padding = pool.size - loc.offset - loc.length + 1
        why = (f"padding {padding}, one byte past its {pool.size}-byte pool (offset + length + padding must not "
               "exceed the pool)")
    arguments[position] = RequestArgument(False, DataLocation(loc.pool_index, loc.offset, loc.length, padding),
                                          list(arguments[position].dimensions))
    return f"{side} {position} given {why}"


@register_family
class RequestPaddingFamily(Family):
    name = "request_padding"
    description = ("AIDL DataLocation.padding: arguments given with padding (kept out of), outputs short by "
                   "a byte moved into the padding, padding past the pool refused")
    #: Every case of a HAL 1.3 driver is a skip, and the AIDL VTS pads every generated test: opt-in.
    default = False

    def __init__(self) -> None:
        self._prepared = PreparedModelCache()

    def model_cases(self, model: CaseModel, spec_path: str) -> Iterator[Case]:
        if model.expect_failure or not model.examples:
            return
        for kind in KINDS:
            yield Case(f"{self.name}/{model.case_name()}.{kind}", self.name, model, None, spec_path, {"kind": kind})

    def run(self, case: Case, device: Device, options: RunOptions) -> Outcome:
        model = case.model
        assert model is not None
        prepared, why = self._prepared.for_version(
            case, device, options, HalVersion.FL5,
            "DataLocation.padding is AIDL's (feature level 5+): HIDL requests have no padding")
        if prepared is None:
            return skipped(why)
        built = build_request(model, model.examples[0], options.pool_kind, extensions=options.extensions)
        try:
            pad_request(built)
            return self._judge(case.config["kind"], model, prepared, built, options)
        finally:
            built.close()

    def _judge(self, kind: str, model: CaseModel, prepared: PreparedModel, built: BuiltRequest,
               options: RunOptions) -> Outcome:
        if kind == "padded":
            answer = execute(prepared, built.request, Executor.SYNC, timeout=options.case_timeout)
            problems = judge_success(model, model.examples[0], built, answer, MeasureTiming.NO,
                                     "a request whose arguments carry 64-byte padding") + padding_problems(built)
            return failed(problems[0], tuple(problems[:20])) if problems else passed()
        if kind == "insufficient":
            return self._insufficient(model, prepared, built, options)
        done = _wrong_padding(built, kind)
        if done is None:
            return skipped("no argument with a value to give a wrong padding")
        answer = execute(prepared, built.request, Executor.SYNC, timeout=options.case_timeout)
        if answer.status != ErrorStatus.INVALID_ARGUMENT:
            return failed(f"{done} returned {answer.status.name}, expected INVALID_ARGUMENT (DataLocation.aidl)")
        return passed()

    def _insufficient(self, model: CaseModel, prepared: PreparedModel, built: BuiltRequest,
                      options: RunOptions) -> Outcome:
        position = _first_output_over_one_byte(built)
        if position is None:
            return skipped("no output of more than one byte to make one byte short")
        argument = copy.deepcopy(built.request.outputs[position])
        loc = argument.location
        argument.location = DataLocation(loc.pool_index, loc.offset, loc.length - 1, loc.padding + 1)
        built.request.outputs[position] = argument
        operand = model.main.operands[model.main.outputs[position]]
        specified = bool(operand.dims) and 0 not in operand.dims
        allowed = {ErrorStatus.OUTPUT_INSUFFICIENT_SIZE} | ({ErrorStatus.INVALID_ARGUMENT} if specified else set())
        answer: Answer = execute(prepared, built.request, Executor.SYNC, timeout=options.case_timeout)
        where = (f"output {position} given length {loc.length - 1} (one byte short) and padding {loc.padding + 1} "
                 "(the byte moved into the padding)")
        if answer.status not in allowed:
            names = " or ".join(sorted(s.name for s in allowed))
            held = "; the driver held output data in the padding" if answer.ok else ""
            return failed(f"{where} returned {answer.status.name}, expected {names} (the padding must not be used "
                          f"to hold output data, DataLocation.aidl){held}")
        if answer.status == ErrorStatus.OUTPUT_INSUFFICIENT_SIZE and position < len(answer.output_shapes) \
                and answer.output_shapes[position].is_sufficient:
            return failed(f"{where} returned OUTPUT_INSUFFICIENT_SIZE with output {position} marked sufficient")
        return passed()
