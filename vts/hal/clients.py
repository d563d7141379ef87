"""Which client a call to the driver comes from, for drivers that serve several at once.

The HAL compares execution priorities only within one application (NNAPI:
"relative to other models owned by the same application"); a driver behind a
shared service (``nnvts serve``) must not let one client's HIGH pass another
client's LOW.  Over binder a driver reads the calling pid; here the host that
serves a client sets ``CALLING_CLIENT`` around each of that client's calls, and
a driver that schedules (the reference driver's queue) reads it when a call
submits work.  A key stands for one client and compares by identity; None
(the default: one harness in process, or a spawned host) means "the only
client".
"""

from __future__ import annotations

from contextvars import ContextVar

#: The client whose call the driver is serving now (any hashable key; None: the only client).
CALLING_CLIENT: ContextVar[object | None] = ContextVar("nnvts_calling_client", default=None)
