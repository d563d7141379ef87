"""A reference driver (AIDL v4) whose ``*WithConfig`` executions drop the config's loop timeout.

``drops_loop_timeout``: ``execute_synchronously_with_config`` and ``execute_fenced_with_config`` run with no loop
timeout (the 2 s default) whatever ``ExecutionConfig.loop_timeout`` says: caught by ``with_config``'s
never-ending-loop case (the loop is aborted 2 s late), while ``infinite_loop_timeout`` (the older calls) and the
golden ``with_config`` cases pass.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from nnvts.drivers.reference.device import ReferenceDevice
from vts.hal.config import ExecutionConfig
from vts.hal.interfaces import Device, PreparedModel
from vts.hal.types import Model


class _DropsLoopTimeout(ReferenceDevice):
    def __init__(self) -> None:
        super().__init__()
        self.name = "broken-config-drops-loop-timeout"

    def prepare_model(self, model: Model, *args: Any, **kwargs: Any) -> PreparedModel:
        prepared = super().prepare_model(model, *args, **kwargs)
        sync, fenced = prepared.execute_synchronously_with_config, prepared.execute_fenced_with_config

        def dropped(config: ExecutionConfig) -> ExecutionConfig:
            return replace(config, loop_timeout=None)

        prepared.execute_synchronously_with_config = (  # type: ignore[method-assign]
            lambda request, config, deadline=None: sync(request, dropped(config), deadline))
        prepared.execute_fenced_with_config = (  # type: ignore[method-assign]
            lambda request, wait_for, config, deadline=None, after=None: fenced(request, wait_for, dropped(config),
                                                                                deadline, after))
        return prepared


def drops_loop_timeout() -> Device:
    return _DropsLoopTimeout()
