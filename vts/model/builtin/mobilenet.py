"""Deterministic MobileNet-v1 models built as nnvts ``CaseModel``s.

MobileNet v1 (Howard et al. 2017, table 1): a 3x3/2 convolution to 32
channels, 13 depthwise-separable blocks (depthwise 3x3 + pointwise 1x1,
each followed by ReLU6, fused here as NNAPI does), a global average pool, a
fully connected layer to 1001 classes (TFLite's class count, background
included) and a softmax.  Padding is SAME throughout, as in the TFLite
models NNAPI runs.

The weights are random (``numpy.random.default_rng(seed)``), not trained:
these models measure speed and cross-check drivers against each other, so
what matters is that every run and every engineer builds the same bytes.
Weights are He-scaled so activations stay in ReLU6's working range through
all 27 layers instead of vanishing or saturating.

The quantized model is the float one quantized the TFLite way, per tensor:
uint8 weights (zero point 128, scale max|w|/127), int32 biases at scale
``input_scale * weight_scale``, ReLU6 outputs at scale 6/255 with zero point 0
(so ReLU6 is exactly the uint8 range), and the softmax output at the
1/256 scale the HAL prescribes.

The examples carry one input and no golden: no oracle independent of the
driver under test has computed one (the ONNX Runtime cross-check in
``bench/`` compares drivers, it does not write goldens into these models).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vts.hal.enums import HalVersion, OperandLifeTime, OperandType, OperationType
from vts.model.casemodel import CaseExample, CaseModel, CaseOperand, CaseOperation, CaseSubgraph, TensorData

DEFAULT_SEED = 20170417  # the MobileNets paper's arXiv date
CLASSES = 1001
#: (output channels, stride) of the 13 depthwise-separable blocks (paper, table 1).
BLOCKS = ((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2),
          (512, 1), (512, 1), (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1))
FIRST_CHANNELS = 32
#: The input in [-1, 1] has a small second moment; the first layer's gain lifts activations to ~1 (ReLU6
#: clips a few), and the classifier's gain spreads logits over a few units so the softmax has winners.
FIRST_GAIN = 3.0
FC_GAIN = 4.0
PADDING_SAME = 1
FUSED_NONE = 0
FUSED_RELU6 = 3

#: Quantization of the uint8 model: input in [-1, 1], ReLU6 outputs in [0, 6], logits in [-16, 16).
INPUT_SCALE, INPUT_ZERO_POINT = 1.0 / 128, 128
RELU6_SCALE, RELU6_ZERO_POINT = 6.0 / 255, 0
LOGITS_SCALE, LOGITS_ZERO_POINT = 1.0 / 8, 128
SOFTMAX_SCALE, SOFTMAX_ZERO_POINT = 1.0 / 256, 0
WEIGHT_ZERO_POINT = 128


@dataclass(frozen=True, slots=True)
class Layer:
    """One weighted layer of the float network, in NNAPI layouts.

    ``kind`` is ``conv`` (weights [O, kh, kw, I]), ``depthwise`` ([1, kh, kw, C])
    or ``fc`` ([units, inputs]).
    """

    kind: str
    weights: np.ndarray
    bias: np.ndarray
    stride: int = 1


def channels(base: int, alpha: float) -> int:
    """Channel count under width multiplier ``alpha`` (at least 8, as the paper's smallest models)."""
    return max(8, int(base * alpha))


def float_layers(seed: int = DEFAULT_SEED, alpha: float = 1.0) -> list[Layer]:
    """The weights of MobileNet-v1 with width multiplier ``alpha``, drawn from ``default_rng(seed)``."""
    rng = np.random.default_rng(seed)

    def he(shape: tuple[int, ...], fan_in: int, gain: float = 1.0) -> np.ndarray:
        return (rng.standard_normal(shape) * (gain * np.sqrt(2.0 / fan_in))).astype(np.float32)

    def bias(count: int) -> np.ndarray:
        return (rng.standard_normal(count) * 0.05).astype(np.float32)

    width = channels(FIRST_CHANNELS, alpha)
    layers = [Layer("conv", he((width, 3, 3, 3), 27, FIRST_GAIN), bias(width), 2)]
    for base, stride in BLOCKS:
        out = channels(base, alpha)
        layers.append(Layer("depthwise", he((1, 3, 3, width), 9), bias(width), stride))
        layers.append(Layer("conv", he((out, 1, 1, width), width), bias(out), 1))
        width = out
    fc = (rng.standard_normal((CLASSES, width)) * (FC_GAIN / np.sqrt(width))).astype(np.float32)
    layers.append(Layer("fc", fc, bias(CLASSES)))
    return layers


def example_input(size: int, seed: int) -> np.ndarray:
    """A [1, size, size, 3] image in [-1, 1] (MobileNet's preprocessing range)."""
    rng = np.random.default_rng(seed + 1)
    return rng.uniform(-1.0, 1.0, (1, size, size, 3)).astype(np.float32)


def same_size(size: int, stride: int) -> int:
    """Output size of a SAME-padded window (ceil(size / stride))."""
    return (size + stride - 1) // stride


class _Builder:
    """Appends operands and operations of one subgraph."""

    def __init__(self) -> None:
        self.operands: list[CaseOperand] = []
        self.operations: list[CaseOperation] = []

    def operand(self, name: str, type_: OperandType, dims: tuple[int, ...], lifetime: OperandLifeTime,
                value: np.ndarray | None = None, scale: float = 0.0, zero_point: int = 0) -> int:
        self.operands.append(CaseOperand(name, int(type_), dims, lifetime, scale, zero_point, value))
        return len(self.operands) - 1

    def constant(self, name: str, type_: OperandType, value: np.ndarray, scale: float = 0.0,
                 zero_point: int = 0) -> int:
        return self.operand(name, type_, tuple(value.shape), OperandLifeTime.CONSTANT_COPY, value, scale,
                            zero_point)

    def int32(self, name: str, value: int) -> int:
        return self.operand(name, OperandType.INT32, (), OperandLifeTime.CONSTANT_COPY,
                            np.array([value], dtype=np.int32))

    def temporary(self, name: str, type_: OperandType, dims: tuple[int, ...], scale: float = 0.0,
                  zero_point: int = 0) -> int:
        return self.operand(name, type_, dims, OperandLifeTime.TEMPORARY_VARIABLE, scale=scale,
                            zero_point=zero_point)

    def operation(self, type_: OperationType, inputs: list[int], output: int) -> None:
        self.operations.append(CaseOperation(int(type_), tuple(inputs), (output,)))


def _build(name: str, size: int, seed: int, alpha: float, quantized: bool) -> CaseModel:
    if size < 32:
        raise ValueError(f"MobileNet input size must be at least 32, got {size}")
    layers = float_layers(seed, alpha)
    act_type = OperandType.TENSOR_QUANT8_ASYMM if quantized else OperandType.TENSOR_FLOAT32
    b = _Builder()
    if quantized:
        x = b.operand("input", act_type, (1, size, size, 3), OperandLifeTime.SUBGRAPH_INPUT,
                      scale=INPUT_SCALE, zero_point=INPUT_ZERO_POINT)
        in_scale = INPUT_SCALE
    else:
        x = b.operand("input", act_type, (1, size, size, 3), OperandLifeTime.SUBGRAPH_INPUT)
        in_scale = 0.0
    spatial, depth = size, 3
    relu6 = (RELU6_SCALE, RELU6_ZERO_POINT) if quantized else (0.0, 0)
    for index, layer in enumerate(layers[:-1]):
        tag = f"l{index}_{layer.kind}"
        weights, bias = _weights(b, tag, layer, in_scale, quantized)
        spatial = same_size(spatial, layer.stride)
        depth = layer.weights.shape[0] if layer.kind == "conv" else layer.weights.shape[3]
        out = b.temporary(tag, act_type, (1, spatial, spatial, depth), *relu6)
        scalars = [b.int32(f"{tag}_padding", PADDING_SAME), b.int32(f"{tag}_stride_w", layer.stride),
                   b.int32(f"{tag}_stride_h", layer.stride)]
        if layer.kind == "depthwise":
            scalars.append(b.int32(f"{tag}_multiplier", 1))
            op = OperationType.DEPTHWISE_CONV_2D
        else:
            op = OperationType.CONV_2D
        scalars.append(b.int32(f"{tag}_activation", FUSED_RELU6))
        b.operation(op, [x, weights, bias, *scalars], out)
        x, in_scale = out, relu6[0]
    pooled = b.temporary("pool", act_type, (1, 1, 1, depth), *relu6)
    b.operation(OperationType.AVERAGE_POOL_2D,
                [x, b.int32("pool_padding", 2), b.int32("pool_stride_w", 1), b.int32("pool_stride_h", 1),
                 b.int32("pool_filter_w", spatial), b.int32("pool_filter_h", spatial),
                 b.int32("pool_activation", FUSED_NONE)], pooled)
    fc = layers[-1]
    weights, bias = _weights(b, "fc", fc, in_scale, quantized)
    logits_q = (LOGITS_SCALE, LOGITS_ZERO_POINT) if quantized else (0.0, 0)
    logits = b.temporary("logits", act_type, (1, CLASSES), *logits_q)
    b.operation(OperationType.FULLY_CONNECTED, [pooled, weights, bias, b.int32("fc_activation", FUSED_NONE)],
                logits)
    softmax_q = (SOFTMAX_SCALE, SOFTMAX_ZERO_POINT) if quantized else (0.0, 0)
    probs = b.operand("output", act_type, (1, CLASSES), OperandLifeTime.SUBGRAPH_OUTPUT, None, *softmax_q)
    beta = b.operand("softmax_beta", OperandType.FLOAT32, (), OperandLifeTime.CONSTANT_COPY,
                     np.array([1.0], dtype=np.float32))
    b.operation(OperationType.SOFTMAX, [logits, beta], probs)

    image = example_input(size, seed)
    if quantized:
        image = quantize(image, INPUT_SCALE, INPUT_ZERO_POINT)
    main = CaseSubgraph(tuple(b.operands), tuple(b.operations), (0,), (probs,))
    example = CaseExample("", {0: TensorData(image.shape, image.reshape(-1))}, {})
    return CaseModel(spec="mobilenet", name=name, hal_version=HalVersion.V1_0, main=main, referenced=(),
                     examples=(example,))


def quantize(real: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    """uint8 values of ``real`` (round half to even, saturating): how this module quantizes constants."""
    return np.clip(np.rint(real / scale) + zero_point, 0, 255).astype(np.uint8)


def weight_scale(weights: np.ndarray) -> float:
    """Symmetric per-tensor scale: max |w| maps to 127 steps from the zero point."""
    return float(np.float32(np.abs(weights).max() / 127.0))


def _weights(b: _Builder, tag: str, layer: Layer, in_scale: float, quantized: bool) -> tuple[int, int]:
    if not quantized:
        return (b.constant(f"{tag}_weights", OperandType.TENSOR_FLOAT32, layer.weights),
                b.constant(f"{tag}_bias", OperandType.TENSOR_FLOAT32, layer.bias))
    w_scale = weight_scale(layer.weights)
    bias_scale = float(np.float32(in_scale) * np.float32(w_scale))
    q_weights = quantize(layer.weights, w_scale, WEIGHT_ZERO_POINT)
    q_bias = np.rint(layer.bias.astype(np.float64) / bias_scale).astype(np.int32)
    return (b.constant(f"{tag}_weights", OperandType.TENSOR_QUANT8_ASYMM, q_weights, w_scale, WEIGHT_ZERO_POINT),
            b.constant(f"{tag}_bias", OperandType.TENSOR_INT32, q_bias, bias_scale))


def build_mobilenet_v1_float(size: int = 224, seed: int = DEFAULT_SEED, alpha: float = 1.0) -> CaseModel:
    """MobileNet-v1 in TENSOR_FLOAT32 on a [1, size, size, 3] input (NHWC)."""
    return _build(f"mobilenet_v1_{alpha:g}_{size}_float", size, seed, alpha, quantized=False)


def build_mobilenet_v1_quant8(size: int = 224, seed: int = DEFAULT_SEED, alpha: float = 1.0) -> CaseModel:
    """MobileNet-v1 in TENSOR_QUANT8_ASYMM (per-tensor, int32 biases) on a [1, size, size, 3] input."""
    return _build(f"mobilenet_v1_{alpha:g}_{size}_quant8", size, seed, alpha, quantized=True)
