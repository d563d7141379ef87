"""EMBEDDING_LOOKUP and HASHTABLE_LOOKUP.

Both copy whole rows (the first dimension) of a values tensor; quantized
rows are copied as stored.  EMBEDDING_LOOKUP fails the execution on an index
outside ``[0, rows)`` as Android's ``EmbeddingLookup::Eval`` does.
HASHTABLE_LOOKUP looks each key up in the sorted key list (Android uses
``bsearch``); a missing key yields a zero row and a 0 in the ``hits`` output
(TENSOR_QUANT8_ASYMM, 1 for found).
"""

from __future__ import annotations

import numpy as np

from nnvts.drivers.reference.ops.registry import register_op
from nnvts.drivers.reference.tensor import OpContext, op_failure
from vts.hal.enums import OperandType as T
from vts.hal.enums import OperationType as Op

EMBEDDING_TYPES = (T.TENSOR_FLOAT32, T.TENSOR_INT32, T.TENSOR_QUANT8_ASYMM, T.TENSOR_FLOAT16,
                   T.TENSOR_QUANT8_ASYMM_SIGNED)
HASHTABLE_TYPES = (T.TENSOR_FLOAT32, T.TENSOR_INT32, T.TENSOR_QUANT8_ASYMM)


def _lookups(ctx: OpContext) -> np.ndarray:
    lookups = ctx.array(0)
    if lookups.ndim != 1:
        raise op_failure(f"{ctx.name}: lookups must be 1-D, got shape {list(lookups.shape)}")
    return lookups.astype(np.int64)


@register_op(Op.EMBEDDING_LOOKUP, types=EMBEDDING_TYPES, key_input=1)
def embedding_lookup(ctx: OpContext) -> list[np.ndarray]:
    """``out[i] = values[lookups[i]]``; values have rank >= 2."""
    lookups = _lookups(ctx)
    values = ctx.array(1)
    if values.ndim < 2:
        raise op_failure(f"{ctx.name}: values must have rank >= 2, got {values.ndim}")
    if lookups.size and (lookups.min() < 0 or lookups.max() >= values.shape[0]):
        raise op_failure(f"{ctx.name}: lookups {lookups.tolist()} out of range [0, {values.shape[0]})")
    return [values[lookups]]


@register_op(Op.HASHTABLE_LOOKUP, types=HASHTABLE_TYPES, key_input=2)
def hashtable_lookup(ctx: OpContext) -> list[np.ndarray]:
    """Rows whose key equals each lookup (zero rows where absent) and the hit flags."""
    lookups = _lookups(ctx)
    keys = ctx.array(1).astype(np.int64)
    values = ctx.array(2)
    if keys.ndim != 1 or values.ndim < 1 or values.shape[0] != keys.shape[0]:
        raise op_failure(f"{ctx.name}: keys {list(keys.shape)} do not match values {list(values.shape)}")
    position = np.clip(np.searchsorted(keys, lookups), 0, max(len(keys) - 1, 0))
    hits = (position < len(keys)) & (keys[position] == lookups) if len(keys) else np.zeros(len(lookups), bool)
    rows = np.zeros((len(lookups), *values.shape[1:]), dtype=values.dtype)
    rows[hits] = values[position[hits]]
    return [rows, hits.astype(np.uint8)]
