"""AIDL's ``DataLocation.padding`` on the wire (docs/protocol.md §5.3): carried exactly when ``aidl:N`` was granted,
and the request_padding family judged out of process as in process."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess

import pytest

from tests.conftest import hand_add_float
from tests.ipc.conftest import ROOT
from vts.families.base import RunOptions
from vts.families.request_padding import KINDS, RequestPaddingFamily
from vts.hal import memory
from vts.hal.enums import ErrorStatus
from vts.hal.errors import DriverError
from vts.hal.types import DataLocation, MemoryToken, Request, RequestArgument
from vts.ipc import protocol as p
from vts.ipc.drivers import DriverRef
from vts.ipc.errors import ProtocolError
from vts.ipc.process import HostProcess
from vts.model.casemodel import build_request, parse_spec, to_hal_model
from vts.results import Verdict
from vts.run.isolated import IsolatedRunner

SPEC = os.path.join(ROOT, "generated_tests", "add_binary.json")


def _request(pool: memory.Memory) -> Request:
    return Request([RequestArgument(False, DataLocation(0, 0, 8, 56), [2]), RequestArgument()],
                   [RequestArgument(False, DataLocation(0, 64, 4, 60), [])], [pool, MemoryToken(3)])


def _encoded(request: Request, padded: bool) -> bytes:
    w = p.Writer()
    p.write_request(w, request, lambda pool: 9, padded)
    return bytes(w.buf)


def test_padding_is_carried_only_when_aidl_was_granted():
    assert p.carries_padding(("batch", "aidl:4")) and p.carries_padding(("aidl:1",))
    assert not p.carries_padding(("batch",)) and not p.carries_padding(())
    pool = memory.allocate(memory.ASHMEM, 128)
    try:
        request = _request(pool)
        padded, plain = _encoded(request, True), _encoded(request, False)
        assert len(padded) == len(plain) + 3 * 8  # one int64 per argument, the omitted one included
        assert p.read_request(p.Reader(padded), lambda _: pool, True) == request
        back = p.read_request(p.Reader(plain), lambda _: pool)
        assert [a.location.padding for a in back.inputs + back.outputs] == [0, 0, 0]  # HAL 1.3: no field
        # A HAL 1.3 body is byte for byte what it was before the field: the argument head has no padding.
        assert plain[:4 + 29 + 8] == struct.pack("<IBqqqIq", 2, 0, 0, 0, 8, 1, 2)
    finally:
        pool.close()


def test_a_padded_request_cut_anywhere_is_refused():
    pool = memory.allocate(memory.ASHMEM, 128)
    try:
        body = _encoded(_request(pool), True)
        for cut in range(len(body)):
            with pytest.raises(ProtocolError):
                r = p.Reader(body[:cut])
                p.read_request(r, lambda _: pool, True)
                r.end()
    finally:
        pool.close()


def _verdicts(spec: str, document: dict | None = None, **options: str) -> dict[str, object]:
    if document is None:
        with open(SPEC, encoding="utf-8") as file:
            document = json.load(file)
    model = next(m for m in parse_spec(document) if m.name in ("relu", "add"))
    host = HostProcess(DriverRef(spec, tuple(options.items())), extra_env={"PYTHONPATH": ROOT})
    try:
        host.start()
        family = RequestPaddingFamily()
        runner = IsolatedRunner(host.device, RunOptions(case_timeout=30.0), host=host)
        return {case.config["kind"]: runner.run_case(family, case) for case in family.model_cases(model, "x")}
    finally:
        host.stop()


def test_the_reference_passes_out_of_process_and_its_hal_1_3_self_skips():
    assert {k: r.verdict for k, r in _verdicts("reference").items()} == dict.fromkeys(KINDS, Verdict.PASSED)
    skipped = _verdicts("reference", hal="1.3")
    assert {r.verdict for r in skipped.values()} == {Verdict.SKIPPED}
    assert all("DataLocation.padding is AIDL's" in r.reason for r in skipped.values())


def test_a_driver_using_the_output_padding_is_caught_out_of_process():
    results = _verdicts("tests.fakes.broken_padding:writes_output_padding")
    verdicts = {k: r.verdict for k, r in results.items()}
    assert verdicts == {"padded": Verdict.FAILED, "insufficient": Verdict.FAILED,
                        "input_past_pool": Verdict.PASSED, "output_past_pool": Verdict.PASSED,
                        "negative_padding": Verdict.PASSED}
    # Out of process the output guard sees the padding written first (bytes after an output's length).
    assert "wrote into an output's padding" in results["padded"].reason


def test_the_c_sample_reads_the_padding_over_aidl_and_passes():
    if shutil.which("make") is None or shutil.which(os.environ.get("CC", "cc")) is None:
        pytest.skip("no C toolchain")
    sample = os.path.join(ROOT, "nnvts", "drivers", "sample_c")
    made = subprocess.run(["make", "-C", sample], capture_output=True, text=True)
    assert made.returncode == 0, made.stdout + made.stderr
    results = _verdicts(f"exec:{os.path.join(sample, 'sample_driver')}", hand_add_float())
    assert {k: r.verdict for k, r in results.items()} == dict.fromkeys(KINDS, Verdict.PASSED), \
        {k: r.reason for k, r in results.items()}


def test_a_burst_carries_the_padding_too():
    """BURST_EXECUTE's request gains the field as EXECUTE's does: padding past the pool arrives and is refused."""
    with open(SPEC, encoding="utf-8") as file:
        model = next(m for m in parse_spec(json.load(file)) if m.name == "relu")
    host = HostProcess(DriverRef("reference", ()), extra_env={"PYTHONPATH": ROOT})
    built = build_request(model, model.examples[0])
    try:
        host.start()
        burst = host.device.prepare_model(to_hal_model(model)).configure_execution_burst()
        request = built.request
        burst.execute(request, [0, 1])
        loc = request.inputs[0].location
        request.inputs[0].location = DataLocation(loc.pool_index, loc.offset, loc.length,
                                                  built.input_pool.size - loc.offset - loc.length + 1)
        with pytest.raises(DriverError) as refused:
            burst.execute(request, [0, 1])  # AIDL: every pool given again under its held token
        assert refused.value.status == ErrorStatus.INVALID_ARGUMENT and "padding" in refused.value.message
    finally:
        built.close()
        host.stop()
