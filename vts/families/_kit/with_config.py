"""AIDL v4's ``*WithConfig`` calls for the families that run them: who has them, and one execution through them.

Android 13's VTS runs the generated models a second time on an AIDL v4 driver: prepared through
``prepareModelWithConfig`` and executed through ``executeSynchronouslyWithConfig`` /
``executeFencedWithConfig`` (GeneratedTestHarness.cpp ``Execute``: ``deviceVersion >= kMinAidlLevelForFL8``
then ``createPreparedModel(..., useConfig=true)``; ``EvaluatePreparedModel`` with ``testConfig.useConfig``).
A driver of an older version has no such calls: its cases are skipped with the rule named
(``config_rule_lacking``), never judged by a contract it does not speak.

``execute_with_config`` normalises the answer into the kit's ``Answer``, so the golden judges of the other
families apply unchanged; ``WithConfigPath`` names which of the two calls ran.
"""

from __future__ import annotations

import enum

from vts.families._kit.burst_path import vts_tokens
from vts.families._kit.executions import Answer
from vts.hal.aidl_burst import NO_IDENTITY
from vts.hal.config import ExecutionConfig
from vts.hal.enums import ErrorStatus, HalVersion
from vts.hal.errors import DriverError
from vts.hal.interfaces import PreparedModel, spoken_version
from vts.hal.types import NO_TIMING_INFO, Request, Timing

__all__ = ["WITH_CONFIG_VERSION", "WithConfigPath", "config_rule_lacking", "execute_with_config"]

#: The interface version that brought the ``*WithConfig`` calls and hints (AIDL v4, feature level 8).
WITH_CONFIG_VERSION = HalVersion.FL8


class WithConfigPath(enum.Enum):
    """The execution calls of AIDL v4 that take an ``ExecutionConfig``."""

    SYNC = "sync_with_config"
    FENCED = "fenced_with_config"
    #: ``IBurst.executeSynchronouslyWithConfig`` on a burst configured for the execution: a token 0, 1, ... for
    #: each shared-memory pool, -1 for each driver buffer (GeneratedTestHarness.cpp, Executor::BURST with
    #: ``useConfig``).
    BURST = "burst_with_config"


def config_rule_lacking(device: object) -> str | None:
    """Why ``device`` has no ``*WithConfig`` calls (the skip reason), or None when it speaks AIDL v4 or later."""
    version = spoken_version(device)
    if version >= WITH_CONFIG_VERSION:
        return None
    return (f"not a rule of {version.interface}: prepareModelWithConfig, execute*WithConfig and their hints "
            f"are {WITH_CONFIG_VERSION.interface} (feature level {WITH_CONFIG_VERSION.feature_level}) calls")


def execute_with_config(prepared: PreparedModel, request: Request, path: WithConfigPath, config: ExecutionConfig,
                        deadline: int | None = None, timeout: float | None = None) -> Answer:
    """Run ``request`` through one ``*WithConfig`` call and normalise the answer (as ``execute`` of the kit)."""
    try:
        if path is WithConfigPath.SYNC:
            result = prepared.execute_synchronously_with_config(request, config, deadline)
            return Answer(ErrorStatus.NONE, tuple(result.output_shapes), result.timing)
        if path is WithConfigPath.BURST:
            return _burst_with_config(prepared, request, config, deadline)
        fence, callback = prepared.execute_fenced_with_config(request, [], config, deadline, None)
        if fence is not None and not fence.wait(timeout):
            return Answer(ErrorStatus.GENERAL_FAILURE, (), NO_TIMING_INFO,
                          "the sync fence of executeFencedWithConfig signalled an error")
        if callback is None:
            return Answer(ErrorStatus.GENERAL_FAILURE, (), NO_TIMING_INFO,
                          "executeFencedWithConfig returned no callback on success")
        status, launched, _fenced = callback.get_execution_info()
        return Answer(ErrorStatus(status), (), launched)
    except DriverError as error:
        return Answer(error.status, error.output_shapes, error.timing or Timing(), error.message)


def _burst_with_config(prepared: PreparedModel, request: Request, config: ExecutionConfig,
                       deadline: int | None) -> Answer:
    """One burst execution with config on a fresh burst, its slots freed after (a DriverError propagates)."""
    burst = prepared.configure_execution_burst()
    if burst is None:
        return Answer(ErrorStatus.GENERAL_FAILURE, (), NO_TIMING_INFO,
                      "configureExecutionBurst returned no burst and no error")
    tokens = vts_tokens(request)
    try:
        result = burst.execute_with_config(request, tokens, config, deadline)
    finally:
        for token in tokens:
            if token != NO_IDENTITY:
                burst.free_memory(token)
    return Answer(ErrorStatus.NONE, tuple(result.output_shapes), result.timing)
