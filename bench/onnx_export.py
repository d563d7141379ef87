"""Export an nnvts ``TestModel`` to ONNX, so ONNX Runtime can run the very same network.

Only the operations a MobileNet needs are covered (CONV_2D, DEPTHWISE_CONV_2D,
AVERAGE_POOL_2D, RESHAPE, FULLY_CONNECTED, SOFTMAX), with implicit or explicit
padding, NHWC layout and fused NONE/RELU/RELU6 activations; anything else
raises ``NotImplementedError`` instead of exporting something different.

Layouts: NNAPI is NHWC with filters [out, kh, kw, in] (depthwise
[1, kh, kw, channels]); ONNX is NCHW with filters [out, in/group, kh, kw].
The exported graph takes an NCHW input (``nchw_input`` converts) and its
rank-2 output needs no conversion.  Padding is always exported explicitly
(``graph.window``), so SAME means exactly what it means to the driver.

Float graphs use Conv/Clip/GlobalAveragePool/Gemm/Softmax.  Quantized graphs
(TENSOR_QUANT8_ASYMM, per-tensor) use ONNX Runtime's integer kernels:
QLinearConv (depthwise as group = channels), com.microsoft
QLinearGlobalAveragePool / QLinearAveragePool, com.microsoft QGemm for the
fully connected layer (QLinearMatMul with the int32 bias), and
DequantizeLinear/Softmax/QuantizeLinear for the softmax.  A fused activation
in a quantized graph must coincide with the output type's range (ReLU6 into
scale 6/255, zero point 0, as MobileNet does); otherwise export refuses.
ORT requantizes with a float multiplier where NNAPI uses a fixed-point one,
so quantized results may differ by a step here and there.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from bench import graph
from vts.hal.enums import OperandType, OperationType
from vts.testmodel import TestModel, TestOperand, TestOperation

OPSET = 17
MS_DOMAIN = "com.microsoft"
_FUSED_RANGES = {0: (-np.inf, np.inf), 1: (0.0, np.inf), 2: (-1.0, 1.0), 3: (0.0, 6.0)}
_ONNX_TYPES = {
    int(OperandType.TENSOR_FLOAT32): TensorProto.FLOAT,
    int(OperandType.TENSOR_QUANT8_ASYMM): TensorProto.UINT8,
}


def nchw_input(value: np.ndarray) -> np.ndarray:
    """An NHWC example input as the exported graph takes it."""
    return np.ascontiguousarray(value.transpose(0, 3, 1, 2)) if value.ndim == 4 else value


@dataclass
class _Graph:
    model: TestModel
    nodes: list[onnx.NodeProto] = field(default_factory=list)
    initializers: list[onnx.TensorProto] = field(default_factory=list)
    named: set[str] = field(default_factory=set)
    counter: int = 0

    @property
    def quantized(self) -> bool:
        operand = self.model.main.operands[self.model.main.inputs[0]]
        return operand.type == OperandType.TENSOR_QUANT8_ASYMM

    def operand(self, index: int) -> TestOperand:
        return self.model.main.operands[index]

    def const(self, name: str, value: np.ndarray) -> str:
        """An initializer (added once: an operand's quantization may be read by two nodes)."""
        if name not in self.named:
            self.named.add(name)
            self.initializers.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def fresh(self, stem: str) -> str:
        self.counter += 1
        return f"{stem}_{self.counter}"

    def quant_params(self, index: int) -> tuple[str, str]:
        """Initializer names of an operand's scale and zero point (scalars, as ONNX expects)."""
        operand = self.operand(index)
        dtype = np.uint8 if operand.type == OperandType.TENSOR_QUANT8_ASYMM else np.int32
        return (self.const(f"{operand.name}_scale", np.array(operand.scale, dtype=np.float32)),
                self.const(f"{operand.name}_zero_point", np.array(operand.zero_point, dtype=dtype)))

    def node(self, op: str, inputs: list[str], outputs: list[str], domain: str = "", **attrs: object) -> None:
        self.nodes.append(helper.make_node(op, inputs, outputs, name=self.fresh(op), domain=domain, **attrs))


def _check_quant_activation(g: _Graph, output: int, activation: int) -> None:
    operand = g.operand(output)
    low, high = _FUSED_RANGES[activation]
    real_low = (0 - operand.zero_point) * operand.scale
    real_high = (255 - operand.zero_point) * operand.scale
    if low > real_low + 1e-6 * operand.scale or high < real_high - 1e-6 * operand.scale:
        raise NotImplementedError(f"fused activation {activation} narrower than the uint8 range of {operand.name}")


def _activation(g: _Graph, value: str, activation: int, output: str) -> None:
    low, high = _FUSED_RANGES[activation]
    if activation == 0:
        g.node("Identity", [value], [output])
    elif activation == 1:
        g.node("Relu", [value], [output])
    else:
        g.node("Clip", [value, g.const(g.fresh("min"), np.array(low, np.float32)),
                        g.const(g.fresh("max"), np.array(high, np.float32))], [output])


def _conv(g: _Graph, op: TestOperation, depthwise: bool) -> None:
    x, w, b = op.inputs[:3]
    output = op.outputs[0]
    filt = graph.constant(g.model, w)
    win = graph.window(g.model, op)
    weights = filt[0].transpose(2, 0, 1)[:, None] if depthwise else filt.transpose(0, 3, 1, 2)
    top, bottom, left, right = win.pads
    attrs = {"strides": list(win.strides), "pads": [top, left, bottom, right],
             "group": filt.shape[3] if depthwise else 1}
    name_w = g.const(g.operand(w).name, np.ascontiguousarray(weights))
    name_b = g.const(g.operand(b).name, graph.constant(g.model, b))
    out = g.operand(output).name
    if g.quantized:
        _check_quant_activation(g, output, win.activation)
        g.node("QLinearConv", [g.operand(x).name, *g.quant_params(x), name_w, *g.quant_params(w),
                               *g.quant_params(output), name_b], [out], **attrs)
    else:
        conv = g.fresh("conv")
        g.node("Conv", [g.operand(x).name, name_w, name_b], [conv], **attrs)
        _activation(g, conv, win.activation, out)


def _average_pool(g: _Graph, op: TestOperation) -> None:
    x, output = op.inputs[0], op.outputs[0]
    in_dims = g.operand(x).dims
    win = graph.window(g.model, op)
    top, bottom, left, right = win.pads
    is_global = win.kernel == tuple(in_dims[1:3]) and not any(win.pads)
    names = [g.operand(x).name]
    out = g.operand(output).name
    attrs = {} if is_global else {"kernel_shape": list(win.kernel), "strides": list(win.strides),
                                  "pads": [top, left, bottom, right], "count_include_pad": 0}
    if g.quantized:
        _check_quant_activation(g, output, win.activation)
        op_type = "QLinearGlobalAveragePool" if is_global else "QLinearAveragePool"
        g.node(op_type, [*names, *g.quant_params(x), *g.quant_params(output)], [out], domain=MS_DOMAIN,
               channels_last=0, **attrs)
    else:
        pooled = g.fresh("pool")
        g.node("GlobalAveragePool" if is_global else "AveragePool", names, [pooled], **attrs)
        _activation(g, pooled, win.activation, out)


def _reshape(g: _Graph, op: TestOperation) -> None:
    """Only reshapes that mean the same in NCHW: a 4-D input with 1x1 spatial extent, or a non-4-D one."""
    x, shape = op.inputs[:2]
    dims = g.operand(x).dims
    if len(dims) == 4 and dims[1:3] != (1, 1):
        raise NotImplementedError("RESHAPE of an NHWC tensor with a spatial extent")
    target = graph.constant(g.model, shape).astype(np.int64)
    g.node("Reshape", [g.operand(x).name, g.const(g.fresh("shape"), target)], [g.operand(op.outputs[0]).name])


def _fully_connected(g: _Graph, op: TestOperation) -> None:
    x, w, b, act = op.inputs
    output = op.outputs[0]
    weights = graph.constant(g.model, w)
    flat = g.fresh("flat")
    g.node("Flatten", [g.operand(x).name], [flat], axis=1)
    name_w = g.const(g.operand(w).name, weights)
    name_b = g.const(g.operand(b).name, graph.constant(g.model, b))
    activation = int(graph.scalar(g.model, act))
    out = g.operand(output).name
    if g.quantized:
        _check_quant_activation(g, output, activation)
        g.node("QGemm", [flat, *g.quant_params(x), name_w, *g.quant_params(w), name_b, *g.quant_params(output)],
               [out], domain=MS_DOMAIN, transB=1)
    else:
        gemm = g.fresh("gemm")
        g.node("Gemm", [flat, name_w, name_b], [gemm], transB=1)
        _activation(g, gemm, activation, out)


def _softmax(g: _Graph, op: TestOperation) -> None:
    x, beta = op.inputs[:2]
    output = op.outputs[0]
    if len(op.inputs) > 2 and int(graph.scalar(g.model, op.inputs[2])) not in (-1, len(g.operand(x).dims) - 1):
        raise NotImplementedError("softmax over an axis other than the last")
    value = g.operand(x).name
    out = g.operand(output).name
    if g.quantized:
        real = g.fresh("logits_real")
        g.node("DequantizeLinear", [value, *g.quant_params(x)], [real])
        value = real
    scaled = value
    if float(graph.scalar(g.model, beta)) != 1.0:
        scaled = g.fresh("scaled")
        g.node("Mul", [value, g.const(g.fresh("beta"), np.array(graph.scalar(g.model, beta), np.float32))], [scaled])
    if g.quantized:
        probs = g.fresh("probs")
        g.node("Softmax", [scaled], [probs], axis=-1)
        g.node("QuantizeLinear", [probs, *g.quant_params(output)], [out])
    else:
        g.node("Softmax", [scaled], [out], axis=-1)


def _value_info(g: _Graph, index: int, name: str | None = None) -> onnx.ValueInfoProto:
    operand = g.operand(index)
    dims = list(operand.dims)
    if len(dims) == 4:
        dims = [dims[0], dims[3], dims[1], dims[2]]
    return helper.make_tensor_value_info(name or operand.name, _ONNX_TYPES[int(operand.type)], dims)


def export(model: TestModel) -> onnx.ModelProto:
    """The ONNX form of ``model``'s main subgraph (NCHW input, same constants)."""
    if model.referenced:
        raise NotImplementedError("referenced subgraphs")
    g = _Graph(model)
    handlers = {
        OperationType.CONV_2D: lambda op: _conv(g, op, depthwise=False),
        OperationType.DEPTHWISE_CONV_2D: lambda op: _conv(g, op, depthwise=True),
        OperationType.AVERAGE_POOL_2D: lambda op: _average_pool(g, op),
        OperationType.RESHAPE: lambda op: _reshape(g, op),
        OperationType.FULLY_CONNECTED: lambda op: _fully_connected(g, op),
        OperationType.SOFTMAX: lambda op: _softmax(g, op),
    }
    for op in model.main.operations:
        handler = handlers.get(OperationType(op.type))
        if handler is None:
            raise NotImplementedError(f"operation {OperationType(op.type).name}")
        handler(op)
    graph = helper.make_graph(
        g.nodes, model.case_name(),
        [_value_info(g, i) for i in model.main.inputs],
        [_value_info(g, i) for i in model.main.outputs],
        g.initializers,
    )
    opsets = [helper.make_opsetid("", OPSET)]
    if g.quantized:
        opsets.append(helper.make_opsetid(MS_DOMAIN, 1))
    onnx_model = helper.make_model(graph, opset_imports=opsets, producer_name="nnvts-bench")
    onnx_model.ir_version = 8
    return onnx_model
