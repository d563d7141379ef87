"""Golden executions through AIDL v4's ``*WithConfig`` calls (Android 13's VTS, GeneratedTestHarness.cpp).

On a driver of AIDL v4 or later, Android's VTS runs each generated model twice: once prepared and executed
through the older calls, then prepared again through ``prepareModelWithConfig`` (``{preference, priority,
no deadline, no caches, an empty token, no hints, no extension table}``) and executed through
``executeSynchronouslyWithConfig``, ``executeFencedWithConfig`` and ``IBurst.executeSynchronouslyWithConfig``
(``{measureTiming, loopTimeout, {}, {}}``: ``testConfig.useConfig``).  This family is that second run: one case
per example, prepared with an empty ``PrepareModelConfig``, executed on the three calls with timing off and
on and judged like the generated family's executions (status, timing, shapes, values; the fenced call
refuses outputs it cannot describe).  Each burst execution runs on a burst of its own, every pool given
with a slot (the ``burst`` family owns the slot rules).
No hints here: the ``hints`` family owns what hints may not change.

The matrix is the generated family's economy: the first example of each model runs all six (call, timing)
pairs, later examples each call once, the timing alternating by example.

The VTS reruns its DYNAMIC_SHAPE kind through the config calls too: each example of a model the
``dynamic_output_shape`` family covers gets a ``with_config/dynamic_output_shape/...`` case, the model
with every output's dims unknown prepared through ``prepareModelWithConfig`` and executed in both modes
(UNSPECIFIED, then INSUFFICIENT with output 0 one byte short) on the sync, fenced and burst config calls,
timing off and on, judged by that family's rules (``vts.families._kit.dynamic_shapes``): shapes reported,
OUTPUT_INSUFFICIENT_SIZE with the shapes, the fenced call refusing outputs it cannot describe.

Its MEMORY_DOMAIN kind is rerun the same way: each example of a model (not ``expect_failure``) gets a
``with_config/memory_domain/...`` case running the ``memory_domain`` family's model case
(``vts.families._kit.device_memory_runs``: hardware_buffer_blob pools, then driver-allocated buffers for
every input and output) on the model prepared through ``prepareModelWithConfig``, through the sync, burst
(driver buffers at token -1) and fenced config calls.

The VTS's InfiniteLoopTimeoutTest runs through the config calls too: a model marked ``expect_failure`` whose
first operation is a WHILE that never ends gets one case, executed through both calls (timing off, then on)
with ``ExecutionConfig.loopTimeoutDurationNs`` 1 ms: the driver must abort the loop and answer
MISSED_DEADLINE_TRANSIENT or _PERSISTENT (GENERAL_FAILURE skips the case, as the suite's rule), within the
timeout plus ``LOOP_TIMEOUT_SLACK_S`` (the ``infinite_loop_timeout`` family's bound, its docstring says
why): the loop timeout of the config, not the driver's 2 s default, must reach the loop.

The VTS also sends what must be refused through the config calls (ValidateModel.cpp
``validatePrepareModelWithConfig``, ValidateRequest.cpp "synchronous / fenced / burst with empty hints"):
each model gets one ``.invalid`` case, after a valid preparation: ``prepareModelWithConfig`` with preference 3,
then with priority 3 (neither is an enum value), must answer INVALID_ARGUMENT; the example's request with
its first input removed (its first output, for a model without inputs) must be refused with
INVALID_ARGUMENT by each of the three execution calls.  The ``validation`` family sends its full mutation
sweep through these calls too; this case keeps the check in the family that runs them.

A driver below AIDL v4 has no such calls: every case is skipped with the rule named (opt-in family:
``--family with_config``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from vts.families._kit.derived_models import with_unknown_output_dims
from vts.families._kit.device_memory_runs import run_model_case
from vts.families._kit.dynamic_shapes import MODES, dynamic_shapes_apply, judge_dynamic, output_zero_bytes
from vts.families._kit.executions import Answer, Executor, prepare_for_case
from vts.families._kit.fenced_path import judge_golden
from vts.families._kit.loop_abort import LOOP_TIMEOUT_NS, loop_abort_judgement
from vts.families._kit.per_example import Executed, Execution, Judgement, PerExampleFamily
from vts.families._kit.request_mutations import RequestMutation, apply_request_mutation
from vts.families._kit.with_config import WithConfigPath, config_rule_lacking, execute_with_config
from vts.families.base import Case, Outcome, RunOptions, failed, passed, skipped
from vts.families.registry import register_family
from vts.hal.config import ExecutionConfig, PrepareModelConfig
from vts.hal.enums import ErrorStatus, MeasureTiming, OperationType
from vts.hal.errors import DriverError
from vts.hal.interfaces import Device, PreparedModel
from vts.model.casemodel import BuiltRequest, CaseModel, ConstantPolicy, build_request, close_model, to_hal_model

#: What messages call an execution of this family (``with_config sync execution (timing NO)``).
MODE = "with_config"

#: What messages call an execution of a never-ending loop's case.
LOOP_MODE = "with_config 1 ms loop timeout"
#: The loop timeout of those executions, and how far past it they may end (as ``infinite_loop_timeout``'s).

#: What messages call a burst execution of this family (the burst runs synchronously).
BURST_MODE = "with_config burst"
#: The case kind of the dynamic-shape reruns, and the folder of their names.
DYNAMIC = "dynamic_output_shape"
#: The case kind of the memory-domain reruns, and the folder of their names.
MEMORY = "memory_domain"

#: The (call, timing) pairs, the first example of a model runs all of them: three calls, timing off then on.
FULL_MATRIX = ((WithConfigPath.SYNC, MeasureTiming.NO), (WithConfigPath.FENCED, MeasureTiming.YES),
               (WithConfigPath.BURST, MeasureTiming.NO), (WithConfigPath.SYNC, MeasureTiming.YES),
               (WithConfigPath.FENCED, MeasureTiming.NO), (WithConfigPath.BURST, MeasureTiming.YES))


def executions_for(example_index: int) -> tuple[tuple[WithConfigPath, MeasureTiming], ...]:
    """(call, timing) pairs an example runs through: all on the first example, then each call once, the timing
    choices alternating by example."""
    if example_index == 0:
        return FULL_MATRIX
    return FULL_MATRIX[3:] if example_index % 2 else FULL_MATRIX[:3]


def execution_of(path: WithConfigPath, measure: MeasureTiming) -> Execution:
    """The kit's ``Execution`` for a call: fenced on the fenced path, else synchronous (the burst's mode says so)."""
    if path is WithConfigPath.FENCED:
        return Execution(Executor.FENCED, measure, mode=MODE)
    return Execution(Executor.SYNC, measure, mode=BURST_MODE if path is WithConfigPath.BURST else MODE)


def dynamic_executions(model: CaseModel, example_index: int) -> Iterator[Execution]:
    """Both dynamic-shape modes on the three config calls, timing off then on (INSUFFICIENT only when output 0
    holds more than one byte, as the suite)."""
    for mode in MODES:
        if mode == "insufficient" and output_zero_bytes(model, example_index) <= 1:
            continue
        for path in WithConfigPath:
            executor = Executor.FENCED if path is WithConfigPath.FENCED else Executor.SYNC
            for measure in (MeasureTiming.NO, MeasureTiming.YES):
                yield Execution(executor, measure, mode, 0 if mode == "insufficient" else None, through=path.value)


def path_of(execution: Execution) -> WithConfigPath:
    """The ``*WithConfig`` call an execution of this family goes through."""
    if execution.through:
        return WithConfigPath(execution.through)
    if execution.executor is Executor.FENCED:
        return WithConfigPath.FENCED
    return WithConfigPath.BURST if execution.mode == BURST_MODE else WithConfigPath.SYNC


@register_family
class WithConfigFamily(PerExampleFamily):
    name = "with_config"
    description = ("AIDL v4: every example prepared through prepareModelWithConfig and executed through "
                   "executeSynchronouslyWithConfig, executeFencedWithConfig and a burst's, timing off and on")
    #: Every case of a HIDL or older AIDL driver is a skip: not run unless asked (``--family``).
    default = False

    def model_cases(self, model: CaseModel, spec_path: str) -> Iterator[Case]:
        if never_ends(model):
            yield Case(f"{self.name}/{model.case_name()}", self.name, model, 0, spec_path, {"kind": "loop_timeout"})
            return
        yield from super().model_cases(model, spec_path)
        if not model.expect_failure and model.examples:
            yield Case(f"{self.name}/{model.case_name()}.invalid", self.name, model, 0, spec_path, {"kind": "invalid"})
        if model.expect_failure:
            return
        for kind in (DYNAMIC, MEMORY):
            if kind == DYNAMIC and not dynamic_shapes_apply(model):
                continue
            for index, example in enumerate(model.examples):
                yield Case(f"{self.name}/{kind}/{model.case_name(example)}", self.name, model, index, spec_path,
                           {"kind": kind})

    def run(self, case: Case, device: Device, options: RunOptions) -> Outcome:
        lacking = config_rule_lacking(device)
        if lacking is not None:
            return skipped(lacking)
        assert case.model is not None
        kind = case.config.get("kind")
        if kind == MEMORY:
            return run_model_case(case, device, options, with_config=True)
        model = with_unknown_output_dims(case.model) if kind == DYNAMIC else case.model
        prepared, why = prepare_for_case(device, model, options, with_config=PrepareModelConfig())
        if prepared is None:
            return self.refused(model, why)
        if kind == "invalid":
            problems = _invalid_problems(device, model, prepared, options)
            return failed(problems[0], tuple(problems)) if problems else passed()
        example = case.example or 0
        if kind == DYNAMIC:
            return self.run_executions(model, example, prepared, options,
                                       executions=dynamic_executions(model, example))
        return self.run_executions(model, example, prepared, options)

    def executions(self, model: CaseModel, example_index: int) -> Iterable[Execution]:
        if never_ends(model):
            return [Execution(Executor.SYNC, MeasureTiming.NO, mode=LOOP_MODE),
                    Execution(Executor.FENCED, MeasureTiming.YES, mode=LOOP_MODE)]
        return [execution_of(path, measure) for path, measure in executions_for(example_index)]

    def execute(self, prepared: PreparedModel, built: BuiltRequest, execution: Execution,
                options: RunOptions) -> Answer:
        loop_timeout = LOOP_TIMEOUT_NS if execution.mode == LOOP_MODE else None
        config = ExecutionConfig(measure=execution.measure, loop_timeout=loop_timeout)
        return execute_with_config(prepared, built.request, path_of(execution), config,
                                   timeout=options.case_timeout)

    def judge(self, model: CaseModel, example_index: int, executed: Executed,
              earlier: Sequence[Executed]) -> Judgement:
        execution = executed.execution
        if execution.mode == LOOP_MODE:
            return loop_abort_judgement(executed, " from ExecutionConfig")
        if execution.mode in MODES:
            return judge_dynamic(model, example_index, executed, earlier)
        return judge_golden(model, example_index, executed.built, executed.answer, execution.executor,
                            execution.measure, executed.where)

    def failure(self, executed: Executed, problems: list[str]) -> Outcome:
        """A dynamic-shape rerun's problems do not name the execution (its judge is shared): name it first."""
        if executed.execution.mode in MODES:
            return failed(f"{executed.where}: {problems[0].lstrip(': ')}", tuple(problems))
        return super().failure(executed, problems)


def never_ends(model: CaseModel) -> bool:
    """A model of the suite's InfiniteLoopTimeoutTest: ``expect_failure``, its first operation a WHILE."""
    ops = model.main.operations
    return bool(model.expect_failure and ops and ops[0].type == OperationType.WHILE)


#: Configs ``prepareModelWithConfig`` must refuse: a preference and a priority that are no enum value.
INVALID_CONFIGS = (("preference 3", PrepareModelConfig(preference=3)), ("priority 3", PrepareModelConfig(priority=3)))


def _invalid_problems(device: Device, model: CaseModel, prepared: PreparedModel, options: RunOptions) -> list[str]:
    """What the config calls failed to refuse: invalid configs, then a request missing an argument."""
    problems = []
    hal_model = to_hal_model(model, ConstantPolicy(pool_kind=options.pool_kind), options.extensions)
    try:
        for what, config in INVALID_CONFIGS:
            try:
                device.prepare_model_with_config(hal_model, config)
            except DriverError as error:
                if error.status != ErrorStatus.INVALID_ARGUMENT:
                    problems.append(f"prepareModelWithConfig with {what} returned {error.status.name}, expected "
                                    "INVALID_ARGUMENT")
            else:
                problems.append(f"prepareModelWithConfig accepted {what}: not an enum value, INVALID_ARGUMENT "
                                "expected")
    finally:
        close_model(hal_model)
    side = "input" if model.main.inputs else "output"
    mutation = RequestMutation(f"remove_{side}", f"{side} 0 removed", f"remove_{side}", (0,))
    for path in WithConfigPath:
        built = build_request(model, model.examples[0], options.pool_kind, extensions=options.extensions)
        try:
            apply_request_mutation(built.request, built, mutation)
            answer = execute_with_config(prepared, built.request, path, ExecutionConfig(),
                                         timeout=options.case_timeout)
        finally:
            built.close()
        if answer.status != ErrorStatus.INVALID_ARGUMENT:
            problems.append(f"{path.value} of a request with its {mutation.description} returned "
                            f"{answer.status.name}, expected INVALID_ARGUMENT")
    return problems
