"""Memory domains of the reference device: ``IDevice::allocate``, buffer tokens, pool kinds.

``DeviceMemory`` is everything one reference device knows about memory:

* the pool kinds it maps (``ashmem``, ``mmap_fd``, ``hardware_buffer_blob``
  by default; configurable so a self-test can show a driver that refuses a
  kind being reported correctly);
* the prepared models it created (``allocate`` accepts only those: the
  sample driver casts each ``IPreparedModel`` to its own class and treats a
  foreign object as invalid);
* the token table of its live buffers.

``allocate`` follows the sample driver (Android's SampleDriver.cpp): the
``validateMemoryDesc`` rules answer INVALID_ARGUMENT, an extension operand
type GENERAL_FAILURE.  Unlike the sample driver it accepts buffers whose
dimensions are not fully known (see ``nnvts.drivers.reference.buffer``).

Tokens: the HAL wants them positive and unique among live buffers, and a
request may name any uint32, so a token must not be something another
client can guess or inherit.  Each device issues ``((n * multiplier) ^ key)
mod 2**32`` for n = 1, 2, ... with a random odd multiplier and a random key:
a bijection of the counter, so a token is never issued twice by one device
(until 2**32 allocations), values look random to other clients, and the
table costs nothing per freed token.  The sample driver reuses freed slots
instead; a token here dies with its buffer (the table holds weak references)
and stays dead.
"""

from __future__ import annotations

import collections
import secrets
import threading
import weakref
from collections.abc import Iterable, Sequence

from nnvts.drivers.reference.buffer import ReferenceBuffer
from vts.hal.enums import ErrorStatus, is_extension_type
from vts.hal.errors import DriverError
from vts.hal.memory import ASHMEM, HARDWARE_BUFFER_BLOB, MMAP_FD, Memory
from vts.hal.memory_desc import validate_memory_desc
from vts.hal.types import BufferDesc, BufferRole, Model

#: Pool kinds the reference device maps unless told otherwise.
DEFAULT_POOL_KINDS = frozenset({ASHMEM, MMAP_FD, HARDWARE_BUFFER_BLOB})
_UINT32 = 1 << 32


def _invalid(message: str) -> DriverError:
    return DriverError(ErrorStatus.INVALID_ARGUMENT, f"allocate: {message}")


class TokenTable:
    """Live buffers by token; tokens are never reissued and die with their buffer.

    A buffer's death is noticed by a weakref callback, which the garbage
    collector may run at any point, including inside this table's own
    critical section on the same thread.  The callback therefore only queues
    the token (a lock-free deque append); the table drops queued tokens under
    its lock on the next call.  Taking the lock in the callback deadlocked.
    """

    def __init__(self) -> None:
        self._multiplier = secrets.randbits(32) | 1
        self._key = secrets.randbits(32)
        self._issued = 0
        self._live: dict[int, weakref.ref[ReferenceBuffer]] = {}
        self._dead: collections.deque[int] = collections.deque()
        self._lock = threading.Lock()

    def _purge(self) -> None:
        """Drop the tokens of collected buffers (call with the lock held)."""
        while self._dead:
            token = self._dead.popleft()
            ref = self._live.get(token)
            if ref is not None and ref() is None:
                del self._live[token]

    def add(self, buffer: ReferenceBuffer) -> int:
        with self._lock:
            self._purge()
            while True:
                self._issued += 1
                if self._issued >= _UINT32:
                    raise DriverError(ErrorStatus.GENERAL_FAILURE, "allocate: the device ran out of tokens")
                token = ((self._issued * self._multiplier) ^ self._key) % _UINT32
                if token != 0:  # slot 0 is reserved: the HAL's "no token"
                    break
            self._live[token] = weakref.ref(buffer, lambda _ref, token=token: self._dead.append(token))
            return token

    def get(self, token: int) -> ReferenceBuffer | None:
        with self._lock:
            self._purge()
            ref = self._live.get(token)
        return ref() if ref is not None else None

    def __len__(self) -> int:
        with self._lock:
            self._purge()
            return len(self._live)


class DeviceMemory:
    """Pool kinds, prepared models and buffers of one reference device."""

    #: The buffer class ``allocate`` creates (self-tests substitute broken ones).
    buffer_class: type[ReferenceBuffer] = ReferenceBuffer

    def __init__(self, pool_kinds: Iterable[str] | None = None) -> None:
        kinds = DEFAULT_POOL_KINDS if pool_kinds is None else frozenset(pool_kinds)
        unknown = kinds - DEFAULT_POOL_KINDS
        if unknown:
            raise ValueError(f"unknown pool kinds {sorted(unknown)}; known: {sorted(DEFAULT_POOL_KINDS)}")
        self.pool_kinds = kinds
        self.buffers = TokenTable()
        self._models: weakref.WeakKeyDictionary[object, Model] = weakref.WeakKeyDictionary()

    # -- pools --------------------------------------------------------------

    def check_pool(self, pool: Memory, where: str) -> None:
        """GENERAL_FAILURE for a pool this device cannot map.

        A kind the HAL allows but the device does not support is not an
        invalid argument: the sample driver reports an unmappable request pool
        as GENERAL_FAILURE (SampleDriver.cpp), and so does this device for model pools
        (the sample driver says INVALID_ARGUMENT there; the HAL reserves that
        for malformed arguments, and a valid ``hardware_buffer_blob`` is not).
        """
        if pool.name not in self.pool_kinds:
            raise DriverError(ErrorStatus.GENERAL_FAILURE,
                              f"{where}: this device does not map {pool.name!r} memory "
                              f"(it maps {', '.join(sorted(self.pool_kinds))})")
        if pool.size > 0 and (pool.fd < 0 or not _mapped(pool)):
            raise DriverError(ErrorStatus.GENERAL_FAILURE, f"{where}: the {pool.name} pool cannot be mapped")

    def check_model_pools(self, model: Model) -> None:
        for index, pool in enumerate(model.pools):
            self.check_pool(pool, f"model pool {index}")

    # -- prepared models ----------------------------------------------------

    def register(self, prepared_model: object, model: Model) -> None:
        """Called by every prepared model this device creates, so ``allocate`` can recognise it."""
        self._models[prepared_model] = model

    def model_of(self, prepared_model: object) -> Model | None:
        try:
            return self._models.get(prepared_model)
        except TypeError:  # not weak-referenceable: certainly not ours
            return None

    # -- allocate -----------------------------------------------------------

    def allocate(self, desc: BufferDesc, prepared_models: Sequence[object], input_roles: Sequence[BufferRole],
                 output_roles: Sequence[BufferRole]) -> tuple[ReferenceBuffer, int]:
        operand, roles = validate_memory_desc(desc, prepared_models, input_roles, output_roles, self.model_of)
        if is_extension_type(operand.type):
            raise DriverError(ErrorStatus.GENERAL_FAILURE, "allocate: extension operand types are not supported")
        buffer = self.buffer_class(operand, roles, prepared_models, self.check_pool)
        return buffer, self.buffers.add(buffer)


def _mapped(pool: Memory) -> bool:
    try:
        return len(pool.buffer) == pool.size
    except (ValueError, OSError):
        return False


