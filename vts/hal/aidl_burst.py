"""AIDL's burst rules (``IBurst.aidl``), which the base ``Burst`` applies when its driver speaks AIDL.

HIDL 1.2's burst named a pool only by a slot and asked the client for the
memory of a slot it did not hold; AIDL's ``IBurst.executeSynchronously``
carries every pool of every request and a memory identifier token beside
each.  The differences the base ``vts.hal.interfaces.Burst`` must get right
for an AIDL driver, after IBurst.aidl, AIDL VTS's ``validateBurst``
(ValidateRequest.cpp) and the BURST executor of GeneratedTestHarness.cpp:

* a token is -1 (the memory has no identity: used for this execution only)
  or a non-negative int64 that identifies one memory until the client calls
  ``releaseMemoryResource`` on it: the driver may keep what it derived from
  the memory (a mapping) under the token, never the memory's contents (the
  client rewrites a memory between executions: the next one must read the
  new bytes);
* -2 and lower are INVALID_ARGUMENT, and so is a token count other than the
  pool count (VTS ``validateBurst``);
* the same memory given again with a token the burst holds is the normal
  path (VTS gives slot 0, 1... on every execution), not a conflict; a
  *different* memory under a held token (in one request or across
  requests) is INVALID_ARGUMENT: a token "uniquely identifies a memory
  object" until released (the Android runtime releases a token before it
  gives it to another memory), and answering from the memory first given
  under it, as a driver caching by token would, is silently wrong;
* a driver-managed buffer (``MemoryToken`` pool) is a pool like any other
  (VTS gives it token -1): passed on, never kept;
* there is no "held" pool: a pool of ``None`` is a malformed request;
* ``releaseMemoryResource`` of -2 or lower is INVALID_ARGUMENT (HIDL's
  ``freeMemory`` returned nothing); of a token not held, a no-op.

``TokenTable`` holds what such a burst keeps, so the base ``Burst`` and the
harness's stand-in burst for a driver without bursts of its own
(``vts.ipc.burst_proxy``) share one implementation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from vts.hal.enums import ErrorStatus
from vts.hal.errors import DriverError
from vts.hal.memory import Memory
from vts.hal.types import MemoryToken

#: The token of a memory with no identity (IBurst.aidl: "A value of -1 indicates no identity").
NO_IDENTITY = -1
#: Tokens are AIDL ``long``s.
MAX_TOKEN = (1 << 63) - 1

#: ``remember(token, memory)``: what the burst keeps for a memory newly given under ``token``.
Remember = Callable[[int, Memory], object]


def _invalid(message: str) -> DriverError:
    return DriverError(ErrorStatus.INVALID_ARGUMENT, f"burst: {message}")


def check_token(token: object) -> int:
    """``token`` as an int when it is -1 or a non-negative int64; INVALID_ARGUMENT otherwise."""
    if not isinstance(token, int) or isinstance(token, bool) or not NO_IDENTITY <= token <= MAX_TOKEN:
        raise _invalid(f"memory identifier token {token!r} is neither -1 (no identity) nor a non-negative token")
    return token


def check_tokens(pools: Sequence[object], tokens: Sequence[object]) -> list[int]:
    """One valid token per pool (IBurst.aidl, VTS validateBurst), else INVALID_ARGUMENT."""
    if len(tokens) != len(pools):
        raise _invalid(f"{len(tokens)} memory identifier tokens for {len(pools)} pools")
    return [check_token(token) for token in tokens]


class TokenTable:
    """What an AIDL burst keeps: per held token, the memory it was given and what the burst derived from it.

    Not thread-safe: the owning burst holds its lock around every call.
    """

    def __init__(self) -> None:
        self._held: dict[int, tuple[Memory, object]] = {}

    def resolve(self, pools: Sequence[object], tokens: Sequence[object], remember: Remember) -> list[object]:
        """The object to execute for every pool: a token pool and a memory of token -1 as given, a memory
        with a token what the burst keeps for it (derived by ``remember`` the first time the token names
        that memory).  INVALID_ARGUMENT per the rules above; nothing is kept unless every pool resolves."""
        checked = check_tokens(pools, tokens)
        kept: dict[int, tuple[Memory, object]] = {}
        resolved: list[object] = []
        for index, (token, pool) in enumerate(zip(checked, pools, strict=True)):
            if pool is None:
                raise _invalid(f"pool {index} is missing (an AIDL burst request carries every pool)")
            if isinstance(pool, MemoryToken):
                resolved.append(pool)  # a driver-managed buffer: the execution resolves it, nothing to keep
                continue
            if not isinstance(pool, Memory):
                raise _invalid(f"pool {index} is not a memory")
            if token == NO_IDENTITY:
                resolved.append(pool)
                continue
            entry = kept.get(token) or self._held.get(token)
            if entry is None:
                entry = (pool, remember(token, pool))
                kept[token] = entry
            elif entry[0] is not pool:
                raise _invalid(f"memory identifier token {token} (pool {index}) names another memory: a token "
                               "identifies one memory until it is released")
            resolved.append(entry[1])
        self._held.update(kept)
        return resolved

    def release(self, token: object) -> None:
        """``releaseMemoryResource``: INVALID_ARGUMENT below -1; forget ``token`` (nothing for one not held)."""
        self._held.pop(check_token(token), None)

    def held(self) -> frozenset[int]:
        return frozenset(self._held)
