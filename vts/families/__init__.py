"""Test families: one module or sub-package per family; the shared mechanics in the private ``_kit``.

What programs above the families (the runner, soak, the capabilities bench)
may use of the kit is named here, so ``_kit`` stays private to the families.
The names load on first use: importing this package must stay cheap, since
``nnvts run --help`` reads the families' catalogue (``catalogue``) from it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vts import lazy_front

if TYPE_CHECKING:
    from vts.families._kit.executions import (
        AllowedRefusal,
        Executor,
        create_prepared_model,
        execute,
        prepare_for_case,
    )
    from vts.families._kit.judge import judge_success, run_recording_comparisons
    from vts.families._kit.supported_models import add_models

#: Each public name and the kit module that defines it.
_HOMES = {
    "AllowedRefusal": "vts.families._kit.executions",
    "add_models": "vts.families._kit.supported_models",
    "Executor": "vts.families._kit.executions",
    "create_prepared_model": "vts.families._kit.executions",
    "execute": "vts.families._kit.executions",
    "prepare_for_case": "vts.families._kit.executions",
    "judge_success": "vts.families._kit.judge",
    "run_recording_comparisons": "vts.families._kit.judge",
}

__all__ = [
    "AllowedRefusal",
    "Executor",
    "add_models",
    "create_prepared_model",
    "execute",
    "judge_success",
    "prepare_for_case",
    "run_recording_comparisons",
]


__getattr__ = lazy_front(__name__, _HOMES)
