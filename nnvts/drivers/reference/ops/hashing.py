"""LSH_PROJECTION and RANDOM_MULTINOMIAL: operations built on hashing and sampling.

LSH_PROJECTION signs are bit-exact only with Android's hash: for every hash
seed (a float32, also for FLOAT16 hash tensors) and every input row, the key
``seed bytes ‖ row bytes`` is fingerprinted with farmhash ``Fingerprint64``
(= ``farmhashna::Hash64``), the fingerprints (as signed int64 → double) are
summed, optionally weighted, and the sign gives the bit
(``LSHProjection.cpp``).  The fingerprint is reimplemented here in plain
Python 64-bit arithmetic.

RANDOM_MULTINOMIAL draws samples from softmax(logits) per batch.  Android
uses TensorFlow's Philox generator; conformance is checked statistically
(``multinomial_tolerance``), so this driver samples with a
``numpy.random.Generator`` seeded from the two seed values, inverting the
same unnormalized CDF (non-finite logits get zero probability).
"""

from __future__ import annotations

import struct

import numpy as np

from nnvts.drivers.reference.ops.registry import register_op
from nnvts.drivers.reference.tensor import OpContext, op_failure
from vts.hal.enums import OperandType as T
from vts.hal.enums import OperationType as Op

# ---------------------------------------------------------------------------
# farmhash Fingerprint64 (farmhashna::Hash64)
# ---------------------------------------------------------------------------

_MASK = (1 << 64) - 1
_K0 = 0xC3A5C85C97CB3127
_K1 = 0xB492B66FBE98F273
_K2 = 0x9AE16A3B2F90404F
_KMUL = 0x9DDFEA08EB382D69


def _fetch64(data: bytes, offset: int) -> int:
    return int.from_bytes(data[offset:offset + 8], "little")


def _fetch32(data: bytes, offset: int) -> int:
    return int.from_bytes(data[offset:offset + 4], "little")


def _rotate(value: int, shift: int) -> int:
    return value if shift == 0 else ((value >> shift) | (value << (64 - shift))) & _MASK


def _shift_mix(value: int) -> int:
    return value ^ (value >> 47)


def _hash_len16(u: int, v: int, mul: int = _KMUL) -> int:
    a = ((u ^ v) * mul) & _MASK
    a ^= a >> 47
    b = ((v ^ a) * mul) & _MASK
    b ^= b >> 47
    return (b * mul) & _MASK


def _hash_len0to16(s: bytes) -> int:
    n = len(s)
    if n >= 8:
        mul = (_K2 + n * 2) & _MASK
        a = (_fetch64(s, 0) + _K2) & _MASK
        b = _fetch64(s, n - 8)
        c = (_rotate(b, 37) * mul + a) & _MASK
        d = ((_rotate(a, 25) + b) * mul) & _MASK
        return _hash_len16(c, d, mul)
    if n >= 4:
        mul = (_K2 + n * 2) & _MASK
        a = _fetch32(s, 0)
        return _hash_len16((n + (a << 3)) & _MASK, _fetch32(s, n - 4), mul)
    if n > 0:
        y = (s[0] + (s[n >> 1] << 8)) & 0xFFFFFFFF
        z = (n + (s[n - 1] << 2)) & 0xFFFFFFFF
        return (_shift_mix(((y * _K2) ^ (z * _K0)) & _MASK) * _K2) & _MASK
    return _K2


def _hash_len17to32(s: bytes) -> int:
    n = len(s)
    mul = (_K2 + n * 2) & _MASK
    a = (_fetch64(s, 0) * _K1) & _MASK
    b = _fetch64(s, 8)
    c = (_fetch64(s, n - 8) * mul) & _MASK
    d = (_fetch64(s, n - 16) * _K2) & _MASK
    return _hash_len16((_rotate((a + b) & _MASK, 43) + _rotate(c, 30) + d) & _MASK,
                       (a + _rotate((b + _K2) & _MASK, 18) + c) & _MASK, mul)


def _hash_len33to64(s: bytes) -> int:
    n = len(s)
    mul = (_K2 + n * 2) & _MASK
    a = (_fetch64(s, 0) * _K2) & _MASK
    b = _fetch64(s, 8)
    c = (_fetch64(s, n - 8) * mul) & _MASK
    d = (_fetch64(s, n - 16) * _K2) & _MASK
    y = (_rotate((a + b) & _MASK, 43) + _rotate(c, 30) + d) & _MASK
    z = _hash_len16(y, (a + _rotate((b + _K2) & _MASK, 18) + c) & _MASK, mul)
    e = (_fetch64(s, 16) * mul) & _MASK
    f = _fetch64(s, 24)
    g = ((y + _fetch64(s, n - 32)) * mul) & _MASK
    h = ((z + _fetch64(s, n - 24)) * mul) & _MASK
    return _hash_len16((_rotate((e + f) & _MASK, 43) + _rotate(g, 30) + h) & _MASK,
                       (e + _rotate((f + a) & _MASK, 18) + g) & _MASK, mul)


def _weak_hash_len32_with_seeds(s: bytes, offset: int, a: int, b: int) -> tuple[int, int]:
    w, x, y, z = (_fetch64(s, offset + 8 * i) for i in range(4))
    a = (a + w) & _MASK
    b = _rotate((b + a + z) & _MASK, 21)
    c = a
    a = (a + x + y) & _MASK
    b = (b + _rotate(a, 44)) & _MASK
    return (a + z) & _MASK, (b + c) & _MASK


def fingerprint64(s: bytes) -> int:
    """farmhash ``Fingerprint64`` (unsigned 64-bit) of a byte string."""
    n = len(s)
    if n <= 16:
        return _hash_len0to16(s)
    if n <= 32:
        return _hash_len17to32(s)
    if n <= 64:
        return _hash_len33to64(s)
    seed = 81
    x = seed
    y = (seed * _K1 + 113) & _MASK
    z = (_shift_mix((y * _K2 + 113) & _MASK) * _K2) & _MASK
    v = (0, 0)
    w = (0, 0)
    x = (x * _K2 + _fetch64(s, 0)) & _MASK
    end = ((n - 1) // 64) * 64
    last64 = end + ((n - 1) & 63) - 63
    pos = 0
    while True:
        x = (_rotate((x + y + v[0] + _fetch64(s, pos + 8)) & _MASK, 37) * _K1) & _MASK
        y = (_rotate((y + v[1] + _fetch64(s, pos + 48)) & _MASK, 42) * _K1) & _MASK
        x ^= w[1]
        y = (y + v[0] + _fetch64(s, pos + 40)) & _MASK
        z = (_rotate((z + w[0]) & _MASK, 33) * _K1) & _MASK
        v = _weak_hash_len32_with_seeds(s, pos, (v[1] * _K1) & _MASK, (x + w[0]) & _MASK)
        w = _weak_hash_len32_with_seeds(s, pos + 32, (z + w[1]) & _MASK, (y + _fetch64(s, pos + 16)) & _MASK)
        z, x = x, z
        pos += 64
        if pos == end:
            break
    mul = (_K1 + ((z & 0xFF) << 1)) & _MASK
    pos = last64
    w = ((w[0] + ((n - 1) & 63)) & _MASK, w[1])
    v = ((v[0] + w[0]) & _MASK, v[1])
    w = ((w[0] + v[0]) & _MASK, w[1])
    x = (_rotate((x + y + v[0] + _fetch64(s, pos + 8)) & _MASK, 37) * mul) & _MASK
    y = (_rotate((y + v[1] + _fetch64(s, pos + 48)) & _MASK, 42) * mul) & _MASK
    x ^= (w[1] * 9) & _MASK
    y = (y + v[0] * 9 + _fetch64(s, pos + 40)) & _MASK
    z = (_rotate((z + w[0]) & _MASK, 33) * mul) & _MASK
    v = _weak_hash_len32_with_seeds(s, pos, (v[1] * mul) & _MASK, (x + w[0]) & _MASK)
    w = _weak_hash_len32_with_seeds(s, pos + 32, (z + w[1]) & _MASK, (y + _fetch64(s, pos + 16)) & _MASK)
    z, x = x, z
    return _hash_len16((_hash_len16(v[0], w[0], mul) + _shift_mix(y) * _K0 + z) & _MASK,
                       (_hash_len16(v[1], w[1], mul) + x) & _MASK, mul)


# ---------------------------------------------------------------------------
# LSH_PROJECTION
# ---------------------------------------------------------------------------

SPARSE_DEPRECATED, DENSE, SPARSE = 1, 2, 3  # NeuralNetworks.h LSHProjectionType


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= (1 << 63) else value


def _row_fingerprints(seeds: np.ndarray, rows: list[bytes]) -> np.ndarray:
    """[seeds, rows] signed fingerprints, as doubles (``runningSignBit``'s running values)."""
    out = np.empty((seeds.size, len(rows)), dtype=np.float64)
    for i, seed in enumerate(seeds.reshape(-1)):
        prefix = struct.pack("<f", float(seed))
        for j, row in enumerate(rows):
            out[i, j] = float(_signed(fingerprint64(prefix + row)))
    return out


@register_op(Op.LSH_PROJECTION, types=(T.TENSOR_FLOAT32, T.TENSOR_FLOAT16))
def lsh_projection(ctx: OpContext) -> list[np.ndarray]:
    """Inputs: hash seeds [hashes, bits], input (rank ≥ 1), optional weights [rows], INT32 type.

    Sparse types give one int32 signature per hash function (plus
    ``i · 2^bits`` for the non-deprecated sparse type); DENSE gives every
    bit.  The per-row key bytes are the input's stored bytes, whatever its
    type.
    """
    seeds = ctx.array(0).astype(np.float32)
    data = ctx.tensor(1)
    kind = int(ctx.scalar(3))
    if seeds.ndim != 2 or seeds.shape[1] > 32:
        raise op_failure(f"{ctx.name}: hash tensor must be 2-D with at most 32 bits per function")
    if data.rank < 1:
        raise op_failure(f"{ctx.name}: input must have rank >= 1")
    n_rows = data.shape[0]
    weights = ctx.array(2).astype(np.float64) if ctx.has(2) and ctx.array(2).size else None
    if kind == DENSE and weights is None:
        raise op_failure(f"{ctx.name}: DENSE projection requires weights")
    if weights is not None and weights.shape != (n_rows,):
        raise op_failure(f"{ctx.name}: weights shape {list(weights.shape)} does not match {n_rows} input rows")
    if kind not in (SPARSE_DEPRECATED, SPARSE, DENSE):
        raise op_failure(f"{ctx.name}: unknown projection type {kind}")
    raw = np.ascontiguousarray(data.value).tobytes()
    row_bytes = len(raw) // n_rows if n_rows else 0
    rows = [raw[j * row_bytes:(j + 1) * row_bytes] for j in range(n_rows)]
    values = _row_fingerprints(seeds, rows)
    scores = values @ weights if weights is not None else values.sum(axis=1)
    bits = (scores > 0).astype(np.int64).reshape(seeds.shape)
    if kind == DENSE:
        return [bits.reshape(-1).astype(np.int32)]
    n_bits = seeds.shape[1]
    signature = (bits << np.arange(n_bits - 1, -1, -1)).sum(axis=1)
    if kind == SPARSE:
        signature = signature + np.arange(seeds.shape[0]) * (1 << n_bits)
    return [signature.astype(np.int32)]


# ---------------------------------------------------------------------------
# RANDOM_MULTINOMIAL
# ---------------------------------------------------------------------------


@register_op(Op.RANDOM_MULTINOMIAL, types=(T.TENSOR_FLOAT32, T.TENSOR_FLOAT16))
def random_multinomial(ctx: OpContext) -> list[np.ndarray]:
    """Inputs: logits [batch, classes], INT32 sample count, I32 seeds [2] → I32 [batch, samples]."""
    logits = ctx.array(0).astype(np.float32)
    samples = int(ctx.scalar(1))
    seeds = ctx.array(2).astype(np.int64).reshape(-1)
    if logits.ndim != 2 or logits.shape[1] == 0 or samples < 0 or seeds.size < 2:
        raise op_failure(f"{ctx.name}: needs 2-D logits with classes, a non-negative sample count and two seeds")
    finite = np.isfinite(logits)
    row_max = np.where(finite, logits, -np.inf).max(axis=1, keepdims=True)
    row_max = np.where(np.isfinite(row_max), row_max, 0.0)
    weights = np.where(finite, np.exp(np.where(finite, logits, 0.0).astype(np.float64) - row_max), 0.0)
    cdf = np.cumsum(weights, axis=1)
    generator = np.random.default_rng([int(s) & 0xFFFFFFFF for s in seeds[:2]])
    draws = generator.random((logits.shape[0], samples)) * cdf[:, -1:]
    result = np.empty((logits.shape[0], samples), dtype=np.int64)
    for b in range(logits.shape[0]):  # one searchsorted per batch row
        result[b] = np.searchsorted(cdf[b], draws[b], side="right")
    return [np.minimum(result, logits.shape[1] - 1).astype(np.int32)]
