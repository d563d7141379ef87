"""A deliberately flaky driver: the first execution of each model fails, every later one passes.

The reference driver underneath; what "first" means is kept in marker
files under ``$NNVTS_FLAKY_DIR`` (one per model), so it survives the driver
host being restarted for a re-run, which is exactly when the case must
pass.  Without the variable every execution passes.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

from tests.fakes.broken import FaultyDevice, FaultyPreparedModel
from vts.hal.enums import ErrorStatus
from vts.hal.errors import DriverError
from vts.hal.interfaces import Device, PreparedModel
from vts.hal.types import Model

FLAKY_DIR_ENV = "NNVTS_FLAKY_DIR"


def _first_time(model: Model) -> bool:
    """True the first time any host of this test sees ``model`` (marker file created atomically)."""
    directory = os.environ.get(FLAKY_DIR_ENV)
    if not directory:
        return False
    key = hashlib.sha256(repr(model.main).encode()).hexdigest()[:32]
    try:
        fd = os.open(os.path.join(directory, key), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    os.close(fd)
    return True


class FlakyDevice(FaultyDevice):
    def prepare_model(self, model: Model, *args: Any, **kwargs: Any) -> PreparedModel:
        prepared = self.inner.prepare_model(model, *args, **kwargs)
        if not _first_time(model):
            return prepared
        error = DriverError(ErrorStatus.GENERAL_FAILURE, "flaky: first attempt of this model")
        return FaultyPreparedModel(prepared, model, None, lambda: error)


def create_device() -> Device:
    return FlakyDevice("nnvts-flaky")
