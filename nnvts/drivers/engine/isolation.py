"""Running an engine probe in a forked child, so an engine that aborts on a model cannot take the driver down.

Engines are C++ libraries with assertions: TFLite aborts (SIGABRT) on
some type combinations it does not handle instead of returning an error.
A driver that probes support by loading an operation into the engine must
survive that, and must answer "unsupported" for it: the HAL forbids
claiming an operation the device then cannot prepare.  The probe therefore
runs in a child forked from the driver (copy-on-write, a few milliseconds),
which reports its verdict through a pipe; a child that dies or hangs is
itself the verdict.
"""

from __future__ import annotations

import faulthandler
import os
import pickle
import select
import signal
import time
from collections.abc import Callable

#: A probe that has not answered after this long is treated as a hang.
PROBE_TIMEOUT_S = 20.0


def _quiet() -> None:
    """In the child: no crash dump of its own (the parent reports the crash), no engine chatter on stderr."""
    faulthandler.disable()
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 2)
    os.close(null)


def run_forked(probe: Callable[[], str | None], timeout: float = PROBE_TIMEOUT_S) -> str | None:
    """``probe()`` in a child process: its answer, or why the child gave none (crash, hang)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: answer, then leave without running the parent's cleanup handlers
        status = 0
        try:
            os.close(read_end)
            _quiet()
            answer = probe()
            os.write(write_end, pickle.dumps(answer))
        except BaseException as error:
            try:
                os.write(write_end, pickle.dumps(f"probe failed: {error!r}"[:300]))
            except OSError:
                status = 1
        finally:
            os._exit(status)
    os.close(write_end)
    data = b""
    deadline = time.monotonic() + timeout
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                os.kill(pid, signal.SIGKILL)
                return f"the engine did not answer within {timeout:.0f} s"
            ready, _, _ = select.select([read_end], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(read_end, 65536)
            if not chunk:
                break
            data += chunk
    finally:
        os.close(read_end)
        _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return f"the engine crashed on it ({signal.Signals(os.WTERMSIG(status)).name})"
    if not data:
        return f"the engine probe exited with status {os.WEXITSTATUS(status)} without answering"
    return pickle.loads(data)
