"""One execution's view of its request pools: shared memory mapped, tokens resolved to buffers.

The sample driver maps every request pool before running (Android's
SampleDriver.cpp): a shared-memory pool the device cannot map is GENERAL_FAILURE, an
unknown token INVALID_ARGUMENT, and a known token is checked by its buffer
(``ReferenceBuffer.validate_request``: roles, initialisation, dimensions).
Reading inputs and writing outputs then goes through this binding, so a
driver-allocated buffer and a byte range of shared memory look alike to the
interpreter.

Outputs written to buffers follow ``updateDeviceMemories``: nothing is
stored unless the whole execution succeeds; a buffer output whose produced
shape does not fit the buffer's fixed shape turns the execution into
GENERAL_FAILURE (device memory cannot be resized, so OUTPUT_INSUFFICIENT_SIZE
would mislead the client); a failed execution leaves every output buffer
uninitialised.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from nnvts.drivers.reference.buffer import ReferenceBuffer
from nnvts.drivers.reference.executor import make_tensor
from nnvts.drivers.reference.memory_domain import DeviceMemory
from nnvts.drivers.reference.tensor import Tensor
from vts.hal.enums import ErrorStatus
from vts.hal.errors import DriverError
from vts.hal.memory import Memory
from vts.hal.memory_desc import combine_dims
from vts.hal.types import MemoryToken, OutputShape, Request, Subgraph

DtypeOf = Callable[[int], np.dtype]


class RequestBinding:
    """The pools of ``request`` as this device sees them, for one execution."""

    def __init__(self, request: Request, memory: DeviceMemory, prepared_model: object) -> None:
        self.request = request
        self.pools: list[Memory | ReferenceBuffer] = []
        for index, pool in enumerate(request.pools):
            if isinstance(pool, MemoryToken):
                buffer = memory.buffers.get(pool.token)
                if buffer is None:
                    raise DriverError(ErrorStatus.INVALID_ARGUMENT, f"request pool {index}: unknown token {pool.token}")
                buffer.validate_request(index, request, prepared_model)
                self.pools.append(buffer)
            else:
                memory.check_pool(pool, f"request pool {index}")
                self.pools.append(pool)

    def output_buffers(self) -> list[ReferenceBuffer]:
        return [pool for argument in self.request.outputs if not argument.has_no_value
                for pool in [self.pools[argument.location.pool_index]] if isinstance(pool, ReferenceBuffer)]

    def read_inputs(self, graph: Subgraph, dtype_of: DtypeOf) -> list[Tensor | None]:
        tensors: list[Tensor | None] = []
        for position, argument in enumerate(self.request.inputs):
            if argument.has_no_value:
                tensors.append(None)
                continue
            operand = graph.operands[graph.input_indexes[position]]
            dims = list(argument.dimensions) or list(operand.dimensions)
            pool = self.pools[argument.location.pool_index]
            if isinstance(pool, ReferenceBuffer):
                value = pool.read(dims)
            else:
                value = self._read_shared(position, pool, argument.location.offset, argument.location.length,
                                          dims, dtype_of(operand.type))
            tensors.append(make_tensor(operand, value))
        return tensors

    @staticmethod
    def _read_shared(position: int, pool: Memory, offset: int, length: int, dims: list[int],
                     dtype: np.dtype) -> np.ndarray:
        count = math.prod(dims)  # Python ints: np.prod wraps at 2**63 and let huge dims pass the check
        needed = count * dtype.itemsize
        if length < needed:
            raise DriverError(ErrorStatus.INVALID_ARGUMENT,
                              f"input {position}: {length} bytes given, {needed} needed for dims {dims}")
        flat = pool.array(offset, dtype.newbyteorder("<") if dtype.itemsize > 1 else dtype, count)
        return flat.astype(dtype).reshape(dims) if dims else flat.astype(dtype).reshape(())

    def write_outputs(self, results: Sequence[Tensor]) -> tuple[OutputShape, ...]:
        """Write every output, or none: OUTPUT_INSUFFICIENT_SIZE (with shapes) if a shared one is too small."""
        shapes = []
        short_buffers = []
        for position, (argument, tensor) in enumerate(zip(self.request.outputs, results, strict=True)):
            data = np.asarray(tensor.value, order="C")  # keeps 0-d (scalar) outputs 0-d
            shape = tuple(int(d) for d in data.shape)
            pool = self.pools[argument.location.pool_index]
            if isinstance(pool, ReferenceBuffer):
                fits = pool.holds(shape) and combine_dims(argument.dimensions, shape) is not None
                if not fits:
                    short_buffers.append(f"output {position}: produced shape {list(shape)} does not fit the "
                                         f"buffer's {list(pool.initial_dims)}")
            else:
                fits = data.nbytes <= argument.location.length
            shapes.append(OutputShape(shape, fits))
        if short_buffers:
            raise DriverError(ErrorStatus.GENERAL_FAILURE, "; ".join(short_buffers))
        if not all(shape.is_sufficient for shape in shapes):
            raise DriverError(ErrorStatus.OUTPUT_INSUFFICIENT_SIZE, "an output buffer is too small",
                              output_shapes=shapes)
        for argument, tensor in zip(self.request.outputs, results, strict=True):
            data = np.asarray(tensor.value, order="C")
            pool = self.pools[argument.location.pool_index]
            if isinstance(pool, ReferenceBuffer):
                pool.store(data)
                continue
            if data.dtype.itemsize > 1:
                data = data.astype(data.dtype.newbyteorder("<"), copy=False)
            pool.write(argument.location.offset, data.tobytes())
        return tuple(shapes)

    def discard_outputs(self) -> None:
        """The execution failed: its output buffers hold nothing valid (IDevice::allocate)."""
        for buffer in self.output_buffers():
            buffer.invalidate()
