"""NN HAL 1.3 enumerations with their exact numeric values.

The numbers are the wire contract of the HAL (types.hal of 1.0 to 1.3): a
driver, a mutation or a report that names an enum must agree on the value, so
every enum here is an ``IntEnum`` whose values are copied from the HAL
definitions, never renumbered.  ``HAL_VERSION_OF`` tables record which HAL
version introduced each value, because validation is versioned: a 1.0 model
may not use a 1.2 operand type.
"""

from __future__ import annotations

from enum import IntEnum


class HalVersion(IntEnum):
    """NN HAL versions and NNAPI feature levels, ordered so that ``>=`` compares them.

    The HIDL HAL 1.0 to 1.3 are feature levels 1 to 4; the stable AIDL
    interface ``android.hardware.neuralnetworks`` has no version numbers of
    its own in the operation table (OperationType.aidl says "since NNAPI
    feature level 6"), so its levels are named by feature level: ``FL5`` is
    AIDL v1 (Android 12, the operations of 1.3), ``FL6`` v2, ``FL7`` v3 and
    ``FL8`` v4 (Android 13).  A spec writes them as ``"FL6"``.
    """

    V1_0 = 10
    V1_1 = 11
    V1_2 = 12
    V1_3 = 13
    FL5 = 15
    FL6 = 16
    FL7 = 17
    FL8 = 18

    @classmethod
    def parse(cls, text: str) -> HalVersion:
        """Parse ``"1.2"`` into ``HalVersion.V1_2`` and ``"FL6"`` into ``HalVersion.FL6``."""
        name = text if text.startswith("FL") else "V" + text.replace(".", "_")
        try:
            return cls[name]
        except KeyError:
            raise ValueError(f"unknown HAL version {text!r}") from None

    @property
    def feature_level(self) -> int:
        """The NNAPI feature level: 1.0 to 1.3 are 1 to 4."""
        return self.value - 9 if self.value <= 13 else self.value - 10

    @property
    def label(self) -> str:
        """How a message names it: ``HAL 1.2``, ``feature level 6``."""
        return f"HAL {self}" if self.value <= 13 else f"feature level {self.feature_level}"

    @property
    def is_aidl(self) -> bool:
        """Feature level 5 and later are the stable AIDL interface (Android 12+); 1.0 to 1.3 are HIDL."""
        return self.value >= 15

    @property
    def interface(self) -> str:
        """The interface and its version: ``HIDL 1.3``, ``AIDL v4`` (AIDL version n is feature level n + 4)."""
        return f"AIDL v{self.feature_level - 4}" if self.is_aidl else f"HIDL {self}"

    @property
    def describe(self) -> str:
        """What ``nnvts info`` says a driver speaks: ``AIDL v4, feature level 8``."""
        return f"{self.interface}, feature level {self.feature_level}"

    @classmethod
    def from_text(cls, text: str) -> HalVersion:
        """An interface as a person writes it: ``1.3`` (HIDL), ``aidl-v4`` / ``aidl4`` / ``v4``, or ``FL8``."""
        cleaned = text.strip().lower().replace(" ", "").replace("_", "-")
        for prefix in ("hidl-", "hidl"):
            if cleaned.startswith(prefix) and cleaned[len(prefix):][:1].isdigit():
                cleaned = cleaned[len(prefix):]
        aidl = cleaned.removeprefix("aidl").removeprefix("-").removeprefix("v")
        if cleaned.startswith(("aidl", "v")) and aidl.isdigit() and 1 <= int(aidl) <= 4:
            return cls(int(aidl) + 14)
        if cleaned.startswith("fl") and cleaned[2:].isdigit():
            return cls.parse(cleaned.upper())
        return cls.parse(cleaned)

    def __str__(self) -> str:
        return f"1.{self.value - 10}" if self.value <= 13 else self.name


class OperandType(IntEnum):
    FLOAT32 = 0
    INT32 = 1
    UINT32 = 2
    TENSOR_FLOAT32 = 3
    TENSOR_INT32 = 4
    TENSOR_QUANT8_ASYMM = 5
    BOOL = 6
    TENSOR_QUANT16_SYMM = 7
    TENSOR_FLOAT16 = 8
    TENSOR_BOOL8 = 9
    FLOAT16 = 10
    TENSOR_QUANT8_SYMM_PER_CHANNEL = 11
    TENSOR_QUANT16_ASYMM = 12
    TENSOR_QUANT8_SYMM = 13
    TENSOR_QUANT8_ASYMM_SIGNED = 14
    SUBGRAPH = 15
    OEM = 10000
    TENSOR_OEM_BYTE = 10001


class OperandTypeRange(IntEnum):
    BASE_MIN = 0
    FUNDAMENTAL_MIN = 0
    FUNDAMENTAL_MAX = 15
    OEM_MIN = 10000
    OEM_MAX = 10001
    BASE_MAX = 0xFFFF


class OperationType(IntEnum):
    ADD = 0
    AVERAGE_POOL_2D = 1
    CONCATENATION = 2
    CONV_2D = 3
    DEPTHWISE_CONV_2D = 4
    DEPTH_TO_SPACE = 5
    DEQUANTIZE = 6
    EMBEDDING_LOOKUP = 7
    FLOOR = 8
    FULLY_CONNECTED = 9
    HASHTABLE_LOOKUP = 10
    L2_NORMALIZATION = 11
    L2_POOL_2D = 12
    LOCAL_RESPONSE_NORMALIZATION = 13
    LOGISTIC = 14
    LSH_PROJECTION = 15
    LSTM = 16
    MAX_POOL_2D = 17
    MUL = 18
    RELU = 19
    RELU1 = 20
    RELU6 = 21
    RESHAPE = 22
    RESIZE_BILINEAR = 23
    RNN = 24
    SOFTMAX = 25
    SPACE_TO_DEPTH = 26
    SVDF = 27
    TANH = 28
    BATCH_TO_SPACE_ND = 29
    DIV = 30
    MEAN = 31
    PAD = 32
    SPACE_TO_BATCH_ND = 33
    SQUEEZE = 34
    STRIDED_SLICE = 35
    SUB = 36
    TRANSPOSE = 37
    ABS = 38
    ARGMAX = 39
    ARGMIN = 40
    AXIS_ALIGNED_BBOX_TRANSFORM = 41
    BIDIRECTIONAL_SEQUENCE_LSTM = 42
    BIDIRECTIONAL_SEQUENCE_RNN = 43
    BOX_WITH_NMS_LIMIT = 44
    CAST = 45
    CHANNEL_SHUFFLE = 46
    DETECTION_POSTPROCESSING = 47
    EQUAL = 48
    EXP = 49
    EXPAND_DIMS = 50
    GATHER = 51
    GENERATE_PROPOSALS = 52
    GREATER = 53
    GREATER_EQUAL = 54
    GROUPED_CONV_2D = 55
    HEATMAP_MAX_KEYPOINT = 56
    INSTANCE_NORMALIZATION = 57
    LESS = 58
    LESS_EQUAL = 59
    LOG = 60
    LOGICAL_AND = 61
    LOGICAL_NOT = 62
    LOGICAL_OR = 63
    LOG_SOFTMAX = 64
    MAXIMUM = 65
    MINIMUM = 66
    NEG = 67
    NOT_EQUAL = 68
    PAD_V2 = 69
    POW = 70
    PRELU = 71
    QUANTIZE = 72
    QUANTIZED_16BIT_LSTM = 73
    RANDOM_MULTINOMIAL = 74
    REDUCE_ALL = 75
    REDUCE_ANY = 76
    REDUCE_MAX = 77
    REDUCE_MIN = 78
    REDUCE_PROD = 79
    REDUCE_SUM = 80
    ROI_ALIGN = 81
    ROI_POOLING = 82
    RSQRT = 83
    SELECT = 84
    SIN = 85
    SLICE = 86
    SPLIT = 87
    SQRT = 88
    TILE = 89
    TOPK_V2 = 90
    TRANSPOSE_CONV_2D = 91
    UNIDIRECTIONAL_SEQUENCE_LSTM = 92
    UNIDIRECTIONAL_SEQUENCE_RNN = 93
    RESIZE_NEAREST_NEIGHBOR = 94
    QUANTIZED_LSTM = 95
    IF = 96
    WHILE = 97
    ELU = 98
    HARD_SWISH = 99
    FILL = 100
    RANK = 101
    BATCH_MATMUL = 102
    PACK = 103
    MIRROR_PAD = 104
    REVERSE = 105
    OEM_OPERATION = 10000


class OperationTypeRange(IntEnum):
    """The operation values of the newest interface (AIDL's OperationType.aidl ends at REVERSE = 105).

    HIDL 1.3 ended at RANK = 101; ``operation_hal_version`` says which
    version introduced each value, so 102 to 105 are refused by a 1.3 model.
    """

    BASE_MIN = 0
    FUNDAMENTAL_MIN = 0
    FUNDAMENTAL_MAX = 105
    OEM_MIN = 10000
    OEM_MAX = 10000
    BASE_MAX = 0xFFFF


class OperandLifeTime(IntEnum):
    TEMPORARY_VARIABLE = 0
    SUBGRAPH_INPUT = 1
    SUBGRAPH_OUTPUT = 2
    CONSTANT_COPY = 3
    CONSTANT_REFERENCE = 4
    NO_VALUE = 5
    SUBGRAPH = 6


class ErrorStatus(IntEnum):
    NONE = 0
    DEVICE_UNAVAILABLE = 1
    GENERAL_FAILURE = 2
    OUTPUT_INSUFFICIENT_SIZE = 3
    INVALID_ARGUMENT = 4
    MISSED_DEADLINE_TRANSIENT = 5
    MISSED_DEADLINE_PERSISTENT = 6
    RESOURCE_EXHAUSTED_TRANSIENT = 7
    RESOURCE_EXHAUSTED_PERSISTENT = 8


class DeviceStatus(IntEnum):
    AVAILABLE = 0
    BUSY = 1
    OFFLINE = 2
    UNKNOWN = 3


class DeviceType(IntEnum):
    """Device kinds; 0 is deliberately unused by the HAL (NDK's UNKNOWN)."""

    OTHER = 1
    CPU = 2
    GPU = 3
    ACCELERATOR = 4


class Priority(IntEnum):
    LOW = 0
    MEDIUM = 1
    HIGH = 2


class ExecutionPreference(IntEnum):
    LOW_POWER = 0
    FAST_SINGLE_ANSWER = 1
    SUSTAINED_SPEED = 2


class MeasureTiming(IntEnum):
    NO = 0
    YES = 1


class FusedActivationFunc(IntEnum):
    NONE = 0
    RELU = 1
    RELU1 = 2
    RELU6 = 3


class PaddingScheme(IntEnum):
    """NDK PaddingCode, passed to operations as an INT32 scalar."""

    SAME = 1
    VALID = 2


BYTE_SIZE_OF_CACHE_TOKEN = 32
MAX_NUMBER_OF_CACHE_FILES = 32
LOOP_TIMEOUT_DEFAULT_NS = 2_000_000_000
LOOP_TIMEOUT_MAXIMUM_NS = 15_000_000_000
MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES = 128
EXTENSION_TYPE_HIGH_BITS_PREFIX = 16
EXTENSION_TYPE_LOW_BITS_TYPE = 16
#: The newest version nnvts knows (AIDL v4): the ceiling for "the lowest version in which this is legal".
NEWEST_HAL_VERSION = HalVersion.FL8
NO_TIMING = 0xFFFF_FFFF_FFFF_FFFF  # UINT64_MAX: "timing not available"

_V = HalVersion
_T = OperandType

OPERAND_TYPE_HAL_VERSION: dict[OperandType, HalVersion] = {
    _T.FLOAT32: _V.V1_0,
    _T.INT32: _V.V1_0,
    _T.UINT32: _V.V1_0,
    _T.TENSOR_FLOAT32: _V.V1_0,
    _T.TENSOR_INT32: _V.V1_0,
    _T.TENSOR_QUANT8_ASYMM: _V.V1_0,
    _T.BOOL: _V.V1_2,
    _T.TENSOR_QUANT16_SYMM: _V.V1_2,
    _T.TENSOR_FLOAT16: _V.V1_2,
    _T.TENSOR_BOOL8: _V.V1_2,
    _T.FLOAT16: _V.V1_2,
    _T.TENSOR_QUANT8_SYMM_PER_CHANNEL: _V.V1_2,
    _T.TENSOR_QUANT16_ASYMM: _V.V1_2,
    _T.TENSOR_QUANT8_SYMM: _V.V1_2,
    _T.TENSOR_QUANT8_ASYMM_SIGNED: _V.V1_3,
    _T.SUBGRAPH: _V.V1_3,
    _T.OEM: _V.V1_0,
    _T.TENSOR_OEM_BYTE: _V.V1_0,
}


def operation_hal_version(op: OperationType) -> HalVersion:
    """HAL version that introduced ``op`` (its value ranges are contiguous)."""
    value = int(op)
    if value <= 28 or value == OperationType.OEM_OPERATION:
        return _V.V1_0
    if value <= 37:
        return _V.V1_1
    if value <= 94:
        return _V.V1_2
    if value <= 101:
        return _V.V1_3
    if value <= 103:
        return _V.FL6  # BATCH_MATMUL, PACK (OperationType.aidl: AIDL v2)
    return _V.FL7  # MIRROR_PAD, REVERSE (AIDL v3)


class MirrorPadMode(IntEnum):
    """MIRROR_PAD's mode scalar (OperationType.aidl): REFLECT leaves out the border element, SYMMETRIC repeats it."""

    REFLECT = 0
    SYMMETRIC = 1


SCALAR_TYPES = frozenset({_T.FLOAT32, _T.INT32, _T.UINT32, _T.BOOL, _T.FLOAT16, _T.SUBGRAPH, _T.OEM})

#: Bytes per element of every fundamental type (SUBGRAPH is a reference: 0).
ELEMENT_SIZE: dict[OperandType, int] = {
    _T.FLOAT32: 4,
    _T.INT32: 4,
    _T.UINT32: 4,
    _T.TENSOR_FLOAT32: 4,
    _T.TENSOR_INT32: 4,
    _T.TENSOR_QUANT8_ASYMM: 1,
    _T.BOOL: 1,
    _T.TENSOR_QUANT16_SYMM: 2,
    _T.TENSOR_FLOAT16: 2,
    _T.TENSOR_BOOL8: 1,
    _T.FLOAT16: 2,
    _T.TENSOR_QUANT8_SYMM_PER_CHANNEL: 1,
    _T.TENSOR_QUANT16_ASYMM: 2,
    _T.TENSOR_QUANT8_SYMM: 1,
    _T.TENSOR_QUANT8_ASYMM_SIGNED: 1,
    _T.SUBGRAPH: 0,
    _T.OEM: 1,
    _T.TENSOR_OEM_BYTE: 1,
}

#: numpy dtype names for the stored (not real-valued) element of each type.
NUMPY_DTYPE: dict[OperandType, str] = {
    _T.FLOAT32: "<f4",
    _T.INT32: "<i4",
    _T.UINT32: "<u4",
    _T.TENSOR_FLOAT32: "<f4",
    _T.TENSOR_INT32: "<i4",
    _T.TENSOR_QUANT8_ASYMM: "u1",
    _T.BOOL: "?",
    _T.TENSOR_QUANT16_SYMM: "<i2",
    _T.TENSOR_FLOAT16: "<f2",
    _T.TENSOR_BOOL8: "?",
    _T.FLOAT16: "<f2",
    _T.TENSOR_QUANT8_SYMM_PER_CHANNEL: "i1",
    _T.TENSOR_QUANT16_ASYMM: "<u2",
    _T.TENSOR_QUANT8_SYMM: "i1",
    _T.TENSOR_QUANT8_ASYMM_SIGNED: "i1",
    _T.OEM: "u1",
    _T.TENSOR_OEM_BYTE: "u1",
}

QUANT8_TYPES = frozenset(
    {_T.TENSOR_QUANT8_ASYMM, _T.TENSOR_QUANT8_ASYMM_SIGNED, _T.TENSOR_QUANT8_SYMM}
)
QUANTIZED_TYPES = QUANT8_TYPES | {
    _T.TENSOR_QUANT16_ASYMM,
    _T.TENSOR_QUANT16_SYMM,
    _T.TENSOR_QUANT8_SYMM_PER_CHANNEL,
}
FLOAT_TENSOR_TYPES = frozenset({_T.TENSOR_FLOAT32, _T.TENSOR_FLOAT16})


def is_extension_type(value: int) -> bool:
    """Extension operand/operation types live above the 16-bit base range."""
    return value > 0xFFFF


def is_scalar_type(value: int) -> bool:
    return value in SCALAR_TYPES


def enum_name(enum_cls: type[IntEnum], value: int) -> str:
    """Name of ``value`` in ``enum_cls``, or the bare number when out of range.

    Mutated models carry deliberately invalid values; messages must still
    render them instead of raising.
    """
    try:
        return enum_cls(value).name
    except ValueError:
        return str(value)
