"""bench.driver_share finds the driver's work in every process of a run (no timing: only that it is seen)."""

from __future__ import annotations

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
