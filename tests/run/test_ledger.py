"""The ``-j`` worker's ledger (vts/run/ledger.py): what a worker finished is never lost with it.

A worker records each result in shared memory and sends them to the parent
in batches; the case it runs is there too.  These check that what a dead
worker recorded is read back, once, by the parent, and that a run whose
in-process driver kills its worker on some cases still gives every case
exactly one verdict, the crash on the cases that caused it.
"""

from __future__ import annotations

import json
import multiprocessing
import os

import pytest

from tests.conftest import hand_add_float
from tests.ipc.conftest import nnvts, write_spec  # noqa: F401 - nnvts: a fixture
from vts.report.batch import decode_line
from vts.report.stream import case_line
from vts.results import CaseResult, Verdict
from vts.run.ledger import BATCH_RESULTS, WorkerLedger, records


def _result(name: str) -> bytes:
    return case_line(CaseResult(name, "generated", Verdict.PASSED)).encode()


def _names(blob: bytes) -> list[tuple[int, str]]:
    return [(index, decode_line(line).name) for index, line, _ in records(blob)]


def _worker_that_dies(ledger: WorkerLedger) -> None:
    """Records three results and starts a fourth case, then dies without a word, sending nothing."""
    for index in range(3):
        ledger.start(index, {"name": f"case{index}"})
        ledger.append(index, _result(f"case{index}"))
    ledger.start(3, {"name": "case3", "family": "generated"})
    os._exit(9)


def test_what_a_dead_worker_recorded_is_read_back_by_the_parent():
    ledger = WorkerLedger()
    try:
        process = multiprocessing.get_context("spawn").Process(target=_worker_that_dies, args=(ledger,))
        process.start()
        process.join(60)
        assert process.exitcode == 9
        assert _names(ledger.unsent(0)) == [(0, "case0"), (1, "case1"), (2, "case2")]
        assert ledger.started() == (3, {"name": "case3", "family": "generated"})
    finally:
        ledger.close()


def test_a_batch_the_parent_received_is_not_read_again():
    ledger = WorkerLedger()
    try:
        assert ledger.started() == (-1, None)  # no case started: a death now charges no case
        ledger.append(0, _result("a"), plain=True)
        ledger.append(1, _result("b"))
        number, blob = ledger.pending()
        assert number == 0 and _names(blob) == [(0, "a"), (1, "b")]
        assert [plain for _, _, plain in records(blob)] == [True, False]
        # The worker died after the batch reached the pipe, before it forgot it: the parent has batch 0.
        assert ledger.unsent(1) == b""
        assert len(list(records(ledger.unsent(0)))) == 2  # a parent that never got it reads it here
        ledger.sent()
        ledger.append(2, _result("c"))
        assert _names(ledger.unsent(1)) == [(2, "c")]
    finally:
        ledger.close()


def test_batches_are_due_by_count_and_a_result_too_large_is_refused():
    ledger = WorkerLedger(size=256 << 10)
    try:
        for index in range(BATCH_RESULTS - 1):
            ledger.append(index, _result(f"n{index}"))
        assert not ledger.due()
        ledger.append(BATCH_RESULTS, _result("last"))
        assert ledger.due()
        ledger.sent()
        assert not ledger.append(0, b"x" * (300 << 10))  # the sink sends such a result on its own
        assert ledger.pending() is None
    finally:
        ledger.close()


def test_labels_too_long_for_the_ledger_are_cut_not_dropped():
    ledger = WorkerLedger()
    try:
        ledger.start(7, {"name": "n" * 200_000, "family": "validation", "operations": ["ADD"] * 5000})
        index, labels = ledger.started()
        assert index == 7 and labels["name"] == "n" * 1024 and labels["family"] == "validation"
        assert labels["operations"] == ["ADD"] * 64
    finally:
        ledger.close()


@pytest.mark.parametrize("split", ["hash", "claim"])
def test_in_process_workers_killed_by_their_driver_lose_no_case(tmp_path, nnvts, split):  # noqa: F811
    """Validation cases are quick, so the results before each crash are still in the worker's ledger.

    Under the claim split each replacement goes on with the models its slot had claimed, from the case
    after the crash, and claims more as any worker would.
    """
    spec = write_spec(tmp_path, hand_add_float())
    listed = nnvts("list", "--family", "validation", spec).stdout.split()
    run = nnvts("run", "--driver", "tests.fakes.validation_faults:exits_on_one_mutation", "--in-process",
                "-j", "2", "--job-split", split, "--no-pin-cpus", "--family", "validation",
                "--json", str(tmp_path / "r.json"), spec)
    assert run.returncode == 1, run.stderr
    cases = json.loads((tmp_path / "r.json").read_text())["cases"]
    names = [case["name"] for case in cases]
    assert sorted(names) == sorted(listed)  # every case once: none lost with a worker, none run twice
    crashed = {case["name"] for case in cases if case["verdict"] == "crash"}
    assert len(crashed) == 4 and all("9999" in name for name in crashed), crashed
    assert all(case["verdict"] == "passed" for case in cases if case["name"] not in crashed)
