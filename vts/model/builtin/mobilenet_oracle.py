"""Goldens for ``vts.model.builtin.mobilenet``: a float64 numpy forward pass written apart from the reference driver.

The caching family judges a MobileNet restored from cache "correct or
refused" (VTS CompilationCachingTests.cpp), so it needs expected outputs that
neither the driver under test nor the bundled reference driver produced (a
golden never comes from a driver: docs/spec-format.md).  This module recomputes the network from the builders' public
weights with plain numpy: convolutions as im2col matrix products in float64,
Android's SAME padding (``needed = (out - 1) * stride + filter - in``, the
smaller half first), ReLU6, a global mean, the classifier and a softmax.

The quantized pass follows the HAL's integer recipe (accumulate
``(q - zp_in) * (w - zp_w)`` exactly, add the int32 bias, rescale by
``s_in * s_w / s_out`` rounding half away from zero, clamp to the fused
activation), and Android's rounded integer average pool.  Drivers use
fixed-point multipliers and softmax approximations, so quantized goldens are
compared within 3 (the suite's MobileNet tolerance, §9.1) and float goldens
within 1e-4 (a 28-layer float32 network drifts past 1e-5 from float64).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from vts.model.builtin import mobilenet as mn
from vts.model.casemodel import CaseExample, CaseModel, TensorData
from vts.model.compare import Tolerance

FLOAT_TOLERANCE = Tolerance(atol=1e-4, rtol=1e-4)
QUANT_TOLERANCE = Tolerance(quant=3)


def same_padding(size: int, stride: int, window: int) -> tuple[int, int, int]:
    """(output size, padding before, padding after) of Android's implicit SAME padding."""
    out = (size + stride - 1) // stride
    needed = max(0, (out - 1) * stride + window - size)
    return out, needed // 2, needed - needed // 2


def _patches(x: np.ndarray, kh: int, kw: int, stride: int, pad_value: float) -> np.ndarray:
    """[1, H, W, C] -> [oh, ow, kh, kw, C] windows of the SAME-padded input."""
    _, h, w, _ = x.shape
    oh, top, bottom = same_padding(h, stride, kh)
    ow, left, right = same_padding(w, stride, kw)
    xp = np.pad(x[0], ((top, bottom), (left, right), (0, 0)), constant_values=pad_value)
    rows = (np.arange(oh) * stride)[:, None] + np.arange(kh)[None, :]
    cols = (np.arange(ow) * stride)[:, None] + np.arange(kw)[None, :]
    return xp[rows[:, None, :, None], cols[None, :, None, :]]


def conv(x: np.ndarray, weights: np.ndarray, stride: int, pad_value: float = 0.0) -> np.ndarray:
    """Accumulators of a CONV_2D ([O, kh, kw, I] weights), no bias: [1, oh, ow, O]."""
    o, kh, kw, _ = weights.shape
    p = _patches(x, kh, kw, stride, pad_value)
    acc = p.reshape(p.shape[0] * p.shape[1], -1) @ weights.reshape(o, -1).T
    return acc.reshape(1, p.shape[0], p.shape[1], o)


def depthwise(x: np.ndarray, weights: np.ndarray, stride: int, pad_value: float = 0.0) -> np.ndarray:
    """Accumulators of a DEPTHWISE_CONV_2D with multiplier 1 ([1, kh, kw, C] weights)."""
    _, kh, kw, _ = weights.shape
    p = _patches(x, kh, kw, stride, pad_value)
    return np.einsum("ijklc,klc->ijc", p, weights[0])[None]


def softmax(logits: np.ndarray) -> np.ndarray:
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def forward_float(size: int, seed: int = mn.DEFAULT_SEED, alpha: float = 1.0) -> np.ndarray:
    """Class probabilities [1, 1001] of the float model, in float64."""
    x = mn.example_input(size, seed).astype(np.float64)
    layers = mn.float_layers(seed, alpha)
    for layer in layers[:-1]:
        w = layer.weights.astype(np.float64)
        acc = conv(x, w, layer.stride) if layer.kind == "conv" else depthwise(x, w, layer.stride)
        x = np.clip(acc + layer.bias.astype(np.float64), 0.0, 6.0)
    pooled = x.mean(axis=(1, 2))
    fc = layers[-1]
    return softmax(pooled @ fc.weights.astype(np.float64).T + fc.bias.astype(np.float64))


def _round_away(values: np.ndarray) -> np.ndarray:
    return np.sign(values) * np.floor(np.abs(values) + 0.5)


def _requantize(acc: np.ndarray, multiplier: float, zero_point: int, low: int, high: int) -> np.ndarray:
    return np.clip(_round_away(acc * multiplier) + zero_point, low, high).astype(np.int64)


def forward_quant(size: int, seed: int = mn.DEFAULT_SEED, alpha: float = 1.0) -> np.ndarray:
    """Stored uint8 softmax outputs [1, 1001] of the quantized model."""
    q = mn.quantize(mn.example_input(size, seed), mn.INPUT_SCALE, mn.INPUT_ZERO_POINT).astype(np.int64)
    layers = mn.float_layers(seed, alpha)
    in_scale, in_zp = mn.INPUT_SCALE, mn.INPUT_ZERO_POINT
    relu6_high = mn.RELU6_ZERO_POINT + round(6.0 / mn.RELU6_SCALE)
    for layer in layers[:-1]:
        w_scale = mn.weight_scale(layer.weights)
        w = mn.quantize(layer.weights, w_scale, mn.WEIGHT_ZERO_POINT).astype(np.int64) - mn.WEIGHT_ZERO_POINT
        bias_scale = float(np.float32(in_scale) * np.float32(w_scale))
        bias = np.rint(layer.bias.astype(np.float64) / bias_scale).astype(np.int64)
        x = (q - in_zp).astype(np.float64)  # exact: small integers
        acc = conv(x, w.astype(np.float64), layer.stride) if layer.kind == "conv" else depthwise(
            x, w.astype(np.float64), layer.stride)
        acc = np.rint(acc).astype(np.int64) + bias
        q = _requantize(acc, bias_scale / mn.RELU6_SCALE, mn.RELU6_ZERO_POINT, max(0, mn.RELU6_ZERO_POINT),
                        min(255, relu6_high))
        in_scale, in_zp = mn.RELU6_SCALE, mn.RELU6_ZERO_POINT
    count = q.shape[1] * q.shape[2]
    pooled = (q.sum(axis=(1, 2)) + count // 2) // count  # Android's rounded integer average
    fc = layers[-1]
    w_scale = mn.weight_scale(fc.weights)
    w = mn.quantize(fc.weights, w_scale, mn.WEIGHT_ZERO_POINT).astype(np.int64) - mn.WEIGHT_ZERO_POINT
    bias_scale = float(np.float32(in_scale) * np.float32(w_scale))
    bias = np.rint(fc.bias.astype(np.float64) / bias_scale).astype(np.int64)
    acc = (pooled - in_zp) @ w.T + bias
    logits = _requantize(acc, bias_scale / mn.LOGITS_SCALE, mn.LOGITS_ZERO_POINT, 0, 255)
    probs = softmax((logits - mn.LOGITS_ZERO_POINT) * mn.LOGITS_SCALE)
    return np.clip(_round_away(probs / mn.SOFTMAX_SCALE) + mn.SOFTMAX_ZERO_POINT, 0, 255).astype(np.uint8)


def with_golden(model: CaseModel, size: int, seed: int = mn.DEFAULT_SEED, alpha: float = 1.0) -> CaseModel:
    """``model`` (from ``mobilenet.build_mobilenet_v1_*``) with the oracle's golden and MobileNet tolerance."""
    quantized = model.name.endswith("quant8")
    golden = forward_quant(size, seed, alpha) if quantized else forward_float(size, seed, alpha).astype(np.float32)
    example = model.examples[0]
    examples = (CaseExample(example.name, example.inputs, {0: TensorData(golden.shape, golden.reshape(-1))}),)
    return replace(model, examples=examples, tolerance=QUANT_TOLERANCE if quantized else FLOAT_TOLERANCE)
