"""A vendor's second driver, "beta": partial, with three bugs of the kinds vendors make (issue 45).

It computes float32 and quant8 (``TENSOR_QUANT8_ASYMM``) ADD, CONV_2D, DEPTHWISE_CONV_2D,
AVERAGE_POOL_2D, SOFTMAX, FULLY_CONNECTED and RESHAPE with the reference's kernels, and claims
nothing else.  Its bugs, each one root cause of many failures across families:

* SOFTMAX ignores beta (computes as if beta were 1.0): outputs wrong wherever beta ≠ 1.0;
* synchronous execution drops its deadline (``execute`` never sees it): a deadline that passed
  before the work started is not refused with MISSED_DEADLINE_*;
* FULLY_CONNECTED on a quant8 rank-4 input is claimed by ``get_supported_operations`` and then
  refused by ``prepare_model`` (GENERAL_FAILURE): the support claim is not honest.

Being partial, it also breaks quantization coupling (it supports no ``TENSOR_QUANT8_ASYMM_SIGNED``
twin of its quant8 models), as the vendor of issue 45 did.  The report must name these as a few
causes, not hundreds of reasons (``tests/report/test_causes_beta.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from nnvts.drivers.reference.device import ReferenceDevice
from nnvts.drivers.reference.ops.registry import OpDef
from nnvts.drivers.reference.prepared_model import ReferencePreparedModel
from nnvts.drivers.reference.tensor import OpContext, Tensor
from vts.hal.enums import ErrorStatus, MeasureTiming, OperandType, OperationType, Priority
from vts.hal.errors import DriverError
from vts.hal.interfaces import CacheFiles, PreparedModel
from vts.hal.types import ExecutionResult, Model, Operation, Request

OPERATIONS = frozenset({OperationType.ADD, OperationType.CONV_2D, OperationType.DEPTHWISE_CONV_2D,
                        OperationType.AVERAGE_POOL_2D, OperationType.SOFTMAX, OperationType.FULLY_CONNECTED,
                        OperationType.RESHAPE})
OPERAND_TYPES = frozenset({OperandType.TENSOR_FLOAT32, OperandType.TENSOR_QUANT8_ASYMM})


def _rank4_quant8_fully_connected(model: Model, op: Operation) -> bool:
    first = model.main.operands[op.inputs[0]] if op.inputs else None
    return (op.type == OperationType.FULLY_CONNECTED and first is not None
            and first.type == OperandType.TENSOR_QUANT8_ASYMM and len(first.dimensions) == 4)


def _ignoring_beta(run: Callable[[OpContext], Sequence[np.ndarray]]) -> Callable[[OpContext], Sequence[np.ndarray]]:
    """SOFTMAX as if beta were always 1.0 (bug 1)."""

    def softmax(ctx: OpContext) -> Sequence[np.ndarray]:
        inputs = list(ctx.inputs)
        inputs[1] = Tensor(np.array(1.0, dtype=np.float32), OperandType.FLOAT32)
        ctx.inputs = inputs
        return run(ctx)

    return softmax


class BetaPreparedModel(ReferencePreparedModel):
    def execute(self, request: Request, measure: MeasureTiming = MeasureTiming.NO, deadline: int | None = None,
                loop_timeout: int | None = None) -> ExecutionResult:
        """Bug 2: the synchronous path forgets the deadline (the asynchronous and fenced ones keep it)."""
        return super().execute(request, measure, None, loop_timeout)


class BetaDevice(ReferenceDevice):
    name = "beta-npu"

    def get_version_string(self) -> str:
        return "beta-npu/0.2"

    def unsupported_reasons(self, model: Model) -> list[str | None]:
        reasons = super().unsupported_reasons(model)
        operands = model.main.operands
        for index, op in enumerate(model.main.operations):
            first = operands[op.inputs[0]].type if op.inputs else None
            if reasons[index] is None and (op.type not in OPERATIONS or first not in OPERAND_TYPES):
                reasons[index] = "not implemented by beta"
        return reasons  # bug 3: a quant8 rank-4 FULLY_CONNECTED is claimed here

    def prepare_checked(self, model: Model, priority: Priority, deadline: int | None, model_cache: CacheFiles,
                        data_cache: CacheFiles, token: bytes) -> PreparedModel:
        if any(_rank4_quant8_fully_connected(model, op) for op in model.main.operations):
            raise DriverError(ErrorStatus.GENERAL_FAILURE, "FULLY_CONNECTED: rank-4 quant8 input not implemented")
        prepared = BetaPreparedModel(model.copy(), priority, self.scheduler, self.memory_budget, self.memory)
        for slot in prepared.compiled.slots[0]:
            if isinstance(slot.op_def, OpDef) and slot.op_def.type == OperationType.SOFTMAX:
                slot.op_def = replace(slot.op_def, run=_ignoring_beta(slot.op_def.run))
        self.cache.save(model, model_cache, data_cache, token)
        return prepared


def create_device(argv: Sequence[str] = ()) -> BetaDevice:
    """``--driver tests.fakes.beta:create_device``: caught by generated (and every golden family), deadline,
    and every family that prepares a claimed model; quantization_coupling fails it as partial."""
    return BetaDevice()
