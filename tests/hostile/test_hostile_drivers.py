"""Hostile drivers end to end: each ends in its documented verdict, the harness survives them all.

The table is the one of docs/protocol.md ("Hostile drivers"): for each
driver, the verdict of the MUL case and a phrase its reason must hold.  The
ADD case of every run must still pass, and ``run_harness`` checks what every
run owes: the harness ended by itself (never by a signal) within seconds and
under 1 GiB, and wrote a JSON report that parses, a JUnit report a strict
XML parser accepts, an HTML report, all small.
"""

from __future__ import annotations

import sys

import pytest

from tests.fakes.hostile import ORPHAN_MARK
from tests.hostile.conftest import run_harness, survivors

ADD, MUL = "hand_add_float.add", "hand_mul_float.mul"

#: (driver, extra options, verdict of the MUL case, phrase of its reason)
PYTHON_DRIVERS = [
    ("truncating_device", ("--pool", "ashmem"), "failed", "driver raised PermissionError"),
    ("truncating_device", ("--pool", "hardware_buffer_blob"), "failed", "driver raised PermissionError"),
    ("truncating_device", ("--pool", "mmap_fd"), "failed", "resized a shared mmap_fd pool from 128 to 0 bytes"),
    ("truncating_device", ("--in-process",), "failed", "driver raised PermissionError"),
    ("scribbling_device", (), "failed", "wrote outside its output regions"),
    ("scribbling_device", ("--pool", "mmap_fd"), "failed", "wrote outside its output regions"),
    ("huge_error_device", (), "failed", "…[cut: "),
    ("huge_error_device", ("--in-process",), "failed", "…[cut: "),
    ("yes_flags_device", (), "failed", "driver returned a malformed answer"),
    ("yes_flags_device", ("--in-process",), "failed", "returned str flags; each must be a bool"),
    ("bad_shape_device", (), "failed", "driver returned a malformed answer"),
    ("system_exit_device", (), "failed", "driver raised SystemExit: 3"),
    ("system_exit_device", ("--in-process",), "failed", "driver raised SystemExit: 3"),
    ("keyboard_interrupt_device", ("--in-process",), "failed", "driver raised KeyboardInterrupt"),
    ("base_exception_device", ("--in-process",), "failed", "driver raised DriverQuits: the driver gives up"),
]

#: (exec driver mode, verdict of the MUL case, phrase of its reason)
EXEC_DRIVERS = [
    ("garbage", "crash", "protocol violation: malformed message from the driver"),
    ("undecodable", "crash", "protocol violation: malformed answer to execute: body ends early"),
    ("extra_fds", "crash", "5 file descriptors attached to the answer to execute"),
    ("huge", "crash", "declares a 209715200-byte body (limit 67108864)"),
    ("huge_error", "failed", "…[cut: "),
    ("unterminated", "crash", "declares a 1041-byte body but carries 3 bytes"),
    ("wrong_kind", "crash", "the reply to execute (request 4) carries code 0x8003"),
    ("pipe_body", "crash", "the body descriptor is not a memfd or regular file"),
    ("bool_flags", "crash", "malformed answer to get_supported_operations: boolean field holds 2"),
]


def _exec(mode: str) -> str:
    return f"exec:{sys.executable} -m tests.fakes.hostile_exec {mode}"


def _check(run, verdict: str, phrase: str) -> None:
    assert run.returncode == 1
    assert run.case(ADD)["verdict"] == "passed", run.case(ADD)
    mul = run.case(MUL)
    text = " ".join([mul["reason"], *mul.get("details", [])])
    assert mul["verdict"] == verdict, mul
    assert phrase in text, mul
    assert len(text) < 40_000, "driver text must be bounded at the source"
    if verdict == "crash":
        assert "crashed again when re-run alone on a fresh driver host" in mul["details"]


@pytest.mark.parametrize(("driver", "options", "verdict", "phrase"), PYTHON_DRIVERS,
                         ids=[f"{d}{''.join(o)}" for d, o, _, _ in PYTHON_DRIVERS])
def test_python_driver(tmp_path, add_mul, driver, options, verdict, phrase):
    run = run_harness(tmp_path, "--driver", f"tests.fakes.hostile:{driver}", "--family", "generated",
                      "--timeout", "20", *options, *add_mul)
    _check(run, verdict, phrase)


@pytest.mark.parametrize(("mode", "verdict", "phrase"), EXEC_DRIVERS, ids=[m for m, _, _ in EXEC_DRIVERS])
def test_exec_driver(tmp_path, add_mul, mode, verdict, phrase):
    run = run_harness(tmp_path, "--driver", _exec(mode), "--family", "generated", "--timeout", "20", *add_mul)
    _check(run, verdict, phrase)


def test_exec_driver_truncating_an_unsealable_pool(tmp_path, add_mul):
    run = run_harness(tmp_path, "--driver", _exec("truncate"), "--family", "generated", "--pool", "mmap_fd",
                      *add_mul)
    _check(run, "failed", "resized a shared mmap_fd pool")


@pytest.mark.parametrize("driver", ["tests.fakes.hostile:orphan_device", _exec("orphans")],
                         ids=["python", "exec"])
def test_orphans_are_killed_and_named(tmp_path, add_mul, driver):
    run = run_harness(tmp_path, "--driver", driver, "--family", "generated", *add_mul)
    assert run.case(ADD)["verdict"] == run.case(MUL)["verdict"] == "passed"
    leftovers = run.case("harness/driver_leftovers")
    assert leftovers["verdict"] == "failed"
    assert all(ORPHAN_MARK in line for line in leftovers["details"]), leftovers
    # The generated family runs the first example of each model on sync and async, each with and without
    # timing.  The Python driver starts orphans on its executions (one of them double-forked into a session
    # of its own with an empty environment): 8 for the two models; the exec driver: 2.
    assert len(leftovers["details"]) == (8 if "orphan_device" in driver else 2)
    assert survivors(ORPHAN_MARK) == []


def test_orphans_of_a_crashing_host_are_named_in_the_case(tmp_path, add_mul):
    """The host starts a process and crashes: the process is killed with it and named in the crash."""
    run = run_harness(tmp_path, "--driver", "tests.fakes.hostile:orphan_then_crash_device", "--family",
                      "generated", *add_mul)
    mul = run.case(MUL)
    assert mul["verdict"] == "crash" and "killed by SIGSEGV" in mul["reason"], mul
    assert any("left 1 process(es) running, killed by the harness" in line and ORPHAN_MARK in line
               for line in mul["details"]), mul
    assert survivors(ORPHAN_MARK) == []


@pytest.mark.parametrize(("driver", "options"), [
    (_exec("garbage"), ()),
    ("tests.fakes.misbehaving:segfault_device", ("--in-process",)),
], ids=["exec-garbage", "in-process-segfault"])
def test_parallel_runs_lose_no_case(tmp_path, add_mul3, nnvts, driver, options):
    """-j 2: every selected case ends in exactly one verdict, even when workers or their hosts die."""
    listed = nnvts("list", "--family", "generated", *add_mul3).stdout.split()
    run = run_harness(tmp_path, "--driver", driver, "--family", "generated", "-j", "2", *options, *add_mul3,
                      timeout=120)
    names = [c["name"] for c in run.report["cases"]]
    assert sorted(names) == sorted(listed)
    verdicts = {c["name"]: c["verdict"] for c in run.report["cases"]}
    assert verdicts[ADD] == "passed"
    assert all(verdicts[name] == "crash" for name in listed if "mul" in name), verdicts
