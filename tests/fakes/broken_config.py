"""Reference drivers (AIDL v4) whose ``*WithConfig`` calls break one rule each.

``drops_loop_timeout``: ``execute_synchronously_with_config`` and ``execute_fenced_with_config`` run with no loop
timeout (the 2 s default) whatever ``ExecutionConfig.loop_timeout`` says: caught by ``with_config``'s
never-ending-loop case (the loop is aborted 2 s late), while ``infinite_loop_timeout`` (the older calls) and the
golden ``with_config`` cases pass.

``skips_checks_with_config``: ``prepare_model_with_config`` takes a preference or priority that is no enum value
for the default, and ``execute_synchronously_with_config`` answers an INVALID_ARGUMENT as a success with no
outputs: caught by ``with_config``'s ``.invalid`` case and by ``validation``'s preference and priority mutations
(through ``prepareModelWithConfig``; the older calls still refuse, and ``validation``'s request cases run on a model
prepared the older way).

``declared_shapes_with_config``: ``execute_synchronously_with_config`` reports each output's shape as the model
declares it (unknown dims stay 0) instead of the shape it computed: caught by ``with_config``'s dynamic-shape
reruns only; its golden cases (every output fully specified) and the ``dynamic_output_shape`` family (the older
calls) pass.

``refuses_buffers_with_config``: ``execute_synchronously_with_config`` refuses a request naming a driver-allocated
buffer (INVALID_ARGUMENT), as a config path written without memory domains would, while the older calls take it:
caught by ``with_config``'s memory-domain reruns only; the ``memory_domain`` family passes.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from nnvts.drivers.reference.device import ReferenceDevice
from vts.hal.config import ExecutionConfig, PrepareModelConfig
from vts.hal.enums import ErrorStatus, ExecutionPreference, Priority
from vts.hal.errors import DriverError
from vts.hal.interfaces import Device, PreparedModel
from vts.hal.types import ExecutionResult, MemoryToken, Model, OutputShape, Request


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


class _SkipsChecksWithConfig(ReferenceDevice):
    def __init__(self) -> None:
        super().__init__()
        self.name = "broken-config-skips-checks"

    def prepare_model_with_config(self, model: Model, config: PrepareModelConfig) -> PreparedModel:
        if int(config.preference) not in ExecutionPreference._value2member_map_:
            config = replace(config, preference=ExecutionPreference.FAST_SINGLE_ANSWER)
        if int(config.priority) not in Priority._value2member_map_:
            config = replace(config, priority=Priority.MEDIUM)
        prepared = super().prepare_model_with_config(model, config)
        sync = prepared.execute_synchronously_with_config

        def lenient(request: Request, config: ExecutionConfig, deadline: int | None = None) -> ExecutionResult:
            try:
                return sync(request, config, deadline)
            except DriverError as error:
                if error.status != ErrorStatus.INVALID_ARGUMENT:
                    raise
                return ExecutionResult()

        prepared.execute_synchronously_with_config = lenient  # type: ignore[method-assign]
        return prepared


def skips_checks_with_config() -> Device:
    return _SkipsChecksWithConfig()


class _DeclaredShapesWithConfig(ReferenceDevice):
    def __init__(self) -> None:
        super().__init__()
        self.name = "broken-config-declared-shapes"

    def prepare_model_with_config(self, model: Model, config: PrepareModelConfig) -> PreparedModel:
        prepared = super().prepare_model_with_config(model, config)
        declared = [tuple(model.main.operands[i].dimensions) for i in model.main.output_indexes]
        sync = prepared.execute_synchronously_with_config

        def as_declared(request: Request, config: ExecutionConfig, deadline: int | None = None) -> ExecutionResult:
            result = sync(request, config, deadline)
            shapes = tuple(OutputShape(dims, shape.is_sufficient)
                           for dims, shape in zip(declared, result.output_shapes, strict=False))
            return replace(result, output_shapes=shapes)

        prepared.execute_synchronously_with_config = as_declared  # type: ignore[method-assign]
        return prepared


def declared_shapes_with_config() -> Device:
    return _DeclaredShapesWithConfig()


class _RefusesBuffersWithConfig(ReferenceDevice):
    def __init__(self) -> None:
        super().__init__()
        self.name = "broken-config-refuses-buffers"

    def prepare_model_with_config(self, model: Model, config: PrepareModelConfig) -> PreparedModel:
        prepared = super().prepare_model_with_config(model, config)
        sync = prepared.execute_synchronously_with_config

        def no_buffers(request: Request, config: ExecutionConfig, deadline: int | None = None) -> ExecutionResult:
            if any(isinstance(pool, MemoryToken) for pool in request.pools):
                raise DriverError(ErrorStatus.INVALID_ARGUMENT, "driver buffers are not taken on this path")
            return sync(request, config, deadline)

        prepared.execute_synchronously_with_config = no_buffers  # type: ignore[method-assign]
        return prepared


def refuses_buffers_with_config() -> Device:
    return _RefusesBuffersWithConfig()
