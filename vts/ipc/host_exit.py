"""How the driver host process logs and ends: its exit statuses, the out-of-memory exit, the grace exit.

The harness reads the host's exit status to say why it died
(``vts.ipc.process.describe_exit``): these numbers are part of that contract.
"""

from __future__ import annotations

import os
import sys
import threading
import traceback

from vts.bounds import shown

__all__ = [
    "EXIT_CANNOT_LISTEN",
    "EXIT_DRIVER_NOT_LOADED",
    "EXIT_OK",
    "EXIT_OUT_OF_MEMORY",
    "STUCK_EXIT_GRACE",
    "exit_after_grace",
    "log",
    "out_of_memory",
]

EXIT_OK = 0
EXIT_DRIVER_NOT_LOADED = 2
EXIT_OUT_OF_MEMORY = 3
EXIT_CANNOT_LISTEN = 4

#: Seconds the host waits, once the harness hung up, for a stuck driver call before it exits anyway.
STUCK_EXIT_GRACE = 5.0


def exit_after_grace() -> None:
    """End the process with status 0 in ``STUCK_EXIT_GRACE`` seconds unless it has ended by then."""
    exit_later = threading.Timer(STUCK_EXIT_GRACE, os._exit, (EXIT_OK,))
    exit_later.daemon = True
    exit_later.start()


def log(message: str) -> None:
    """One line to the host's stderr, which the harness keeps and attaches to crash reports."""
    print(f"nnvts host[{os.getpid()}]: {shown(message)}", file=sys.stderr, flush=True)


def out_of_memory() -> None:
    """A MemoryError leaves the process untrustworthy: say so and end it (exit status 3)."""
    try:
        traceback.print_exc()
        log("the driver ran out of memory; exiting")
    finally:
        os._exit(EXIT_OUT_OF_MEMORY)
