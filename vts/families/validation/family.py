"""The validation family: malformed models and requests must be refused with INVALID_ARGUMENT.

Applications talk to drivers directly, so a driver must validate every
argument and never crash (VTS ValidateModel.cpp, ValidateRequest.cpp).  Cases are derived from every
loaded model, as the HAL suite does, so a spec author writes an example once
and gets the whole sweep:

* model mutations (``vts.families.validation.mutations``): the support query and
  ``prepare_model`` must both answer INVALID_ARGUMENT (preference and priority
  mutations reach only ``prepare_model``), and for a driver of AIDL v4
  (feature level 8) ``prepareModelWithConfig`` too, given the mutation's
  preference and priority (ValidateModel.cpp, validatePrepareModelWithConfig);
* request mutations on the synchronous, asynchronous and fenced paths: the
  suite's removed input/output, plus pool index, offset, length and
  dimension errors the suite never tries; INVALID_ARGUMENT, synchronously on
  the asynchronous path (the launch status), no output shapes, no timing, and
  no byte of the output pool written.  For a driver of AIDL v4 the same on
  the calls AIDL v4 added: the synchronous case also sends the request
  through a reusable execution (refused at creation, or created and each of
  its runs, synchronous and fenced, refused), ``executeSynchronouslyWithConfig``
  and a burst's ``executeSynchronouslyWithConfig``, the fenced case through
  ``executeFencedWithConfig`` (``vts.families.validation.config_requests``).
  A failure names the call (``[executeFencedWithConfig] ...``);
* a fenced execution waiting on a null fence (VTS VtsHalNeuralnetworks.cpp, ValidationTest).

The suite skips its automatic lifetime variations (``all_inputs_as_internal``,
``all_tensors_as_inputs``); so do we.  A driver below AIDL v4 gets the same
cases, judged on the older calls alone.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from functools import reduce
from typing import Any

from vts.families._kit.executions import Executor, PreparedModelCache, null_fence, sent_unchanged
from vts.families._kit.request_mutations import RequestMutation, apply_request_mutation
from vts.families._kit.version_rules import rule_lacking
from vts.families.base import Case, CaseFailure, Family, Outcome, RunOptions, failed, passed, skipped
from vts.families.registry import register_family
from vts.families.validation.ahead import (
    InFlight,
    Mutations,
    SentAhead,
    preparation_config,
    send_pair,
    sends_with_config,
)
from vts.families.validation.config_requests import CallFailed, config_attempts, refusal_problems
from vts.families.validation.mutations import Mutation, apply_mutation, enumerate_mutations
from vts.hal.enums import ErrorStatus, MeasureTiming
from vts.hal.errors import DriverError
from vts.hal.interfaces import Device, PreparedModel
from vts.hal.types import Model, Request
from vts.model.casemodel import BuiltRequest, CaseModel, ConstantPolicy, build_request, close_model, to_hal_model
from vts.model.extensions import ExtensionRegistry

_EXCLUDED_VARIATIONS = ("inputs_as_internal", "all_tensors_as_inputs")
_SENTINEL = 0xA5


def _request_mutations(model: CaseModel) -> list[RequestMutation]:
    """The suite's two request mutations, then the location and dimension errors it never tries."""
    main = model.main
    mutations = [RequestMutation(f"remove_input_{i}", f"request input {i} removed", "remove_input", (i,))
                 for i in range(len(main.inputs))]
    mutations += [RequestMutation(f"remove_output_{j}", f"request output {j} removed", "remove_output", (j,))
                  for j in range(len(main.outputs))]
    has_input = bool(model.examples[0].inputs)
    for word in ("input", "output"):
        if word == "input" and not has_input:
            continue
        mutations += [
            RequestMutation(f"{word}_pool_index_out_of_range", f"first request {word} names a pool that does "
                            "not exist", f"{word}_pool_index"),
            RequestMutation(f"{word}_offset_past_pool", f"first request {word} starts past the end of its pool",
                            f"{word}_offset"),
            RequestMutation(f"{word}_length_past_pool", f"first request {word} runs one byte past its pool",
                            f"{word}_length"),
        ]
    first = main.operands[main.inputs[0]] if main.inputs else None
    if first is not None and first.dims and 0 not in first.dims and model.examples[0].inputs.get(0):
        mutations += [
            RequestMutation("input_dims_wrong_rank", f"request input 0 given rank {len(first.dims) + 1} dims",
                            "input_dims_rank", (*first.dims, 1)),
            RequestMutation("input_dims_conflict", "request input 0 dims conflict with the model's",
                            "input_dims_conflict", tuple(d + 1 if i == 0 else d for i, d in enumerate(first.dims))),
        ]
    return mutations


def _measure_for(message: str) -> MeasureTiming:
    """The suite's choice: timing requested when the XOR of the message bytes is odd."""
    return MeasureTiming.YES if reduce(lambda a, b: a ^ b, message.encode(), 0) & 1 else MeasureTiming.NO


def _untouched(built: BuiltRequest) -> bool:
    """Whether the output pool still holds the sentinel the case wrote over it."""
    return built.output_pool.read(0, built.output_pool.size) == bytes([_SENTINEL]) * built.output_pool.size


def _excluded(model: CaseModel) -> bool:
    return any(word in model.name for word in _EXCLUDED_VARIATIONS)


BUILTIN_REGISTRY = ExtensionRegistry()


def _every(name: str) -> bool:
    return True


@register_family
class ValidationFamily(Family):
    name = "validation"
    description = "malformed models and requests must be refused with INVALID_ARGUMENT, never crash"
    shares_heavy_models = True  # each case is one mutation, judged alone

    def __init__(self) -> None:
        self._model_key: tuple[str, str] | None = None
        self._hal_model: Model | None = None
        self._prepared = PreparedModelCache()
        self._ahead = SentAhead()
        self._request: BuiltRequest | None = None
        self._request_key: tuple[str, str, str] | None = None

    # -- cases --------------------------------------------------------------

    def model_cases(self, model: CaseModel, spec_path: str) -> Iterator[Case]:
        return self.selected_model_cases(model, spec_path, _every)

    def selected_model_cases(self, model: CaseModel, spec_path: str,
                             selects: Callable[[str], bool]) -> Iterator[Case]:
        """Hundreds of names per model, most of them dropped by a shard or a -j worker: each name is
        decided before its case is made."""
        if _excluded(model):
            return
        stem = f"{self.name}/{model.case_name()}"
        # The built-in extension definitions encode EXT:TYPE models (the run's registry may gate them later).
        hal_model = to_hal_model(model, extensions=BUILTIN_REGISTRY)
        try:
            mutations = list(enumerate_mutations(hal_model))
        finally:
            close_model(hal_model)
        chosen = [(name, mutation) for mutation in mutations if selects(name := f"{stem}.{mutation.slug}")]
        queue = Mutations([mutation for _, mutation in chosen])
        for position, (name, mutation) in enumerate(chosen):
            yield Case(name, self.name, model, None, spec_path,
                       {"kind": "model", "mutation": mutation, "mutations": queue, "position": position})
        if model.expect_failure:
            return
        for mutation in _request_mutations(model):
            for executor in Executor:
                name = f"{stem}.{mutation.slug}.{executor.value}"
                if selects(name):
                    yield Case(name, self.name, model, 0, spec_path,
                               {"kind": "request", "mutation": mutation, "executor": executor})
        name = f"{stem}.fenced_null_wait_fence"
        if selects(name):
            yield Case(name, self.name, model, 0, spec_path, {"kind": "null_fence"})

    # -- shared state (cases of one model arrive together) ----------------

    def _model(self, case: Case, options: RunOptions) -> Model:
        assert case.model is not None
        key = (case.spec_path, case.model.name)
        if self._model_key != key:
            if self._hal_model is not None:
                close_model(self._hal_model)
            self._hal_model = to_hal_model(case.model, ConstantPolicy(pool_kind=options.pool_kind),
                                           options.extensions)
            self._model_key = key
        assert self._hal_model is not None
        return self._hal_model

    # -- judging ------------------------------------------------------------

    def run(self, case: Case, device: Device, options: RunOptions) -> Outcome:
        kind = case.config["kind"]
        if kind == "model":
            return self._run_model_mutation(case, device, options)
        assert case.model is not None
        prepared, why = self._prepared.get((case.spec_path, case.model.name), device,
                                           lambda: self._model(case, options), lambda model: None)
        if prepared is None:
            return skipped(why)
        if kind == "request":
            return self._run_request_mutation(case, prepared, options, sends_with_config(device))
        return self._run_null_fence(case, prepared, options)

    def _run_model_mutation(self, case: Case, device: Device, options: RunOptions) -> Outcome:
        mutation: Mutation = case.config["mutation"]
        lacking = rule_lacking(mutation.check or mutation.kind, device)
        if lacking is not None and not options.send_ahead:
            return skipped(lacking)
        model = self._model(case, options)
        if not options.send_ahead:
            return self._judge_alone(mutation, model, device)
        position: int = case.config["position"]
        in_flight = self._ahead.take(case.config["mutations"], position, device)
        try:
            if in_flight is None:
                outcome = self._judge_alone(mutation, model, device)
            else:  # sent ahead: its answers are collected even where the version lacks the rule
                outcome = self._judge_sent_ahead(mutation, in_flight, model, device)
        except CaseFailure:
            if lacking is None:
                raise
            outcome = skipped(lacking)
        self._ahead.top_up(position, lambda later: apply_mutation(model, later), model)
        return outcome if lacking is None else skipped(lacking)

    def _judge_alone(self, mutation: Mutation, model: Model, device: Device) -> Outcome:
        mutated = apply_mutation(model, mutation)
        with_config = sends_with_config(device)
        # One exchange where the driver takes batches.
        in_flight = send_pair(device, mutated, mutation, model, with_config)
        if in_flight is not None:
            return self._judge_sent_ahead(mutation, in_flight, model, device)
        with sent_unchanged(device, mutated, model):  # sent two or three times, encoded once (a host's proxy)
            return self._judge_model_mutation(
                mutation, (lambda: device.get_supported_operations(mutated)) if mutation.query_support else None,
                lambda: device.prepare_model(mutated, mutation.preference, mutation.priority),
                (lambda: device.prepare_model_with_config(mutated, preparation_config(mutation)))
                if with_config else None)

    def _judge_sent_ahead(self, mutation: Mutation, in_flight: InFlight, model: Model, device: Device) -> Outcome:
        """Judged from the answers to the calls sent ahead; a call that could not go ahead (a full socket) is
        sent now, in its turn."""
        mutated: list[Model] = []

        def now(call: Callable[[Model], object]) -> object:
            if not mutated:
                mutated.append(apply_mutation(model, mutation))
            with sent_unchanged(device, mutated[0], model):
                return call(mutated[0])

        pending = [call for call in (in_flight.preparation, in_flight.with_config) if call is not None]
        unread = set(map(id, pending))

        def answer(call: Any) -> Callable[[], object]:
            def read() -> object:
                unread.discard(id(call))
                return call.result()
            return read

        prepare = (answer(in_flight.preparation) if in_flight.preparation is not None
                   else lambda: now(lambda m: device.prepare_model(m, mutation.preference, mutation.priority)))
        with_config: Callable[[], object] | None = None
        if in_flight.with_config is not None:
            with_config = answer(in_flight.with_config)
        elif sends_with_config(device):
            with_config = lambda: now(  # noqa: E731
                lambda m: device.prepare_model_with_config(m, preparation_config(mutation)))
        support = in_flight.support
        outcome = self._judge_model_mutation(mutation, support.result if support is not None else None, prepare,
                                             with_config)
        for call in pending:  # a call before failed the case: the answer is read all the same, and a
            if id(call) in unread:  # prepared model it names released, not kept
                with contextlib.suppress(DriverError):
                    call.result()
        return outcome

    @staticmethod
    def _judge_model_mutation(mutation: Mutation, support: Callable[[], object] | None,
                              prepare: Callable[[], object],
                              with_config: Callable[[], object] | None = None) -> Outcome:
        """``with_config``: ``prepareModelWithConfig``, judged after ``prepare_model`` (a driver of AIDL v4)."""
        what = mutation.description
        if support is not None:  # None: a preference or priority mutation, which only prepare_model sees
            try:
                support()
                return failed(f"get_supported_operations answered NONE for an invalid model: {what}")
            except DriverError as error:
                if error.status != ErrorStatus.INVALID_ARGUMENT:
                    return failed(f"get_supported_operations returned {error.status.name}, expected "
                                  f"INVALID_ARGUMENT: {what}", (error.message,))
        try:
            prepare()
        except DriverError as error:
            if error.status != ErrorStatus.INVALID_ARGUMENT:
                return failed(f"prepare_model returned {error.status.name}, expected INVALID_ARGUMENT: {what}",
                              (error.message,))
        else:
            return failed(f"prepare_model accepted an invalid model: {what}")
        if with_config is None:
            return passed(f"refused: {what}")
        try:
            with_config()
        except DriverError as error:
            if error.status != ErrorStatus.INVALID_ARGUMENT:
                return failed(f"[prepareModelWithConfig] returned {error.status.name}, expected INVALID_ARGUMENT: "
                              f"{what}", (error.message,))
            return passed(f"refused: {what}")
        return failed(f"[prepareModelWithConfig] accepted an invalid model: {what}")

    def _run_request_mutation(self, case: Case, prepared: PreparedModel, options: RunOptions,
                              with_config: bool = False) -> Outcome:
        """``with_config``: then the AIDL v4 calls of the case's path too (``config_requests``), after the older
        call and judged alike."""
        assert case.model is not None
        mutation: RequestMutation = case.config["mutation"]
        executor: Executor = case.config["executor"]
        built = self._shared_request(case, options)
        refused = False
        try:
            request = built.request.copy()
            apply_request_mutation(request, built, mutation)
            built.output_pool.buffer[:] = bytes([_SENTINEL]) * built.output_pool.size
            measure = _measure_for(mutation.description)
            error = self._execute_expecting_error(prepared, request, executor, measure)
            problems = []
            if error is None:
                return failed(f"{executor.value} execution accepted an invalid request: {mutation.description}")
            if error.status != ErrorStatus.INVALID_ARGUMENT:
                problems.append(f"{executor.value} execution returned {error.status.name}, expected "
                                f"INVALID_ARGUMENT: {mutation.description}")
            if error.output_shapes:
                problems.append(f"{len(error.output_shapes)} output shapes returned with {error.status.name}")
            if error.timing is not None and error.timing.measured:
                problems.append("timing reported for a refused execution")
            if not _untouched(built):
                problems.append("the driver wrote into the output pool of a refused request")
            if problems:
                return failed(problems[0], tuple(problems))
            if with_config:
                try:
                    for call, attempt in config_attempts(prepared, request, executor, measure):
                        problems = refusal_problems(call, attempt(), lambda: _untouched(built), mutation.description)
                        if problems:
                            return failed(problems[0], tuple(problems))
                except CallFailed as error:
                    return failed(str(error))
            refused = True
            return passed(f"refused: {mutation.description}")
        finally:
            if not refused:
                self._drop_request()

    @staticmethod
    def _execute_expecting_error(prepared: PreparedModel, request: Request, executor: Executor,
                                 measure: MeasureTiming) -> DriverError | None:
        """Run one path; the error it reported (None if it accepted the request)."""
        try:
            if executor is Executor.SYNC:
                prepared.execute(request, measure)
            elif executor is Executor.ASYNC:
                future = prepared.execute_async(request, measure)
                # The HAL requires INVALID_ARGUMENT as the *launch* status: a future is already too late.
                try:
                    future.result()
                except DriverError as late:
                    raise CaseFailure(f"asynchronous launch returned NONE and the callback {late.status.name}; "
                                      "an invalid request must be refused at launch") from None
            else:
                prepared.execute_fenced(request, [], measure)
        except DriverError as error:
            return error
        return None

    def _run_null_fence(self, case: Case, prepared: PreparedModel, options: RunOptions) -> Outcome:
        assert case.model is not None
        built = self._shared_request(case, options)
        refused = False
        try:
            prepared.execute_fenced(built.request, null_fence(), MeasureTiming.NO)
        except DriverError as error:
            if error.status == ErrorStatus.INVALID_ARGUMENT:
                refused = True
                return passed("null wait fence refused")
            return failed(f"execute_fenced with a null wait fence returned {error.status.name}, "
                          "expected INVALID_ARGUMENT")
        finally:
            if not refused:
                self._drop_request()
        return failed("execute_fenced accepted a null wait fence")

    def _shared_request(self, case: Case, options: RunOptions) -> BuiltRequest:
        """The model's first example in shared memory, built once for all its request cases.

        A request refused cleanly leaves its pools as they were (each case refills the output pool with
        the sentinel before it checks that no byte was written), so the request cases of a model share
        one, as the HAL suite's share their request; out of process its pools are declared to the driver
        host once, not once a case.  After any other ending (an execution accepted, which may still be
        writing, or an error) it is dropped and the next case builds its own.
        """
        assert case.model is not None
        key = (case.spec_path, case.model.name, options.pool_kind)
        if self._request is None or self._request_key != key:
            self._drop_request()
            self._request = build_request(case.model, case.model.examples[0], options.pool_kind,
                                          extensions=options.extensions)
            self._request_key = key
        return self._request

    def _drop_request(self) -> None:
        if self._request is not None:
            self._request.close()
        self._request, self._request_key = None, None
