"""IF and WHILE (NN HAL 1.3): run referenced subgraphs.

A SUBGRAPH operand reaches the operation as a tensor holding its index into
``Model.referenced``; ``OpContext.run_subgraph`` runs that subgraph with the
given tensors as its inputs (each takes the inner operand's type and
quantization, the shape it actually has) and returns its outputs.  Because
the values carry their real shapes, outputs of unknown size flow through a
branch or around a loop unchanged.

WHILE follows Android's CpuExecutor: evaluate the condition on the current
values; when it is false, the first m values are the outputs; otherwise,
once the loop has run longer than the loop timeout (the client's
``loopTimeoutDuration``, 2 s by default), abort with
MISSED_DEADLINE_TRANSIENT -- the HAL 1.3 rule that lets a client stop a
runaway loop (VTS InfiniteLoopTimeoutTest passes 1 ms) -- and else run the
body, whose m + k outputs replace the input-output and state values.  The
execution deadline is checked on every iteration as well as before every
operation of the subgraphs.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from nnvts.drivers.reference.ops.registry import register_op
from nnvts.drivers.reference.tensor import OpContext, Tensor, op_failure
from vts.hal.enums import LOOP_TIMEOUT_DEFAULT_NS, ErrorStatus
from vts.hal.enums import OperationType as Op
from vts.hal.errors import DriverError

#: Inputs before the data operands: IF (condition, then, else), WHILE (condition, body).
IF_FIRST_INPUT = 3
WHILE_FIRST_INPUT = 2


def _condition(ctx: OpContext, tensor: Tensor | None, what: str) -> bool:
    """A TENSOR_BOOL8 [1] condition value (Android reads its first byte)."""
    if tensor is None or tensor.value.size == 0:
        raise op_failure(f"{ctx.name}: {what} has no value")
    return bool(tensor.value.reshape(-1)[0])


def _data_inputs(ctx: OpContext, first: int) -> list[Tensor]:
    """The operands passed on to the subgraphs; an omitted one cannot be passed (Android fails it)."""
    values = []
    for index in range(first, ctx.num_inputs):
        if not ctx.has(index):
            raise op_failure(f"{ctx.name}: input {index} has no value")
        values.append(ctx.tensor(index))
    return values


def _subgraph_index(ctx: OpContext, index: int) -> int:
    return int(ctx.tensor(index).item())


@register_op(Op.IF)
def if_op(ctx: OpContext) -> list[np.ndarray]:
    """condition B8 [1], then subgraph, else subgraph, inputs... -> the chosen branch's outputs."""
    branch = 1 if _condition(ctx, ctx.inputs[0] if ctx.num_inputs else None, "condition") else 2
    outputs = ctx.run_subgraph(_subgraph_index(ctx, branch), _data_inputs(ctx, IF_FIRST_INPUT))
    return _outer_outputs(ctx, outputs)


def _outer_outputs(ctx: OpContext, values: Sequence[Tensor]) -> list[np.ndarray]:
    count = len(ctx.outputs)
    if len(values) < count:
        raise op_failure(f"{ctx.name}: subgraph produced {len(values)} values, the operation has {count} outputs")
    return [values[i].value for i in range(count)]


def _check_loop_timeout(ctx: OpContext, started: int) -> None:
    """Android aborts a loop whose condition is still true after the loop timeout has elapsed."""
    timeout = ctx.loop_timeout_ns if ctx.loop_timeout_ns is not None else LOOP_TIMEOUT_DEFAULT_NS
    elapsed = time.monotonic_ns() - started
    if elapsed > timeout:
        raise DriverError(ErrorStatus.MISSED_DEADLINE_TRANSIENT,
                          f"WHILE loop still running after {elapsed / 1e6:.1f} ms "
                          f"(loop timeout {timeout / 1e6:.3f} ms)")


@register_op(Op.WHILE)
def while_op(ctx: OpContext) -> list[np.ndarray]:
    """condition subgraph, body subgraph, m input-outputs, k states, n input-only values -> m outputs."""
    cond, body = _subgraph_index(ctx, 0), _subgraph_index(ctx, 1)
    values = _data_inputs(ctx, WHILE_FIRST_INPUT)
    started = time.monotonic_ns()
    while True:
        ctx.check_deadline()
        result = ctx.run_subgraph(cond, values)
        if not _condition(ctx, result[0] if result else None, "condition subgraph output"):
            break
        _check_loop_timeout(ctx, started)
        updated = ctx.run_subgraph(body, values)
        if len(updated) > len(values):
            raise op_failure(f"{ctx.name}: body produced {len(updated)} values for {len(values)} inputs")
        values[:len(updated)] = updated
    return _outer_outputs(ctx, values)
