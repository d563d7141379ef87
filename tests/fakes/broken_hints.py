"""Reference drivers (AIDL v4) that mishandle hints, one rule broken each; both pass ``with_config`` (no hints).

* ``hints_change_results``: an execution given execution hints (any, known or not) flips the low bit of the
  first byte of every output: caught by ``hints`` only.
* ``refuses_unknown_hints``: ``prepareModelWithConfig`` refuses (INVALID_ARGUMENT) a compilation hint whose
  token's prefix the extension table does not name, instead of ignoring it: caught by ``hints`` only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nnvts.drivers.reference.device import ReferenceDevice
from vts.hal.config import ExecutionConfig, PrepareModelConfig
from vts.hal.enums import EXTENSION_TYPE_LOW_BITS_TYPE, ErrorStatus
from vts.hal.errors import DriverError
from vts.hal.interfaces import Device, PreparedModel, SyncFence
from vts.hal.types import Model, Request


def _flip_first_bytes(request: Request) -> None:
    for argument in request.outputs:
        if argument.has_no_value or argument.location.length == 0:
            continue
        memory = request.pools[argument.location.pool_index]
        first = memory.read(argument.location.offset, 1)
        memory.write(argument.location.offset, bytes([first[0] ^ 1]))


class _HintsChangeResults(ReferenceDevice):
    def __init__(self) -> None:
        super().__init__()
        self.name = "broken-hints-change-results"

    def prepare_model(self, model: Model, *args: Any, **kwargs: Any) -> PreparedModel:
        prepared = super().prepare_model(model, *args, **kwargs)
        plain_sync, plain_fenced = prepared.execute_synchronously_with_config, prepared.execute_fenced_with_config

        def sync(request: Request, config: ExecutionConfig, deadline: int | None = None) -> Any:
            result = plain_sync(request, config, deadline)
            if config.execution_hints:
                _flip_first_bytes(request)
            return result

        def fenced(request: Request, wait_for: Sequence[SyncFence | None], config: ExecutionConfig,
                   deadline: int | None = None, timeout_after_fence: int | None = None) -> Any:
            answer = plain_fenced(request, wait_for, config, deadline, timeout_after_fence)
            if config.execution_hints:
                _flip_first_bytes(request)
            return answer

        prepared.execute_synchronously_with_config = sync  # type: ignore[method-assign]
        prepared.execute_fenced_with_config = fenced  # type: ignore[method-assign]
        return prepared


class _RefusesUnknownHints(ReferenceDevice):
    def __init__(self) -> None:
        super().__init__()
        self.name = "broken-hints-refuses-unknown"

    def prepare_model_with_config(self, model: Model, config: PrepareModelConfig) -> PreparedModel:
        named = {entry.prefix for entry in config.extension_name_to_prefix}
        for hint in config.compilation_hints:
            if hint.token >> EXTENSION_TYPE_LOW_BITS_TYPE not in named:
                raise DriverError(ErrorStatus.INVALID_ARGUMENT, f"unknown compilation hint token {hint.token:#x}")
        return super().prepare_model_with_config(model, config)


def hints_change_results() -> Device:
    return _HintsChangeResults()


def refuses_unknown_hints() -> Device:
    return _RefusesUnknownHints()
