"""The nnvts protocol's primitive encoding: little-endian integers, floats, strings, lists and descriptor indexes.

A driver in C needs only a cursor over these (docs/protocol.md §3); every bound a
reader applies to what a driver sends comes from ``vts.bounds``.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

from vts import bounds
from vts.ipc.errors import ProtocolError

_U8 = struct.Struct("<B")
#: A little-endian u32 (counts, ids): shared with the codec's inline encoders.
U32 = struct.Struct("<I")
_I32 = struct.Struct("<i")
_U64 = struct.Struct("<Q")
_I64 = struct.Struct("<q")
_F64 = struct.Struct("<d")
#: Precompiled formats for the short integer lists (dimensions, operand indexes) of every call.
I64_ARRAYS = [struct.Struct(f"<{n}q") for n in range(8)]



class Writer:
    """Builds a body; ``fds`` collects the descriptors the body names by index.

    ``close_after_send`` lists descriptors this side created only to pass
    them (a fence's eventfd): the sender closes them once the message is out,
    since the receiver then holds its own copy.
    """

    __slots__ = ("buf", "close_after_send", "fds")

    def __init__(self) -> None:
        self.buf = bytearray()
        self.fds: list[int] = []
        self.close_after_send: list[int] = []

    def u8(self, value: int) -> None:
        self.buf += _U8.pack(value)

    def boolean(self, value: bool) -> None:
        self.buf += b"\x01" if value else b"\x00"

    def u32(self, value: int) -> None:
        self.buf += U32.pack(value)

    def i32(self, value: int) -> None:
        self.buf += _I32.pack(value)

    def u64(self, value: int) -> None:
        self.buf += _U64.pack(value)

    def i64(self, value: int) -> None:
        self.buf += _I64.pack(value)

    def f64(self, value: float) -> None:
        self.buf += _F64.pack(value)

    def raw(self, data: bytes | bytearray | memoryview) -> None:
        self.buf += U32.pack(len(data))
        self.buf += data

    def string(self, text: str) -> None:
        self.raw(text.encode("utf-8", "surrogateescape"))

    def i64_list(self, values: Sequence[int]) -> None:
        n = len(values)
        self.buf += U32.pack(n)
        if n:
            self.buf += struct.pack(f"<{n}q", *values)

    def f64_list(self, values: Sequence[float]) -> None:
        n = len(values)
        self.buf += U32.pack(n)
        if n:
            self.buf += struct.pack(f"<{n}d", *values)

    def optional_i64(self, value: int | None) -> None:
        if value is None:
            self.buf += b"\x00"
        else:
            self.buf += b"\x01"
            self.buf += _I64.pack(value)

    def fd(self, fd: int) -> None:
        """Attach ``fd`` to the message and write its index (u32)."""
        self.buf += U32.pack(len(self.fds))
        self.fds.append(fd)

    def fd_list(self, fds: Sequence[int]) -> None:
        self.u32(len(fds))
        for fd in fds:
            self.fd(fd)


class Reader:
    """A cursor over a received body; every read is bounds-checked."""

    __slots__ = ("data", "fds", "pos")

    def __init__(self, data: bytes | bytearray, fds: Sequence[int] = ()) -> None:
        self.data = data
        self.pos = 0
        self.fds = list(fds)

    def unpack(self, st: struct.Struct) -> tuple[Any, ...]:
        """The fields of ``st`` at the cursor (for fixed-size structures of the codec), moving past them."""
        try:
            values = st.unpack_from(self.data, self.pos)
        except struct.error:
            raise self._short(st.size) from None
        self.pos += st.size
        return values

    def _short(self, size: int) -> ProtocolError:
        return ProtocolError(f"body ends early (needed {size} bytes at offset {self.pos} of {len(self.data)})")

    # The primitives unpack inline: they are the hot path of every call.

    def u8(self) -> int:
        try:
            value = _U8.unpack_from(self.data, self.pos)[0]
        except struct.error:
            raise self._short(1) from None
        self.pos += 1
        return value

    def boolean(self) -> bool:
        value = self.u8()
        if value > 1:
            raise ProtocolError(f"boolean field holds {value} at offset {self.pos - 1}")
        return value == 1

    def u32(self) -> int:
        try:
            value = U32.unpack_from(self.data, self.pos)[0]
        except struct.error:
            raise self._short(4) from None
        self.pos += 4
        return value

    def i32(self) -> int:
        try:
            value = _I32.unpack_from(self.data, self.pos)[0]
        except struct.error:
            raise self._short(4) from None
        self.pos += 4
        return value

    def u64(self) -> int:
        try:
            value = _U64.unpack_from(self.data, self.pos)[0]
        except struct.error:
            raise self._short(8) from None
        self.pos += 8
        return value

    def i64(self) -> int:
        try:
            value = _I64.unpack_from(self.data, self.pos)[0]
        except struct.error:
            raise self._short(8) from None
        self.pos += 8
        return value

    def f64(self) -> float:
        try:
            value = _F64.unpack_from(self.data, self.pos)[0]
        except struct.error:
            raise self._short(8) from None
        self.pos += 8
        return value

    def count(self, item_size: int, limit: int | None = None) -> int:
        """A list length, refused when the items could not fit in what is left (or exceed ``limit``)."""
        n = self.u32()
        if n * max(item_size, 1) > len(self.data) - self.pos:
            raise ProtocolError(f"list of {n} items at offset {self.pos - 4} overruns the body")
        if limit is not None and n > limit:
            raise ProtocolError(f"list of {n} items at offset {self.pos - 4} (at most {limit} allowed)")
        return n

    def text(self, limit: int = bounds.MAX_TEXT, keep_tail: bool = False) -> str:
        """A ``str`` from a driver: at most ``limit`` bytes kept (cut and marked), invalid UTF-8 replaced."""
        n = self.count(1)
        start = self.pos
        self.pos += n
        return bounds.cut_bytes(memoryview(self.data)[start : start + n], n, limit, keep_tail)

    def raw(self) -> bytes:
        n = self.count(1)
        data = bytes(self.data[self.pos : self.pos + n])
        self.pos += n
        return data

    def string(self) -> str:
        return self.raw().decode("utf-8", "surrogateescape")

    def i64_list(self) -> list[int]:
        n = self.count(8)
        if not n:
            return []
        values = list(I64_ARRAYS[n].unpack_from(self.data, self.pos)) if n < 8 else list(
            struct.unpack_from(f"<{n}q", self.data, self.pos))
        self.pos += 8 * n
        return values

    def f64_list(self) -> list[float]:
        n = self.count(8)
        values = list(struct.unpack_from(f"<{n}d", self.data, self.pos)) if n else []
        self.pos += 8 * n
        return values

    def optional_i64(self) -> int | None:
        return self.i64() if self.boolean() else None

    def fd(self) -> int:
        index = self.u32()
        if index >= len(self.fds):
            raise ProtocolError(f"fd index {index} but the message carries {len(self.fds)} descriptors")
        return self.fds[index]

    def fd_list(self) -> list[int]:
        return [self.fd() for _ in range(self.count(4))]

    def end(self) -> None:
        if self.pos != len(self.data):
            raise ProtocolError(f"{len(self.data) - self.pos} unexpected bytes after the last field")


