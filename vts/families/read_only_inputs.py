"""AIDL input memory is read-only: a driver gets its inputs through a read-only mapping and must not write them.

From AIDL v1 (feature level 5) the client hands a driver its input memory read-only: Android's AIDL VTS
maps every generated test's input ashmem read-only (GeneratedTestHarness.cpp ``createRequest``:
``TestAshmem::create(inputSize, /*aidlReadonly=*/true)``), and the NNAPI runtime does the same, so a
driver that uses an input as scratch space faults on a device.  One case per model: the first example
executed synchronously with the request's input pool replaced by a read-only view of it
(``vts.hal.memory.read_only_view``: a descriptor opened O_RDONLY, mapped PROT_READ).  In process a write
raises (``TypeError`` from the mapping, ``PermissionError`` from ``Memory.write``); over the protocol the
host maps the read-only descriptor read-only, so a Python driver's write raises there and a C driver's
faults (a crash of the case, and the run goes on).  Either way the case fails; a driver that answers
must answer right and leave every input byte as it was.

HAL 1.3 gives writable ``hidl_memory``: a driver speaking it skips the case, the rule named.
"""

from __future__ import annotations

from collections.abc import Iterator

from vts.families._kit.executions import Executor, PreparedModelCache, execute
from vts.families._kit.judge import judge_success
from vts.families.base import Case, Family, Outcome, RunOptions, failed, passed, skipped
from vts.families.registry import register_family
from vts.hal.enums import HalVersion, MeasureTiming
from vts.hal.interfaces import Device
from vts.hal.memory import read_only_view
from vts.model.casemodel import CaseModel, build_request


@register_family
class ReadOnlyInputsFamily(Family):
    name = "read_only_inputs"
    description = "AIDL input memory given read-only: a driver writing into its inputs is caught"
    #: Every case of a HAL 1.3 driver is a skip: opt-in.
    default = False

    def __init__(self) -> None:
        self._prepared = PreparedModelCache()

    def model_cases(self, model: CaseModel, spec_path: str) -> Iterator[Case]:
        if model.expect_failure or not model.examples:
            return
        yield Case(f"{self.name}/{model.case_name()}", self.name, model, None, spec_path)

    def run(self, case: Case, device: Device, options: RunOptions) -> Outcome:
        model = case.model
        assert model is not None
        prepared, why = self._prepared.for_version(
            case, device, options, HalVersion.FL5,
            "input memory is read-only from AIDL v1 (feature level 5): HIDL's is writable")
        if prepared is None:
            return skipped(why)
        built = build_request(model, model.examples[0], options.pool_kind, extensions=options.extensions)
        try:
            view = read_only_view(built.input_pool)
        except OSError as error:
            built.close()
            return skipped(f"harness: no read-only descriptor of the input pool ({error})")
        try:
            before = built.input_pool.read(0, built.input_pool.size)
            request = built.request.copy()
            request.pools = [view if pool is built.input_pool else pool for pool in request.pools]
            where = "an execution whose input memory is read-only"
            try:
                answer = execute(prepared, request, Executor.SYNC, timeout=options.case_timeout)
            except (TypeError, PermissionError) as error:
                return failed(f"{where}: the driver raised {type(error).__name__} ({error}): it wrote into its "
                              "input memory, which an AIDL client gives read-only")
            problems = judge_success(model, model.examples[0], built, answer, MeasureTiming.NO, where)
            if built.input_pool.read(0, built.input_pool.size) != before:
                problems.append(f"{where}: the input memory changed; a driver must not write its inputs")
            return failed(problems[0], tuple(problems[:20])) if problems else passed()
        finally:
            view.close()
            built.close()

