"""Device-level models a partial driver can take: the same small test in every operand type.

The HAL lets a driver support any subset of operations (a quantized-only
NPU, a float-only DSP).  A family whose cases need *some* model to prepare
and run, not one particular operand type (several clients sharing a
driver, priorities at preparation), asks ``getSupportedOperations`` which
of the candidates below the driver takes and uses the first; when it takes
none, the case is skipped naming what it needed, never failed for what the
driver does not claim.

The candidates are one ADD of two [2, 2] tensors with its goldens summed by
hand, in float32, float16, QUANT8_ASYMM and QUANT8_ASYMM_SIGNED (scale
0.25 with zero points 128 and 0: every quantized value below is a multiple
of 0.25 in range, so the quantized goldens are exact; the float values are
exact in float16 too).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from vts.families._kit.executions import AllowedRefusal, supported_operations, unsupported_names
from vts.families.base import RunOptions
from vts.hal.interfaces import Device
from vts.model.casemodel import CaseModel, ConstantPolicy, close_model, parse_spec, to_hal_model

#: (a, b, a + b) as real numbers.  Floats: 1.5 + 0.25 = 1.75, -2 + 4 = 2, 0.125 + 0.125 = 0.25,
#: 100 + -99.5 = 0.5; quantized (in range at scale 0.25): the same but 0.25 + 0.25 = 0.5, 10 + -9.5 = 0.5.
_FLOAT_VALUES = ((1.5, -2.0, 0.125, 100.0), (0.25, 4.0, 0.125, -99.5), (1.75, 2.0, 0.25, 0.5))
_QUANT_VALUES = ((1.5, -2.0, 0.25, 10.0), (0.25, 4.0, 0.25, -9.5), (1.75, 2.0, 0.5, 0.5))
#: operand type -> (scale, zero point); scale 0 marks a float type (values as written).
ADD_TYPES = {
    "TENSOR_FLOAT32": (0.0, 0),
    "TENSOR_FLOAT16": (0.0, 0),
    "TENSOR_QUANT8_ASYMM": (0.25, 128),
    "TENSOR_QUANT8_ASYMM_SIGNED": (0.25, 0),
}


def _stored(values: Sequence[float], scale: float, zero_point: int) -> list[float] | list[int]:
    if not scale:
        return list(values)
    return [int(v / scale) + zero_point for v in values]  # exact: every value is a multiple of the scale


def add_spec(operand_type: str, name: str = "add") -> dict[str, Any]:
    """The spec document of the ADD in ``operand_type`` (a key of ``ADD_TYPES``)."""
    scale, zero_point = ADD_TYPES[operand_type]
    a, b, total = _QUANT_VALUES if scale else _FLOAT_VALUES
    quant = {"scale": scale, "zero_point": zero_point} if scale else {}
    tensor = {"type": operand_type, "dims": [2, 2], **quant}
    hal = "1.3" if operand_type.endswith("SIGNED") else "1.2" if operand_type.endswith("FLOAT16") else "1.0"
    return {
        "nnvts": 1, "name": f"{name}_{operand_type.lower()}", "hal_version": hal,
        "source": {"kind": "hand", "detail": "sums computed by hand; quantized values divided by the scale by hand"},
        "models": [{
            "name": "add",
            "main": {
                "operands": [
                    {"name": "a", **tensor, "lifetime": "SUBGRAPH_INPUT"},
                    {"name": "b", **tensor, "lifetime": "SUBGRAPH_INPUT"},
                    {"name": "act", "type": "INT32", "lifetime": "CONSTANT_COPY", "value": 0},
                    {"name": "out", **tensor, "lifetime": "SUBGRAPH_OUTPUT"},
                ],
                "operations": [{"type": "ADD", "inputs": ["a", "b", "act"], "outputs": ["out"]}],
                "inputs": ["a", "b"], "outputs": ["out"],
            },
            "examples": [{"inputs": {"a": _stored(a, scale, zero_point), "b": _stored(b, scale, zero_point)},
                          "outputs": {"out": _stored(total, scale, zero_point)}}],
        }],
    }


def add_models(name: str = "add") -> list[CaseModel]:
    """The ADD in every candidate type, float32 first (the type most drivers support)."""
    return [parse_spec(add_spec(operand_type, name))[0] for operand_type in ADD_TYPES]


def unsupported_by(device: Device, model: CaseModel, options: RunOptions) -> str | None:
    """None when the driver claims every operation of ``model``; else what it does not claim.

    A refusal the HAL allows of the support query itself counts as not supported;
    a wrong answer (not one flag per operation) fails the case, as in every family.
    """
    hal_model = to_hal_model(model, ConstantPolicy(pool_kind=options.pool_kind), options.extensions)
    try:
        flags = supported_operations(device, hal_model)
    except AllowedRefusal as refusal:
        return refusal.rule
    finally:
        close_model(hal_model)
    return None if all(flags) else unsupported_names(hal_model, flags)


def first_supported(device: Device, candidates: Sequence[CaseModel], options: RunOptions
                    ) -> tuple[CaseModel | None, str]:
    """(the first candidate the driver fully supports, "") or (None, every candidate's reason)."""
    reasons = []
    for model in candidates:
        why = unsupported_by(device, model, options)
        if why is None:
            return model, ""
        reasons.append(why)
    return None, "; ".join(reasons)
