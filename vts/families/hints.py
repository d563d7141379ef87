"""AIDL v4 hints: compilation and execution hints never fail a call nor change a result.

``PrepareModelConfig.compilationHints`` and ``ExecutionConfig.executionHints`` are vendor ``TokenValuePair``
lists; "the driver must validate the data and ignore invalid hints.  It is up to the driver to decide
whether to respect the provided hints or not" (PrepareModelConfig.aidl, ExecutionConfig.aidl), and a hint
of an extension the driver does not support must be ignored (``extensionNameToPrefix``).  So a hint a driver
does not know can change nothing: not whether a model prepares, not whether a request executes, not one
output byte.

One case per model (its first example), on a driver of AIDL v4 or later (older: skipped, the rule named):

1. the model prepared through ``prepareModelWithConfig`` without hints, and executed through
   ``executeSynchronouslyWithConfig`` without hints: the baseline (a failure here is the ``with_config``
   family's to judge; the case is skipped);
2. the same model prepared again with the *ignored* hints as compilation hints: it must prepare;
3. executions with the ignored hints as execution hints, on both prepared models, synchronous and fenced,
   timing off and on, and once on a burst (``IBurst.executeSynchronouslyWithConfig``): each must succeed
   (timing rules as always) and write outputs byte for byte equal to the baseline's.

The ignored hints: tokens whose prefix no table entry names, with and without values (1 KiB of bytes, an
empty value), a token of prefix 0, and tokens of an extension the table names but no driver supports
(``org.nnvts.hints.no_such_extension``), with and without values.  When the driver supports an extension,
a last pair of hints names it (its first supported extension, through the table): the driver may honour
those, so that run's outputs are judged against the goldens, not the baseline's bytes.  A model judged
statistically (RANDOM_MULTINOMIAL) is judged against its goldens everywhere.  Fenced runs of outputs
zero-sized or not fully specified are left out (the fenced family owns that rule).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from vts.families._kit.executions import Answer, answer_outputs, prepare_for_case, timing_problems
from vts.families._kit.fenced_path import fenced_must_refuse
from vts.families._kit.judge import judge_success
from vts.families._kit.with_config import WithConfigPath, config_rule_lacking, execute_with_config
from vts.families.base import Case, CaseFailure, Family, Outcome, RunOptions, failed, passed, skipped
from vts.families.registry import register_family
from vts.hal.config import ExecutionConfig, PrepareModelConfig, TokenValuePair, hint_token
from vts.hal.enums import MeasureTiming
from vts.hal.errors import DriverError
from vts.hal.interfaces import Device, PreparedModel
from vts.hal.types import ExtensionNameAndPrefix
from vts.model.casemodel import CaseModel, ConstantPolicy, TensorData, build_request, close_model, to_hal_model

#: A prefix no table entry names: its hints are of no extension the driver can know.
UNKNOWN_PREFIX = 0x7ABC
#: A prefix the table maps to an extension no driver has.
UNSUPPORTED_PREFIX = 0x7ABD
#: A prefix the table maps to the driver's first supported extension, when it has one.
SUPPORTED_PREFIX = 0x7ABE
#: The extension the table names and no driver supports.
NO_SUCH_EXTENSION = "org.nnvts.hints.no_such_extension"

#: Hints every driver must ignore: unknown tokens and an unsupported extension's, with and without values.
IGNORED_HINTS: tuple[TokenValuePair, ...] = (
    TokenValuePair(hint_token(UNKNOWN_PREFIX, 1)),
    TokenValuePair(hint_token(UNKNOWN_PREFIX, 2), bytes(range(256)) * 4),
    TokenValuePair(hint_token(0, 3), b"\x01"),
    TokenValuePair(hint_token(UNSUPPORTED_PREFIX, 4)),
    TokenValuePair(hint_token(UNSUPPORTED_PREFIX, 5), b"\xff" * 8),
)
#: The table naming the unsupported extension (``UNKNOWN_PREFIX`` is in no entry).
IGNORED_TABLE: tuple[ExtensionNameAndPrefix, ...] = (ExtensionNameAndPrefix(NO_SUCH_EXTENSION, UNSUPPORTED_PREFIX),)


def supported_hints(extension: str) -> tuple[tuple[TokenValuePair, ...], tuple[ExtensionNameAndPrefix, ...]]:
    """Hints naming ``extension`` (one the driver supports: it may honour them), and their table."""
    hints = (TokenValuePair(hint_token(SUPPORTED_PREFIX, 0)),
             TokenValuePair(hint_token(SUPPORTED_PREFIX, 1), b"\x00" * 4))
    return hints, (*IGNORED_TABLE, ExtensionNameAndPrefix(extension, SUPPORTED_PREFIX))


@dataclass(frozen=True, slots=True)
class HintedRun:
    """One execution with hints: which prepared model, which call, the execution config, and how it is judged."""

    label: str
    prepared: PreparedModel
    path: WithConfigPath
    config: ExecutionConfig
    #: Judged byte for byte against the baseline (the hints are ignored ones), else against the goldens.
    exact: bool = True


def _first_extension(device: Device) -> str | None:
    try:
        extensions = device.get_supported_extensions()
    except DriverError:
        return None
    names = [getattr(extension, "name", None) for extension in extensions or ()]
    return next((name for name in names if isinstance(name, str) and name), None)


def _prepare_hinted(device: Device, model: CaseModel, options: RunOptions, config: PrepareModelConfig,
                    what: str) -> PreparedModel:
    """``prepareModelWithConfig`` with hints, of a model the driver prepared without them: it must prepare."""
    hal_model = to_hal_model(model, ConstantPolicy(pool_kind=options.pool_kind), options.extensions)
    try:
        prepared = device.prepare_model_with_config(hal_model, config)
    except DriverError as error:
        raise CaseFailure(f"prepareModelWithConfig with {what} returned {error.status.name}; it prepared the model "
                          "without them, and a hint must never fail a preparation", (error.message,)) from None
    finally:
        close_model(hal_model)
    if prepared is None:
        raise CaseFailure(f"prepareModelWithConfig with {what} returned no prepared model and no error")
    return prepared


def _same_outputs(baseline: dict[int, TensorData], outputs: dict[int, TensorData]) -> list[str]:
    problems = []
    for position, expected in sorted(baseline.items()):
        actual = outputs.get(position)
        if actual is None or actual.dims != expected.dims:
            problems.append(f"output {position} has dims {actual.dims if actual else None}, {expected.dims} without "
                            "hints")
        elif actual.value.tobytes() != expected.value.tobytes():
            got, wanted = (np.frombuffer(value.value.tobytes(), np.uint8) for value in (actual, expected))
            differ = np.flatnonzero(got != wanted) if got.size == wanted.size else np.arange(1)
            problems.append(f"output {position} differs from the run without hints ({differ.size} bytes, the first "
                            f"at byte {int(differ[0]) if differ.size else 0})")
    return problems


@register_family
class HintsFamily(Family):
    name = "hints"
    description = ("AIDL v4 compilation and execution hints (unknown tokens, an unsupported extension's, with and "
                   "without values) never fail a preparation or an execution nor change an output")
    #: Every case of a HIDL or older AIDL driver is a skip: not run unless asked (``--family``).
    default = False

    def model_cases(self, model: CaseModel, spec_path: str) -> Iterator[Case]:
        if model.expect_failure or not model.examples:
            return
        yield Case(f"{self.name}/{model.case_name()}", self.name, model, 0, spec_path)

    def run(self, case: Case, device: Device, options: RunOptions) -> Outcome:
        lacking = config_rule_lacking(device)
        if lacking is not None:
            return skipped(lacking)
        model = case.model
        assert model is not None
        plain, why = prepare_for_case(device, model, options, with_config=PrepareModelConfig())
        if plain is None:
            return skipped(why)
        baseline = self._baseline(model, plain, options)
        if isinstance(baseline, Outcome):
            return baseline
        hinted = _prepare_hinted(device, model, options, PrepareModelConfig(
            compilation_hints=IGNORED_HINTS, extension_name_to_prefix=IGNORED_TABLE), "compilation hints to ignore")
        for run in self._runs(device, model, options, plain, hinted):
            problems = self._hinted_run(model, run, baseline, options)
            if problems:
                return failed(problems[0], tuple(problems))
        return passed()

    def _baseline(self, model: CaseModel, plain: PreparedModel, options: RunOptions) -> dict[int, TensorData] | Outcome:
        example = model.examples[0]
        built = build_request(model, example, options.pool_kind, extensions=options.extensions)
        try:
            answer = execute_with_config(plain, built.request, WithConfigPath.SYNC, ExecutionConfig(),
                                         timeout=options.case_timeout)
            if not answer.ok:
                return skipped(f"the execution without hints returned {answer.status.name}: the with_config family "
                               "judges that, this one has no baseline")
            return answer_outputs(model, built, answer, example)
        finally:
            built.close()

    def _runs(self, device: Device, model: CaseModel, options: RunOptions, plain: PreparedModel,
              hinted: PreparedModel) -> Iterator[HintedRun]:
        ignored = ExecutionConfig(execution_hints=IGNORED_HINTS, extension_name_to_prefix=IGNORED_TABLE)
        timed = ExecutionConfig(MeasureTiming.YES, None, IGNORED_HINTS, IGNORED_TABLE)
        fenced = not fenced_must_refuse(model, 0)
        yield HintedRun("prepared with compilation hints, executed without hints", hinted, WithConfigPath.SYNC,
                        ExecutionConfig())
        yield HintedRun("executed with execution hints", plain, WithConfigPath.SYNC, ignored)
        yield HintedRun("executed on a burst with execution hints", plain, WithConfigPath.BURST, ignored)
        if fenced:
            yield HintedRun("executed fenced with execution hints", plain, WithConfigPath.FENCED, timed)
            yield HintedRun("prepared with compilation hints, executed fenced with execution hints", hinted,
                            WithConfigPath.FENCED, ignored)
        yield HintedRun("prepared with compilation hints, executed with execution hints (timing YES)", hinted,
                        WithConfigPath.SYNC, timed)
        extension = _first_extension(device)
        if extension is not None:
            hints, table = supported_hints(extension)
            honoured = _prepare_hinted(device, model, options, PrepareModelConfig(
                compilation_hints=hints, extension_name_to_prefix=table), f"hints of its extension {extension}")
            yield HintedRun(f"prepared and executed with hints of its extension {extension}", honoured,
                            WithConfigPath.SYNC, ExecutionConfig(execution_hints=hints, extension_name_to_prefix=table),
                            exact=False)

    def _hinted_run(self, model: CaseModel, run: HintedRun, baseline: dict[int, TensorData],
                    options: RunOptions) -> list[str]:
        example = model.examples[0]
        measure = MeasureTiming(int(run.config.measure))
        where = f"{run.path.value}: {run.label}"
        built = build_request(model, example, options.pool_kind, extensions=options.extensions)
        try:
            answer: Answer = execute_with_config(run.prepared, built.request, run.path, run.config,
                                                 timeout=options.case_timeout)
            if not answer.ok:
                detail = f" ({answer.message})" if answer.message else ""
                return [f"{where}: returned {answer.status.name}{detail}; it succeeded without hints, and a hint "
                        "must never fail an execution"]
            if not run.exact or model.multinomial_tolerance > 0:
                return judge_success(model, example, built, answer, measure, where)
            problems = [f"{where}: {p}" for p in timing_problems(answer, measure)]
            return problems + [f"{where}: {p}" for p in
                               _same_outputs(baseline, answer_outputs(model, built, answer, example))]
        finally:
            built.close()
