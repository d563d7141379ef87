"""The fuzz_replay family: re-send a saved fuzz input (``nnvts fuzz --save-dir``) to the driver.

This package is also what the fuzzer (``vts.fuzz``) builds on: the edits it
draws, the oracle that judges a driver's answers, and the files a failing
input is saved as.  Those names are its public face, listed here; the
modules behind them (``edits``, ``oracle``, ``saved``, ``values``) are its
own business, so the fuzzer imports only from this package and they may be
reorganised freely.

The names load on first use: the registry imports this package on every
run (to register the family), and the oracle and the file format are needed
only when a saved input is actually replayed or a fuzz run starts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vts import lazy_front

if TYPE_CHECKING:
    from vts.families.fuzz_replay.edits import Edit, Path
    from vts.families.fuzz_replay.oracle import Finding, Tally, check_input, check_model, check_requests
    from vts.families.fuzz_replay.saved import (
        FuzzCase,
        RequestEdits,
        build_input,
        edited_model,
        edited_requests,
        edits_text,
        load_sidecar,
        save_failure,
        sidecar_path,
    )

#: Each public name and the module of this package that defines it.
_HOMES = {
    "Edit": "vts.families.fuzz_replay.edits",
    "Path": "vts.families.fuzz_replay.edits",
    "Finding": "vts.families.fuzz_replay.oracle",
    "Tally": "vts.families.fuzz_replay.oracle",
    "check_input": "vts.families.fuzz_replay.oracle",
    "check_model": "vts.families.fuzz_replay.oracle",
    "check_requests": "vts.families.fuzz_replay.oracle",
    "FuzzCase": "vts.families.fuzz_replay.saved",
    "RequestEdits": "vts.families.fuzz_replay.saved",
    "build_input": "vts.families.fuzz_replay.saved",
    "edited_model": "vts.families.fuzz_replay.saved",
    "edited_requests": "vts.families.fuzz_replay.saved",
    "edits_text": "vts.families.fuzz_replay.saved",
    "load_sidecar": "vts.families.fuzz_replay.saved",
    "save_failure": "vts.families.fuzz_replay.saved",
    "sidecar_path": "vts.families.fuzz_replay.saved",
}

__all__ = [
    "Edit",
    "Finding",
    "FuzzCase",
    "Path",
    "RequestEdits",
    "Tally",
    "build_input",
    "check_input",
    "check_model",
    "check_requests",
    "edited_model",
    "edited_requests",
    "edits_text",
    "load_sidecar",
    "save_failure",
    "sidecar_path",
]


__getattr__ = lazy_front(__name__, _HOMES)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
