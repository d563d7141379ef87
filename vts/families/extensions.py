"""The extensions family: vendor extensions run when declared and are refused, cleanly, when misused.

HAL 1.2 extensions (NN HAL 1.2 types.hal: ``Extension``, ``ExtensionTypeEncoding``) name operand and operation
types by a per-model prefix in the high 16 bits; ``Model.extensionNameToPrefix``
says which prefix is which extension and ``getSupportedExtensions`` which
extensions the device implements.  The HAL suite only checks that the names
are well formed (the discovery family does too); nnvts also checks that

* a declared extension the harness knows (``vts.model.extensions``) is described
  the same way by the driver, and its operations compute the right values
  (device-level Fibonacci cases here, spec goldens in specs/extensions/);
* an operand type whose prefix the model does not declare is INVALID_ARGUMENT
  (a pure HAL validation rule, so every driver is held to it);
* an extension the driver does not declare is never prepared: the support
  query answers INVALID_ARGUMENT or marks the operation unsupported, and
  preparation fails -- a driver that "supports" an unknown extension would
  run code whose meaning it cannot know;
* misuse of a declared extension (a constant whose length is not byteSize
  per element, an unknown type id, malformed extension parameters) is
  INVALID_ARGUMENT, never a crash or a wrong answer;
* a type is decoded by the prefix the model gives its extension, whatever
  the prefix and wherever the extension sits in ``extensionNameToPrefix``:
  the Fibonacci runs again with prefixes other than 1, and beside a second
  extension (listed, unused) in both orders, so that neither the prefix nor
  the position of an entry predicts the other (a driver assuming the
  runtime numbers its extensions 1, 2, ... in list order computes with the
  wrong extension, or refuses).

Every model here is built through ``RunOptions.extensions``, so an extension
allowlist that excludes nnvts skips these cases (see docs/extensions.md).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from dataclasses import replace

import numpy as np

from vts.families._kit.executions import Executor, execute, prepare_for_case
from vts.families._kit.judge import judge_success
from vts.families.base import Case, Family, Outcome, RunOptions, failed, passed, skipped
from vts.families.registry import register_family
from vts.hal.enums import EXTENSION_TYPE_LOW_BITS_TYPE, ErrorStatus, HalVersion, MeasureTiming, OperandLifeTime
from vts.hal.errors import DriverError
from vts.hal.interfaces import Device
from vts.hal.types import Model
from vts.model.casemodel import (
    CaseExample,
    CaseModel,
    CaseOperand,
    CaseOperation,
    CaseSubgraph,
    ConstantPolicy,
    TensorData,
    build_request,
    close_model,
    to_hal_model,
)
from vts.model.extensions import FIBONACCI, ExtensionRegistry
from vts.results import Verdict

FIB = FIBONACCI.name
INT64 = f"{FIB}:EXAMPLE_INT64"
QUANT64 = f"{FIB}:EXAMPLE_TENSOR_QUANT64_ASYMM"
FIBONACCI_OP = f"{FIB}:EXAMPLE_FIBONACCI"
UNDECLARED = "com.example.nnvts_undeclared"
QUANT64_PARAMS = struct.Struct("<dq")


def fibonacci_model(name: str, n: int, golden: list[float], *, output: str = "TENSOR_FLOAT32",
                    params: bytes | None = None, n_operand: CaseOperand | None = None,
                    operation: str = FIBONACCI_OP, extensions: tuple[str, ...] = (FIB,)) -> CaseModel:
    """``out = EXAMPLE_FIBONACCI(n)`` with hand-computed ``golden``; ``n`` is a model input unless given."""
    life = OperandLifeTime
    out_type: int | str = 3 if output == "TENSOR_FLOAT32" else output
    n_in = n_operand or CaseOperand("n", INT64, (), life.SUBGRAPH_INPUT)
    operands = (n_in, CaseOperand("out", out_type, (len(golden),), life.SUBGRAPH_OUTPUT, extension_params=params))
    main = CaseSubgraph(operands, (CaseOperation(operation, (0,), (1,)),), (0,), (1,))
    dtype = np.float32 if out_type == 3 else np.uint64
    inputs = {0: TensorData((), np.array([n], np.int64))} if n_operand is None else {}
    example = CaseExample("", inputs, {0: TensorData((len(golden),), np.array(golden, dtype))})
    return CaseModel("extensions", name, HalVersion.V1_2, main, (), (example,), extensions=extensions)


#: An extension listed in a model beside com.example.fibonacci, used by no operand (the HAL allows it).
LISTED = "com.example.nnvts_listed"


def _with_prefixes(model: CaseModel, *entries: tuple[str, int]) -> CaseModel:
    """``model`` with explicit ``extensionNameToPrefix`` entries (in this order)."""
    return replace(model, name=model.name, extensions=tuple(name for name, _ in entries), extension_prefixes=entries)


def _constant_n_model(name: str, value: np.ndarray) -> CaseModel:
    """EXAMPLE_FIBONACCI of a constant n stored as ``value`` (whose byte length the case chooses)."""
    life = OperandLifeTime
    n = CaseOperand("n", INT64, (), life.CONSTANT_COPY, value=value)
    x = CaseOperand("x", 3, (1,), life.SUBGRAPH_INPUT)
    act = CaseOperand("act", 1, (), life.CONSTANT_COPY, value=np.array([0], np.int32))
    fib = CaseOperand("fib", 3, (1,), life.TEMPORARY_VARIABLE)
    out = CaseOperand("out", 3, (1,), life.SUBGRAPH_OUTPUT)
    main = CaseSubgraph((n, x, act, fib, out), (CaseOperation(FIBONACCI_OP, (0,), (3,)),
                                                 CaseOperation(0, (3, 1, 2), (4,))), (1,), (4,))
    example = CaseExample("", {0: TensorData((1,), np.zeros(1, np.float32))},
                          {0: TensorData((1,), np.ones(1, np.float32))})
    return CaseModel("extensions", name, HalVersion.V1_2, main, (), (example,), extensions=(FIB,))


def _retype(model: Model, operand: int, new_type: int) -> None:
    model.main.operands[operand].type = new_type


#: Positive cases: (model, needs the driver to declare com.example.fibonacci).
#: Goldens: 1, 1, 2, 3, 5, 8, 13 -> float as is; quant64 trunc(fib / 0.5 + 3) = 5, 5, 7, 9, 13, 19, 29.
RUNS = {
    "fibonacci_float32": lambda: fibonacci_model("fibonacci_float32", 4, [1, 1, 2, 3]),
    "fibonacci_quant64": lambda: fibonacci_model("fibonacci_quant64", 7, [5, 5, 7, 9, 13, 19, 29], output=QUANT64,
                                                 params=QUANT64_PARAMS.pack(0.5, 3)),
    # Prefixes other than positions (see the module docstring).
    "fibonacci_float32.prefix_42": lambda: _with_prefixes(
        fibonacci_model("fibonacci_float32_prefix_42", 4, [1, 1, 2, 3]), (FIB, 42)),
    "fibonacci_quant64.two_extensions_fibonacci_second_at_1": lambda: _with_prefixes(
        fibonacci_model("fibonacci_quant64_second_at_1", 7, [5, 5, 7, 9, 13, 19, 29], output=QUANT64,
                        params=QUANT64_PARAMS.pack(0.5, 3)), (LISTED, 2), (FIB, 1)),
    "fibonacci_float32.two_extensions_fibonacci_first_at_32343": lambda: _with_prefixes(
        fibonacci_model("fibonacci_float32_first_at_32343", 6, [1, 1, 2, 3, 5, 8]), (FIB, 0x7E57), (LISTED, 3)),
}

Mutation = Callable[[Model], None]


def _unknown_prefix(model: Model) -> None:
    """Move operand 0 to a prefix the model's extensionNameToPrefix does not list."""
    unused = max(e.prefix for e in model.extension_name_to_prefix) + 1
    low = model.main.operands[0].type & ((1 << EXTENSION_TYPE_LOW_BITS_TYPE) - 1)
    _retype(model, 0, (unused << EXTENSION_TYPE_LOW_BITS_TYPE) | low)


def _unknown_type_id(model: Model) -> None:
    prefix = model.main.operands[0].type >> EXTENSION_TYPE_LOW_BITS_TYPE
    _retype(model, 0, (prefix << EXTENSION_TYPE_LOW_BITS_TYPE) | 0x7777)


#: Refusal cases: name -> (model factory, HAL mutation or None, what refusal is required, needs declared).
#: "invalid": the support query or preparation must answer INVALID_ARGUMENT and nothing is prepared.
#: "unsupported": the support query answers INVALID_ARGUMENT or flags the operation unsupported, and
#: preparation fails.
REFUSALS: dict[str, tuple[Callable[[], CaseModel], Mutation | None, str, bool]] = {
    "unknown_prefix": (RUNS["fibonacci_float32"], _unknown_prefix, "invalid", False),
    "undeclared_extension": (lambda: fibonacci_model(
        "undeclared", 3, [1, 1, 2], n_operand=CaseOperand("n", 3, (1,), OperandLifeTime.SUBGRAPH_INPUT),
        operation=f"{UNDECLARED}:OPERATION", extensions=(UNDECLARED,)), None, "unsupported", False),
    "wrong_byte_size": (lambda: _constant_n_model("wrong_byte_size", np.array([1], np.int32)), None, "invalid", True),
    "unknown_operand_type_id": (RUNS["fibonacci_float32"], _unknown_type_id, "invalid", True),
    "malformed_extension_params": (lambda: fibonacci_model(
        "malformed_params", 2, [1, 1], output=QUANT64, params=b"\x00\x00\x00\x3f"), None, "invalid", True),
}


def _registry(options: RunOptions) -> ExtensionRegistry:
    """The run's registry plus a placeholder for the undeclared extension the refusal case names."""
    base = options.extensions if isinstance(options.extensions, ExtensionRegistry) else ExtensionRegistry()
    if base.denied:
        return base
    return ExtensionRegistry((*base.definitions(), replace(FIBONACCI, name=UNDECLARED,
                                                           operation_types=(("OPERATION", 0),))))


def _declared(device: Device) -> set[str]:
    return {e.name for e in device.get_supported_extensions()}


@register_family
class ExtensionsFamily(Family):
    name = "extensions"
    description = "declared vendor extensions compute correctly; unknown prefixes and undeclared or misused " \
                  "extensions are refused"

    def device_cases(self) -> Iterator[Case]:
        yield Case(f"{self.name}/declared_types_match", self.name, config={"test": "declared"})
        for test in RUNS:
            yield Case(f"{self.name}/{test}", self.name, config={"test": "run", "model": test})
        for test in REFUSALS:
            yield Case(f"{self.name}/{test}", self.name, config={"test": "refusal", "model": test})

    def model_cases(self, model: CaseModel, spec_path: str) -> Iterator[Case]:
        if model.extensions and not model.expect_failure:
            yield Case(f"{self.name}/{model.case_name()}", self.name, model, 0, spec_path, {"test": "spec"})

    def run(self, case: Case, device: Device, options: RunOptions) -> Outcome:
        test = case.config["test"]
        if test == "declared":
            return self._declared_types_match(device, options)
        if test == "run":
            model = RUNS[case.config["model"]]()
            if FIB not in _declared(device):
                return skipped(f"the driver does not declare {FIB}")
            outcome = self._golden(model, device, options)
            if outcome.verdict is Verdict.SKIPPED and model.extension_prefixes:
                return self._same_support(model, outcome, device, options)
            return outcome
        if test == "refusal":
            factory, mutate, kind, needs_declared = REFUSALS[case.config["model"]]
            if needs_declared and FIB not in _declared(device):
                return skipped(f"the driver does not declare {FIB} (undeclared extensions are their own case)")
            return self._refusal(factory(), mutate, kind, device, options)
        assert case.model is not None
        missing = set(case.model.extensions) - _declared(device)
        if missing:
            return self._refusal(case.model, None, "unsupported", device, options)
        return self._golden(case.model, device, options)

    def _declared_types_match(self, device: Device, options: RunOptions) -> Outcome:
        """A declared extension the harness knows must have the operand types the harness encodes."""
        registry = _registry(options)
        checked, problems = [], []
        for ext in device.get_supported_extensions():
            known = registry.definition(ext.name)
            if known is None:
                continue
            checked.append(ext.name)
            expected = {t.id: (t.is_tensor, t.byte_size) for t in known.operand_types}
            declared = {t.type: (t.is_tensor, t.byte_size) for t in ext.operand_types}
            if declared != expected:
                problems.append(f"{ext.name} declares operand types {declared} (id: (is_tensor, byte_size)); the "
                                f"extension defines {expected}")
        if problems:
            return failed(problems[0], tuple(problems))
        return passed(", ".join(checked) if checked else "no declared extension known to nnvts")

    def _golden(self, model: CaseModel, device: Device, options: RunOptions) -> Outcome:
        registry = _registry(options)
        prepared, why = prepare_for_case(device, model, options, registry)
        if prepared is None:
            return skipped(why)
        for example in model.examples:
            for executor, measure in ((Executor.SYNC, MeasureTiming.NO), (Executor.ASYNC, MeasureTiming.YES)):
                built = build_request(model, example, options.pool_kind, extensions=registry)
                try:
                    answer = execute(prepared, built.request, executor, measure)
                    problems = judge_success(model, example, built, answer, measure, f"{executor.value} execution")
                finally:
                    built.close()
                if problems:
                    return failed(problems[0], tuple(problems))
        return passed()

    def _same_support(self, model: CaseModel, outcome: Outcome, device: Device, options: RunOptions) -> Outcome:
        """Support must not depend on the prefix: unsupported here, supported at the usual prefixes, fails."""
        usual = to_hal_model(replace(model, extension_prefixes=(), extensions=(FIB,)),
                             ConstantPolicy(pool_kind=options.pool_kind), _registry(options))
        try:
            flags = device.get_supported_operations(usual)
        except DriverError:
            return outcome
        finally:
            close_model(usual)
        if not all(flags):
            return outcome
        prefixes = ", ".join(f"{name} at {prefix}" for name, prefix in model.extension_prefixes)
        return failed(f"the model is refused or unsupported with extensionNameToPrefix [{prefixes}] ({outcome.reason}),"
                      f" but supported when {FIB} has prefix 1: a type must be decoded by the prefix the model gives")

    def _refusal(self, model: CaseModel, mutate: Mutation | None, kind: str, device: Device,
                 options: RunOptions) -> Outcome:
        hal_model = to_hal_model(model, ConstantPolicy(pool_kind=options.pool_kind), _registry(options))
        try:
            if mutate is not None:
                mutate(hal_model)
            return _judge_refusal(device, hal_model, kind)
        finally:
            close_model(hal_model)


def _judge_refusal(device: Device, model: Model, kind: str) -> Outcome:
    try:
        flags = device.get_supported_operations(model)
        query = "NONE"
    except DriverError as error:
        flags, query = [], error.status.name
    if query not in ("NONE", "INVALID_ARGUMENT"):
        return failed(f"get_supported_operations returned {query}; expected INVALID_ARGUMENT"
                      + (" or NONE with the operation unsupported" if kind == "unsupported" else ""))
    if query == "NONE" and kind == "unsupported" and all(flags):
        return failed(f"get_supported_operations claims support ({list(flags)}) for an extension the driver does "
                      "not declare")
    try:
        prepared = device.prepare_model(model)
    except DriverError as error:
        if kind == "invalid" and error.status != ErrorStatus.INVALID_ARGUMENT:
            return failed(f"prepare_model returned {error.status.name}, expected INVALID_ARGUMENT",
                          (error.message,) if error.message else ())
        return passed(f"support query {query}, prepare_model {error.status.name}")
    what = "an invalid use of an extension" if kind == "invalid" else "a model using an undeclared extension"
    return failed(f"prepare_model prepared {what} ({type(prepared).__name__}); support query answered {query}")
