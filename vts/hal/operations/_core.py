"""The signature engine shared by every per-operation table.

Android validates an operation (``validateOperation`` in ``nn/common``) in
three steps, and so do we:

1. the number of inputs and outputs must be one the operation accepts
   (optional trailing inputs such as the NCHW ``layout`` flag or the
   dilation factors make several counts legal);
2. the operand type of every input and output must match one *exact*
   combination ("signature") the operation defines -- there is no "any
   tensor" slot, because VTS replaces operand types one at a time
   (mutateOperationOperandTypeTest) and expects every substitute that is not
   listed as legal to be rejected;
3. some rules look beyond types: known ranks, quantization parameters fixed
   by NeuralNetworks.h, scale relations that decide the HAL version.

Each operation is described by an :class:`OpSpec`: a list of
:class:`Signature` alternatives (each with the lowest HAL version that needs
it) plus a few *checks*.  A check either raises :class:`ValidationError` or
returns the HAL version its rule requires.  The version a concrete
operation needs is the maximum of the signature's version, the checks'
versions, the version that introduced the operation and the versions that
introduced its operand types.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import NoReturn

import numpy as np

from vts.hal.enums import (
    OPERAND_TYPE_HAL_VERSION,
    HalVersion,
    OperandType,
    OperationType,
    enum_name,
    is_extension_type,
)
from vts.hal.types import Operand, Subgraph
from vts.hal.validation_error import BeyondHalRule, ValidationError

V10 = HalVersion.V1_0
V11 = HalVersion.V1_1
V12 = HalVersion.V1_2
V13 = HalVersion.V1_3
FL6 = HalVersion.FL6
FL7 = HalVersion.FL7

_T = OperandType

# Tensor type shorthands (the names used in the HAL reference tables).
F32 = int(_T.TENSOR_FLOAT32)
F16 = int(_T.TENSOR_FLOAT16)
I32 = int(_T.TENSOR_INT32)
QA8 = int(_T.TENSOR_QUANT8_ASYMM)
QAS8 = int(_T.TENSOR_QUANT8_ASYMM_SIGNED)
QS8 = int(_T.TENSOR_QUANT8_SYMM)
QPC8 = int(_T.TENSOR_QUANT8_SYMM_PER_CHANNEL)
QA16 = int(_T.TENSOR_QUANT16_ASYMM)
QS16 = int(_T.TENSOR_QUANT16_SYMM)
B8 = int(_T.TENSOR_BOOL8)

# Scalar type shorthands.
FLOAT = int(_T.FLOAT32)
HALF = int(_T.FLOAT16)
INT = int(_T.INT32)
BOOL = int(_T.BOOL)
SUBGRAPH = int(_T.SUBGRAPH)

QUANT8_ASYMM_TYPES = (QA8, QAS8)


def scalar_of(tensor_type: int) -> int:
    """The float scalar type that accompanies a float tensor type.

    NeuralNetworks.h: scalars that parameterize a TENSOR_FLOAT16 operation
    are FLOAT16, those of every other operation FLOAT32.
    """
    return HALF if tensor_type == F16 else FLOAT


def type_name(value: int) -> str:
    """Printable operand type name that never raises (mutated models carry junk)."""
    return enum_name(OperandType, value) if isinstance(value, int) else repr(value)


def as_float32(value: float) -> np.float32:
    """Round like the C++ runtime, which keeps scales as 32-bit floats."""
    return np.float32(value)


@dataclass(frozen=True, slots=True)
class Signature:
    """One legal combination of input and output operand types.

    ``version`` is the lowest HAL version that accepts this combination
    before any value-dependent rule (those are the spec's checks).
    """

    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    version: HalVersion = V10
    label: str = ""


def sig(
    inputs: Iterable[int], outputs: Iterable[int], version: HalVersion = V10, label: str = ""
) -> Signature:
    return Signature(tuple(int(t) for t in inputs), tuple(int(t) for t in outputs), version, label)


def with_optional(
    signatures: Iterable[Signature], *groups: tuple[Sequence[int], HalVersion]
) -> tuple[Signature, ...]:
    """Add nested optional trailing inputs to every signature.

    ``groups`` are cumulative: for groups g1 (layout) and g2 (dilation) the
    result holds ``sig``, ``sig + g1`` and ``sig + g1 + g2``, each group
    raising the version to at least the group's version -- the way the HAL
    added optional inputs in later versions.
    """
    result: list[Signature] = []
    for base in signatures:
        result.append(base)
        inputs = base.inputs
        version = base.version
        for types, group_version in groups:
            inputs = inputs + tuple(int(t) for t in types)
            version = max(version, group_version)
            result.append(Signature(inputs, base.outputs, version, base.label))
    return tuple(result)


class OpContext:
    """What a check may look at: the operation's operands and the HAL version.

    ``name`` (the operation's HAL name, for messages) is worked out when a message needs it: most
    operations validated pass, and naming each one was 3% of a validation sweep's driver host.
    """

    __slots__ = (
        "_name",
        "allow_unknown_control_flow_sizes",
        "hal_version",
        "inputs",
        "op_type",
        "outputs",
        "subgraphs",
    )

    def __init__(
        self,
        name: str | None,
        op_type: int,
        inputs: Sequence[Operand],
        outputs: Sequence[Operand],
        hal_version: HalVersion,
        subgraphs: Sequence[Subgraph] | None,
        allow_unknown_control_flow_sizes: bool,
    ) -> None:
        self._name = name
        self.op_type = op_type
        self.inputs = inputs
        self.outputs = outputs
        self.hal_version = hal_version
        self.subgraphs = subgraphs
        self.allow_unknown_control_flow_sizes = allow_unknown_control_flow_sizes

    @property
    def name(self) -> str:
        if self._name is None:
            self._name = operation_name(self.op_type)
        return self._name

    def fail(self, message: str) -> NoReturn:
        raise ValidationError(f"{self.name}: {message}")


#: A check returns the HAL version its rule needs (None = no constraint) or raises.
Check = Callable[[OpContext, Signature], HalVersion | None]
SignatureSource = tuple[Signature, ...] | Callable[[int, int], Sequence[Signature]]


@dataclass(frozen=True, slots=True)
class OpSpec:
    """How to validate one operation type.

    ``signatures`` is either a static table or, for operations whose arity
    varies (CONCATENATION, SPLIT, the bidirectional RNNs), a function of the
    input and output counts.  ``arity`` describes the legal counts in error
    messages when they cannot be derived from a static table.  ``custom``
    replaces the signature engine entirely (IF, WHILE, OEM_OPERATION).
    """

    signatures: SignatureSource = ()
    checks: tuple[Check, ...] = ()
    arity: str = ""
    custom: Callable[[OpContext], HalVersion] | None = field(default=None)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _describe_counts(spec: OpSpec) -> str:
    if spec.arity:
        return spec.arity
    assert isinstance(spec.signatures, tuple)
    counts = sorted({(len(s.inputs), len(s.outputs)) for s in spec.signatures})
    by_outputs: dict[int, list[int]] = {}
    for n_in, n_out in counts:
        by_outputs.setdefault(n_out, []).append(n_in)
    parts = []
    for n_out, ins in sorted(by_outputs.items()):
        ins_text = " or ".join(str(n) for n in ins)
        parts.append(f"{ins_text} inputs and {_plural(n_out, 'output')}")
    return "; ".join(parts)


def _mismatch_position(signature: Signature, actual: Sequence[int]) -> int:
    expected = signature.inputs + signature.outputs
    for position, (want, got) in enumerate(zip(expected, actual, strict=True)):
        if want != got:
            return position
    return len(expected)


def _type_error(ctx: OpContext, candidates: Sequence[Signature], actual: Sequence[int]) -> NoReturn:
    """Name the first slot where even the closest signatures disagree."""
    positions = [_mismatch_position(s, actual) for s in candidates]
    best = max(positions)
    expected: list[int] = []
    for s, position in zip(candidates, positions, strict=True):
        if position == best:
            want = (s.inputs + s.outputs)[best]
            if want not in expected:
                expected.append(want)
    n_in = len(ctx.inputs)
    slot = f"input {best}" if best < n_in else f"output {best - n_in}"
    wanted = " or ".join(type_name(t) for t in expected)
    ctx.fail(f"{slot} has type {type_name(actual[best])}, expected {wanted}")


#: The HAL version of every operand type, by its number (an ``OperandType(...)`` call per operand was half
#: of this function's time).
_TYPE_VERSION: dict[int, HalVersion] = {int(t): version for t, version in OPERAND_TYPE_HAL_VERSION.items()}


def operand_types_version(operands: Iterable[Operand]) -> HalVersion:
    """The HAL version that introduced the newest operand type in use (the operand validator reports
    unknown types; an extension type needs HAL 1.2)."""
    version = V10
    for operand in operands:
        otype = operand.type
        found = V12 if is_extension_type(otype) else _TYPE_VERSION.get(otype, V10)
        if found > version:
            version = found
    return version


def operation_name(op_type: int) -> str:
    """HAL name of an operation type, or its number when it has none."""
    if isinstance(op_type, int) and is_extension_type(op_type):
        return f"extension operation {op_type:#x}"
    return enum_name(OperationType, op_type) if isinstance(op_type, int) else repr(op_type)


def run_spec(spec: OpSpec, ctx: OpContext) -> HalVersion:
    """Validate ``ctx`` against ``spec``; return the lowest HAL version it needs."""
    if spec.custom is not None:
        return spec.custom(ctx)
    n_in, n_out = len(ctx.inputs), len(ctx.outputs)
    source = spec.signatures
    table = source if isinstance(source, tuple) else tuple(source(n_in, n_out))
    candidates = [s for s in table if len(s.inputs) == n_in and len(s.outputs) == n_out]
    if not candidates:
        ctx.fail(
            f"got {_plural(n_in, 'input')} and {_plural(n_out, 'output')}, "
            f"expected {_describe_counts(spec)}"
        )
    actual = [o.type for o in ctx.inputs] + [o.type for o in ctx.outputs]
    matches = [s for s in candidates if list(s.inputs + s.outputs) == actual]
    if not matches:
        _type_error(ctx, candidates, actual)
    best: HalVersion | None = None
    first_error: ValidationError | None = None
    for signature in matches:
        try:
            version = signature.version
            for check in spec.checks:
                needed = check(ctx, signature)
                if needed is not None:
                    version = max(version, needed)
        except ValidationError as error:
            first_error = first_error or error
            continue
        best = version if best is None else min(best, version)
    if best is None:
        assert first_error is not None
        raise first_error
    return best


# ---------------------------------------------------------------------------
# Reusable checks.  Each is a small factory returning a Check.


def rank_of(operand: Operand) -> int:
    """0 means "unknown rank" for tensors (the HAL's empty dimensions)."""
    return len(operand.dimensions)


def _slot_operands(ctx: OpContext, slots: Sequence[int] | None) -> list[tuple[int, Operand]]:
    indexes = range(len(ctx.inputs)) if slots is None else slots
    return [(i, ctx.inputs[i]) for i in indexes if i < len(ctx.inputs)]


def rank_at_most(limit: int, *slots: int) -> Check:
    """NeuralNetworks.h "Supported tensor rank: up to N", checked only when the rank is known."""

    def check(ctx: OpContext, _: Signature) -> None:
        for i, operand in _slot_operands(ctx, slots or (0,)):
            rank = rank_of(operand)
            if rank > limit:
                ctx.fail(f"input {i} has rank {rank}, the operation supports rank up to {limit}")

    return check


def all_ranks_at_most(limit: int, skip_last: int = 0) -> Check:
    """Rank limit for every input but the trailing ``skip_last`` scalars (CONCATENATION)."""

    def check(ctx: OpContext, _: Signature) -> None:
        for i in range(len(ctx.inputs) - skip_last):
            rank = rank_of(ctx.inputs[i])
            if rank > limit:
                ctx.fail(f"input {i} has rank {rank}, the operation supports rank up to {limit}")

    return check


def rank_exactly(expected: int, *slots: int, hal_enforced: bool = True) -> Check:
    """NeuralNetworks.h "a 4-D tensor", checked only when the rank is known.

    ``hal_enforced=False``: ValidateHal (HAL 1.3) does not check it, so a
    violation raises ``BeyondHalRule`` (valid for the HAL, unsupported).
    """

    def check(ctx: OpContext, _: Signature) -> None:
        for i, operand in _slot_operands(ctx, slots or (0,)):
            rank = rank_of(operand)
            if rank not in (0, expected):
                message = f"input {i} has rank {rank}, expected rank {expected}"
                if not hal_enforced:
                    raise BeyondHalRule(f"{ctx.name}: {message} (NeuralNetworks.h; not checked by ValidateHal)")
                ctx.fail(message)

    return check


def fixed_output_quant(output: int, params: dict[int, tuple[float, int]]) -> Check:
    """Quantized outputs whose scale and zero point NeuralNetworks.h prescribes.

    E.g. LOGISTIC's TENSOR_QUANT8_ASYMM output must have scale 1/256 and
    zeroPoint 0, because the function's range [0, 1) is mapped onto the
    full 8-bit range; the signed variant shifts the zero point to -128.
    """

    def check(ctx: OpContext, _: Signature) -> None:
        operand = ctx.outputs[output]
        if operand.type not in params:
            return
        scale, zero_point = params[operand.type]
        if as_float32(operand.scale) != as_float32(scale) or operand.zero_point != zero_point:
            ctx.fail(
                f"output {output} of type {type_name(operand.type)} must have scale {scale:g} and "
                f"zeroPoint {zero_point}, got scale {operand.scale:g} and zeroPoint "
                f"{operand.zero_point}"
            )

    return check


def same_quant_as_input(input_index: int = 0, outputs: Sequence[int] | None = (0,)) -> Check:
    """Quantized output must reuse the input's scale and zero point.

    NeuralNetworks.h states this for the data-movement, pooling and ReLU
    family operations: they only move or clamp stored values, so a
    different output quantization would require a requantization the
    operation does not define.  Android enforces it when it computes the
    output shape (the output's Shape is a copy of the input's).
    """

    def check(ctx: OpContext, _: Signature) -> None:
        source = ctx.inputs[input_index]
        if source.type not in QUANT8_ASYMM_TYPES:
            return
        indexes = range(len(ctx.outputs)) if outputs is None else outputs
        for i in indexes:
            operand = ctx.outputs[i]
            if operand.type != source.type:
                continue
            if (as_float32(operand.scale) != as_float32(source.scale)
                    or operand.zero_point != source.zero_point):
                ctx.fail(
                    f"output {i} must have the scale and zeroPoint of input {input_index} "
                    f"({source.scale:g}, {source.zero_point}), got ({operand.scale:g}, "
                    f"{operand.zero_point})"
                )

    return check


def version_if(predicate: Callable[[OpContext, Signature], bool], version: HalVersion) -> Check:
    """Raise the required version when ``predicate`` holds (a rule relaxed in a later HAL)."""

    def check(ctx: OpContext, signature: Signature) -> HalVersion | None:
        return version if predicate(ctx, signature) else None

    return check


def product_scale_constraint(
    left: int, right: int, *, strict_error: bool, types: Sequence[int] = (QA8,)
) -> Check:
    """``outputScale > left.scale * right.scale`` for quantized operations.

    NeuralNetworks.h required it for TENSOR_QUANT8_ASYMM CONV_2D,
    DEPTHWISE_CONV_2D and FULLY_CONNECTED before API level 29, so a model
    that breaks it needs HAL 1.2 (``strict_error=False``); MUL requires it in
    every version (``strict_error=True``).  Computed in 32-bit floats like
    the runtime.
    """

    def check(ctx: OpContext, _: Signature) -> HalVersion | None:
        if ctx.inputs[0].type not in types:
            return None
        product = as_float32(ctx.inputs[left].scale) * as_float32(ctx.inputs[right].scale)
        output_scale = as_float32(ctx.outputs[0].scale)
        if output_scale > product:
            return None
        if strict_error:
            ctx.fail(
                f"output scale {ctx.outputs[0].scale:g} must be greater than the product of the "
                f"input scales ({float(product):g})"
            )
        return V12

    return check


def channel_dim(filter_index: int, expected: int) -> Check:
    """Per-channel quantized filters must be quantized along one specific axis.

    Android's validators require channelDim 0 for CONV_2D, GROUPED_CONV_2D
    and TRANSPOSE_CONV_2D (output channels lead the filter) and 3 for
    DEPTHWISE_CONV_2D (filter [1, H, W, out]).
    """

    def check(ctx: OpContext, _: Signature) -> None:
        operand = ctx.inputs[filter_index]
        if operand.type != QPC8:
            return
        params = operand.extra_params
        dim = getattr(params, "channel_dim", None)
        if dim != expected:
            ctx.fail(
                f"per-channel quantized filter (input {filter_index}) must use channelDim "
                f"{expected}, got {dim}"
            )

    return check
