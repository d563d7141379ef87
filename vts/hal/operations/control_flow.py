"""Control flow (IF, WHILE, HAL 1.3) and the deprecated OEM_OPERATION.

IF and WHILE cannot be described by a type table: their signatures are
those of the subgraphs they reference.  The rules follow Android 11's
``validateIfOperation`` / ``validateWhileOperation`` (``Utils.cpp``):

* every outer operand passed to or returned from a subgraph must be
  *compatible* with the subgraph's own input/output operand: same type,
  scale, zero point and extra parameters, and the same dimensions wherever
  both sides know them;
* conditions are TENSOR_BOOL8 of shape [1];
* for drivers (HAL 1.3, http://b/132458982) the operands that flow around a
  WHILE loop must have a known size, because the loop state is allocated
  once; IF has no such rule in Android's validator.
"""

from __future__ import annotations

from collections.abc import Sequence

from vts.hal.enums import ELEMENT_SIZE, HalVersion, OperandType, is_extension_type, is_scalar_type
from vts.hal.enums import OperationType as Op
from vts.hal.operations._core import (
    B8,
    SUBGRAPH,
    V10,
    V13,
    OpContext,
    OpSpec,
    as_float32,
    type_name,
)
from vts.hal.types import Operand, Subgraph

#: Inputs before the first data operand: IF (condition, then, else), WHILE (cond, body).
_IF_FIRST_INPUT = 3
_WHILE_FIRST_INPUT = 2


def _dims_text(operand: Operand) -> str:
    return str(list(operand.dimensions))


def _incompatibility(inner: Operand, outer: Operand) -> str | None:
    """Why two operands cannot stand for each other across a subgraph boundary."""
    if inner.type != outer.type:
        return f"type {type_name(outer.type)} vs {type_name(inner.type)}"
    if inner.dimensions and outer.dimensions:
        if len(inner.dimensions) != len(outer.dimensions):
            return f"dimensions {_dims_text(outer)} vs {_dims_text(inner)}"
        for a, b in zip(inner.dimensions, outer.dimensions, strict=True):
            if a != 0 and b != 0 and a != b:
                return f"dimensions {_dims_text(outer)} vs {_dims_text(inner)}"
    if as_float32(inner.scale) != as_float32(outer.scale):
        return f"scale {outer.scale:g} vs {inner.scale:g}"
    if inner.zero_point != outer.zero_point:
        return f"zeroPoint {outer.zero_point} vs {inner.zero_point}"
    if inner.extra_params != outer.extra_params:
        return "extraParams differ"
    return None


def _known_size(operand: Operand) -> bool:
    """Android's ``nonExtensionOperandSizeOfData(...) != 0``."""
    if is_extension_type(operand.type):
        return True
    try:
        element = ELEMENT_SIZE[OperandType(operand.type)]
    except ValueError:
        return False
    if is_scalar_type(operand.type):
        return element != 0
    if not operand.dimensions:
        return False
    return all(d != 0 for d in operand.dimensions)


class _Reference:
    """A SUBGRAPH operand resolved to its subgraph, with guarded index lookups.

    The referenced subgraphs are validated separately, possibly after this
    operation, so their index lists may still be out of range here.
    """

    def __init__(self, ctx: OpContext, role: str, operand: Operand) -> None:
        self.ctx = ctx
        self.role = role
        subgraphs: Sequence[Subgraph] = ctx.subgraphs or ()
        if operand.type != SUBGRAPH:
            ctx.fail(f"{role} operand has type {type_name(operand.type)}, expected SUBGRAPH")
        offset = operand.location.offset
        if not isinstance(offset, int) or not 0 <= offset < len(subgraphs):
            ctx.fail(f"{role} operand references subgraph {offset}, but the model has {len(subgraphs)}")
        self.index = offset
        subgraph = subgraphs[offset]
        if not isinstance(subgraph, Subgraph) or not all(
            isinstance(getattr(subgraph, name), list | tuple)
            for name in ("operands", "input_indexes", "output_indexes")
        ):
            ctx.fail(f"{role} operand references subgraph {offset}, which is malformed")
        self.subgraph = subgraph

    @property
    def input_count(self) -> int:
        return len(self.subgraph.input_indexes)

    @property
    def output_count(self) -> int:
        return len(self.subgraph.output_indexes)

    def _operand(self, indexes: Sequence[int], position: int, kind: str) -> Operand:
        index = indexes[position]
        operands = self.subgraph.operands
        if not isinstance(index, int) or not 0 <= index < len(operands):
            self.ctx.fail(
                f"{self.role} subgraph {self.index} {kind} {position} is operand {index}, out of range"
            )
        operand = operands[index]
        if not isinstance(operand, Operand):
            self.ctx.fail(f"{self.role} subgraph {self.index} operand {index} is not an Operand")
        return operand

    def input(self, position: int) -> Operand:
        return self._operand(self.subgraph.input_indexes, position, "input")

    def output(self, position: int) -> Operand:
        return self._operand(self.subgraph.output_indexes, position, "output")


def _check_compatible(ctx: OpContext, inner: Operand, outer: Operand, what: str) -> None:
    reason = _incompatibility(inner, outer)
    if reason is not None:
        ctx.fail(f"{what} is incompatible with the subgraph's operand: {reason}")


def _check_known_size(ctx: OpContext, operand: Operand, what: str) -> None:
    if not ctx.allow_unknown_control_flow_sizes and not _known_size(operand):
        ctx.fail(f"{what} has unknown size {_dims_text(operand)}; HAL 1.3 drivers require WHILE operands "
                 "of known size")


def _check_condition(ctx: OpContext, operand: Operand, what: str) -> None:
    if operand.type != B8:
        ctx.fail(f"{what} has type {type_name(operand.type)}, expected TENSOR_BOOL8")
    if list(operand.dimensions) != [1]:
        ctx.fail(f"{what} must have dimensions [1], got {_dims_text(operand)}")


def _require_subgraphs(ctx: OpContext) -> None:
    if ctx.subgraphs is None:
        ctx.fail("control flow operations can only be validated with the model's referenced subgraphs")


def validate_if(ctx: OpContext) -> HalVersion:
    """IF: condition, then-subgraph, else-subgraph, inputs... -> outputs..."""
    _require_subgraphs(ctx)
    n_in, n_out = len(ctx.inputs), len(ctx.outputs)
    if n_in < _IF_FIRST_INPUT:
        ctx.fail(f"got {n_in} inputs, expected at least {_IF_FIRST_INPUT}")
    if n_out < 1:
        ctx.fail("got 0 outputs, expected at least 1")
    _check_condition(ctx, ctx.inputs[0], "condition (input 0)")
    for slot, role in ((1, "then"), (2, "else")):
        branch = _Reference(ctx, role, ctx.inputs[slot])
        if n_in != _IF_FIRST_INPUT + branch.input_count:
            ctx.fail(f"{role} subgraph has {branch.input_count} inputs, the operation passes "
                     f"{n_in - _IF_FIRST_INPUT}")
        if n_out != branch.output_count:
            ctx.fail(f"{role} subgraph has {branch.output_count} outputs, the operation has {n_out}")
        for i in range(branch.input_count):
            outer_slot = _IF_FIRST_INPUT + i
            what = f"input {outer_slot} ({role} input {i})"
            _check_compatible(ctx, branch.input(i), ctx.inputs[outer_slot], what)
        for i in range(n_out):
            _check_compatible(ctx, branch.output(i), ctx.outputs[i], f"output {i} ({role} output {i})")
    return V13


def validate_while(ctx: OpContext) -> HalVersion:
    """WHILE: cond, body, m input-outputs, k states, n input-only values -> m outputs."""
    _require_subgraphs(ctx)
    n_in, n_out = len(ctx.inputs), len(ctx.outputs)
    if n_in < 3:
        ctx.fail(f"got {n_in} inputs, expected at least 3")
    if n_out < 1:
        ctx.fail("got 0 outputs, expected at least 1")
    first = _WHILE_FIRST_INPUT

    cond = _Reference(ctx, "condition", ctx.inputs[0])
    if n_in != first + cond.input_count:
        ctx.fail(f"condition subgraph has {cond.input_count} inputs, the operation passes {n_in - first}")
    if cond.output_count != 1:
        ctx.fail(f"condition subgraph has {cond.output_count} outputs, expected 1")
    for i in range(cond.input_count):
        inner, outer = cond.input(i), ctx.inputs[first + i]
        what = f"input {first + i} (condition input {i})"
        _check_compatible(ctx, inner, outer, what)
        _check_known_size(ctx, inner, f"condition subgraph input {i}")
        _check_known_size(ctx, outer, what)
    _check_condition(ctx, cond.output(0), "condition subgraph output 0")

    body = _Reference(ctx, "body", ctx.inputs[1])
    if n_in != first + body.input_count:
        ctx.fail(f"body subgraph has {body.input_count} inputs, the operation passes {n_in - first}")
    if body.output_count < n_out:
        ctx.fail(f"body subgraph has {body.output_count} outputs, fewer than the operation's {n_out}")
    if body.input_count < body.output_count:
        ctx.fail(f"body subgraph has more outputs ({body.output_count}) than inputs ({body.input_count})")
    for i in range(body.input_count):
        inner, outer = body.input(i), ctx.inputs[first + i]
        what = f"input {first + i} (body input {i})"
        _check_compatible(ctx, inner, outer, what)
        _check_known_size(ctx, inner, f"body subgraph input {i}")
        _check_known_size(ctx, outer, what)
    for i in range(n_out):
        _check_compatible(ctx, body.output(i), ctx.outputs[i], f"output {i} (body output {i})")
        _check_known_size(ctx, ctx.outputs[i], f"output {i}")
    for i in range(body.output_count):
        inner_out = body.output(i)
        reason = _incompatibility(body.input(i), inner_out)
        if reason is not None:
            ctx.fail(f"body output {i} must match body input {i} (loop-carried value): {reason}")
        _check_known_size(ctx, inner_out, f"body subgraph output {i}")
    return V13


def validate_oem(ctx: OpContext) -> HalVersion:
    """OEM_OPERATION: vendor-defined, Android performs no validation at all."""
    return V10


SPECS: dict[int, OpSpec] = {
    Op.IF: OpSpec(custom=validate_if),
    Op.WHILE: OpSpec(custom=validate_while),
    Op.OEM_OPERATION: OpSpec(custom=validate_oem),
}
