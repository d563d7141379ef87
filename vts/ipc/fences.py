"""Sync fences across the process boundary, carried by eventfds.

The HAL's fences are kernel sync files that any process holding the
descriptor can wait on.  ``SyncFence`` in process is a ``threading.Event``;
to cross the socket a pending fence becomes an eventfd that its owner
signals by adding 1 (success) or 2 (error), and the receiving side wraps the
descriptor in ``EventFdFence``, which waits with ``poll`` - no thread and no
message per fence, and a driver in C waits the same way.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading

from vts.hal.interfaces import SyncFence
from vts.ipc.errors import ProtocolError
from vts.ipc.protocol import FenceTag, Reader, Writer

FENCE_OK = 1
FENCE_ERROR = 2


class EventFdFence(SyncFence):
    """A fence signalled through an eventfd by another process."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd
        self._lock = threading.Lock()

    def _poll(self, timeout: float | None) -> bool:
        """Consume the eventfd once it is readable; True when the fence is now signalled."""
        if super().signalled:
            return True
        poller = select.poll()
        poller.register(self._fd, select.POLLIN)
        if not poller.poll(None if timeout is None else max(timeout, 0.0) * 1000):
            return False
        with self._lock:
            if not super().signalled:
                try:
                    value = os.eventfd_read(self._fd)
                except BlockingIOError:
                    return super().signalled
                self.signal(value == FENCE_OK)
        return True

    def wait(self, timeout: float | None = None) -> bool:
        return self._poll(timeout) and super().wait(0)

    @property
    def signalled(self) -> bool:
        return self._poll(0)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __del__(self) -> None:
        with contextlib.suppress(OSError):
            self.close()


def write_fence(w: Writer, fence: SyncFence | None) -> None:
    """Encode a fence; a pending one becomes an eventfd that a helper thread signals."""
    if fence is None:
        w.u8(FenceTag.NULL)
        return
    if fence.signalled:
        w.u8(FenceTag.SIGNALLED if fence.wait(0) else FenceTag.SIGNALLED_ERROR)
        return
    efd = os.eventfd(0, os.EFD_CLOEXEC)
    mine = os.dup(efd)

    def relay() -> None:
        try:
            os.eventfd_write(mine, FENCE_OK if fence.wait() else FENCE_ERROR)
        finally:
            os.close(mine)

    threading.Thread(target=relay, daemon=True, name="nnvts-fence-relay").start()
    w.u8(FenceTag.PENDING)
    w.fd(efd)
    w.close_after_send.append(efd)


def read_fence(r: Reader, taken: set[int]) -> SyncFence | None:
    tag = r.u8()
    if tag == FenceTag.NULL:
        return None
    if tag in (FenceTag.SIGNALLED, FenceTag.SIGNALLED_ERROR):
        return SyncFence.signalled_fence(tag == FenceTag.SIGNALLED)
    if tag == FenceTag.PENDING:
        fd = r.fd()
        kind = _descriptor_kind(fd)
        if kind is not None and kind != "anon_inode:[eventfd]":
            raise ProtocolError(f"a pending fence whose descriptor is not an eventfd ({kind})")
        taken.add(fd)
        return EventFdFence(fd)
    raise ProtocolError(f"unknown fence tag {tag}")


def _descriptor_kind(fd: int) -> str | None:
    """What ``fd`` refers to, as /proc names it ("anon_inode:[eventfd]", "pipe:[…]"); None if unknown."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None
