"""Reference devices with one deliberate memory fault each (memory domains, request pools).

Each public factory is a ``module:attr`` that a test (or ``nnvts run
--driver``) can name; the docstring says which family must catch it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from nnvts.drivers.reference.buffer import ReferenceBuffer
from nnvts.drivers.reference.device import ReferenceDevice
from nnvts.drivers.reference.memory_domain import TokenTable
from nnvts.drivers.reference.prepared_model import ReferencePreparedModel
from vts.hal import memory as hal_memory
from vts.hal.checked import DeviceTimer
from vts.hal.enums import ErrorStatus
from vts.hal.errors import DriverError
from vts.hal.interfaces import Buffer, PreparedModel
from vts.hal.memory import Memory
from vts.hal.types import BufferDesc, BufferRole, OutputShape, Request


class _Device(ReferenceDevice):
    def __init__(self, name: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.name = name


# -- (i) a role accepted twice ---------------------------------------------------


class RoleTwiceDevice(_Device):
    """Silently drops repeated roles instead of refusing them (Allocate.SameRoleSpecifiedTwice)."""

    def allocate(self, desc: BufferDesc, prepared_models: Sequence[PreparedModel], input_roles: Sequence[BufferRole],
                 output_roles: Sequence[BufferRole]) -> tuple[Buffer, int]:
        def unique(roles: Sequence[BufferRole]) -> list[BufferRole]:
            seen: set[tuple[int, int]] = set()
            kept = []
            for role in roles:
                model = prepared_models[role.model_index] if 0 <= role.model_index < len(prepared_models) else None
                key = (id(model), role.io_index)
                if key not in seen:
                    seen.add(key)
                    kept.append(role)
            return kept

        return super().allocate(desc, prepared_models, unique(input_roles), unique(output_roles))


def role_twice() -> ReferenceDevice:
    return RoleTwiceDevice("broken-role-twice")


# -- (ii) copy_to of an uninitialised buffer -------------------------------------


class UncheckedCopyToBuffer(ReferenceBuffer):
    """copy_to never checks initialisation: a fresh buffer hands out whatever it holds (zeros)."""

    def copy_to(self, destination: Memory) -> None:
        size = self.size_of(self.dimensions) or 0
        if destination.size != size:
            raise DriverError(ErrorStatus.INVALID_ARGUMENT, "size mismatch")
        destination.write(0, bytes(size))


def uninitialised_copy_to() -> ReferenceDevice:
    """Caught by Copy.CopyTo_UninitializedMemory."""
    device = _Device("broken-uninitialised-copy-to")
    device.memory.buffer_class = UncheckedCopyToBuffer
    return device


# -- (iii) tokens of another device or client --------------------------------------

#: One table for every device of the process: a token resolves wherever it is used.
_SHARED_TOKENS = TokenTable()


class AnyClientBuffer(ReferenceBuffer):
    """Checks roles by (input/output, index) only: any prepared model may use the buffer."""

    def validate_request(self, pool_index: int, request: Request, prepared_model: object) -> None:
        super().validate_request(pool_index, request, self._prepared_models[0])


def foreign_tokens() -> ReferenceDevice:
    """Accepts a token allocated for another prepared model, even of another device (Execution.InvalidPreparedModel)."""
    device = _Device("broken-foreign-tokens")
    device.memory.buffer_class = AnyClientBuffer
    device.memory.buffers = _SHARED_TOKENS
    return device


# -- (iv) a request pool used after the client released it -----------------------------


class StalePoolPreparedModel(ReferencePreparedModel):
    """Maps request pool *i* once and keeps that mapping for every later request.

    A driver caching mapped memory by pool index (instead of by the memory's
    identity, with the client's release honoured) reads inputs from, and
    writes outputs to, memory the client has already released.
    """

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._mapped: dict[int, Memory] = {}

    def run(self, request: Request, deadline: int | None, loop_timeout: int | None,
            timer: DeviceTimer) -> tuple[OutputShape, ...]:
        stale = request.copy()
        for index, pool in enumerate(request.pools):
            if isinstance(pool, Memory):
                if index not in self._mapped:
                    self._mapped[index] = hal_memory.from_fd(pool.name, pool.size, os.dup(pool.fd))
                if self._mapped[index].size >= pool.size:
                    stale.pools[index] = self._mapped[index]
        return super().run(stale, deadline, loop_timeout, timer)


class StalePoolDevice(_Device):
    def prepare_model(self, model: Any, *args: Any, **kwargs: Any) -> PreparedModel:
        reference = super().prepare_model(model, *args, **kwargs)  # every check and refusal of the reference
        assert isinstance(reference, ReferencePreparedModel)
        return StalePoolPreparedModel(reference.model, reference.priority, self.scheduler, self.memory_budget,
                                      self.memory)


def stale_pools() -> ReferenceDevice:
    """Caught by the memory_domain model cases (each execution gets fresh pools)."""
    return StalePoolDevice("broken-stale-pools")


# -- (v) locations past the end of a pool --------------------------------------------


class UnboundedPreparedModel(ReferencePreparedModel):
    """Never checks that an argument lies inside its pool; maps ``offset + length`` bytes regardless."""

    def check_request(self, request: Request, allow_unspecified_output: bool = True) -> None:
        try:
            super().check_request(request, allow_unspecified_output)
        except DriverError as error:
            if "exceeds the size" not in error.message:
                raise

    def run(self, request: Request, deadline: int | None, loop_timeout: int | None,
            timer: DeviceTimer) -> tuple[OutputShape, ...]:
        grown = request.copy()
        replaced: list[tuple[Memory, Memory]] = []
        for index, pool in enumerate(request.pools):
            if not isinstance(pool, Memory):
                continue
            end = max([a.location.offset + a.location.length for a in (*request.inputs, *request.outputs)
                       if not a.has_no_value and a.location.pool_index == index], default=0)
            if end > pool.size:
                bigger = hal_memory.allocate(pool.name, end)
                bigger.write(0, pool.read(0, pool.size))
                grown.pools[index] = bigger
                replaced.append((pool, bigger))
        try:
            return super().run(grown, deadline, loop_timeout, timer)
        finally:
            for pool, bigger in replaced:
                pool.write(0, bigger.read(0, pool.size))
                bigger.close()


class UnboundedDevice(_Device):
    def prepare_model(self, model: Any, *args: Any, **kwargs: Any) -> PreparedModel:
        reference = super().prepare_model(model, *args, **kwargs)
        assert isinstance(reference, ReferencePreparedModel)
        return UnboundedPreparedModel(reference.model, reference.priority, self.scheduler, self.memory_budget,
                                      self.memory)


def out_of_bounds() -> ReferenceDevice:
    """Caught by the validation family (offset/length past the pool)."""
    return UnboundedDevice("broken-out-of-bounds")


# -- a device that does not map hardware_buffer_blob --------------------------------


def no_blob_pools() -> ReferenceDevice:
    """Refuses ``hardware_buffer_blob`` pools with GENERAL_FAILURE: the memory_domain blob configuration fails."""
    return _Device("reference-without-blob", pool_kinds=(hal_memory.ASHMEM, hal_memory.MMAP_FD))


class NoMemoryDomainsDevice(_Device):
    def allocate(self, desc: BufferDesc, prepared_models: Sequence[PreparedModel], input_roles: Sequence[BufferRole],
                 output_roles: Sequence[BufferRole]) -> tuple[Buffer, int]:
        raise DriverError(ErrorStatus.GENERAL_FAILURE, "memory domains not supported")


def no_memory_domains() -> ReferenceDevice:
    """A correct driver without memory domains (allocate always GENERAL_FAILURE): buffer tests skip."""
    return NoMemoryDomainsDevice("reference-without-memory-domains")
