"""Memory domains of the XLA device: ``IDevice::allocate`` buffers that are arrays on the XLA device.

A buffer holds a ``jax.Array`` on the backend's device (GPU memory on a GPU):
``copy_from`` transfers the shared memory to the device (``jax.device_put``),
``copy_to`` transfers back (``np.asarray`` of the device array), an execution
reading the buffer passes the device array to the executable without a host
round trip, and one writing it keeps the executable's output array.

The rules are those of the HAL sample driver's ``ManagedBuffer``:
``validateMemoryDesc`` failures are INVALID_ARGUMENT (``vts.hal.memory_desc``,
shared with the reference driver); roles name prepared models of this device; a buffer starts uninitialised,
``copy_to`` or reading it uninitialised is GENERAL_FAILURE; a failed
``copy_from`` or a failed execution writing it uninitialises it again.  Unlike
the reference, buffers need fully specified dimensions (XLA executables have
exact shapes): an allocation that leaves any axis unknown is GENERAL_FAILURE
(what the sample driver answers too).
"""

from __future__ import annotations

import math
import secrets
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from vts.hal.enums import NUMPY_DTYPE, ErrorStatus, OperandType, is_extension_type, is_scalar_type
from vts.hal.errors import DriverError
from vts.hal.interfaces import Buffer
from vts.hal.memory import Memory
from vts.hal.memory_desc import BufferOperand, Dims, Role, combine_dims, validate_memory_desc
from vts.hal.types import BufferDesc, BufferRole, Model, Request


class DeviceBuffer(Buffer):
    """One memory-domain buffer: a device array of fixed shape and type, or nothing (uninitialised)."""

    def __init__(self, operand: BufferOperand, dims: Dims, roles: frozenset[Role], prepared_models: Sequence[object],
                 to_device: Callable[[np.ndarray], Any]) -> None:
        self.operand_type = OperandType(operand.type)
        self.dtype = np.dtype(NUMPY_DTYPE[self.operand_type])
        self.dims = dims
        self.roles = roles
        self._prepared_models = tuple(prepared_models)  # keeps the role ids unique
        self._to_device = to_device
        self._array: Any = None
        self._lock = threading.Lock()

    @property
    def size(self) -> int:
        return math.prod(self.dims) * self.dtype.itemsize

    @property
    def initialized(self) -> bool:
        with self._lock:
            return self._array is not None

    def copy_to(self, destination: Memory) -> None:
        if not isinstance(destination, Memory):
            raise DriverError(ErrorStatus.INVALID_ARGUMENT, "copy_to destination is not a memory pool")
        if destination.size != self.size:
            raise DriverError(ErrorStatus.INVALID_ARGUMENT,
                              f"copy_to: destination holds {destination.size} bytes, the buffer {self.size}")
        with self._lock:
            array = self._array
        if array is None:
            raise DriverError(ErrorStatus.GENERAL_FAILURE, "copy_to: the buffer is not initialised")
        host = np.ascontiguousarray(np.asarray(array), dtype=self.dtype)  # device -> host transfer
        destination.write(0, host.tobytes())

    def copy_from(self, source: Memory, dimensions: Sequence[int]) -> None:
        try:
            if not isinstance(source, Memory):
                raise DriverError(ErrorStatus.INVALID_ARGUMENT, "copy_from source is not a memory pool")
            dims = list(dimensions)
            if is_scalar_type(self.operand_type):
                if dims:
                    raise DriverError(ErrorStatus.INVALID_ARGUMENT, f"copy_from: dimensions {dims} for a scalar")
            elif dims:
                combined = combine_dims(self.dims, dims)
                if combined is None or 0 in dims:
                    raise DriverError(ErrorStatus.INVALID_ARGUMENT,
                                      f"copy_from: dimensions {dims} conflict with the buffer's {list(self.dims)}")
            if source.size != self.size:
                raise DriverError(ErrorStatus.INVALID_ARGUMENT,
                                  f"copy_from: source holds {source.size} bytes, the buffer needs {self.size}")
            host = source.array(0, self.dtype, math.prod(self.dims)).copy().reshape(self.dims)
            array = self._to_device(host)  # host -> device transfer
        except DriverError:
            self.invalidate()
            raise
        with self._lock:
            self._array = array

    # -- executions -------------------------------------------------------------

    def validate_request(self, pool_index: int, request: Request, prepared_model: object) -> None:
        """``ManagedBuffer::validateRequest``."""
        model_id = id(prepared_model)
        used_in = used_out = False
        for index, argument in enumerate(request.inputs):
            if argument.has_no_value or argument.location.pool_index != pool_index:
                continue
            if Role(model_id, True, index) not in self.roles:
                raise DriverError(ErrorStatus.INVALID_ARGUMENT,
                                  f"pool {pool_index}: the buffer was not allocated for input {index}")
            if not self.initialized:
                raise DriverError(ErrorStatus.GENERAL_FAILURE, f"pool {pool_index}: uninitialised buffer as input")
            if combine_dims(self.dims, argument.dimensions) is None:
                raise DriverError(ErrorStatus.INVALID_ARGUMENT, f"input {index}: dimensions conflict with the buffer")
            used_in = True
        for index, argument in enumerate(request.outputs):
            if argument.has_no_value or argument.location.pool_index != pool_index:
                continue
            if used_in or used_out:
                raise DriverError(ErrorStatus.INVALID_ARGUMENT,
                                  f"pool {pool_index}: one buffer as output {index} and another input or output")
            if Role(model_id, False, index) not in self.roles:
                raise DriverError(ErrorStatus.INVALID_ARGUMENT,
                                  f"pool {pool_index}: the buffer was not allocated for output {index}")
            if combine_dims(self.dims, argument.dimensions) is None:
                raise DriverError(ErrorStatus.INVALID_ARGUMENT, f"output {index}: dimensions conflict with the buffer")
            used_out = True

    def read(self) -> Any:
        with self._lock:
            array = self._array
        if array is None:
            raise DriverError(ErrorStatus.GENERAL_FAILURE, "uninitialised buffer used as input")
        return array

    def store(self, array: Any) -> bool:
        """Keep an execution's output device array; False if its shape does not fit the buffer."""
        if tuple(array.shape) != self.dims:
            return False
        with self._lock:
            self._array = array
        return True

    def invalidate(self) -> None:
        with self._lock:
            self._array = None


class DeviceMemory:
    """The prepared models and live buffers of one XLA device."""

    def __init__(self, to_device: Callable[[np.ndarray], Any]) -> None:
        self._to_device = to_device
        self._models: weakref.WeakKeyDictionary[object, Model] = weakref.WeakKeyDictionary()
        self._buffers: weakref.WeakValueDictionary[int, DeviceBuffer] = weakref.WeakValueDictionary()
        self._lock = threading.Lock()

    def register(self, prepared_model: object, model: Model) -> None:
        self._models[prepared_model] = model

    def model_of(self, prepared_model: object) -> Model | None:
        try:
            return self._models.get(prepared_model)
        except TypeError:
            return None

    def get(self, token: int) -> DeviceBuffer | None:
        with self._lock:
            return self._buffers.get(token)

    def allocate(self, desc: BufferDesc, prepared_models: Sequence[object], input_roles: Sequence[BufferRole],
                 output_roles: Sequence[BufferRole]) -> tuple[DeviceBuffer, int]:
        first, roles = validate_memory_desc(desc, prepared_models, input_roles, output_roles, self.model_of)
        dims = first.dimensions
        if is_extension_type(first.type) or OperandType(first.type) not in NUMPY_DTYPE:
            raise DriverError(ErrorStatus.GENERAL_FAILURE, "allocate: operand type without an XLA element type")
        if not is_scalar_type(first.type) and (not dims or 0 in dims):
            raise DriverError(ErrorStatus.GENERAL_FAILURE,
                              f"allocate: dimensions {list(dims)} not fully specified (XLA buffers have exact shapes)")
        buffer = DeviceBuffer(first, dims, frozenset(roles), prepared_models, self._to_device)
        with self._lock:
            while True:
                token = secrets.randbits(32)
                if token and token not in self._buffers:
                    break
            self._buffers[token] = buffer
        return buffer, token
