"""Test families: one module or sub-package per family; the shared mechanics in the private ``_kit``.

What programs above the families (the runner, soak, the capabilities bench)
may use of the kit is named here, so ``_kit`` stays private to the families.
"""

from vts.families._kit.executions import AllowedRefusal, Executor, create_prepared_model, execute, prepare_for_case
from vts.families._kit.judge import judge_success, run_recording_comparisons

__all__ = [
    "AllowedRefusal",
    "Executor",
    "create_prepared_model",
    "execute",
    "judge_success",
    "prepare_for_case",
    "run_recording_comparisons",
]
