"""Driver-allocated buffers of the reference device: ``IBuffer`` of NN HAL 1.3 (memory domains).

The rules are the sample driver's ``ManagedBuffer`` / ``SampleBuffer``
(Android's SampleDriver.cpp, BufferTracker.cpp), with one deliberate difference: a buffer may have a
dynamic shape.  Its *initial* dimensions (the allocation descriptor combined
with every role's operand) may hold unknown axes or an unknown rank; the
buffer then takes its shape from ``copy_from``'s dimensions or from the
execution that writes it, and its size is known once its dimensions are.
The sample driver refuses such allocations with GENERAL_FAILURE, which makes
the VTS dynamic-shape copy tests return early; supporting them is what lets
nnvts show those tests can actually pass.

State rules (IBuffer.hal, IDevice::allocate):

* a buffer starts uninitialised; a successful ``copy_from`` or a successful
  execution writing it as an output initialises it;
* any failed ``copy_from`` and any failed execution writing it as an output
  leave it uninitialised again;
* an uninitialised buffer may only be written (copy_to and use as an input
  answer GENERAL_FAILURE).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence

import numpy as np

from nnvts.drivers.reference.executor import operand_dtype
from vts.hal.enums import ELEMENT_SIZE, ErrorStatus, OperandType
from vts.hal.errors import DriverError
from vts.hal.interfaces import Buffer
from vts.hal.memory import Memory
from vts.hal.memory_desc import BufferOperand, Dims, Role, combine_dims, fully_specified
from vts.hal.types import Request

PoolCheck = Callable[[Memory, str], None]


def _role_name(role: Role) -> str:
    return f"{'input' if role.is_input else 'output'} {role.io_index}"


class ReferenceBuffer(Buffer):
    """One driver-allocated buffer; every method is safe to call from several threads."""

    def __init__(self, operand: BufferOperand, roles: frozenset[Role], prepared_models: Sequence[object],
                 check_pool: PoolCheck) -> None:
        self.operand = operand
        self.roles = roles
        # Roles hold prepared-model ids; keeping the models alive keeps those ids unique.
        self._prepared_models = tuple(prepared_models)
        self._check_pool = check_pool
        self.dtype = operand_dtype(operand.type)
        self.initial_dims: Dims = tuple(operand.dimensions)
        self._dims: Dims = self.initial_dims
        self._data = b""
        self._initialized = False
        self._lock = threading.Lock()

    # -- shape and size -----------------------------------------------------

    def size_of(self, dims: Sequence[int]) -> int | None:
        """Bytes for ``dims``; None while the shape is not fully known."""
        if self.operand.is_scalar:
            return ELEMENT_SIZE.get(OperandType(self.operand.type), self.dtype.itemsize)
        if not fully_specified(dims):
            return None
        return math.prod(int(d) for d in dims) * self.dtype.itemsize  # Python ints: np.prod wraps at 2**63

    @property
    def dimensions(self) -> Dims:
        with self._lock:
            return self._dims

    @property
    def initialized(self) -> bool:
        with self._lock:
            return self._initialized

    # -- IBuffer ------------------------------------------------------------

    def copy_to(self, destination: Memory) -> None:
        """IBuffer::copyTo: GF if unmappable, IA on a size mismatch, GF if uninitialised."""
        self._check_memory(destination, "copy_to destination")
        with self._lock:
            size = self.size_of(self._dims)
            if size is not None and destination.size != size:
                raise DriverError(ErrorStatus.INVALID_ARGUMENT,
                                  f"copy_to: destination holds {destination.size} bytes, the buffer {size}")
            if not self._initialized:
                raise DriverError(ErrorStatus.GENERAL_FAILURE, "copy_to: the buffer is not initialised")
            destination.write(0, self._data)

    def copy_from(self, source: Memory, dimensions: Sequence[int]) -> None:
        """IBuffer::copyFrom: any failure leaves the buffer uninitialised (IBuffer.hal)."""
        try:
            self._check_memory(source, "copy_from source")
            dims = self._copy_from_dims(list(dimensions))
            size = self.size_of(dims)
            assert size is not None
            if source.size != size:
                raise DriverError(ErrorStatus.INVALID_ARGUMENT,
                                  f"copy_from: source holds {source.size} bytes, dimensions {list(dims)} need {size}")
            data = source.read(0, size)
        except DriverError:
            with self._lock:
                self._initialized = False
            raise
        with self._lock:
            self._data, self._dims, self._initialized = data, dims, True

    def _check_memory(self, memory: object, what: str) -> None:
        if not isinstance(memory, Memory):
            raise DriverError(ErrorStatus.INVALID_ARGUMENT, f"{what} is {type(memory).__name__}, not a memory pool")
        self._check_pool(memory, what)

    def _copy_from_dims(self, dims: list[int]) -> Dims:
        """``validateCopyFrom``'s dimension rules, every one INVALID_ARGUMENT."""
        if self.operand.is_scalar:
            if dims:
                raise DriverError(ErrorStatus.INVALID_ARGUMENT, f"copy_from: dimensions {dims} for a scalar buffer")
            return ()
        if not dims:
            if not fully_specified(self.initial_dims):
                raise DriverError(ErrorStatus.INVALID_ARGUMENT,
                                  f"copy_from: no dimensions given and the buffer's {list(self.initial_dims)} are "
                                  "not fully specified")
            return self.initial_dims
        combined = combine_dims(self.initial_dims, dims)
        if combined is None:
            raise DriverError(ErrorStatus.INVALID_ARGUMENT,
                              f"copy_from: dimensions {dims} conflict with the buffer's {list(self.initial_dims)}")
        if not fully_specified(dims):
            raise DriverError(ErrorStatus.INVALID_ARGUMENT, f"copy_from: dimensions {dims} are not fully specified")
        return combined

    # -- use in an execution ------------------------------------------------

    def validate_request(self, pool_index: int, request: Request, prepared_model: object) -> None:
        """``ManagedBuffer::validateRequest``: how a request may use this buffer as pool ``pool_index``.

        Inputs: the role must have been declared (IA), the buffer initialised
        (GF), the request's dims compatible with the current ones (IA).
        Outputs: the buffer may not also be an input or a second output (IA),
        the role must have been declared (IA), the request's dims compatible
        with the initial ones (IA).  The same buffer may feed several inputs.
        """
        model_id = id(prepared_model)
        used_as_input = used_as_output = False
        with self._lock:
            for index, argument in enumerate(request.inputs):
                if argument.has_no_value or argument.location.pool_index != pool_index:
                    continue
                role = Role(model_id, True, index)
                if role not in self.roles:
                    raise DriverError(ErrorStatus.INVALID_ARGUMENT,
                                      f"pool {pool_index}: the buffer was not allocated for {_role_name(role)} of "
                                      "this prepared model")
                if not self._initialized:
                    raise DriverError(ErrorStatus.GENERAL_FAILURE,
                                      f"pool {pool_index}: uninitialised buffer used as input {index}")
                if combine_dims(self._dims, argument.dimensions) is None:
                    raise DriverError(ErrorStatus.INVALID_ARGUMENT,
                                      f"input {index}: dimensions {list(argument.dimensions)} conflict with the "
                                      f"buffer's {list(self._dims)}")
                used_as_input = True
            for index, argument in enumerate(request.outputs):
                if argument.has_no_value or argument.location.pool_index != pool_index:
                    continue
                if used_as_input or used_as_output:
                    raise DriverError(ErrorStatus.INVALID_ARGUMENT,
                                      f"pool {pool_index}: one buffer used as output {index} and as another "
                                      "input or output of the same request")
                role = Role(model_id, False, index)
                if role not in self.roles:
                    raise DriverError(ErrorStatus.INVALID_ARGUMENT,
                                      f"pool {pool_index}: the buffer was not allocated for {_role_name(role)} of "
                                      "this prepared model")
                if combine_dims(self.initial_dims, argument.dimensions) is None:
                    raise DriverError(ErrorStatus.INVALID_ARGUMENT,
                                      f"output {index}: dimensions {list(argument.dimensions)} conflict with the "
                                      f"buffer's {list(self.initial_dims)}")
                used_as_output = True

    def read(self, dims: Sequence[int]) -> np.ndarray:
        """The buffer's value as an array of ``dims`` (validated compatible with the current shape)."""
        with self._lock:
            if not self._initialized:
                raise DriverError(ErrorStatus.GENERAL_FAILURE, "uninitialised buffer used as input")
            shape = combine_dims(self._dims, dims)
            data = self._data
        assert shape is not None
        flat = np.frombuffer(data, dtype=self.dtype.newbyteorder("<") if self.dtype.itemsize > 1 else self.dtype)
        return flat.astype(self.dtype).reshape(shape)

    def holds(self, shape: Sequence[int]) -> bool:
        """Whether an output of ``shape`` fits: buffers have a fixed (initial) shape, partially known."""
        if self.operand.is_scalar:
            return len(shape) == 0
        return len(shape) > 0 and combine_dims(self.initial_dims, shape) is not None

    def store(self, value: np.ndarray) -> None:
        """Record a successful execution's output: shape, bytes, initialised."""
        data = np.asarray(value, order="C")
        if data.dtype.itemsize > 1:
            data = data.astype(data.dtype.newbyteorder("<"), copy=False)
        with self._lock:
            self._data, self._dims, self._initialized = data.tobytes(), tuple(int(d) for d in value.shape), True

    def invalidate(self) -> None:
        """A failed execution wrote this buffer as an output: uninitialised again (IDevice::allocate)."""
        with self._lock:
            self._initialized = False
