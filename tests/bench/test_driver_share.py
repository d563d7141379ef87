"""bench.driver_share finds the driver's work in every process of a run (no timing: only that it is seen)."""

from __future__ import annotations

import json
import os

import pytest

from bench import driver_share

SPEC = os.path.join(os.path.dirname(driver_share.ROOT), "shared", "corpus", "V1_0", "add.json.gz")

pytestmark = pytest.mark.skipif(not os.path.exists(SPEC), reason="the shared corpus is not here")


@pytest.mark.parametrize("isolation", [["--in-process"], []], ids=["in process", "out of process"])
def test_the_driver_time_is_found_where_the_driver_runs(isolation):
    args = ["run", "--driver", "reference", "--quiet", "--family", "validation", *isolation, "--specs", SPEC]
    driver, cpu, _ = driver_share._run(args, driver_share.ROOT)
    assert 0 < driver < cpu


def test_a_run_that_selects_nothing_spends_no_driver_time():
    args = ["run", "--driver", "reference", "--quiet", "--family", "validation", "--specs", SPEC,
            "-k", driver_share._NOTHING]
    driver, cpu, _ = driver_share._run(args, driver_share.ROOT)
    assert driver == 0 and cpu > 0


def test_the_hosts_cpu_is_told_apart_and_the_floor_passes_every_case_at_once(tmp_path):
    args = ["run", "--driver", "reference", "--quiet", "--family", "validation", "--specs", SPEC]
    driver, cpu, hosts, _ = driver_share._run_split(args, driver_share.ROOT)
    assert 0 < driver < hosts < cpu  # out of process the driver runs in its host, the host in the run
    # --floor: every case passes at once (the host still starts and describes its device).
    report = tmp_path / "floor.json"
    _, cpu, hosts, _ = driver_share._run_split([*args, "-j", "1", "--json", str(report)], driver_share.ROOT,
                                               stub="validation")  # one worker: this process judges
    cases = json.loads(report.read_text())["cases"]
    assert 0 < hosts < cpu and cases and {case["reason"] for case in cases} == {"floor"}
