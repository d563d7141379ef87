"""The model transforms behind authoring-layer variations.

Each transform edits a private copy of one model in place.  It raises
``Skip`` when it does not apply to the model (no float operand to turn into
float16, no constant tensor to turn into an input...), as Android's test
generator does with ``SkipVariation``; it raises ``ProblemsFound`` when the
author asked for something impossible (an operand that does not exist, a
non-integral value for int32).  See docs/spec-format.md, "Variations", for
the user-facing rules; the docstrings here say why each rule is as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from vts.hal.enums import OPERAND_TYPE_HAL_VERSION, HalVersion, OperandType
from vts.spec.checks import resolve
from vts.spec.errors import Problem, ProblemsFound, pointer_join
from vts.spec.values import TYPES, ElementType, decode, encode

CONSTANT_LIFETIMES = ("CONSTANT_COPY", "CONSTANT_REFERENCE")

#: Operand types a quant8/quant8_signed map may convert a float tensor to.
QUANTIZED_TARGETS = frozenset({
    "TENSOR_QUANT8_ASYMM", "TENSOR_QUANT8_ASYMM_SIGNED", "TENSOR_QUANT8_SYMM",
    "TENSOR_QUANT8_SYMM_PER_CHANNEL", "TENSOR_QUANT16_ASYMM", "TENSOR_QUANT16_SYMM", "TENSOR_INT32",
})

#: Types ADD accepts, hence the inputs all_inputs_as_internal can feed through an ADD (as Android).
ADD_TYPES = frozenset(
    {"TENSOR_FLOAT32", "TENSOR_FLOAT16", "TENSOR_QUANT8_ASYMM", "TENSOR_QUANT8_ASYMM_SIGNED"}
)

#: NHWC -> NCHW axis order.
NCHW = (0, 3, 1, 2)


class Skip(Exception):  # a control-flow signal, like Android's SkipVariation
    """The variation does not apply to this model; the combination is left out."""


def fail(pointer: str, message: str) -> ProblemsFound:
    return ProblemsFound([Problem(pointer, message)])


class Target:
    """One model being transformed, with the lookups the transforms share."""

    def __init__(self, model: dict[str, Any], document_hal: str) -> None:
        self.model = model
        self.main: dict[str, Any] = model["main"]
        self.document_hal = document_hal

    @property
    def operands(self) -> list[dict[str, Any]]:
        return self.main["operands"]

    def names(self) -> dict[str, int]:
        return {op["name"]: k for k, op in enumerate(self.operands)}

    def index(self, name: str, pointer: str, transform: str) -> int:
        k = self.names().get(name)
        if k is None:
            raise fail(pointer, f"{transform}: the main subgraph has no operand named {name!r}")
        return k

    def require(self, version: HalVersion) -> None:
        """Raise the model's own hal_version to ``version`` when the variation needs more."""
        current = HalVersion.parse(self.model.get("hal_version", self.document_hal))
        if version > current:
            self.model["hal_version"] = str(version)

    def example_slots(self, k: int) -> Iterator[tuple[dict[str, Any], str]]:
        """(mapping, key) of every example value given for main operand ``k``."""
        names, n = self.names(), len(self.operands)
        for example in self.model["examples"]:
            for side in ("inputs", "outputs"):
                values = example[side]
                for key in values:
                    if resolve(key, names, n) == k:
                        yield values, key

    def map_values(self, operand: dict[str, Any], k: int | None, fn: Callable[[Any, list[int] | None], Any],
                   before: ElementType, after: ElementType) -> None:
        """Rewrite an operand's constant value, and its example values when it is main operand ``k``
        (examples only refer to main), with ``fn(array, dims)``."""
        if "value" in operand:
            operand["value"] = convert(operand["value"], before, after, fn, operand.get("dims"))
        if k is not None:
            for values, key in self.example_slots(k):
                values[key] = convert(values[key], before, after, fn, operand.get("dims"))


def convert(value: Any, before: ElementType, after: ElementType, fn: Callable[[Any, list[int] | None], Any],
            dims: list[int] | None) -> Any:
    """``value`` with its array rewritten by ``fn(array, dims)``, in the same written form."""
    if isinstance(value, dict) and "dims" in value:
        out = dict(value)
        if "value" in value:
            out["value"] = convert(value["value"], before, after, fn, value["dims"])
        else:
            out["b64"] = convert({"b64": value["b64"]}, before, after, fn, value["dims"])["b64"]
        return out
    return encode(fn(decode(value, before), dims), value, after)


def each_operand(target: Target) -> Iterator[tuple[dict[str, Any], int | None]]:
    """Every operand of every subgraph, with its index when it is in main (examples refer to main)."""
    for k, operand in enumerate(target.operands):
        yield operand, k
    for subgraph in target.model.get("referenced", ()):
        for operand in subgraph["operands"]:
            yield operand, None


# --- type conversions -------------------------------------------------------------------------


def relaxed(target: Target, params: Any, pointer: str) -> None:
    """relaxComputationFloat32toFloat16 arrived in HAL 1.1."""
    target.model["relaxed"] = True
    target.require(HalVersion.V1_1)


def _retype_floats(target: Target, new_tensor: str, new_scalar: str,
                   fn: Callable[[Any, list[int] | None], Any], what: str) -> None:
    found = False
    for operand, k in each_operand(target):
        new = {"TENSOR_FLOAT32": new_tensor, "FLOAT32": new_scalar}.get(operand["type"])
        if new is None:
            continue
        found = True
        before, after = TYPES[operand["type"]], TYPES[new]
        operand["type"] = new
        target.map_values(operand, k, fn, before, after)
        target.require(OPERAND_TYPE_HAL_VERSION[OperandType[new]])
    if not found:
        raise Skip(f"{what}: the model has no TENSOR_FLOAT32 or FLOAT32 operand")


def float16(target: Target, params: Any, pointer: str) -> None:
    """TENSOR_FLOAT32 -> TENSOR_FLOAT16 and FLOAT32 -> FLOAT16 everywhere; values are rounded to the
    nearest half (ties to even, as IEEE conversion does) and written as the exact half value."""
    import numpy as np

    def to_half(array: Any, dims: Any) -> Any:
        return np.asarray(array, dtype=np.float64).astype(np.float16).astype(np.float64)

    _retype_floats(target, "TENSOR_FLOAT16", "FLOAT16", to_half, "float16")


def int32(target: Target, params: Any, pointer: str) -> None:
    """TENSOR_FLOAT32 -> TENSOR_INT32 and FLOAT32 -> INT32 everywhere (Android's "int32" converter).
    Values must already be integers: silently truncating a golden would change the test."""
    import numpy as np

    def to_int(array: Any, dims: Any) -> Any:
        floats = np.asarray(array, dtype=np.float64)
        bad = np.flatnonzero((floats != np.round(floats)) | ~np.isfinite(floats))
        if bad.size:
            first = int(bad[0])
            raise fail(pointer, f"int32: value {float(floats[first])!r} (element {first}) is not an integer")
        return floats.astype(np.int64)

    _retype_floats(target, "TENSOR_INT32", "INT32", to_int, "int32")


def quantize(real: Any, scale: float, zero_point: int, et: ElementType,
             channel: Mapping[str, Any] | None = None, dims: list[int] | None = None) -> Any:
    """Stored integers for real values: round(real / scale) half away from zero, plus zero_point,
    clamped to the stored type's range.

    Half away from zero matches std::round in the NNAPI/TFLite QUANTIZE reference; per-channel
    values are clamped to -127..127 as Android's generator does for symmetric per-channel weights.
    """
    import numpy as np

    x = np.asarray(real, dtype=np.float64)
    if channel is not None:
        scales = np.asarray(channel["scales"], dtype=np.float64)
        shape = [1] * len(dims or ())
        shape[channel["dim"]] = scales.size
        x = (x.reshape(dims) / scales.reshape(shape)).reshape(-1)
        low, high = -127, 127
    else:
        x = x / scale
        low, high = et.low, et.high
    q = np.sign(x) * np.floor(np.abs(x) + 0.5) + zero_point
    return np.clip(q, low, high).astype(np.int64)


def _quant_params(name: str, params: Any, pointer: str, operand: Mapping[str, Any]) -> dict[str, Any]:
    """Normalise ``[scale, zero_point]`` / ``{type, scale, zero_point, channel_quant}``."""
    if isinstance(params, list):
        params = {"scale": params[0], "zero_point": params[1]}
    channel = params.get("channel_quant")
    default = "TENSOR_QUANT8_SYMM_PER_CHANNEL" if channel else "TENSOR_QUANT8_ASYMM"
    type_name = params.get("type", default)
    if type_name not in QUANTIZED_TARGETS:
        raise fail(pointer + "/type", f"quantization type {type_name!r} is not one of "
                   f"{', '.join(sorted(QUANTIZED_TARGETS))}")
    scale, zero_point = float(params.get("scale", 0.0)), int(params.get("zero_point", 0))
    if type_name == "TENSOR_QUANT8_SYMM_PER_CHANNEL":
        _check_channel_quant(name, channel, operand.get("dims") or [], pointer)
    elif channel is not None:
        raise fail(pointer + "/channel_quant", f"{name}: channel_quant is for per-channel types only")
    elif scale <= 0:
        raise fail(pointer, f"{name}: expected a positive scale to quantize with, got {scale!r}")
    return {"type": type_name, "scale": scale, "zero_point": zero_point, "channel_quant": channel}


def _check_channel_quant(name: str, channel: Mapping[str, Any] | None, dims: list[int], pointer: str) -> None:
    if channel is None:
        raise fail(pointer, f"{name}: TENSOR_QUANT8_SYMM_PER_CHANNEL needs channel_quant: {{dim, scales}}")
    dim, scales = channel["dim"], channel["scales"]
    if dim >= len(dims) or 0 in dims:
        raise fail(pointer + "/channel_quant/dim", f"{name}: expected a channel dim within the known dims "
                   f"{dims}, got {dim}")
    if dims[dim] != len(scales):
        raise fail(pointer + "/channel_quant/scales", f"{name}: expected {dims[dim]} scales (dims {dims}, "
                   f"channel dim {dim}), got {len(scales)}")
    if any(s <= 0 for s in scales):
        raise fail(pointer + "/channel_quant/scales", f"{name}: expected positive scales")


def quant8(target: Target, params: Mapping[str, Any], pointer: str) -> None:
    """Quantize the listed float operands: their real values (constants and example values) become
    stored integers with the given scale and zero point."""
    import numpy as np

    for name, raw in params.items():
        where = pointer_join(pointer, name)
        k = target.index(name, where, "quant8")
        operand = target.operands[k]
        if operand["type"] not in ("TENSOR_FLOAT32", "TENSOR_FLOAT16"):
            raise fail(where, f"quant8: operand {name!r} is {operand['type']}; only float tensors are "
                       "quantized")
        q = _quant_params(name, raw, where, operand)
        before, after = TYPES[operand["type"]], TYPES[q["type"]]

        def to_stored(array: Any, dims: Any, q: dict[str, Any] = q, after: ElementType = after,
                      where: str = where, name: str = name) -> Any:
            real = np.asarray(array, dtype=np.float64)
            if np.isnan(real).any():
                raise fail(where, f"quant8: operand {name!r} has a NaN value, which has no quantized form")
            return quantize(real, q["scale"], q["zero_point"], after, q["channel_quant"], dims)

        target.map_values(operand, k, to_stored, before, after)
        operand["type"] = q["type"]
        for key in ("scale", "zero_point", "channel_quant"):
            operand.pop(key, None)
            if q[key]:
                operand[key] = q[key]
        target.require(OPERAND_TYPE_HAL_VERSION[OperandType[q["type"]]])


def quant8_signed(target: Target, params: Any, pointer: str) -> None:
    """The signed twin of a quant8 model (HAL 1.3): every TENSOR_QUANT8_ASYMM operand becomes
    TENSOR_QUANT8_ASYMM_SIGNED with zero_point - 128 and stored values - 128, which denotes the
    same real numbers.  With a map, the listed operands are quantized first (as quant8)."""
    if params is not True:
        quant8(target, params, pointer)
    unsigned, signed = TYPES["TENSOR_QUANT8_ASYMM"], TYPES["TENSOR_QUANT8_ASYMM_SIGNED"]
    found = False
    for operand, k in each_operand(target):
        if operand["type"] != "TENSOR_QUANT8_ASYMM":
            continue
        found = True
        operand["type"] = "TENSOR_QUANT8_ASYMM_SIGNED"
        operand["zero_point"] = operand.get("zero_point", 0) - 128
        target.map_values(operand, k, lambda a, dims: a.astype("int64") - 128, unsigned, signed)
    if not found:
        raise Skip("quant8_signed: the model has no TENSOR_QUANT8_ASYMM operand")
    target.require(HalVersion.V1_3)


# --- layout and lifetimes ---------------------------------------------------------------------


def nchw(target: Target, names: list[str], pointer: str) -> None:
    """NHWC -> NCHW for the listed operands, as Android's AddNchw: 4-D operands have their dims and
    values transposed, BOOL operands (the layout flag) are set to true."""
    import numpy as np

    def transpose(array: Any, dims: list[int] | None) -> Any:
        return np.asarray(array).reshape(dims).transpose(NCHW).reshape(-1)

    for i, name in enumerate(names):
        where = pointer_join(pointer, i)
        k = target.index(name, where, "nchw")
        operand = target.operands[k]
        et = TYPES.get(operand["type"])
        dims = operand.get("dims") or []
        if operand["type"] == "BOOL":
            if "value" not in operand:
                raise fail(where, f"nchw: the layout flag {name!r} must be a constant")
            operand["value"] = [True] if isinstance(operand["value"], list) else True
            continue
        if len(dims) != 4 or et is None:
            raise fail(where, f"nchw: operand {name!r} is neither a 4-D tensor nor the BOOL layout flag")
        if "value" in operand:
            if 0 in dims:
                raise fail(where, f"nchw: constant {name!r} has unknown dims {dims}")
            operand["value"] = convert(operand["value"], et, et, transpose, dims)
        for values, key in target.example_slots(k):
            value = values[key]
            if isinstance(value, dict) and "dims" in value:
                new = convert(value, et, et, transpose, value["dims"])
                new["dims"] = [value["dims"][a] for a in NCHW] if len(value["dims"]) == 4 else value["dims"]
                values[key] = new
            elif 0 in dims:
                raise fail(where, f"nchw: example value of {name!r} cannot be transposed: its dims {dims} "
                           "are unknown; write it in the long form {dims, value}")
            else:
                values[key] = convert(value, et, et, transpose, dims)
        operand["dims"] = [dims[a] for a in NCHW]


def _reference_like(refs: list[Any], k: int, name: str) -> Any:
    """A new reference written like the existing ones (names if any are names, else indices)."""
    return name if any(isinstance(r, str) for r in refs) else k


def all_tensors_as_inputs(target: Target, params: Any, pointer: str) -> None:
    """Constant tensors of main become model inputs, their values moved into every example, so a
    driver sees the same data arrive at execution instead of at preparation (Android's
    AllTensorsAsInputsConverter)."""
    moved = 0
    for k, operand in enumerate(target.operands):
        et = TYPES.get(operand["type"])
        if operand["lifetime"] not in CONSTANT_LIFETIMES or et is None or et.scalar:
            continue
        value = operand.pop("value")
        operand["lifetime"] = "SUBGRAPH_INPUT"
        target.main["inputs"].append(_reference_like(target.main["inputs"], k, operand["name"]))
        for example in target.model["examples"]:
            example["inputs"][operand["name"]] = copy_json(value)
        moved += 1
    if not moved:
        raise Skip("all_tensors_as_inputs: the main subgraph has no constant tensor")


def _unique_name(base: str, taken: set[str]) -> str:
    name, n = base, 0
    while name in taken:
        n += 1
        name = f"{base}_{n}"
    taken.add(name)
    return name


def _value_count(value: Any, et: ElementType, dims: list[int] | None) -> int:
    from vts.spec.values import b64_size, expected_count

    if isinstance(value, dict) and "dims" in value:
        count = 1
        for d in value["dims"]:
            count *= d
        return count
    if isinstance(value, dict):
        return (b64_size(value["b64"]) or 0) // max(et.size, 1)
    if isinstance(value, list):
        return len(value)
    return expected_count(et, dims) or 1


def _renamed(key: str, k: int, names: dict[str, int], old: str, new: str, new_index: int) -> str:
    """The example key for the replacement input, written as the old key was (name or index)."""
    if resolve(key, names, len(names)) != k:
        return key
    return new if key == old else str(new_index)


def all_inputs_as_internal(target: Target, params: Any, pointer: str) -> None:
    """Each eligible model input X is fed through ``ADD(X_new, placeholder, NONE) -> X``, so X becomes
    a temporary produced inside the graph (Android's AllInputsAsInternalCoverter).  Eligible: an
    ADD type, rank 1 to 4, and a non-empty value in every example."""
    names = target.names()
    taken = set(names)
    operands, main = target.operands, target.main
    new_operations: list[dict[str, Any]] = []
    for position, ref in enumerate(list(main["inputs"])):
        k = resolve(ref, names, len(operands))
        if k is None:
            continue
        operand = operands[k]
        et = TYPES.get(operand["type"])
        dims = operand.get("dims") or []
        if operand["type"] not in ADD_TYPES or et is None or not 1 <= len(dims) <= 4:
            continue
        slots = list(target.example_slots(k))
        if len(slots) < len(target.model["examples"]) or any(
            _value_count(values[key], et, dims) == 0 for values, key in slots
        ):
            continue
        quant = {key: operand[key] for key in ("scale", "zero_point") if key in operand}
        fresh = {**copy_json(operand), "name": _unique_name(operand["name"] + "_new", taken),
                 "lifetime": "SUBGRAPH_INPUT"}
        zero: Any = float(0) if et.kind == "float" else operand.get("zero_point", 0)
        placeholder = {"name": _unique_name(operand["name"] + "_placeholder", taken), "type": operand["type"],
                       "dims": [1], **quant, "lifetime": "CONSTANT_COPY", "value": [zero]}
        activation = {"name": _unique_name(operand["name"] + "_activation", taken), "type": "INT32",
                      "lifetime": "CONSTANT_COPY", "value": [0]}
        first = len(operands)
        operands += [fresh, placeholder, activation]
        operand["lifetime"] = "TEMPORARY_VARIABLE"
        main["inputs"][position] = fresh["name"] if isinstance(ref, str) else first
        by_name = any(isinstance(r, str) for op in main["operations"] for r in op["inputs"] + op["outputs"])
        refs: list[Any] = [o["name"] for o in (fresh, placeholder, activation, operand)] if by_name else [
            first, first + 1, first + 2, k]
        new_operations.append({"type": "ADD", "inputs": refs[:3], "outputs": refs[3:]})
        for example in target.model["examples"]:
            example["inputs"] = {
                _renamed(key, k, names, operand["name"], fresh["name"], first): value
                for key, value in example["inputs"].items()
            }
    if not new_operations:
        raise Skip("all_inputs_as_internal: no model input can be fed through an ADD")
    main["operations"] = new_operations + main["operations"]


def copy_json(value: Any) -> Any:
    """A deep copy of JSON data (dicts, lists, scalars), several times faster than copy.deepcopy."""
    if type(value) is dict:
        return {k: copy_json(v) for k, v in value.items()}
    if type(value) is list:
        return [copy_json(v) if type(v) in (dict, list) else v for v in value]
    return value


#: Transform name -> function, in the order they apply within one variation.
TRANSFORMS: dict[str, Callable[[Target, Any, str], None]] = {
    "nchw": nchw,
    "all_tensors_as_inputs": all_tensors_as_inputs,
    "quant8": quant8,
    "int32": int32,
    "float16": float16,
    "quant8_signed": quant8_signed,
    "relaxed": relaxed,
    "all_inputs_as_internal": all_inputs_as_internal,
}
