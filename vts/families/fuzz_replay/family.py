"""The fuzz_replay family: re-send a saved fuzz input (``nnvts fuzz --save-dir``) to the driver.

A saved failing input is a concrete spec of a valid model plus a
``NAME.fuzz`` file of edits beside it (``vts.families.fuzz_replay.saved``).  For a model of
such a spec this family yields one case, ``SPEC.MODEL.fuzz_replay``, that
rebuilds the fuzzed model and requests and judges the answers as the fuzzer
did (``vts.families.fuzz_replay.oracle``): a crash or hang is the runner's CRASH / TIMEOUT,
a non-HAL exception or wrong answer fails the case.  Specs without a
``.fuzz`` file yield nothing, so the family costs one ``stat`` per spec.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from vts.families.base import Case, Family, HarnessError, Outcome, RunOptions, failed, passed
from vts.families.registry import register_family
from vts.hal.interfaces import Device
from vts.model.casemodel import CaseModel, ConstantPolicy, build_request, close_model, to_hal_model


@register_family
class FuzzReplayFamily(Family):
    name = "fuzz_replay"
    description = "re-send a saved fuzz input (spec + .fuzz edits): HAL statuses only, no crash or hang"

    def __init__(self) -> None:
        self._sidecars: dict[str, str | None] = {}

    def _sidecar(self, spec_path: str) -> str | None:
        if spec_path not in self._sidecars:
            from vts.families.fuzz_replay.saved import sidecar_path

            path = sidecar_path(spec_path)
            self._sidecars[spec_path] = path if os.path.isfile(path) else None
        return self._sidecars[spec_path]

    def model_cases(self, model: CaseModel, spec_path: str) -> Iterator[Case]:
        sidecar = self._sidecar(spec_path)
        if sidecar is not None and model.examples:
            yield Case(f"{model.case_name()}.fuzz_replay", self.name, model, 0, spec_path, {"sidecar": sidecar})

    def run(self, case: Case, device: Device, options: RunOptions) -> Outcome:
        from vts.families.fuzz_replay.oracle import Finding, check_input
        from vts.families.fuzz_replay.saved import build_input, edits_text, load_sidecar

        model = case.model
        assert model is not None
        try:
            fuzz_case, data = load_sidecar(case.config["sidecar"])
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise HarnessError(f"cannot read {case.config['sidecar']}: {error}") from None
        hal_model = to_hal_model(model, ConstantPolicy(pool_kind=options.pool_kind), options.extensions)
        built = build_request(model, model.examples[0], options.pool_kind, extensions=options.extensions)
        try:
            fuzz_input = build_input(fuzz_case, hal_model, built.request)
            check_input(device, fuzz_input, async_timeout=options.case_timeout)
        except Finding as finding:
            return failed(f"{finding.kind}: {finding.message}", (
                f"model edits: {edits_text(fuzz_case.model_edits)}",
                *(f"request {i} ({r.executor}): {edits_text(r.edits)}" for i, r in enumerate(fuzz_case.requests)),
                f"first found as: {data.get('kind')}: {data.get('message')}"))
        finally:
            built.close()
            close_model(hal_model)
        return passed(f"{len(fuzz_case.requests)} requests answered with HAL statuses")
